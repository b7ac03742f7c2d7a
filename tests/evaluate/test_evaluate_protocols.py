"""repeated_cv_knn: the 5x2 protocol against a hand-written scikit-learn loop."""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from rankmetric.evaluate import CVResult, repeated_cv_knn


def _sklearn_reference(transformer, X, y, k, standardize, seed=0):
    cv = RepeatedStratifiedKFold(n_splits=2, n_repeats=5, random_state=seed)
    scores = []
    for train, test in cv.split(X, y):
        steps = ([StandardScaler()] if standardize else []) + (
            [transformer] if transformer is not None else []
        )
        steps.append(KNeighborsClassifier(n_neighbors=k))
        scores.append(make_pipeline(*steps).fit(X[train], y[train]).score(X[test], y[test]))
    return np.asarray(scores)


@pytest.mark.parametrize("standardize", [True, False])
def test_euclidean_matches_scikit_learn_pipeline(standardize):
    X, y = load_wine(return_X_y=True)
    result = repeated_cv_knn(None, X, y, k=3, standardize=standardize)
    np.testing.assert_allclose(result.scores, _sklearn_reference(None, X, y, 3, standardize))
    assert result.scores.shape == result.fit_times.shape == (10,)
    assert np.all(result.fit_times >= 0)


def test_transformer_is_refitted_in_each_fold():
    X, y = load_iris(return_X_y=True)
    result = repeated_cv_knn(PCA(n_components=2), X, y, k=5, random_state=3)
    expected = _sklearn_reference(PCA(n_components=2), X, y, 5, True, seed=3)
    np.testing.assert_allclose(result.scores, expected)


class _Spy(TransformerMixin, BaseEstimator):
    """Records what each fit sees (in a class-level list, since the estimator is cloned)."""

    seen: list = []

    def fit(self, X, y):
        _Spy.seen.append((X.shape[0], X.mean(axis=0), X.std(axis=0), np.bincount(y)))
        return self

    def transform(self, X):
        return X


def test_standardisation_is_fitted_on_the_training_fold_only():
    X, y = load_iris(return_X_y=True)
    X = X * 100 + 7
    _Spy.seen = []
    repeated_cv_knn(_Spy(), X, y, n_repeats=3, n_splits=3)
    assert len(_Spy.seen) == 9
    for n_rows, mean, std, counts in _Spy.seen:
        assert n_rows == 100 and np.all(counts == 100 // 3 + (counts > 33))  # stratified
        np.testing.assert_allclose(mean, 0, atol=1e-12)
        np.testing.assert_allclose(std, 1)


def test_result_summary_and_parallel_folds():
    X, y = load_iris(return_X_y=True)
    serial = repeated_cv_knn(None, X, y)
    with parallel_config(backend="threading"):  # processes would re-import torch: slow in CI
        parallel = repeated_cv_knn(None, X, y, n_jobs=2)
    np.testing.assert_array_equal(serial.scores, parallel.scores)
    assert serial.mean == pytest.approx(np.mean(serial.scores))
    assert serial.std == pytest.approx(np.std(serial.scores))
    assert str(serial) == f"{100 * serial.mean:.2f} ± {100 * serial.std:.2f}"
    assert str(CVResult(np.array([0.9712, 0.9712]), np.zeros(2))) == "97.12 ± 0.00"
    assert set(serial.as_dict()) == {"mean", "std", "scores", "fit_times"}


def test_matrix_inputs_are_flattened_without_standardisation(rng):
    y = np.repeat([0, 1], 20)
    X = rng.normal(size=(40, 3, 3)) + 3 * y[:, None, None]
    result = repeated_cv_knn(None, X, y, standardize=False, n_repeats=2)
    expected = repeated_cv_knn(None, X.reshape(40, 9), y, standardize=False, n_repeats=2)
    np.testing.assert_array_equal(result.scores, expected.scores)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"estimator": object()}, "no fit / transform"),
        ({"estimator": KNeighborsClassifier()}, "no transform"),
        ({"n_splits": 1}, "n_splits"),
        ({"n_repeats": 0}, "n_repeats"),
        ({"k": 0}, "k must be"),
        ({"y": np.r_[np.zeros(149), 1]}, "fewer than n_splits"),
        ({"y": np.zeros(150)}, "class"),
        ({"X": np.zeros((150, 2, 2))}, "standardize=True"),
        ({"k": 80}, "larger than"),
    ],
)
def test_bad_input_raises(kwargs, message):
    X, y = load_iris(return_X_y=True)
    args = {"estimator": None, "X": X, "y": y}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        repeated_cv_knn(args.pop("estimator"), args.pop("X"), args.pop("y"), **args)
