"""``Covariances``: raw multichannel trials → SPD matrices, and pyRiemann-style pipelines."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import RPLEmbedding
from rankmetric.datasets import covariances, load_dataset
from rankmetric.preprocessing import Covariances

RPL_FAST = {"max_iter": 50, "random_state": 0, "device": "cpu"}


def _trials(n=6, c=3, t=40, seed=0):
    return np.random.default_rng(seed).normal(size=(n, c, t))


def test_scm_is_the_brute_force_sample_covariance():
    X = _trials()
    C = Covariances(estimator="scm").fit_transform(X)
    expected = np.stack([np.cov(trial, bias=True) for trial in X])
    np.testing.assert_allclose(C, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("estimator,shrinkage", [("oas", None), ("lw", None), ("scm", 0.3)])
def test_same_estimators_as_the_datasets_function(estimator, shrinkage):
    X = _trials(seed=1)
    C = Covariances(estimator=estimator, shrinkage=shrinkage).fit(X).transform(X)
    np.testing.assert_array_equal(C, covariances(X, estimator, shrinkage))
    assert C.shape == (6, 3, 3)
    assert np.all(np.linalg.eigvalsh(C) > 0)


def test_trials_of_different_lengths():
    X = _trials()
    ragged = [X[0], X[1, :, :25], X[2, :, :9]]
    C = Covariances(estimator="scm").fit_transform(ragged)
    for trial, cov in zip(ragged, C, strict=True):
        np.testing.assert_allclose(cov, np.cov(trial, bias=True), atol=1e-12)


def test_stateless_and_cloneable():
    est = Covariances(estimator="lw")
    np.testing.assert_array_equal(est.transform(_trials()), clone(est).fit_transform(_trials()))
    assert clone(est).get_params() == {"estimator": "lw", "shrinkage": None}


@pytest.mark.parametrize(
    "params,match",
    [
        ({"estimator": "ledoit"}, "estimator must be one of"),
        ({"estimator": "oas", "shrinkage": 0.1}, "only used with estimator='scm'"),
        ({"estimator": "scm", "shrinkage": 2.0}, r"shrinkage must lie in \[0, 1\]"),
    ],
)
def test_bad_parameters_name_the_problem(params, match):
    with pytest.raises(ValueError, match=match):
        Covariances(**params).fit(_trials())


def test_bad_trials_name_the_problem():
    est = Covariances().fit(_trials(c=3))
    with pytest.raises(ValueError, match="4 channels, but Covariances was fitted on 3"):
        est.transform(_trials(c=4))
    with pytest.raises(ValueError, match="shape"):
        Covariances().fit(np.zeros((5, 3)))


@pytest.mark.data
def test_pyriemann_style_pipeline_on_raw_basicmotions_trials():
    data = load_dataset("BasicMotions")
    assert data.X.ndim == 3  # raw trials (n, channels, time)
    model = make_pipeline(Covariances(), RPLEmbedding(**RPL_FAST), KNeighborsClassifier(1))
    model.fit(data.X, data.y)
    assert model.score(data.X_test, data.y_test) > 0.5  # chance is 0.25 (4 classes)


@pytest.mark.data
def test_pyriemann_covariances_output_is_accepted_as_is():
    pyriemann_estimation = pytest.importorskip("pyriemann.estimation")
    data = load_dataset("BasicMotions")
    theirs = pyriemann_estimation.Covariances(estimator="scm").fit_transform(data.X)
    ours = Covariances(estimator="scm").fit_transform(data.X)
    np.testing.assert_allclose(theirs, ours, rtol=1e-10, atol=1e-12 * np.abs(ours).max())
    model = make_pipeline(
        pyriemann_estimation.Covariances(), RPLEmbedding(**RPL_FAST), KNeighborsClassifier(1)
    )
    model.fit(data.X, data.y)
    assert model.score(data.X_test, data.y_test) > 0.5
