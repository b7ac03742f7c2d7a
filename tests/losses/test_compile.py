"""``torch.compile(loss, fullgraph=True)``: every loss traces without a graph break and agrees
with eager mode (value and gradient).

``backend="aot_eager"`` traces forward and backward exactly as inductor does, without generating
C++ (seconds instead of minutes on a small CPU); one test runs inductor itself. The finiteness
guard is skipped inside a compiled graph only; eager calls still refuse NaN.
"""

from __future__ import annotations

import pytest
import torch

from rankmetric.losses import (
    LiftedStructureLoss,
    MultiSimilarityLoss,
    NPairLoss,
    ProxyNCALoss,
    RiemannianPotatoLoss,
    SimilarityRegressionLoss,
    TripletLoss,
    WARPLoss,
)

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

N_CLASSES, DIM = 4, 5


def _proxy_nca():
    return ProxyNCALoss(N_CLASSES, DIM, generator=torch.Generator().manual_seed(0))


LOSSES = {
    "triplet-all": TripletLoss,
    "triplet-hard": lambda: TripletLoss(mining="hard"),
    "triplet-semihard": lambda: TripletLoss(mining="semihard"),
    "lifted": LiftedStructureLoss,
    "lifted-generalized": lambda: LiftedStructureLoss(form="generalized"),
    "multi-similarity": MultiSimilarityLoss,
    "npair": NPairLoss,
    "proxy-nca": _proxy_nca,
    "warp": WARPLoss,
    "similarity": SimilarityRegressionLoss,
    # the potato's statistics buffers have a fixed size only with n_classes given; on SPD
    # embeddings the geometry's input checks (symmetry, positivity) still sync with the host
    "potato": lambda: RiemannianPotatoLoss(n_classes=N_CLASSES),
}
FAST = ("multi-similarity", "triplet-hard")


def _batch(name, seed=0):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, N_CLASSES, (16,), generator=gen)
    return torch.nn.functional.normalize(torch.randn(16, DIM, generator=gen), dim=1), labels


def _compare(name, backend, n_batches=2):
    eager, compiled_loss = LOSSES[name](), LOSSES[name]()
    compiled = torch.compile(compiled_loss, fullgraph=True, backend=backend)
    for seed in range(n_batches):  # a second batch reuses the graph (or recompiles cleanly)
        x, y = _batch(name, seed)
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        expected, value = eager(x1, y), compiled(x2, y)
        expected.backward()
        value.backward()
        torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-4, atol=1e-6)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", FAST)
def test_fullgraph_compile_agrees_with_eager(name):
    _compare(name, "aot_eager")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(LOSSES) - set(FAST)))
def test_every_loss_compiles_fullgraph(name):
    _compare(name, "aot_eager")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["triplet-all", "lifted"])
def test_inductor_compile_agrees_with_eager(name):
    _compare(name, "inductor", n_batches=1)


def test_eager_mode_still_refuses_non_finite_embeddings():
    x, y = _batch("triplet-all")
    x[0, 0] = torch.nan
    with pytest.raises(ValueError, match="NaN"):
        TripletLoss()(x, y)
