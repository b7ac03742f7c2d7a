import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric.estimators.pair_covariance import (
    KISSME,
    pair_difference_covariances,
    psd_projection,
)
from rankmetric.evaluate import knn_accuracy
from rankmetric.io import load_model, save_model


@parametrize_with_checks([KISSME()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _brute_force_covariances(X, y):
    """Σ_S and Σ_D by enumerating every ordered pair."""
    n = X.shape[0]
    sim, dis = [], []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            d = X[i] - X[j]
            (sim if y[i] == y[j] else dis).append(np.outer(d, d))
    return np.mean(sim, axis=0), np.mean(dis, axis=0)


def test_pair_covariances_match_enumeration(rng):
    X = rng.normal(size=(13, 4)) + 5.0
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0, 1, 3, 3])
    sigma_s, sigma_d = pair_difference_covariances(X, y)
    ref_s, ref_d = _brute_force_covariances(X, y)
    np.testing.assert_allclose(sigma_s, ref_s, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sigma_d, ref_d, rtol=1e-10, atol=1e-12)


def test_psd_projection_clips_negative_eigenvalues(rng):
    A = rng.normal(size=(5, 5))
    A = A + A.T
    values, vectors = psd_projection(A)
    assert np.all(values >= 0) and np.all(np.diff(values) <= 0)
    ref = np.linalg.eigvalsh(A)
    np.testing.assert_allclose(np.sort(values), np.sort(np.clip(ref, 0, None)), atol=1e-12)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(5), atol=1e-12)


def test_metric_is_the_projected_likelihood_ratio(rng):
    """With every PCA axis kept, M = Π_PSD(Σ_S⁻¹ − Σ_D⁻¹) in the input space (PCA is a rotation)."""
    X = rng.normal(size=(60, 4)) * np.array([1.0, 3.0, 0.5, 2.0])
    y = rng.integers(0, 3, size=60)
    est = KISSME(n_components=4, regularization=0.0).fit(X, y)
    ref_s, ref_d = _brute_force_covariances(X, y)
    values, vectors = np.linalg.eigh(np.linalg.inv(ref_s) - np.linalg.inv(ref_d))
    expected = (vectors * np.clip(values, 0, None)) @ vectors.T
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), expected, rtol=1e-8, atol=1e-10)


def test_pca_reduction_shapes_and_orthonormal_axes(rng):
    X = rng.normal(size=(40, 7))
    y = np.repeat([0, 1], 20)
    est = KISSME(n_components=3).fit(X, y)
    assert est.components_.shape == (3, 7)
    assert est.transform(X).shape == (40, 3)
    np.testing.assert_allclose(est.pca_components_ @ est.pca_components_.T, np.eye(3), atol=1e-12)


def test_learns_to_ignore_noise_features(rng):
    """Two informative features buried under large-variance noise: KISSME beats Euclidean k-NN."""
    n = 300
    y = rng.integers(0, 3, size=n)
    angles = np.array([0.0, 2.1, 4.2])[y]
    informative = 2.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    informative += 0.3 * rng.normal(size=informative.shape)
    X = np.hstack([informative, 4.0 * rng.normal(size=(n, 6))])
    train, test = np.arange(200), np.arange(200, n)
    est = KISSME().fit(X[train], y[train])
    learned = knn_accuracy(est.transform(X[train]), y[train], est.transform(X[test]), y[test])
    euclidean = knn_accuracy(X[train], y[train], X[test], y[test])
    assert learned > 0.9 > euclidean + 0.1


def test_deterministic_and_saves(tmp_path, rng):
    X = rng.normal(size=(50, 5))
    y = rng.integers(0, 2, size=50)
    a = KISSME(n_components=4).fit(X, y)
    b = KISSME(n_components=4).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    save_model(a, tmp_path / "k.npz")
    loaded = load_model(tmp_path / "k.npz")
    np.testing.assert_array_equal(loaded.transform(X), a.transform(X))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 9}, "n_components"),
        ({"n_components": 2.5}, "n_components"),
        ({"regularization": -1.0}, "regularization"),
        ({"regularization": np.inf}, "regularization"),
    ],
)
def test_bad_parameters_raise(params, message, rng):
    X = rng.normal(size=(20, 5))
    y = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match=message):
        KISSME(**params).fit(X, y)


def test_needs_a_similar_pair(rng):
    with pytest.raises(ValueError, match="positive pairs"):
        KISSME().fit(rng.normal(size=(3, 2)), [0, 1, 2])


def test_kissme_and_xqda_share_one_ridge_and_one_covariance():
    import scipy.linalg

    from rankmetric.estimators.pair_covariance import XQDA, _covariances, xqda_subspace

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 5)), np.arange(60) % 4
    sigma_s, sigma_d = _covariances.pair_difference_covariances(X, y)
    values, _ = xqda_subspace(sigma_s, sigma_d, 1e-3)
    expected = scipy.linalg.eigh(sigma_d, _covariances.ridged(sigma_s, 1e-3), eigvals_only=True)
    np.testing.assert_allclose(values, expected[::-1])
    ridge = _covariances.ridged(sigma_s, 0.1) - sigma_s
    np.testing.assert_allclose(ridge, 0.1 * np.trace(sigma_s) / 5 * np.eye(5))
    assert XQDA.__mro__[1] is KISSME.__mro__[1] is _covariances.PairCovarianceLearner
