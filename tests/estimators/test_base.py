"""``set_output`` and ``get_feature_names_out`` on every transformer of the package.

The transformers are discovered by walking ``rankmetric.estimators`` and
``rankmetric.preprocessing``, so a new transformer is covered without editing this file. Each
is fitted on a small data set of the kind its tags ask for (SPD matrices when it takes 3-D
input, features otherwise), with a few iterations where it has ``max_iter``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags

import rankmetric
from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters

PACKAGES = ("rankmetric.estimators", "rankmetric.preprocessing")
FAST = {"max_iter": 10, "batch_size": 16, "max_sampling": 8, "validation_every": 5}


def _public_transformers() -> list[type]:
    found = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if (
                    inspect.isclass(obj)
                    and not name.startswith("_")
                    and obj.__module__ == module.__name__
                    and issubclass(obj, TransformerMixin)
                    and issubclass(obj, BaseEstimator)
                    and not inspect.isabstract(obj)
                    and "transform" in dir(obj)
                    and name in getattr(package, "__all__", ())
                ):
                    found[name] = obj
    return [found[name] for name in sorted(found)]


TRANSFORMERS = _public_transformers()


def _fitted(cls: type):
    est = cls()
    params = est.get_params()
    est.set_params(**{k: v for k, v in FAST.items() if k in params})
    for key in ("random_state",):
        if key in params:
            est.set_params(**{key: 0})
    if "device" in params:
        est.set_params(device="cpu")
    if get_tags(est).input_tags.three_d_array:
        X, y = make_spd_clusters(24, 3, 3, class_sep=1.5, random_state=0)
    else:
        X, y = make_gaussian_clusters(30, 4, 3, n_informative=2, random_state=0)
        X = X - X.min() + 0.1  # non-negative: every kernel applies
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
        est.fit(X, y)
    return est, X


def test_discovery_finds_every_transformer():
    names = {cls.__name__ for cls in TRANSFORMERS}
    expected = {"LMNN", "ITML", "KISSME", "WARCA", "KernelWARCA", "SSNE", "RPLEmbedding"}
    assert expected | {"Covariances"} <= names
    assert "MultiMetricLMNN" not in names  # a classifier, not a transformer
    assert set(rankmetric.estimators.__all__) - {"MultiMetricLMNN", "PairClassifier"} <= names


@pytest.mark.parametrize("cls", TRANSFORMERS, ids=lambda c: c.__name__)
def test_set_output_pandas_and_feature_names(cls):
    est, X = _fitted(cls)
    plain = est.transform(X)
    if plain.ndim != 2:
        # Matrix-valued output (e.g. Covariances): no columns to name, so no pandas output.
        assert not hasattr(est, "set_output") or not hasattr(est, "get_feature_names_out")
        return
    names = est.get_feature_names_out()
    prefix = cls.__name__.lower()
    assert list(names) == [f"{prefix}{k}" for k in range(plain.shape[1])]

    est.set_output(transform="pandas")
    frame = est.transform(X)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(names)
    np.testing.assert_allclose(frame.to_numpy(), plain, rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(est.fit_transform(X, _labels_for(X)), pd.DataFrame)

    est.set_output(transform="default")
    assert isinstance(est.transform(X), np.ndarray)


def _labels_for(X) -> np.ndarray:
    return np.arange(len(X)) % 3


@pytest.mark.parametrize("cls", TRANSFORMERS, ids=lambda c: c.__name__)
def test_feature_names_need_a_fit(cls):
    est = cls()
    if not hasattr(est, "get_feature_names_out"):
        # Matrix-valued output (Covariances, RegionCovariances): no columns to name, and
        # nothing is learnt, so such a transformer must not ask for a fit either.
        assert not get_tags(est).requires_fit
        return
    with pytest.raises(NotFittedError):
        est.get_feature_names_out()


def test_rpl_matrix_output_has_no_names():
    from rankmetric.estimators import RPLEmbedding

    est, X = _fitted(RPLEmbedding)
    est.set_params(output="log")
    with pytest.raises(ValueError, match="output='vector'"):
        est.get_feature_names_out()


# ----------------------------------------------------------------------------- the fit decorator


def _public_estimators() -> list[type]:
    """Every public estimator class of ``rankmetric.estimators`` (its ``__all__``)."""
    from rankmetric import estimators

    return sorted(
        (
            obj
            for name in estimators.__all__
            if inspect.isclass(obj := getattr(estimators, name))
            and issubclass(obj, BaseEstimator)
            and not inspect.isabstract(obj)
        ),
        key=lambda cls: cls.__name__,
    )


#: Meta-estimators whose fit fits another (decorated) estimator: not a metric learner's fit.
META_ESTIMATORS = {"PairClassifier"}


@pytest.mark.parametrize("cls", _public_estimators(), ids=lambda c: c.__name__)
def test_every_fit_method_carries_the_fit_decorator(cls):
    from rankmetric.estimators.base import FIT_METHODS

    methods = [getattr(cls, name) for name in FIT_METHODS if hasattr(cls, name)]
    assert methods, f"{cls.__name__} has no fit method"
    if cls.__name__ in META_ESTIMATORS:
        return
    undecorated = [m.__name__ for m in methods if not getattr(m, "_rankmetric_fit_context", 0)]
    assert undecorated == [], f"{cls.__name__}: {undecorated} lack @fit_context"


def test_the_estimator_list_covers_the_learners():
    names = {cls.__name__ for cls in _public_estimators()}
    assert {"WARCA", "SSNE", "RPLEmbedding", "MultiMetricLMNN", "KISSME"} <= names


def test_the_base_class_no_longer_wraps_fit_silently():
    from rankmetric.estimators.base import MetricLearnerMixin

    class Plain(MetricLearnerMixin, BaseEstimator):
        def fit(self, X, y=None):
            return self

    assert not hasattr(Plain.fit, "__wrapped__")


def test_a_failed_refit_leaves_the_estimator_unfitted_and_no_fingerprint_behind(tmp_path):
    from rankmetric.estimators.base import MetricLearnerMixin, fit_checkpointing, fit_context

    class Learner(MetricLearnerMixin, BaseEstimator):
        def __init__(self, checkpoint_dir=None, checkpoint_every=10):
            self.checkpoint_dir, self.checkpoint_every = checkpoint_dir, checkpoint_every

        @fit_context
        def fit(self, X, y=None):
            checkpointing = fit_checkpointing(self)
            self.seen_ = None if checkpointing is None else checkpointing.fingerprint
            if np.isnan(X).any():
                raise ValueError("NaN")
            return self

    est = Learner(checkpoint_dir=tmp_path).fit(np.ones((3, 2)))
    first = est.seen_
    assert isinstance(first, str) and not hasattr(est, "_fit_fingerprint")
    assert Learner(checkpoint_dir=tmp_path).fit(np.zeros((3, 2))).seen_ != first
    assert Learner().fit(np.ones((3, 2))).seen_ is None  # no checkpoints: no fingerprint
    est.set_output(transform="pandas")
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.full((3, 2), np.nan))
    assert not hasattr(est, "seen_") and not hasattr(est, "_fit_fingerprint")
    assert est._sklearn_output_config == {"transform": "pandas"}  # settings are kept


def test_metric_learners_declare_that_they_need_labels_once():
    from rankmetric.estimators.base import MetricLearnerMixin

    class Learner(MetricLearnerMixin, BaseEstimator):
        pass

    assert get_tags(Learner()).target_tags.required


def test_pair_distances_take_matching_points_or_stacked_pairs():
    import rankmetric

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 4)), np.arange(30) % 3
    model = rankmetric.KISSME().fit(X, y)
    A, B = X[:10], X[10:20]
    expected = np.linalg.norm(model.transform(A) - model.transform(B), axis=1)
    np.testing.assert_allclose(model.pair_distances(A, B), expected, rtol=1e-6)
    np.testing.assert_allclose(model.pair_distances(np.stack([A, B], axis=1)), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="pairs"):
        model.pair_distances(A)
