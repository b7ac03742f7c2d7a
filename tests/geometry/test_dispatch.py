"""geometry.distance / pairwise_distance: every metric name against pyRiemann's dispatcher."""

import numpy as np
import pytest
import torch
from pyriemann.geometry.distance import distance as pyr_distance
from pyriemann.geometry.distance import pairwise_distance as pyr_pairwise_distance

from rankmetric.geometry import (
    METRIC_ALIASES,
    airm_distance,
    distance,
    distance_functions,
    pairwise_airm,
    pairwise_distance,
    pairwise_distance_functions,
)

#: Each of our canonical names and the pyRiemann name of the same metric.
PYRIEMANN_NAME = {"airm": "riemann", "log_euclidean": "logeuclid", "euclidean": "euclid"}


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_tables_cover_every_canonical_name():
    assert set(distance_functions) == set(METRIC_ALIASES.values()) == set(PYRIEMANN_NAME)
    assert set(pairwise_distance_functions) == set(distance_functions)


@pytest.mark.parametrize("alias", sorted(METRIC_ALIASES))
def test_paired_matches_pyriemann(alias, rng, make_spd):
    A, B = make_spd(rng, 5, 4), make_spd(rng, 5, 4)
    expected = [
        pyr_distance(a, b, metric=PYRIEMANN_NAME[METRIC_ALIASES[alias]])
        for a, b in zip(A, B, strict=True)
    ]
    got = distance(torch.from_numpy(A), torch.from_numpy(B), metric=alias.upper())
    np.testing.assert_allclose(got.numpy(), np.ravel(expected), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("alias", sorted(METRIC_ALIASES))
@pytest.mark.parametrize("two_sets", [False, True])
def test_pairwise_matches_pyriemann(alias, two_sets, rng, make_spd):
    X, Y = make_spd(rng, 6, 3), (make_spd(rng, 4, 3) if two_sets else None)
    name = PYRIEMANN_NAME[METRIC_ALIASES[alias]]
    expected = pyr_pairwise_distance(X, Y, metric=name)
    got = pairwise_distance(X, None if Y is None else torch.from_numpy(Y), metric=alias)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-8, atol=1e-7)


def test_named_metric_is_the_existing_function(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 5, 3))
    assert torch.equal(distance(X[:3], X[2:], "riemann"), airm_distance(X[:3], X[2:]))
    assert torch.equal(pairwise_distance(X, metric="airm"), pairwise_airm(X))


def test_callable_matches_pyriemann(rng, make_spd):
    def frobenius_l1(A, B):  # broadcasting torch callable
        return (torch.as_tensor(A) - torch.as_tensor(B)).abs().sum((-2, -1))

    def pyr_l1(A, B, squared=False):
        return np.abs(A - B).sum()

    X, Y = make_spd(rng, 5, 3), make_spd(rng, 4, 3)
    np.testing.assert_allclose(
        distance(X[0], Y[0], metric=frobenius_l1).numpy(), pyr_distance(X[0], Y[0], metric=pyr_l1)
    )
    np.testing.assert_allclose(
        pairwise_distance(X, Y, metric=frobenius_l1).numpy(),
        pyr_pairwise_distance(X, Y, metric=pyr_l1),
    )
    with pytest.raises(ValueError, match="shape"):
        pairwise_distance(X, Y, metric=lambda a, b: torch.zeros(2))


def test_unknown_metric_lists_the_known_names(rng, make_spd):
    X = make_spd(rng, 2, 2)
    for fn in (lambda m: distance(X[0], X[1], m), lambda m: pairwise_distance(X, metric=m)):
        with pytest.raises(ValueError, match="logeuclid") as info:
            fn("wasserstein")
        assert "wasserstein" in str(info.value) and "airm" in str(info.value)


def test_gradient_flows_through_the_dispatcher(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 4, 3)).requires_grad_(True)
    for metric in PYRIEMANN_NAME.values():
        pairwise_distance(X, metric=metric).sum().backward()
        assert torch.isfinite(X.grad).all()
        X.grad = None


def test_half_precision_is_computed_in_float32(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 3, 2)).to(torch.bfloat16)
    assert pairwise_distance(X, metric="logeuclid").dtype == torch.bfloat16
