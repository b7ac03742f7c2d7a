"""AIRM and log-Euclidean distances: against pyRiemann, properties, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from pyriemann.geometry.distance import distance_logeuclid, distance_riemann, pairwise_distance
from torch.autograd import gradcheck

from rankmetric.geometry.distances import (
    airm_distance,
    log_euclidean_distance,
    pairwise_airm,
    pairwise_log_euclidean,
)
from rankmetric.geometry.matrix_functions import spd_inv_sqrt, spd_log

PAIRWISE = {
    "airm": (pairwise_airm, "riemann"),
    "log_euclidean": (pairwise_log_euclidean, "logeuclid"),
}
PAIRED = {
    "airm": (airm_distance, distance_riemann),
    "log_euclidean": (log_euclidean_distance, distance_logeuclid),
}
matrix_sizes = st.integers(min_value=2, max_value=5)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.mark.parametrize("metric", PAIRED)
def test_paired_matches_pyriemann(metric, rng, make_spd):
    ours, theirs = PAIRED[metric]
    A, B = make_spd(rng, 7, 6), make_spd(rng, 7, 6, spread=2.0)
    assert_allclose(ours(A, B).numpy(), theirs(A, B), rtol=1e-8)


@pytest.mark.parametrize("metric", PAIRED)
def test_paired_broadcasts_over_leading_dimensions(metric, rng, make_spd):
    A, B = make_spd(rng, 6, 3).reshape(2, 3, 3, 3), make_spd(rng, 1, 3)[0]
    d = PAIRED[metric][0](A, B)
    assert d.shape == (2, 3)
    assert_allclose(d.numpy(), PAIRED[metric][1](A, np.broadcast_to(B, A.shape)), rtol=1e-8)


@pytest.mark.parametrize("metric", PAIRWISE)
def test_pairwise_matches_pyriemann(metric, rng, make_spd):
    ours, name = PAIRWISE[metric]
    A, B = make_spd(rng, 9, 5), make_spd(rng, 4, 5)
    assert_allclose(ours(A).numpy(), pairwise_distance(A, metric=name), rtol=1e-8, atol=1e-12)
    assert_allclose(ours(A, B).numpy(), pairwise_distance(A, B, metric=name), rtol=1e-8)


@pytest.mark.parametrize("chunk_size", [1, 2, 4, 100])
def test_pairwise_airm_does_not_depend_on_chunking(chunk_size, rng, make_spd):
    A, B = torch.from_numpy(make_spd(rng, 9, 4)), torch.from_numpy(make_spd(rng, 5, 4))
    assert_allclose(pairwise_airm(A, chunk_size=chunk_size).numpy(), pairwise_airm(A).numpy())
    assert_allclose(pairwise_airm(A, B, chunk_size=chunk_size).numpy(), pairwise_airm(A, B).numpy())


@pytest.mark.parametrize("metric", PAIRWISE)
def test_pairwise_of_one_set_is_symmetric_with_zero_diagonal(metric, rng, make_spd):
    D = PAIRWISE[metric][0](make_spd(rng, 6, 4))
    assert torch.equal(D, D.T)
    assert torch.equal(torch.diagonal(D), torch.zeros(6, dtype=D.dtype))


@pytest.mark.parametrize("metric", PAIRWISE)
def test_float32_in_float32_out(metric, rng, make_spd):
    A = make_spd(rng, 5, 4)
    D32 = PAIRWISE[metric][0](torch.from_numpy(A).float())
    assert D32.dtype == torch.float32
    assert_allclose(D32.numpy(), PAIRWISE[metric][0](A).numpy(), rtol=1e-4, atol=1e-5)


def test_mixed_dtypes_are_promoted(rng, make_spd):
    A, B = torch.from_numpy(make_spd(rng, 3, 3)), torch.from_numpy(make_spd(rng, 3, 3))
    assert pairwise_airm(A.float(), B).dtype == torch.float64


# --- properties ---------------------------------------------------------------------------------


def _pair(seed: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((2, c, c)))[0]
    A, B = (Q * np.exp(rng.standard_normal((2, 1, c)))) @ np.swapaxes(Q, -1, -2)
    return A, B


@pytest.mark.parametrize("metric", PAIRED)
@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_symmetry(metric, seed, c):
    A, B = _pair(seed, c)
    distance = PAIRED[metric][0]
    assert float(distance(A, B)) == pytest.approx(float(distance(B, A)), rel=1e-10, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_airm_congruence_invariance(seed, c):
    A, B = _pair(seed, c)
    W = np.random.default_rng(seed + 1).standard_normal((c, c)) + 3 * np.eye(c)  # invertible
    moved = airm_distance(W @ A @ W.T, W @ B @ W.T)
    assert float(moved) == pytest.approx(float(airm_distance(A, B)), rel=1e-8, abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_airm_inversion_invariance(seed, c):
    A, B = _pair(seed, c)
    inverted = airm_distance(np.linalg.inv(A), np.linalg.inv(B))
    assert float(inverted) == pytest.approx(float(airm_distance(A, B)), rel=1e-8, abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=matrix_sizes)
def test_log_euclidean_orthogonal_invariance(seed, c):
    A, B = _pair(seed, c)
    Q = np.linalg.qr(np.random.default_rng(seed + 1).standard_normal((c, c)))[0]
    moved = log_euclidean_distance(Q @ A @ Q.T, Q @ B @ Q.T)
    assert float(moved) == pytest.approx(float(log_euclidean_distance(A, B)), rel=1e-8, abs=1e-10)


# --- gradients ----------------------------------------------------------------------------------


def _requires_grad(*arrays):
    return tuple(torch.from_numpy(np.array(a)).requires_grad_() for a in arrays)


@pytest.mark.parametrize("metric", PAIRED)
def test_gradcheck_paired(metric, rng, make_spd):
    A, B = _requires_grad(make_spd(rng, 2, 3), make_spd(rng, 2, 3))
    assert gradcheck(PAIRED[metric][0], (A, B))


@pytest.mark.parametrize("metric", PAIRWISE)
def test_gradcheck_pairwise(metric, rng, make_spd):
    A, B = _requires_grad(make_spd(rng, 3, 3), make_spd(rng, 2, 3))
    pairwise = PAIRWISE[metric][0]
    assert gradcheck(lambda X: pairwise(X), (A,))
    assert gradcheck(lambda X, Y: pairwise(X, Y), (A, B))


def test_gradcheck_pairwise_airm_chunked(rng, make_spd):
    (A,) = _requires_grad(make_spd(rng, 5, 3))
    assert gradcheck(lambda X: pairwise_airm(X, chunk_size=2), (A,))


def test_airm_gradient_matches_eigh_formula(rng, make_spd):
    A, B = _requires_grad(*make_spd(rng, 2, 4))
    airm_distance(A, B).backward()
    ours = A.grad.clone(), B.grad.clone()
    A.grad = B.grad = None
    W = spd_inv_sqrt(A)
    torch.linalg.matrix_norm(spd_log(W @ B @ W)).backward()
    assert_allclose(ours[0].numpy(), A.grad.numpy(), rtol=1e-8, atol=1e-12)
    assert_allclose(ours[1].numpy(), B.grad.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("metric", PAIRED)
def test_gradient_is_finite_and_zero_where_matrices_coincide(metric, rng, make_spd):
    (A,) = _requires_grad(make_spd(rng, 1, 4)[0])
    distance = PAIRED[metric][0]
    distance(A, A.detach().clone()).backward()
    assert torch.isfinite(A.grad).all()
    X = torch.eye(3, dtype=torch.float64, requires_grad=True)
    distance(X, torch.eye(3, dtype=torch.float64)).backward()
    assert torch.equal(X.grad, torch.zeros(3, 3, dtype=torch.float64))


@pytest.mark.parametrize("metric", PAIRWISE)
def test_pairwise_gradient_is_finite_with_duplicates(metric, rng, make_spd):
    matrix = make_spd(rng, 1, 3)[0]
    (X,) = _requires_grad(np.stack([matrix, matrix, np.eye(3)]))
    PAIRWISE[metric][0](X).sum().backward()
    assert torch.isfinite(X.grad).all()


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", PAIRWISE)
def test_pairwise_rejects_non_spd(metric, rng, make_spd):
    A = make_spd(rng, 3, 3)
    bad = A.copy()
    bad[1] = -bad[1]
    pairwise = PAIRWISE[metric][0]
    with pytest.raises(ValueError, match=r"A\[1\] is not positive definite"):
        pairwise(bad)
    with pytest.raises(ValueError, match=r"B\[1\] is not positive definite"):
        pairwise(A, bad)
    with pytest.raises(ValueError, match="not symmetric"):
        pairwise(A + np.triu(np.ones((3, 3)), 1))
    with pytest.raises(ValueError, match="NaN"):
        pairwise(np.where(np.eye(3, dtype=bool), np.nan, A))
    with pytest.raises(ValueError, match=r"shape \(n_matrices, c, c\)"):
        pairwise(A[0])
    with pytest.raises(ValueError, match="different sizes"):
        pairwise(A, make_spd(rng, 2, 4))


@pytest.mark.parametrize("metric", PAIRED)
def test_paired_rejects_non_spd_naming_the_argument(metric, rng, make_spd):
    A = make_spd(rng, 2, 3)
    distance = PAIRED[metric][0]
    with pytest.raises(ValueError, match=r"B\[0\] is not positive definite"):
        distance(A, -A)
    with pytest.raises(ValueError, match=r"A\[0\] is not positive definite"):
        distance(-A, A)


@pytest.mark.parametrize("chunk_size", [0, -2, 1.5, True])
def test_pairwise_airm_rejects_bad_chunk_size(chunk_size, rng, make_spd):
    with pytest.raises(ValueError, match="chunk_size"):
        pairwise_airm(make_spd(rng, 3, 2), chunk_size=chunk_size)
