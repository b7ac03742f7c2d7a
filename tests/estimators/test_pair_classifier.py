"""PairClassifier: scikit-learn's checks, threshold calibration, model selection over pairs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric import ITML, KISSME, SSNE, PairClassifier
from rankmetric.estimators.pair_classifier import calibrated_threshold

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

_ODD = (
    "the check's data has an odd number of columns, which cannot be a flattened pair (two "
    "points side by side); the same property is tested on pair data in this file"
)
EXPECTED_FAILED = {
    "check_dict_unchanged": _ODD,
    "check_dont_overwrite_parameters": _ODD,
    "check_estimators_dtypes": _ODD,
    "check_estimators_nan_inf": _ODD,
    "check_estimators_pickle": _ODD,
    "check_f_contiguous_array_estimator": _ODD,
    "check_fit2d_predict1d": _ODD,
    "check_fit_score_takes_y": _ODD,
    "check_methods_sample_order_invariance": _ODD,
    "check_methods_subset_invariance": _ODD,
    "check_pipeline_consistency": _ODD,
    "check_supervised_y_2d": _ODD,
    "check_classifiers_one_label": _ODD,
    "check_classifiers_train": (
        "asks for 83% training accuracy on blob class labels given to single 2-D rows; as "
        "pairs of 1-D points, a blob's label is no function of the distance between the two "
        "points, so no pair classifier can fit it; accuracy on real pairs is tested here"
    ),
}


@parametrize_with_checks([PairClassifier()], expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_checks(estimator, check):
    check(estimator)


def _pair_data(seed=0, n_pairs=300, n_classes=3, d=2):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), 20)
    X = 6.0 * rng.normal(size=(n_classes, d))[y] + rng.normal(size=(len(y), d))
    X[:, -1] *= 5.0  # a loud feature the metric should shrink
    p = rng.integers(0, len(y), size=(n_pairs, 2))
    p = p[p[:, 0] != p[:, 1]]
    return X, p, np.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)


def test_forms_of_pairs_agree_and_accuracy_beats_chance():
    X, p, same = _pair_data()
    stacked = PairClassifier().fit(X[p], same)
    flat = PairClassifier().fit(X[p].reshape(len(p), -1), same)
    indexed = PairClassifier(points=X).fit(p, same)
    for clf, pairs in ((flat, X[p].reshape(len(p), -1)), (indexed, p)):
        np.testing.assert_allclose(clf.decision_function(pairs), stacked.decision_function(X[p]))
    assert stacked.n_features_in_ == 4
    assert stacked.score(X[p], same) > 0.85
    np.testing.assert_array_equal(np.unique(stacked.predict(X[p])), [-1, 1])


def test_api_properties_on_pair_data():
    """The generic checks that the odd-width sklearn data cannot exercise, on real pairs."""
    X, p, same = _pair_data(1)
    P = X[p].reshape(len(p), -1)
    clf = PairClassifier(ITML(max_iter=50, random_state=0), probability=True)
    params = clf.get_params()
    clf.fit(P, same)
    assert clf.get_params()["learner"] is params["learner"]  # parameters untouched
    state = dict(vars(clf))
    pred = clf.predict(P)
    assert vars(clf).keys() == state.keys()  # predict changes nothing
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(P), pred)
    order = np.random.default_rng(0).permutation(len(P))
    np.testing.assert_allclose(clf.decision_function(P[order]), clf.decision_function(P)[order])
    np.testing.assert_allclose(clf.decision_function(P[:7]), clf.decision_function(P)[:7])
    np.testing.assert_allclose(
        clf.decision_function(P.astype(np.float32)), clf.decision_function(P), rtol=1e-4
    )
    proba = clf.predict_proba(P)
    assert proba.shape == (len(P), 2) and np.allclose(proba.sum(1), 1)
    assert np.all(np.diff(proba[np.argsort(clf.decision_function(P)), 1]) >= 0)  # monotone
    np.testing.assert_array_equal(clf.classes_[proba.argmax(1)], pred)
    bad = P.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(bad)
    with pytest.raises(ValueError, match="NaN"):
        clone(clf).fit(bad, same)
    with pytest.raises(ValueError, match="2D array"):
        clf.predict(P[0])
    assert not hasattr(PairClassifier(), "predict_proba")  # only with probability=True
    with pytest.raises(ValueError, match="even number of columns"):
        PairClassifier().fit(P[:, :3], same)
    with pytest.raises(ValueError, match="one class"):
        PairClassifier().fit(P, np.ones(len(P)))
    with pytest.warns(Warning, match="column-vector"):
        PairClassifier().fit(P, same[:, None])


def _rates(d, similar, t):
    accept = d < t
    tp = np.sum(accept & similar)
    fp = np.sum(accept & ~similar)
    P, N = similar.sum(), (~similar).sum()
    return tp, fp, P, N


HAND_D = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
HAND_S = np.array([True, True, False, True, False, False])


@pytest.mark.parametrize(
    "strategy, kwargs, expected",
    [
        ("accuracy", {}, 2.5),  # 5/6 correct at 2.5 and at 4.5: the smaller wins
        ("f_beta", {"beta": 1.0}, 4.5),  # F1: 0.8 at 2.5, 6/7 at 4.5
        ("f_beta", {"beta": 0.5}, 2.5),  # precision weighs more: 10/11 at 2.5
        ("max_tpr", {"min_rate": 0.6}, 4.5),  # TNR 2/3 ≥ 0.6 allows TPR 1
        ("max_tpr", {"min_rate": 0.9}, 2.5),  # TNR must stay 1: TPR 2/3
        ("max_tnr", {"min_rate": 0.5}, 2.5),  # TPR 2/3 ≥ 0.5 with TNR 1
        ("max_tnr", {"min_rate": 0.9}, 4.5),  # TPR 1 needs 4 accepted: TNR 2/3
    ],
)
def test_calibrate_threshold_hand_computed(strategy, kwargs, expected):
    assert calibrated_threshold(HAND_D, HAND_S, strategy, **kwargs) == expected


def test_calibrate_threshold_extremes():
    # rejecting everything is best: the threshold sits below the smallest distance
    assert calibrated_threshold(np.array([1.0, 2.0]), np.array([False, True])) == 0.0
    assert calibrated_threshold(np.array([1.0, 2.0]), np.array([True, False])) == 1.5
    with pytest.raises(ValueError, match="min_rate"):
        calibrated_threshold(HAND_D, HAND_S, "max_tpr")
    with pytest.raises(ValueError, match="strategy"):
        calibrated_threshold(HAND_D, HAND_S, "youden")


@pytest.mark.parametrize(
    "strategy, kwargs",
    [
        ("accuracy", {}),
        ("f_beta", {"beta": 2.0}),
        ("max_tpr", {"min_rate": 0.8}),
        ("max_tnr", {"min_rate": 0.8}),
    ],
)
def test_calibrate_threshold_meets_each_definition_by_brute_force(strategy, kwargs):
    X, p, same = _pair_data(2, n_pairs=500)
    clf = PairClassifier().fit(X[p[:250]], same[:250])
    pairs, y = X[p[250:]], same[250:]
    clf.calibrate_threshold(pairs, y, strategy, **kwargs)
    d, similar = clf.pair_distances(pairs), y > 0
    u = np.unique(d)
    candidates = np.r_[u[0] - 1, (u[:-1] + u[1:]) / 2, u[-1] + 1]

    def value(t):
        tp, fp, P, N = _rates(d, similar, t)
        if strategy == "accuracy":
            return (tp + N - fp) / (P + N)
        if strategy == "f_beta":
            b2 = kwargs["beta"] ** 2
            return 0.0 if tp == 0 else (1 + b2) * tp / ((1 + b2) * tp + b2 * (P - tp) + fp)
        if strategy == "max_tpr":
            return tp / P if (N - fp) / N >= kwargs["min_rate"] else -1
        return (N - fp) / N if tp / P >= kwargs["min_rate"] else -1

    best = max(value(t) for t in candidates)
    assert value(clf.threshold_) == pytest.approx(best, abs=1e-12)
    pred = clf.predict(pairs) == 1
    np.testing.assert_array_equal(pred, d < clf.threshold_)


def test_similarity_targets_with_ssne():
    X, p, same = _pair_data(3)
    sims = np.where(same > 0, 0.9, -0.4)
    clf = PairClassifier(SSNE(max_iter=100, random_state=0, device="cpu")).fit(X[p], sims)
    np.testing.assert_array_equal(clf.classes_, [-1, 1])
    assert clf.score(X[p], same) > 0.8
    with pytest.raises(ValueError, match="continuous"):
        PairClassifier().fit(X[p], 3.0 * sims)


def test_cross_val_score_and_grid_search_over_the_learner():
    X, p, same = _pair_data(4, n_pairs=400, d=4)
    pairs = X[p]
    scores = cross_val_score(PairClassifier(KISSME()), pairs, same, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.7
    search = GridSearchCV(PairClassifier(KISSME()), {"learner__n_components": [1, 2, 4]}, cv=3).fit(
        pairs, same
    )
    assert search.best_params_["learner__n_components"] in (1, 2, 4)
    assert search.best_estimator_.learner_.components_.shape[1] == 4
    assert search.score(pairs, same) > 0.7


def test_predict_proba_without_probability_says_what_to_set():
    with pytest.raises(AttributeError, match=r"probability=True"):
        PairClassifier().predict_proba  # noqa: B018
    assert not hasattr(PairClassifier(), "predict_proba")
