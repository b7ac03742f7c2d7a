"""``Covariances``: raw multichannel trials → SPD matrices, and pyRiemann-style pipelines."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric import RPLEmbedding
from rankmetric.datasets import covariances, load_dataset
from rankmetric.preprocessing import Covariances

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

RPL_FAST = {"max_iter": 50, "random_state": 0, "device": "cpu"}


def _trials(n=6, c=3, t=40, seed=0):
    return np.random.default_rng(seed).normal(size=(n, c, t))


def test_scm_is_the_brute_force_sample_covariance():
    X = _trials()
    C = Covariances(estimator="scm").fit_transform(X)
    expected = np.stack([np.cov(trial, bias=True) for trial in X])
    np.testing.assert_allclose(C, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "estimator,shrinkage",
    [("oas", None), ("lw", None), ("lwf", None), ("scm", 0.3), ("sch", None), ("corr", None)],
)
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
    assert clone(est).get_params() == {"estimator": "lw", "shrinkage": None, "random_state": None}


@pytest.mark.parametrize(
    "params,match",
    [
        ({"estimator": "ledoit"}, "estimator must be one of 'scm', 'lwf', 'oas', 'mcd', 'sch'"),
        ({"estimator": "tyl"}, "M-estimator 'tyl' is not available"),
        ({"estimator": "mcd", "random_state": "zero"}, "random_state must be"),
        ({"estimator": "oas", "shrinkage": 0.1}, "only used with estimator='scm'"),
        ({"estimator": "scm", "shrinkage": 2.0}, r"shrinkage must lie in \[0, 1\]"),
    ],
)
def test_bad_parameters_name_the_problem(params, match):
    with pytest.raises(ValueError, match=match):
        Covariances(**params).fit(_trials())


PYRIEMANN_NAMES = ["scm", "lwf", "oas", "mcd", "sch", "cov", "corr"]


@pytest.mark.parametrize("estimator", PYRIEMANN_NAMES)
def test_same_matrices_as_pyriemann(estimator):
    pyriemann_estimation = pytest.importorskip("pyriemann.estimation")
    X = _trials(n=8, c=4, t=60, seed=3) * np.array([1.0, 2.0, 0.5, 3.0])[:, None]
    X[:, 1] += 0.4 * X[:, 0]  # correlated channels: shrinkage and correlations are not trivial
    extra = {"random_state": 7} if estimator == "mcd" else {}
    theirs = pyriemann_estimation.Covariances(estimator=estimator, **extra).fit_transform(X)
    ours = Covariances(estimator=estimator, **extra).fit_transform(X)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10 * np.abs(theirs).max())


def test_default_and_aliases_are_pyriemanns(monkeypatch):
    from rankmetric._validation import compat

    monkeypatch.setattr(compat, "_NOTED_DEFAULTS", set())
    X = _trials(seed=4)
    with pytest.warns(FutureWarning, match="default since 0.2 \\(it was 'oas'") as rec:
        default = Covariances().fit_transform(X)
    assert rec[0].filename == __file__  # the user's line
    np.testing.assert_array_equal(default, Covariances(estimator="scm").fit_transform(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process, and never when set
        Covariances().fit_transform(X)
        Covariances(estimator="scm").fit_transform(X)
    np.testing.assert_array_equal(
        Covariances(estimator="lw").fit_transform(X), Covariances(estimator="lwf").fit_transform(X)
    )


def test_mcd_is_robust_to_outlying_samples_and_seeded():
    X = _trials(n=5, c=3, t=200, seed=5)
    clean = np.stack([np.cov(trial, bias=True) for trial in X])
    spiked = X.copy()
    spiked[:, :, :10] += 50.0  # 5% of the time samples are artefacts
    mcd = Covariances(estimator="mcd", random_state=0).fit_transform(spiked)
    scm = Covariances(estimator="scm").fit_transform(spiked)
    # the raw MCD estimate (no consistency factor) shrinks a little; the SCM explodes (~119)
    assert np.abs(mcd - clean).max() < 1.0 and np.abs(scm - clean).max() > 100.0
    again = Covariances(estimator="mcd", random_state=0).fit_transform(spiked)
    np.testing.assert_array_equal(mcd, again)


def test_corr_refuses_a_flat_channel():
    X = _trials()
    X[2, 1] = 1.0
    with pytest.raises(ValueError, match="trial 2 has a channel without variance"):
        Covariances(estimator="corr").fit_transform(X)


def test_set_output_is_accepted_and_keeps_the_matrices():
    X = _trials()
    est = Covariances(estimator="scm").set_output(transform="pandas")
    assert isinstance(est.fit_transform(X), np.ndarray)
    with pytest.raises(ValueError, match="transform must be"):
        Covariances(estimator="scm").set_output(transform="frame")


def test_bad_trials_name_the_problem():
    est = Covariances(estimator="scm").fit(_trials(c=3))
    with pytest.raises(ValueError, match="4 channels, but Covariances was fitted on 3"):
        est.transform(_trials(c=4))
    with pytest.raises(ValueError, match="shape"):
        Covariances(estimator="scm").fit(np.zeros((5, 3)))


@pytest.mark.data
def test_pyriemann_style_pipeline_on_raw_basicmotions_trials():
    data = load_dataset("BasicMotions")
    assert data.X.ndim == 3  # raw trials (n, channels, time)
    model = make_pipeline(
        Covariances(estimator="scm"), RPLEmbedding(**RPL_FAST), KNeighborsClassifier(1)
    )
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
