"""The loss registry: every name builds its loss with the published defaults, bad names raise."""

import pytest
import torch

from rankmetric.estimators.spd import LOSSES as ESTIMATOR_LOSSES
from rankmetric.estimators.spd import make_loss as estimator_make_loss
from rankmetric.losses import (
    LiftedStructureLoss,
    MultiSimilarityLoss,
    NPairLoss,
    ProxyNCALoss,
    RiemannianPotatoLoss,
    TripletLoss,
)
from rankmetric.losses.registry import LOSSES, VECTOR_ONLY_LOSSES, make_loss

EXPECTED = {
    "rpl": RiemannianPotatoLoss,
    "triplet": TripletLoss,
    "triplet-random": TripletLoss,
    "triplet-semihard": TripletLoss,
    "lifted": LiftedStructureLoss,
    "npair": NPairLoss,
    "proxy-nca": ProxyNCALoss,
    "multi-similarity": MultiSimilarityLoss,
}


def test_old_import_path_is_the_registry():
    assert ESTIMATOR_LOSSES is LOSSES and estimator_make_loss is make_loss
    assert set(LOSSES) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_name_builds_its_loss_and_computes_a_scalar(name):
    generator = torch.Generator().manual_seed(0)
    loss = make_loss(name, n_classes=3, dim=6, generator=generator)
    assert type(loss) is EXPECTED[name]
    value = loss(torch.randn(12, 6, generator=generator), torch.arange(12) % 3)
    assert value.ndim == 0 and torch.isfinite(value)


def test_defaults_and_overrides():
    assert make_loss("triplet-semihard", n_classes=3, dim=4).mining == "semihard"
    assert make_loss("lifted", n_classes=3, dim=4).margin == 1.0
    assert make_loss("lifted", n_classes=3, dim=4, params={"margin": 0.5}).margin == 0.5
    assert make_loss("rpl", n_classes=5, dim=None).log_mu.shape == (5,)


def test_vector_only_losses_refuse_spd_embeddings_and_unknown_names_raise():
    for name in VECTOR_ONLY_LOSSES:
        with pytest.raises(ValueError, match="needs vector embeddings"):
            make_loss(name, n_classes=3, dim=None)
    with pytest.raises(ValueError, match="loss must be one of"):
        make_loss("arcface", n_classes=3, dim=4)
