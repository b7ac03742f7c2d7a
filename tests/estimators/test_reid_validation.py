"""WARCA and kernel WARCA on a simulated multi-camera histogram set: validation on held-out
identities, early stopping inside scikit-learn tools, and no silent model below Euclidean."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from rankmetric.estimators.warca import WARCA, KernelWARCA
from rankmetric.training import UntrainedModelWarning, retrieval_score

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def camera_histograms(n_ids=60, n_cameras=3, n_bins=24, seed=0):
    """Identities seen once by each of ``n_cameras`` cameras, described by histograms.

    An identity is a Dirichlet histogram; each camera multiplies the bins by its own transfer
    curve (colour / lighting bias) and every image is a multinomial draw of 60 counts from the
    result (sampling noise), normalised to sum 1 and square-rooted (as LOMO's features are).
    """
    rng = np.random.default_rng(seed)
    identities = rng.dirichlet(np.full(n_bins, 0.5), size=n_ids)
    transfer = rng.lognormal(sigma=0.8, size=(n_cameras, n_bins))
    X, ids, cams = [], [], []
    for c in range(n_cameras):
        p = identities * transfer[c]
        p /= p.sum(axis=1, keepdims=True)
        counts = np.array([rng.multinomial(60, row) for row in p])
        X.append(np.sqrt(counts / 60.0))
        ids.append(np.arange(n_ids))
        cams.append(np.full(n_ids, c))
    return np.vstack(X), np.concatenate(ids), np.concatenate(cams)


def split_identities(ids, seed=0):
    perm = np.random.default_rng(seed).permutation(np.unique(ids))
    half = perm.size // 2
    return np.isin(ids, perm[:half]), np.isin(ids, perm[half:])


def test_score(Z, ids):
    """Leave-one-out recall@1 of the test identities."""
    return retrieval_score(
        torch.as_tensor(Z, dtype=torch.float64), torch.as_tensor(ids), "recall@1"
    )


test_score.__test__ = False  # a helper, not a test


@pytest.fixture(scope="module")
def reid():
    X, ids, _ = camera_histograms()
    train, test = split_identities(ids)
    return X[train], ids[train], X[test], ids[test]


def test_warca_with_held_out_validation_identities_trains_and_stops_early(reid):
    X, y, Xt, yt = reid
    params = {"n_components": 16, "max_iter": 1500, "validation_every": 20, "n_iter_no_change": 3}
    model = WARCA(
        validation_fraction=0.25, validation_split="groups", tol=None, random_state=0, **params
    ).fit(X, y)
    assert model.n_iter_ < 1500  # n_iter_no_change ended it
    assert model.best_iter_ > 0
    assert max(model.validation_scores_) > model.initial_validation_score_
    assert test_score(model.transform(Xt), yt) > test_score(Xt, yt)
    # the same through the deprecated fit(X, y, X_val, y_val), identities absent from y
    val = np.isin(y, np.unique(y)[:8])
    with pytest.warns(FutureWarning, match="validation_fraction"):
        explicit = WARCA(random_state=0, tol=None, **params).fit(X[~val], y[~val], X[val], y[val])
    assert explicit.best_iter_ > 0 and explicit.n_iter_ < 1500


@pytest.mark.filterwarnings("ignore:.*held-out check")
def test_validation_fraction_works_inside_pipeline_and_grid_search(reid):
    X, y, _, _ = reid
    est = WARCA(
        n_components=8,
        max_iter=200,
        validation_every=20,
        validation_fraction=0.25,
        validation_split="groups",
        random_state=0,
    )
    pipe = make_pipeline(FunctionTransformer(), est)
    pipe.fit(X, y)
    assert pipe[-1].validation_scores_
    search = GridSearchCV(est, {"reg_lambda": [1e-3, 1e-2]}, cv=2, scoring=_loo_scorer)
    search.fit(X, y)
    assert search.best_estimator_.validation_scores_


def _loo_scorer(estimator, X, y):
    return test_score(estimator.transform(X), y)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"batch_size": None, "learning_rate": None, "tol_window": None},
        {"learning_rate": 1.0},  # far too large: diverges
        {"learning_rate": 1e-6, "max_iter": 30},  # far too small: learns nothing
        {"kernel": "rbf", "gamma": 1e3},  # far too narrow a kernel
        {"n_landmarks": 40},
    ],
)
def test_kernel_warca_never_returns_a_model_below_euclidean_without_a_warning(reid, params):
    X, y, Xt, yt = reid
    base = {"validation_fraction": 0.25, "validation_split": "groups", "random_state": 0}
    base.update({"n_components": 16, "validation_every": 20, "max_iter": 600})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = KernelWARCA(**{**base, **params}).fit(X, y)
    warned = [w for w in caught if issubclass(w.category, UntrainedModelWarning)]
    learned, euclidean = test_score(model.transform(Xt), yt), test_score(Xt, yt)
    if learned < euclidean:
        assert warned, (params, learned, euclidean)
    if model.reference_scores_["learned"] < model.reference_scores_["euclidean"]:
        assert warned


def test_kernel_warca_automatic_step_size_does_not_diverge(reid):
    X, y, _, _ = reid
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedModelWarning)
        model = KernelWARCA(
            batch_size=None, learning_rate=None, tol_window=None, n_components=16, random_state=0
        ).fit(X, y)
    assert model.learning_rate_ <= 0.01 * np.sqrt(512 / model.batch_size_)
    assert max(model.loss_curve_) < 10 * model.loss_curve_[0]


def test_automatic_step_size_shrinks_with_the_kernel_row_mass():
    from rankmetric.estimators.warca.kernel import KERNEL_ROW_MASS, _step_scale

    assert _step_scale(torch.full((10, 1000), 0.5)) == pytest.approx(KERNEL_ROW_MASS / 500)
    assert _step_scale(torch.full((10, 10), 0.5)) == 1.0


def test_ssne_validates_on_held_out_identities(reid):
    from rankmetric import SSNE

    X, y, _, _ = reid
    model = SSNE(
        max_iter=200,
        validation_fraction=0.25,
        validation_split="groups",
        validation_every=20,
        random_state=0,
    ).fit(X, y)
    assert len(model.validation_scores_) == 10
    assert model.best_iter_ is not None and model.initial_validation_score_ is not None
    kept = model.initial_validation_score_ if model.best_iter_ == 0 else None
    if kept is None:
        assert model.validation_scores_[model.best_iter_ // 20 - 1] == max(model.validation_scores_)
    with pytest.raises(ValueError, match="validation_fraction needs class labels"):
        SSNE(validation_fraction=0.2).fit_pairs(X, [[0, 1]], [1.0])


FAST = {"n_components": 16, "max_iter": 300}


@pytest.mark.parametrize(
    "params",
    [
        {"learning_rate": 1e-6, "max_iter": 30},  # learns nothing
        {"kernel": "rbf", "gamma": 1e3},  # far too narrow: separates the training items only
    ],
)
def test_kernel_warca_without_validation_data_checks_on_held_out_identities(reid, params):
    """No X_val and no validation_fraction: the held-out check (every learner's default) fits
    the same settings on part of the identities, so a model below Euclidean on unseen
    identities is reported; the model itself is that of held_out_check=False, whose own check
    (reference_scores_) can only rank training items, which such a model may pass."""
    X, y, Xt, yt = reid
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = KernelWARCA(**{**FAST, **params}, random_state=0).fit(X, y)
    assert test_score(model.transform(Xt), yt) < test_score(Xt, yt)  # a bad model indeed
    check = model.held_out_check_
    assert check["status"] == "done" and check["below"] and check["held_out"] == "classes"
    assert any("held-out check" in str(w.message) for w in caught)
    plain = KernelWARCA(**{**FAST, **params}, random_state=0, held_out_check=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.fit(X, y)
    assert plain.reference_scores_["items"] == "training" and plain.held_out_check_ is None
    np.testing.assert_array_equal(plain.components_, model.components_)  # the same model


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:.*held-out check")
def test_held_out_check_needs_enough_identities(reid):
    X, y, _, _ = reid
    few = np.isin(y, np.unique(y)[:5])  # 5 identities with two items: no second fit
    model = KernelWARCA(n_components=8, max_iter=40, random_state=0).fit(X[few], y[few])
    assert model.held_out_check_["status"] == "skipped"
    checked = KernelWARCA(n_components=8, max_iter=40, random_state=0).fit(X, y)  # 30 ids
    assert checked.held_out_check_["status"] == "done" and checked.held_out_check_["n_folds"] == 1
    assert checked.best_iter_ is None  # no early stopping: the model is validation_fraction=0's
    with pytest.raises(ValueError, match="validation_fraction"):
        KernelWARCA(validation_fraction="sometimes").fit(X, y)
