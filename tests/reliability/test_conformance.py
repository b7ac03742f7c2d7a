"""scikit-learn conformance across every public estimator: coverage, cloning, parameters,
``n_features_in_`` and model selection in a pipeline.

scikit-learn's own ``parametrize_with_checks`` runs in each estimator's test file under
``tests/estimators/``; the first test below makes sure none of them is missing.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

import rankmetric
from rankmetric.io import _REGISTRY

ESTIMATOR_TESTS = Path(__file__).parents[1] / "estimators"
#: Public estimators that are classifiers, not metric transformers: this suite drives
#: ``transform``, so they are covered by their own test file (sklearn checks, model files,
#: determinism, bad input) instead.
CLASSIFIERS = {
    "MultiMetricLMNN": "test_mlmnn.py",
    "PairClassifier": "test_pair_classifier.py",
    "MDM": "test_mdm.py",
}
#: Public estimators without a model file of their own: ``PairClassifier`` wraps another
#: estimator (``learner_``); save that learner and keep ``threshold_`` (a float) beside it.
UNSAVED = {"PairClassifier"}


def _public_estimator_names() -> set[str]:
    lazy = {name for name in rankmetric._LAZY if name[0].isupper()}
    for name in lazy:
        getattr(rankmetric, name)  # import, so that it registers itself
    # the root also exports classes that are not estimators (UntrainedModelWarning), and the
    # self-tuning wrappers (WARCACV, ...), whose fitted model is one of the learners covered
    # here (their search: tests/test_tuning.py; save writes the learner's model file)
    from rankmetric.tuning import TunedMetricLearner

    lazy = {
        name
        for name in lazy
        if issubclass(getattr(rankmetric, name), BaseEstimator)
        and not issubclass(getattr(rankmetric, name), TunedMetricLearner)
    }
    importlib.import_module("rankmetric.estimators.pair_covariance")  # public, not top-level
    return lazy | {"KISSME"}


def test_the_suite_covers_every_public_and_registered_estimator(all_specs):
    names = _public_estimator_names()
    assert {s.name for s in all_specs} == names - set(CLASSIFIERS)
    registered = {n for n, c in _REGISTRY.items() if c.__module__.startswith("rankmetric.")}
    assert registered == names - UNSAVED
    for name, test_file in CLASSIFIERS.items():
        assert is_classifier(getattr(rankmetric, name)())
        assert (ESTIMATOR_TESTS / test_file).exists()


def test_every_estimator_runs_scikit_learns_estimator_checks(spec):
    """Some ``tests/estimators`` file runs ``parametrize_with_checks`` on an instance of it."""
    pattern = re.compile(r"@parametrize_with_checks\(\s*\[[^\]]*\b" + spec.name + r"\(", re.S)
    helpers = re.compile(r"def (_\w+)\(\):\s*return[^\n]*\b" + spec.name + r"\(")
    for path in ESTIMATOR_TESTS.glob("test_*.py"):
        text = path.read_text()
        if pattern.search(text):
            return
        # an instance built by a helper, e.g. parametrize_with_checks([_pipeline()])
        for helper in helpers.findall(text):
            if re.search(r"@parametrize_with_checks\(\s*\[\s*" + helper + r"\(", text):
                return
    pytest.fail(f"no parametrize_with_checks test over {spec.name} in {ESTIMATOR_TESTS}")


def test_clone_copies_parameters_not_fitted_state(spec, fitted_models):
    est, _, _ = fitted_models(spec)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert twin is not est
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(twin)


def test_get_params_and_set_params_round_trip(spec):
    est = spec.make()
    params = est.get_params()
    assert est.set_params(**params).get_params() == params
    name, values = next(iter(spec.grid.items()))
    assert est.set_params(**{name: values[0]}).get_params()[name] == values[0]
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(not_a_parameter=1)


def test_n_features_in_and_output_shape(spec, fitted_models):
    est, X, _ = fitted_models(spec)
    assert est.n_features_in_ == X.shape[1]
    Z = est.transform(X)
    assert Z.shape[0] == X.shape[0] and np.isfinite(Z).all()
    assert Z.dtype == np.float64
    assert est.transform(X.astype(np.float32)).dtype == np.float32


def test_grid_search_over_a_pipeline_with_knn(spec):
    X, y = spec.data(n_samples=60)
    pipe = Pipeline([("metric", spec.make()), ("knn", KNeighborsClassifier(3))])
    grid = {f"metric__{name}": values for name, values in spec.grid.items()}
    search = GridSearchCV(pipe, grid, cv=StratifiedKFold(2, shuffle=True, random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
        search.fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    ((name, values),) = spec.grid.items()
    assert search.best_params_[f"metric__{name}"] in values
    assert search.best_estimator_.named_steps["metric"].n_features_in_ == X.shape[1]
    assert 0.0 <= search.score(X, y) <= 1.0
    assert search.predict(X[:5]).shape == (5,)
