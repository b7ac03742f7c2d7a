"""Property-based tests (hypothesis) where the module tests check examples only.

* SPD matrix functions: inverse pairs, power laws, orthogonal equivariance (the geometry tests
  compare against pyRiemann on fixed draws);
* distances: the metric axioms, the triangle inequality included (the geometry tests cover
  symmetry and invariances);
* input validation: ``check_spd_array`` accepts every SPD stack and names the first bad matrix;
* kernels: Gram matrices are symmetric, bounded, positive semi-definite and match scikit-learn;
* evaluation: the k-NN vote equals scikit-learn's on random data, vote ties included;
* every fitted estimator's learned distance is a pseudo-metric, and a Mahalanobis learner's
  matrix is positive semi-definite and gives the same distances.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.metrics.pairwise import chi2_kernel, rbf_kernel
from sklearn.neighbors import KNeighborsClassifier

from rankmetric.evaluate import knn_predict
from rankmetric.geometry import (
    airm_distance,
    log_euclidean_distance,
    spd_exp,
    spd_inv_sqrt,
    spd_log,
    spd_power,
    spd_sqrt,
    symmetrize,
)
from rankmetric.geometry import check_spd as check_spd_array
from rankmetric.kernels import pairwise_kernel

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
sizes = st.integers(min_value=1, max_value=6)
spreads = st.floats(min_value=0.0, max_value=3.0)  # log-eigenvalue spread: condition ≤ e^~12


def _spd(seed: int, n: int, c: int, spread: float = 1.0) -> torch.Tensor:
    """``n`` random float64 SPD matrices ``Q diag(exp(spread · z)) Qᵀ`` of size ``c``."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, c, c)))[0]
    eigenvalues = np.exp(spread * rng.standard_normal((n, 1, c)))
    return torch.from_numpy(symmetrize_np((Q * eigenvalues) @ np.swapaxes(Q, -1, -2)))


def symmetrize_np(A: np.ndarray) -> np.ndarray:
    return (A + np.swapaxes(A, -1, -2)) / 2


def _close(A: torch.Tensor, B: torch.Tensor, rtol: float = 1e-8, atol: float = 1e-9) -> None:
    torch.testing.assert_close(A, B, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- matrix functions


@SETTINGS
@given(seed=seeds, c=sizes, spread=spreads)
def test_log_and_exp_are_inverse(seed, c, spread):
    X = _spd(seed, 3, c, spread)
    _close(spd_exp(spd_log(X)), X, rtol=1e-7, atol=1e-9 * float(X.abs().max()))
    S = symmetrize(torch.from_numpy(np.random.default_rng(seed).standard_normal((3, c, c))))
    _close(spd_log(spd_exp(S)), S, rtol=1e-7, atol=1e-9)


@SETTINGS
@given(seed=seeds, c=sizes, spread=spreads)
def test_square_roots_and_powers_compose(seed, c, spread):
    X = _spd(seed, 3, c, spread)
    scale = float(X.abs().max())
    root = spd_sqrt(X)
    _close(root @ root, X, rtol=1e-7, atol=1e-9 * scale)
    eye = torch.eye(c, dtype=X.dtype).expand_as(X)
    W = spd_inv_sqrt(X)
    _close(W @ X @ W, eye, rtol=1e-6, atol=1e-7)
    _close(spd_power(X, 0.3) @ spd_power(X, 0.7), X, rtol=1e-6, atol=1e-9 * scale)
    inverse = torch.linalg.inv(X)
    _close(spd_power(X, -1.0), inverse, rtol=1e-6, atol=1e-9 * float(inverse.abs().max()))


@SETTINGS
@given(seed=seeds, c=sizes)
def test_matrix_functions_are_orthogonally_equivariant_and_symmetric(seed, c):
    X = _spd(seed, 2, c)
    Q = torch.linalg.qr(torch.from_numpy(np.random.default_rng(seed + 1).standard_normal((c, c))))[
        0
    ]
    for f in (spd_log, spd_sqrt, spd_inv_sqrt, spd_exp):
        FX = f(X)
        _close(FX, FX.transpose(-1, -2), rtol=0, atol=1e-12 * max(1.0, float(FX.abs().max())))
        _close(f(Q @ X @ Q.T), Q @ FX @ Q.T, rtol=1e-6, atol=1e-8 * max(1.0, float(FX.abs().max())))


# ---------------------------------------------------------------- distances


@SETTINGS
@given(seed=seeds, c=sizes, spread=spreads)
@pytest.mark.parametrize("distance", [airm_distance, log_euclidean_distance], ids=["airm", "le"])
def test_distances_satisfy_the_metric_axioms(distance, seed, c, spread):
    A, B, C = _spd(seed, 3, c, spread)
    assert float(distance(A, A)) == pytest.approx(0.0, abs=1e-6)
    d_ab, d_ba = float(distance(A, B)), float(distance(B, A))
    assert d_ab >= 0.0 and d_ab == pytest.approx(d_ba, rel=1e-9, abs=1e-9)
    d_bc, d_ac = float(distance(B, C)), float(distance(A, C))
    assert d_ac <= d_ab + d_bc + 1e-9 * (1.0 + d_ab + d_bc)


@SETTINGS
@given(seed=seeds, c=sizes, spread=spreads)
def test_airm_equals_log_euclidean_for_commuting_matrices(seed, c, spread):
    """For matrices sharing an eigenbasis both distances are ||log λ_A − log λ_B||."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((c, c)))[0]
    la, lb = spread * rng.standard_normal(c), spread * rng.standard_normal(c)
    A = torch.from_numpy(symmetrize_np((Q * np.exp(la)) @ Q.T))
    B = torch.from_numpy(symmetrize_np((Q * np.exp(lb)) @ Q.T))
    expected = np.linalg.norm(la - lb)
    assert float(airm_distance(A, B)) == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert float(log_euclidean_distance(A, B)) == pytest.approx(expected, rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------- validation


@SETTINGS
@given(seed=seeds, n=st.integers(1, 5), c=sizes, spread=spreads)
def test_check_spd_array_accepts_spd_and_names_the_first_bad_matrix(seed, n, c, spread):
    X = _spd(seed, n, c, spread).numpy()
    np.testing.assert_array_equal(check_spd_array(X), X)
    bad = int(np.random.default_rng(seed).integers(n))
    indefinite = X.copy()
    w, U = np.linalg.eigh(indefinite[bad])
    w[0] = -w[-1]
    indefinite[bad] = symmetrize_np((U * w) @ U.T)
    with pytest.raises(ValueError, match=rf"X\[{bad}\] is not positive definite"):
        check_spd_array(indefinite)
    if c > 1:
        asymmetric = X.copy()
        asymmetric[bad, 0, c - 1] += 0.1 * np.abs(X[bad]).max()
        with pytest.raises(ValueError, match=rf"X\[{bad}\] is not symmetric"):
            check_spd_array(asymmetric)


# ---------------------------------------------------------------- kernels


@SETTINGS
@given(
    seed=seeds,
    n=st.integers(2, 25),
    d=st.integers(1, 8),
    kernel=st.sampled_from(["chi2_rbf", "rbf"]),
)
def test_kernel_matrices_are_bounded_psd_and_match_scikit_learn(seed, n, d, kernel):
    rng = np.random.default_rng(seed)
    X = rng.gamma(0.5, size=(n, d)) * (rng.random((n, d)) < 0.7)  # sparse, histogram-like
    gamma = float(rng.uniform(0.05, 2.0))
    K = pairwise_kernel(X, kernel=kernel, gamma=gamma, dtype=torch.float64).numpy()
    reference = chi2_kernel(X, gamma=gamma) if kernel == "chi2_rbf" else rbf_kernel(X, gamma=gamma)
    assert_allclose(K, reference, rtol=1e-10, atol=1e-12)
    assert_allclose(K, K.T, rtol=0, atol=1e-12)
    assert_allclose(np.diag(K), 1.0, rtol=0, atol=1e-12)
    assert K.min() >= 0.0 and K.max() <= 1.0 + 1e-12
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * n


# ---------------------------------------------------------------- evaluation


@SETTINGS
@given(seed=seeds, n=st.integers(4, 40), k=st.integers(1, 6), n_classes=st.integers(2, 4))
def test_knn_vote_equals_scikit_learn_ties_included(seed, n, k, n_classes):
    rng = np.random.default_rng(seed)
    X_train, X_test = rng.normal(size=(n, 3)), rng.normal(size=(7, 3))
    y_train = rng.integers(0, n_classes, n)
    k = min(k, n)
    ours = knn_predict(X_train, y_train, X_test, k=k)
    theirs = KNeighborsClassifier(k, algorithm="brute").fit(X_train, y_train).predict(X_test)
    np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------- learned metrics


def _random_inputs(spec, X: np.ndarray, seed: int, n: int) -> np.ndarray:
    """``n`` new inputs of the estimator's kind near its training data (valid: SPD or ≥ 0)."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(X), n)
    if spec.input_kind == "spd":
        c = X.shape[1]
        noise = symmetrize_np(0.3 * rng.standard_normal((n, c, c)))
        w, U = np.linalg.eigh(noise)
        E = (U * np.exp(w)[:, None, :]) @ np.swapaxes(U, -1, -2)
        R = np.linalg.cholesky(X[pick])
        return symmetrize_np(R @ E @ np.swapaxes(R, -1, -2))
    return np.abs(X[pick] + 0.5 * rng.standard_normal((n, X.shape[1])))


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_learned_distance_is_a_pseudo_metric(spec, fitted_models, seed):
    est, X, _ = fitted_models(spec)
    A, B, C = np.split(_random_inputs(spec, X, seed, 18), 3)
    d_ab, d_ba = est.pair_distances(A, B), est.pair_distances(B, A)
    d_bc, d_ac = est.pair_distances(B, C), est.pair_distances(A, C)
    scale = 1.0 + np.abs(np.concatenate([d_ab, d_bc, d_ac])).max()
    assert np.isfinite(d_ab).all() and (d_ab >= 0).all()
    assert_allclose(d_ab, d_ba, rtol=1e-5, atol=1e-6 * scale)
    assert_allclose(est.pair_distances(A, A), 0.0, atol=1e-3 * scale)
    assert np.all(d_ac <= d_ab + d_bc + 1e-4 * scale)


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_mahalanobis_matrix_is_psd_and_gives_the_distances(spec, fitted_models, seed):
    est, X, _ = fitted_models(spec)
    if not hasattr(est, "get_mahalanobis_matrix"):
        return  # not a linear (Mahalanobis) learner
    M = est.get_mahalanobis_matrix().astype(np.float64)
    assert_allclose(M, M.T, rtol=0, atol=1e-10 * np.abs(M).max())
    assert np.linalg.eigvalsh(M).min() >= -1e-6 * np.abs(M).max()
    A, B = np.split(_random_inputs(spec, X, seed, 10), 2)
    diff = A - B
    expected = np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", diff, M, diff), 0.0))
    assert_allclose(est.pair_distances(A, B), expected, rtol=1e-4, atol=1e-6)
