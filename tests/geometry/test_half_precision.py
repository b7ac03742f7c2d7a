"""The public SPD functions on float16 / bfloat16 input: computed in float32, returned as given."""

from __future__ import annotations

import pytest
import torch

try:  # pyRiemann >= 0.9 moved it; the old path warns
    from pyriemann.geometry.distance import distance_riemann
except ImportError:
    from pyriemann.utils.distance import distance_riemann

from rankmetric import geometry

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

HALF = [torch.float16, torch.bfloat16]
TOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}


def _spd(n=4, c=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, c, c, generator=gen, dtype=torch.float64)
    return a @ a.mT / c + torch.eye(c, dtype=torch.float64)


CALLS = {
    "spd_log": lambda X: geometry.spd_log(X),
    "spd_exp": lambda X: geometry.spd_exp(0.1 * X),
    "spd_sqrt": lambda X: geometry.spd_sqrt(X),
    "spd_inv_sqrt": lambda X: geometry.spd_inv_sqrt(X),
    "spd_power": lambda X: geometry.spd_power(X, 0.5),
    "spd_clamp": lambda X: geometry.spd_clamp(X, 1e-3),
    "airm_distance": lambda X: geometry.airm_distance(X[:2], X[2:]),
    "pairwise_airm": lambda X: geometry.pairwise_airm(X),
    "log_euclidean_distance": lambda X: geometry.log_euclidean_distance(X[:2], X[2:]),
    "pairwise_log_euclidean": lambda X: geometry.pairwise_log_euclidean(X),
    "riemannian_mean": lambda X: geometry.riemannian_mean(X),
    "log_euclidean_mean": lambda X: geometry.log_euclidean_mean(X),
    "geodesic": lambda X: geometry.geodesic(X[0], X[1], 0.3),
}


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_public_spd_functions_take_half_precision(name, dtype):
    X = _spd().to(dtype)
    out = CALLS[name](X)
    expected = CALLS[name](X.double())  # the same rounded matrices, in float64
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), expected, rtol=TOL[dtype], atol=TOL[dtype])


def test_half_precision_airm_agrees_with_pyriemann():
    X = _spd().to(torch.float16)
    ours = geometry.airm_distance(X[0], X[1])
    theirs = distance_riemann(X[0].double().numpy(), X[1].double().numpy())
    assert ours.dtype == torch.float16
    assert ours.item() == pytest.approx(theirs, rel=1e-2)


def test_half_precision_backward_reaches_the_input():
    X = _spd().to(torch.bfloat16).requires_grad_()
    geometry.pairwise_airm(X).sum().backward()
    assert X.grad.dtype == torch.bfloat16 and torch.isfinite(X.grad.float()).all()
