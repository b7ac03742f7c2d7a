"""Bad input, table-driven: every estimator × every bad case → a ValueError naming the problem.

A case builds the bad input from the estimator's good training data; the expected message
fragment is looked up by estimator name, then by input kind ("features"/"spd"), then "default".
Every test runs under a timeout, so a case that hangs fails instead of stalling the suite.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]


@dataclass(frozen=True)
class BadCase:
    """A bad input built from good ``(X, y)`` and the message fragment(s) it must produce."""

    name: str
    build: Callable[[np.ndarray, np.ndarray], tuple]
    messages: dict[str, str]

    def message(self, spec) -> str:
        for key in (spec.name, spec.input_kind, "default"):
            if key in self.messages:
                return self.messages[key]
        raise KeyError(self.name)


def _with(X: np.ndarray, value: float) -> np.ndarray:
    X = X.copy()
    X.flat[7] = value
    return X


def _one_sample_per_class(X, y):
    first = np.unique(y, return_index=True)[1]
    return X[first], y[first]


def _wrong_ndim(X):
    """3-D features for the 2-D estimators, 2-D rows for the SPD one."""
    return X[:, :, None] if X.ndim == 2 else X[:, 0, :]


FIT_CASES = [
    BadCase("nan", lambda X, y: (_with(X, np.nan), y), {"default": "contains NaN"}),
    BadCase("inf", lambda X, y: (_with(X, np.inf), y), {"default": "contains infinity"}),
    BadCase("empty", lambda X, y: (X[:0], y[:0]), {"default": "0 sample"}),
    BadCase("one_class", lambda X, y: (X, np.zeros_like(y)), {"default": r"1 class\(es\)"}),
    BadCase(
        "one_sample_per_class",
        _one_sample_per_class,
        {"default": "fewer than 2 samples", "ITML": "no class has two samples"},
    ),
    BadCase(
        "mismatched_lengths",
        lambda X, y: (X, y[:-1]),
        {"default": "inconsistent numbers of samples"},
    ),
    BadCase("X_1d", lambda X, y: (X.reshape(-1)[: len(y)], y), {"default": "Expected 2D array"}),
    BadCase(
        "X_wrong_ndim",
        lambda X, y: (_wrong_ndim(X), y),
        {"features": "dim 3", "spd": r"shape \(n_matrices, c, c\)"},
    ),
    BadCase(
        "continuous_y",
        lambda X, y: (X, y + np.linspace(0.01, 0.5, len(y))),
        {"default": "continuous"},
    ),
    BadCase("y_2d", lambda X, y: (X, np.column_stack([y, y])), {"default": "1d array"}),
    BadCase(
        "y_nan", lambda X, y: (X, np.where(np.arange(len(y)) == 3, np.nan, y)), {"default": "NaN"}
    ),
]

TRANSFORM_CASES = [
    BadCase("nan", lambda X, y: _with(X, np.nan), {"default": "contains NaN"}),
    BadCase("inf", lambda X, y: _with(X, -np.inf), {"default": "contains infinity"}),
    BadCase("empty", lambda X, y: X[:0], {"default": "0 sample"}),
    BadCase(
        "wrong_n_features",
        lambda X, y: X[:, :-1] if X.ndim == 2 else X[:, :-1, :-1],
        {"default": r"has \d+ features, but \w+ is expecting \d+ features"},
    ),
    BadCase(
        "X_wrong_ndim",
        lambda X, y: _wrong_ndim(X),
        {"features": "dim 3", "spd": r"shape \(n_matrices, c, c\)"},
    ),
]


def _ids(cases):
    return [c.name for c in cases]


@pytest.mark.parametrize("case", FIT_CASES, ids=_ids(FIT_CASES))
def test_fit_rejects_bad_input_naming_the_problem(spec, case):
    X, y = spec.data()
    X_bad, y_bad = case.build(X, y)
    est = spec.make()
    with pytest.raises(ValueError, match=case.message(spec)):
        est.fit(X_bad, y_bad)
    with pytest.raises(NotFittedError):  # a failed fit leaves nothing half-fitted behind
        est.transform(X)


@pytest.mark.parametrize("case", TRANSFORM_CASES, ids=_ids(TRANSFORM_CASES))
def test_transform_rejects_bad_input_naming_the_problem(spec, case, fitted_models):
    est, X, y = fitted_models(spec)
    with pytest.raises(ValueError, match=case.message(spec)):
        est.transform(case.build(X, y))


def test_transform_before_fit_raises_not_fitted(spec):
    X, _ = spec.data()
    with pytest.raises(NotFittedError):
        spec.make().transform(X)


def test_string_labels_give_the_same_model_as_integer_codes(spec):
    X, y = spec.data()
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Z_codes = spec.make().fit(X, y).transform(X)
        Z_names = spec.make().fit(X, names).transform(X)
    np.testing.assert_array_equal(Z_names, Z_codes)


# A class of one sample cannot form a positive pair, but it still serves as a negative: fitting
# works when another class has two samples. LMNN documents a UserWarning (fewer target neighbours).
_SINGLETON_WARNINGS = {"LMNN": "fewer than n_target_neighbors \\+ 1"}


def test_a_class_with_one_sample_is_used_as_negative_only(spec):
    X, y = spec.data()
    y = y.copy()
    y[0] = 7  # a fourth class with a single sample
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Z = spec.make().fit(X, y).transform(X)
    assert np.isfinite(Z).all()
    expected = _SINGLETON_WARNINGS.get(spec.name)
    if expected is not None:
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        assert any(re.search(expected, m) for m in messages), messages


# ---------------------------------------------------------------- input-specific checks


def _rpl(all_specs):
    return next(s for s in all_specs if s.input_kind == "spd")


def _non_symmetric(S):
    S = S.copy()
    S[2, 0, 1] += 0.5
    return S


def _indefinite(S):
    S = S.copy()
    w, U = np.linalg.eigh(S[4])
    w[0] = -abs(w[0]) - 0.1
    S[4] = (U * w) @ U.T
    return S


def _singular(S):
    S = S.copy()
    S[1, 0, :] = S[1, :, 0] = 0.0
    return S


SPD_CASES = [
    ("non_symmetric", _non_symmetric, r"X\[2\] is not symmetric"),
    ("indefinite", _indefinite, r"X\[4\] is not positive definite"),
    ("singular", _singular, r"X\[1\] is not positive definite"),
]


@pytest.mark.parametrize("name, corrupt, message", SPD_CASES, ids=[c[0] for c in SPD_CASES])
def test_spd_estimator_rejects_non_spd_matrices(all_specs, fitted_models, name, corrupt, message):
    spec = _rpl(all_specs)
    est, S, y = fitted_models(spec)
    bad = corrupt(S)
    with pytest.raises(ValueError, match=message):
        spec.make().fit(bad, y)
    with pytest.raises(ValueError, match=message):
        est.transform(bad)
    with pytest.raises(ValueError, match=message):
        est.pair_distances(bad, S)


def test_chi2_kernel_rejects_negative_features(fitted_models, all_specs):
    spec = next(s for s in all_specs if s.name == "KernelWARCA")
    est, X, y = fitted_models(spec)
    assert est.get_params()["kernel"] == "chi2_rbf"
    negative = X.copy()
    negative[3, 1] = -0.5
    with pytest.raises(ValueError, match="Negative values.*chi2_rbf"):
        spec.make().fit(negative, y)
    with pytest.raises(ValueError, match="Negative values.*chi2_rbf"):
        est.transform(negative)
    Z = spec.make(kernel="rbf").fit(negative, y).transform(negative)  # signed features: rbf
    assert np.isfinite(Z).all()


def test_precomputed_kernel_must_be_a_square_symmetric_matrix(all_specs):
    spec = next(s for s in all_specs if s.name == "KernelWARCA")
    X, y = spec.data()
    K = X @ X.T
    with pytest.raises(ValueError, match="square"):
        spec.make(kernel="precomputed").fit(K[:, :-1], y)
    asymmetric = K.copy()
    asymmetric[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        spec.make(kernel="precomputed").fit(asymmetric, y)


@pytest.mark.parametrize(
    "prior, message",
    [
        (np.eye(5) + np.triu(np.ones((5, 5)), 1), "not symmetric"),
        (-np.eye(5), "not positive definite"),
        (np.eye(4), r"prior has shape \(4, 4\)"),
        (np.diag([1.0, 1, 1, 1, np.nan]), "NaN or infinity"),
    ],
    ids=["non_symmetric", "indefinite", "wrong_shape", "nan"],
)
def test_itml_rejects_a_bad_prior_matrix(all_specs, prior, message):
    spec = next(s for s in all_specs if s.name == "ITML")
    X, y = spec.data()
    with pytest.raises(ValueError, match=message):
        spec.make(prior=prior).fit(X, y)
