"""ITML: Bregman projections against Algorithm 1, constraints, bounds, fitting, sklearn contract."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric.estimators.itml import (
    ITML,
    components_from_metric,
    distance_bounds,
    itml_projections,
    sample_pair_constraints,
)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([ITML(max_iter=30, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _noisy_classes(rng, n_per_class=40, n_noise=6, noise_scale=4.0):
    """Three well separated classes in two features, buried under large-variance noise features."""
    angles = np.repeat([0.0, 2.1, 4.2], n_per_class)
    informative = 2.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    informative += 0.3 * rng.normal(size=informative.shape)
    noise = noise_scale * rng.normal(size=(angles.size, n_noise))
    return np.hstack([informative, noise]), np.repeat([0, 1, 2], n_per_class)


def _reference_itml(V, similar, bounds, prior, gamma, max_iter, tol):
    """Algorithm 1 of Davis et al. (2007) with the authors' constants, dense updates."""
    A = prior.copy()
    lam, lam_old = np.zeros(len(V)), np.zeros(len(V))
    xi = np.where(similar, bounds[0], bounds[1]).astype(float)
    for sweep in range(1, max_iter + 1):
        for c in range(len(V)):
            v, delta = V[c], 1.0 if similar[c] else -1.0
            p = v @ A @ v
            alpha = min(lam[c], delta * gamma / (gamma + 1) * (1 / p - 1 / xi[c]))
            beta = delta * alpha / (1 - delta * alpha * p)
            xi[c] = gamma * xi[c] / (gamma + delta * alpha * xi[c])
            lam[c] -= alpha
            A = A + beta * np.outer(A @ v, A @ v)
        norm = np.linalg.norm(lam) + np.linalg.norm(lam_old)
        if norm == 0 or np.abs(lam - lam_old).sum() / norm < tol:
            return A, sweep
        lam_old = lam.copy()
    return A, max_iter


def _tiny_constraints(rng, n=20, d=3):
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 2
    a, b, similar = sample_pair_constraints(y, 15, rng)
    return X, y, X[a] - X[b], similar


@pytest.mark.parametrize("prior_scale", [1.0, 0.5])
def test_projections_match_algorithm_1(rng, prior_scale):
    X, y, V, similar = _tiny_constraints(rng)
    prior = prior_scale * np.eye(3) + 0.1
    bounds = np.array([0.5, 6.0])
    # the first sweep runs over every constraint: Algorithm 1's arithmetic, to rounding
    M, sweeps, _ = itml_projections(V, similar, bounds, prior, 1.0, 1, 1e-6)
    reference, _ = _reference_itml(V, similar, bounds, prior, 1.0, 1, 1e-6)
    np.testing.assert_allclose(M, reference, rtol=1e-9, atol=1e-12)
    # later sweeps visit the active constraints only, between full sweeps: the same solution
    M, sweeps, converged = itml_projections(V, similar, bounds, prior, 1.0, 5000, 1e-10)
    reference, ref_sweeps = _reference_itml(V, similar, bounds, prior, 1.0, 5000, 1e-10)
    assert converged and ref_sweeps < 5000
    np.testing.assert_allclose(M, reference, rtol=1e-6, atol=1e-9)


def test_hard_constraints_hold_and_metric_stays_psd(rng):
    X, y, V, similar = _tiny_constraints(rng)
    # A feasible problem: only dissimilar pairs differ along the first axis.
    V[:, 0] = np.where(similar, 0.0, 3.0 + np.abs(rng.normal(size=len(V))))
    u, l = 0.5, 6.0
    M, _, converged = itml_projections(V, similar, np.array([u, l]), np.eye(3), np.inf, 5000, 1e-9)
    d = np.einsum("pd,de,pe->p", V, M, V)
    assert converged
    assert np.all(d[similar] <= u * (1 + 1e-6))
    assert np.all(d[~similar] >= l * (1 - 1e-6))
    np.testing.assert_allclose(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0


def test_one_projection_lands_on_the_bound(rng):
    """With γ = ∞ a violated similar constraint is projected exactly onto d_M = u."""
    v = rng.normal(size=4)
    u = 0.25 * v @ v
    M, _, _ = itml_projections(
        v[None], np.array([True]), np.array([u, 1.0]), np.eye(4), np.inf, 1, 1
    )
    assert v @ M @ v == pytest.approx(u, rel=1e-12)


def test_pair_constraints_follow_the_labels(rng):
    y = np.repeat([0, 1, 2], 10)
    a, b, similar = sample_pair_constraints(y, 40, rng)
    assert np.all((y[a] == y[b]) == similar)
    assert np.all(a != b)
    keys = np.minimum(a, b) * 30 + np.maximum(a, b)
    assert np.unique(keys).size == keys.size
    assert 30 < similar.sum() <= 40 and 30 < (~similar).sum() <= 40


def test_bounds_are_percentiles_of_prior_distances(rng):
    X = rng.normal(size=(60, 3))
    diff = X[:, None] - X[None]
    all_pairs = (diff**2).sum(-1)[np.triu_indices(60, 1)]
    u, l = distance_bounds(X, np.eye(3), np.random.default_rng(1))
    np.testing.assert_allclose([u, l], np.percentile(all_pairs, [5, 95]), rtol=0.1)
    scaled = distance_bounds(X, 2.0 * np.eye(3), np.random.default_rng(1))
    np.testing.assert_allclose(scaled, [2 * u, 2 * l])


def test_components_factor_the_metric(rng):
    B = rng.normal(size=(4, 4))
    for M in (B @ B.T + 0.1 * np.eye(4), B[:2].T @ B[:2]):  # definite, then rank 2
        L = components_from_metric(M)
        np.testing.assert_allclose(L.T @ L, M, atol=1e-10)


def test_fit_improves_knn_where_euclidean_fails(rng):
    X, y = _noisy_classes(rng)
    Xtest, ytest = _noisy_classes(rng)
    euclidean = KNeighborsClassifier(3).fit(X, y).score(Xtest, ytest)
    model = ITML(random_state=0).fit(X, y)
    learned = (
        KNeighborsClassifier(3).fit(model.transform(X), y).score(model.transform(Xtest), ytest)
    )
    assert euclidean < 0.8
    assert learned > 0.95
    assert np.linalg.eigvalsh(model.get_mahalanobis_matrix()).min() > 0


def test_fit_distances_use_the_learned_metric(rng):
    X, y = _noisy_classes(rng, n_per_class=10)
    model = ITML(prior="covariance", bounds=(1.0, 20.0), random_state=0).fit(X, y)
    M = model.get_mahalanobis_matrix()
    diff = X[:5] - X[5:10]
    np.testing.assert_allclose(
        model.pair_distances(X[:5], X[5:10]) ** 2, np.einsum("pd,de,pe->p", diff, M, diff)
    )
    np.testing.assert_array_equal(model.bounds_, [1.0, 20.0])
    assert 0 < model.n_constraints_ <= 2 * 20 * 9


def test_same_seed_same_result(rng):
    X, y = _noisy_classes(rng, n_per_class=10)
    fits = [ITML(random_state=5).fit(X, y) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].components_, fits[1].components_)


def test_convergence_warning_at_max_iter(rng):
    X, y = _noisy_classes(rng, n_per_class=10)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        model = ITML(max_iter=1, random_state=0).fit(X, y)
    assert model.n_iter_ == 1


def test_save_and_load_round_trip(rng, tmp_path):
    X, y = _noisy_classes(rng, n_per_class=10)
    model = ITML(random_state=0).fit(X, y)
    model.save(tmp_path / "itml.npz")
    loaded = ITML.load(tmp_path / "itml.npz")
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


@pytest.mark.parametrize(
    ("params", "y", "message"),
    [
        ({}, np.zeros(10), "1 class"),
        ({}, np.arange(10), "no positive pair"),
        ({"slack_weight": 0.0}, np.arange(10) % 2, "slack_weight"),
        ({"max_iter": 0}, np.arange(10) % 2, "max_iter"),
        ({"n_constraints": 0}, np.arange(10) % 2, "n_constraints"),
        ({"bounds": (1.0, -2.0)}, np.arange(10) % 2, "bounds"),
        ({"bounds": (1.0, 2.0, 3.0)}, np.arange(10) % 2, "bounds"),
        ({"prior": "lda"}, np.arange(10) % 2, "prior must be"),
        ({"prior": np.eye(2)}, np.arange(10) % 2, "prior has shape"),
        ({"prior": -np.eye(3)}, np.arange(10) % 2, "not positive definite"),
    ],
)
def test_bad_input_raises(rng, params, y, message):
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match=message):
        ITML(**params).fit(X, y)


def test_singular_covariance_prior_raises(rng):
    X = rng.normal(size=(10, 3))
    X[:, 2] = X[:, 0]
    with pytest.raises(ValueError, match="non-singular covariance"):
        ITML(prior="covariance").fit(X, np.arange(10) % 2)
