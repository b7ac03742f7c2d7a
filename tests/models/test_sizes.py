"""One size convention in rankmetric.models: ``in_features`` / ``out_features``, as torch.nn."""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch

from rankmetric.models import BiMap, LinearMap, SPDNet, SphereTanhEmbedding

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

#: (class, the names before 0.2 of in_features and out_features, or None)
MODULES = [(LinearMap, None), (SphereTanhEmbedding, ("n_features", "n_components")),
           (BiMap, ("d_in", "d_out"))]  # fmt: skip


def _build(cls, **sizes):
    torch.manual_seed(0)
    return cls(**sizes)


@pytest.mark.parametrize(("cls", "old"), MODULES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_new_names_positional_and_keyword(cls, old):
    params = list(inspect.signature(cls).parameters)
    assert params[:2] == ["in_features", "out_features"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_position = cls(5, 3)
        by_keyword = cls(in_features=5, out_features=3)
    for module in (by_position, by_keyword):
        assert (module.in_features, module.out_features) == (5, 3)
        assert "in_features=5, out_features=3" in repr(module)


@pytest.mark.parametrize(("cls", "old"), [m for m in MODULES if m[1]], ids=lambda v: str(v))
def test_old_keywords_warn_and_build_the_same_module(cls, old):
    new = _build(cls, in_features=5, out_features=3)
    with pytest.warns(FutureWarning, match=f"'{old[0]}' was renamed 'in_features'"):
        legacy = _build(cls, **{old[0]: 5, old[1]: 3})
    assert (legacy.in_features, legacy.out_features) == (5, 3)
    torch.testing.assert_close(legacy.weight, new.weight)
    with pytest.warns(FutureWarning, match=old[1]):
        mixed = cls(5, **{old[1]: 3})
    assert mixed.out_features == 3
    with pytest.raises(TypeError, match="both"):
        cls(**{old[0]: 5, "in_features": 5, "out_features": 3})


def test_sphere_keeps_its_old_attribute_names():
    module = SphereTanhEmbedding(4, 6)
    assert (module.n_features, module.n_components) == (4, 6)


def test_bimap_still_rejects_a_growing_map():
    with pytest.raises(ValueError, match="out_features=4 must be <= in_features=3"):
        BiMap(3, 4)


def test_spdnet_builds_its_bimaps_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = SPDNet([6, 4, 3])
    bimaps = [m for m in net.modules() if isinstance(m, BiMap)]
    assert [(m.in_features, m.out_features) for m in bimaps] == [(6, 4), (4, 3)]
