import itertools

import numpy as np
import pytest
import scipy.linalg
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric.estimators.pair_covariance import XQDA, xqda_subspace
from rankmetric.evaluate import knn_accuracy
from rankmetric.io import load_model, save_model


@parametrize_with_checks([XQDA()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _brute_force_xqda(X, y, reg, r):
    """XQDA from its definition: enumerate the pairs, solve, form W M Wᵀ with explicit inverses."""
    intra, extra = [], []
    for i, j in itertools.permutations(range(X.shape[0]), 2):
        d = X[i] - X[j]
        (intra if y[i] == y[j] else extra).append(np.outer(d, d))
    sigma_i, sigma_e = np.mean(intra, axis=0), np.mean(extra, axis=0)
    sigma_i = sigma_i + reg * np.trace(sigma_i) / X.shape[1] * np.eye(X.shape[1])
    values, vectors = scipy.linalg.eigh(sigma_e, sigma_i)
    W = vectors[:, ::-1][:, :r]
    M = np.linalg.inv(W.T @ sigma_i @ W) - np.linalg.inv(W.T @ sigma_e @ W)
    return W @ M @ W.T, values[::-1]


def test_metric_matches_the_closed_form(rng):
    X = rng.normal(size=(24, 5)) * np.array([1.0, 3.0, 0.5, 2.0, 1.0])
    y = np.repeat(np.arange(8), 3)
    X[:, 0] += 2.0 * y  # one discriminative direction
    for r in (1, 3):
        est = XQDA(n_components=r, regularization=1e-2).fit(X, y)
        expected, values = _brute_force_xqda(X, y, 1e-2, r)
        assert values[r - 1] > 1.0  # the kept eigenvalues make M PSD: no clipping
        np.testing.assert_allclose(est.get_mahalanobis_matrix(), expected, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(est.eigenvalues_, values[:r], rtol=1e-9)


def test_default_rank_keeps_eigenvalues_above_one(rng):
    X = rng.normal(size=(60, 6))
    y = np.repeat(np.arange(20), 3)
    X[:, :2] += rng.normal(size=(20, 2))[y] * 3.0
    est = XQDA().fit(X, y)
    values, _ = xqda_subspace(*_covariances(X, y), 1e-3)
    assert est.components_.shape[0] == (values > 1).sum() >= 2
    assert np.all(est.eigenvalues_ > 1)


def _covariances(X, y):
    from rankmetric.estimators.pair_covariance import pair_difference_covariances

    return pair_difference_covariances(X, y)


def test_subspace_is_sigma_intra_orthonormal(rng):
    X = rng.normal(size=(30, 4))
    y = np.repeat(np.arange(10), 3)
    sigma_i, sigma_e = _covariances(X, y)
    values, W = xqda_subspace(sigma_i, sigma_e, 0.0)
    np.testing.assert_allclose(W.T @ sigma_i @ W, np.eye(4), atol=1e-9)
    np.testing.assert_allclose(W.T @ sigma_e @ W, np.diag(values), atol=1e-9)
    assert np.all(np.diff(values) <= 1e-12)


def test_clips_eigenvalues_below_one(rng):
    X = rng.normal(size=(30, 4))
    y = np.repeat(np.arange(10), 3)
    est = XQDA(n_components=4).fit(X, y)
    below = est.eigenvalues_ < 1.0
    assert below.any()
    np.testing.assert_allclose(est.components_[below], 0.0)
    assert np.all(np.linalg.eigvalsh(est.get_mahalanobis_matrix()) > -1e-9)


def test_finds_identities_under_shared_nuisance(rng):
    """Identities in 2 directions under large nuisance: XQDA's k-NN beats Euclidean."""
    n_ids = 60
    ids = np.repeat(np.arange(n_ids), 4)
    centres = rng.normal(size=(n_ids, 2)) * 2.0
    X = np.hstack([centres[ids] + 0.2 * rng.normal(size=(ids.size, 2)),
                   4.0 * rng.normal(size=(ids.size, 6))])  # fmt: skip
    train = np.arange(ids.size) % 4 < 3
    est = XQDA().fit(X[train], ids[train])
    Z = est.transform(X)
    learned = knn_accuracy(Z[train], ids[train], Z[~train], ids[~train])
    euclidean = knn_accuracy(X[train], ids[train], X[~train], ids[~train])
    assert learned > euclidean + 0.3


def test_save_load_roundtrip(tmp_path, rng):
    X = rng.normal(size=(30, 4))
    y = np.repeat(np.arange(10), 3)
    est = XQDA(n_components=2).fit(X, y)
    save_model(est, tmp_path / "xqda.npz")
    loaded = load_model(tmp_path / "xqda.npz")
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
    again = XQDA.load(tmp_path / "xqda.npz")
    assert again.get_metric()(X[0], X[1]) == pytest.approx(est.get_metric()(X[0], X[1]))


@pytest.mark.parametrize(
    "params, match",
    [({"n_components": 0}, "n_components"), ({"n_components": 9}, "n_components"),
     ({"regularization": -1.0}, "regularization"), ({"regularization": np.inf}, "regularization")],
)  # fmt: skip
def test_bad_parameters(params, match, rng):
    X = rng.normal(size=(12, 4))
    y = np.repeat(np.arange(4), 3)
    with pytest.raises(ValueError, match=match):
        XQDA(**params).fit(X, y)


def test_needs_two_samples_in_a_class(rng):
    with pytest.raises(ValueError):
        XQDA().fit(rng.normal(size=(4, 3)), np.arange(4))
