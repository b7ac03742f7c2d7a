"""Riemannian and log-Euclidean means, geodesics: against pyRiemann, properties, gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from pyriemann.geometry.geodesic import geodesic_logeuclid, geodesic_riemann
from pyriemann.geometry.mean import mean_logeuclid, mean_riemann
from sklearn.exceptions import ConvergenceWarning
from torch.autograd import gradcheck

from rankmetric.geometry.distances import airm_distance, log_euclidean_distance
from rankmetric.geometry.means import geodesic, log_euclidean_mean, riemannian_mean

DISTANCE = {"airm": airm_distance, "log_euclidean": log_euclidean_distance}
seeds = st.integers(min_value=0, max_value=2**32 - 1)
matrix_sizes = st.integers(min_value=2, max_value=5)


def _spd_stack(seed: int, n: int, c: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, c, c)))[0]
    return (Q * np.exp(rng.standard_normal((n, 1, c)))) @ np.swapaxes(Q, -1, -2)


@pytest.mark.parametrize("weighted", [False, True])
def test_riemannian_mean_matches_pyriemann(weighted, rng, make_spd):
    X = make_spd(rng, 12, 5)
    w = rng.random(12) if weighted else None
    ours = riemannian_mean(X, w, tol=1e-12)
    theirs = mean_riemann(X, tol=1e-12, maxiter=200, sample_weight=w)
    assert_allclose(ours.numpy(), theirs, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_log_euclidean_mean_matches_pyriemann(weighted, rng, make_spd):
    X = make_spd(rng, 12, 5)
    w = rng.random(12) if weighted else None
    assert_allclose(log_euclidean_mean(X, w).numpy(), mean_logeuclid(X, sample_weight=w), rtol=1e-8)


@pytest.mark.parametrize(
    ("metric", "theirs"), [("airm", geodesic_riemann), ("log_euclidean", geodesic_logeuclid)]
)
@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 1.7])
def test_geodesic_matches_pyriemann(metric, theirs, t, rng, make_spd):
    A, B = make_spd(rng, 3, 4), make_spd(rng, 3, 4)
    ours = geodesic(A, B, t, metric=metric)
    assert_allclose(ours.numpy(), theirs(A, B, t), rtol=1e-8, atol=1e-12)


def test_geodesic_endpoints_and_tensor_t(rng, make_spd):
    A, B = make_spd(rng, 1, 3)[0], make_spd(rng, 1, 3)[0]
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    path = geodesic(A, B, t)
    assert path.shape == (3, 3, 3)
    assert_allclose(path[0].numpy(), A, rtol=1e-10)
    assert_allclose(path[2].numpy(), B, rtol=1e-10)
    assert_allclose(path[1].numpy(), geodesic_riemann(A, B, 0.5), rtol=1e-10)


def test_mean_keeps_float32(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 6, 3)).float()
    assert riemannian_mean(X, tol=1e-5).dtype == torch.float32
    assert log_euclidean_mean(X).dtype == torch.float32


def test_one_hot_weights_select_a_matrix(rng, make_spd):
    X = make_spd(rng, 4, 3)
    w = np.array([0.0, 0.0, 2.0, 0.0])
    assert_allclose(riemannian_mean(X, w).numpy(), X[2], rtol=1e-10)
    assert_allclose(log_euclidean_mean(X, w).numpy(), X[2], rtol=1e-10)


# --- properties ---------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_mean_of_one_matrix_is_itself(seed, c):
    X = _spd_stack(seed, 1, c)
    assert_allclose(riemannian_mean(X).numpy(), X[0], rtol=1e-10, atol=1e-12)
    assert_allclose(log_euclidean_mean(X).numpy(), X[0], rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_mean_of_two_matrices_is_the_geodesic_midpoint(seed, c):
    X = _spd_stack(seed, 2, c)
    midpoint = geodesic(X[0], X[1], 0.5)
    assert_allclose(riemannian_mean(X, tol=1e-12).numpy(), midpoint.numpy(), rtol=1e-8, atol=1e-12)
    le_midpoint = geodesic(X[0], X[1], 0.5, metric="log_euclidean")
    assert_allclose(log_euclidean_mean(X).numpy(), le_midpoint.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("metric", DISTANCE)
@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes, t=st.floats(min_value=0.0, max_value=1.0))
def test_geodesic_proportionality(metric, seed, c, t):
    A, B = _spd_stack(seed, 2, c)
    distance = DISTANCE[metric]
    along = float(distance(A, geodesic(A, B, t, metric=metric)))
    assert along == pytest.approx(t * float(distance(A, B)), rel=1e-8, abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_riemannian_mean_is_congruence_equivariant(seed, c):
    X = _spd_stack(seed, 5, c)
    W = np.random.default_rng(seed + 1).standard_normal((c, c)) + 3 * np.eye(c)
    moved = riemannian_mean(W @ X @ W.T, tol=1e-12)
    assert_allclose(moved.numpy(), W @ riemannian_mean(X, tol=1e-12).numpy() @ W.T, rtol=1e-7)


# --- convergence and gradients ------------------------------------------------------------------


def test_warns_when_not_converged(rng, make_spd):
    X = make_spd(rng, 10, 4, spread=2.0)
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        riemannian_mean(X, max_iter=2)


def test_no_warning_when_converged(rng, make_spd):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        riemannian_mean(make_spd(rng, 10, 4, spread=2.0))


def test_gradcheck_riemannian_mean(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 3, 2, spread=0.3)).requires_grad_()
    w = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64, requires_grad=True)
    # tol=0 (raised to the float64 noise floor) iterates to machine precision, where the unrolled
    # iteration's derivative is the mean's
    assert gradcheck(lambda X, w: riemannian_mean(X, w, max_iter=100, tol=0.0), (X, w))


def test_float32_mean_converges_with_the_default_tolerance(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 20, 8, spread=1.0)).float()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean = riemannian_mean(X)
    assert_allclose(mean.numpy(), riemannian_mean(X.double(), tol=1e-12).numpy(), atol=2e-5)


def test_gradcheck_log_euclidean_mean_and_geodesics(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 3, 3)).requires_grad_()
    t = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(log_euclidean_mean, (X,))
    assert gradcheck(lambda X, t: geodesic(X[0], X[1], t), (X, t))
    assert gradcheck(lambda X, t: geodesic(X[0], X[1], t, metric="log_euclidean"), (X, t))


def test_gradient_at_a_mean_of_identical_matrices_is_finite():
    X = torch.eye(3, dtype=torch.float64).repeat(4, 1, 1).requires_grad_()
    riemannian_mean(X).sum().backward()
    assert torch.isfinite(X.grad).all()


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ([1.0, 2.0], r"shape \(3,\)"),
        ([1.0, -1.0, 1.0], "non-negative"),
        ([1.0, np.nan, 1.0], "finite"),
        ([0.0, 0.0, 0.0], "sum to zero"),
    ],
)
@pytest.mark.parametrize("mean", [riemannian_mean, log_euclidean_mean])
def test_bad_weights(mean, weights, match, rng, make_spd):
    with pytest.raises(ValueError, match=match):
        mean(make_spd(rng, 3, 2), weights)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"max_iter": 0}, "max_iter"), ({"tol": -1.0}, "tol"), ({"init": np.eye(3)}, "init")],
)
def test_bad_iteration_parameters(kwargs, match, rng, make_spd):
    with pytest.raises(ValueError, match=match):
        riemannian_mean(make_spd(rng, 3, 2), **kwargs)


def test_bad_geodesic_arguments(rng, make_spd):
    A, B = make_spd(rng, 2, 2)
    with pytest.raises(ValueError, match="metric"):
        geodesic(A, B, 0.5, metric="euclid")
    with pytest.raises(ValueError, match="t must be finite"):
        geodesic(A, B, float("nan"))
    with pytest.raises(ValueError, match=r"B\[0\] is not positive definite"):
        geodesic(A, -B, 0.5)


def test_mean_rejects_non_spd(rng, make_spd):
    X = make_spd(rng, 3, 2)
    X[2] = -X[2]
    with pytest.raises(ValueError, match="not positive definite"):
        riemannian_mean(X)
    with pytest.raises(ValueError, match=r"X\[2\] is not positive definite"):
        log_euclidean_mean(X)
