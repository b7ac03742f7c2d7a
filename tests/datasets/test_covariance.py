"""Covariance features: equal to scikit-learn's estimators per trial, and always SPD."""

import numpy as np
import pytest
from sklearn.covariance import empirical_covariance, ledoit_wolf, oas

from rankmetric.datasets import covariances
from rankmetric.geometry import check_spd as check_spd_array

SKLEARN = {
    "oas": lambda trial: oas(trial.T)[0],
    "lw": lambda trial: ledoit_wolf(trial.T)[0],
    "scm": lambda trial: empirical_covariance(trial.T),
}


def _trials(rng, n=6, channels=4, length=30):
    mixing = rng.standard_normal((channels, channels))
    offsets = rng.standard_normal((n, channels, 1))
    return mixing @ rng.standard_normal((n, channels, length)) + offsets


@pytest.mark.parametrize("estimator", ["oas", "lw", "scm"])
@pytest.mark.parametrize("length", [3, 8, 50])  # fewer, about as many, more samples than channels
def test_matches_sklearn_per_trial(rng, estimator, length):
    X = _trials(rng, channels=6, length=length)
    C = covariances(X, estimator)
    assert C.shape == (6, 6, 6) and C.dtype == np.float64
    expected = np.stack([SKLEARN[estimator](trial) for trial in X])
    if estimator == "scm" and length <= 6:  # singular: only the ridge differs
        check_spd_array(C)
        assert np.abs(C - expected).max() <= 1.01e-5 * np.trace(expected, axis1=1, axis2=2).max()
    else:
        np.testing.assert_allclose(C, expected, rtol=1e-10, atol=1e-12)


def test_fixed_shrinkage_is_the_shrunk_formula(rng):
    X = _trials(rng)
    S = covariances(X, "scm")
    mu = np.trace(S, axis1=1, axis2=2) / 4
    expected = 0.7 * S + 0.3 * mu[:, None, None] * np.eye(4)
    np.testing.assert_allclose(covariances(X, "scm", shrinkage=0.3), expected, rtol=1e-12)


@pytest.mark.parametrize("estimator", ["oas", "lw", "scm"])
def test_always_spd_even_for_degenerate_trials(rng, estimator):
    X = _trials(rng, n=4, channels=30, length=10)
    X[0, 2] = 3.0  # a flat channel
    X[1] = 0.0  # a trial without signal
    X[2, :, :] = X[2, :1, :]  # rank one: all channels equal
    X[3, :, 2:] = X[3, :, 1:2]  # two distinct samples only
    C = covariances(X, estimator)
    check_spd_array(C)
    eig = np.linalg.eigvalsh(C)
    trace = np.where(eig.sum(1) > 0, eig.sum(1), 30.0)
    assert np.all(eig[:, 0] >= 0.99e-5 * trace)
    assert np.all(np.linalg.eigvalsh(C.astype(np.float32))[:, 0] > 0)  # SPD in float32 too


def test_ragged_trials_equal_per_trial_results(rng):
    trials = [rng.standard_normal((3, length)) for length in (5, 9, 5, 12)]
    C = covariances(trials, "lw")
    for trial, matrix in zip(trials, C, strict=True):
        np.testing.assert_allclose(matrix, covariances(trial[None], "lw")[0], rtol=1e-12)


def test_single_channel_is_the_variance(rng):
    X = rng.standard_normal((3, 1, 40))
    for estimator in ("oas", "lw"):
        np.testing.assert_allclose(covariances(X, estimator)[:, 0, 0], X[:, 0].var(axis=1))


@pytest.mark.parametrize(
    ("X", "kwargs", "message"),
    [
        (np.zeros((2, 3)), {}, "shape"),
        (np.zeros((0, 3, 5)), {}, "no trials"),
        (np.ones((2, 3, 1)), {}, "at least 2 time samples"),
        (np.full((2, 3, 5), np.nan), {}, "NaN"),
        ([np.ones((3, 4)), np.ones((2, 4))], {}, "number of channels"),
        (np.ones((2, 3, 5)), {"estimator": "hub"}, "estimator must be"),
        (np.ones((2, 3, 5)), {"shrinkage": 0.1}, "only used with estimator='scm'"),
        (np.ones((2, 3, 5)), {"estimator": "scm", "shrinkage": 1.5}, r"\[0, 1\]"),
    ],
)
def test_bad_input_raises(X, kwargs, message):
    with pytest.raises(ValueError, match=message):
        covariances(X, **kwargs)
