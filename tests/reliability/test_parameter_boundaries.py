"""Values at each declared bound: ``fit`` rejects those just outside and accepts those just inside.

For every public estimator and transformer that declares ``_parameter_constraints``, each
constraint of each parameter generates values from its own fields (not from its
``is_satisfied_by``): for an :class:`~rankmetric._validation.Interval`, the values just outside
and just inside each finite end (the end itself when it is closed, the next integer or float
when it is open), infinities where a side is unbounded, NaN, a bool and a string; for an
:class:`~rankmetric._validation.Options`, every option, a string that is none of them and an
option in another case; for the booleans, seeds and devices, the values on either side of
their definitions; and ``object()`` for every parameter. Whether a value is admissible is
decided here, by :func:`admits` (an oracle written from the declarations' documented meaning),
over all the constraints of the parameter (a value one constraint refuses may be admitted by
another: ``verbose`` is a bool *or* an integer >= 0).

An inadmissible value must make ``fit`` raise ``ValueError("<name> must be <declaration>, got
...")``. An admissible one must let ``fit`` run to its end on small data (a few iterations)
without an exception: a bound declared too loosely (``max_iter >= 0`` where 0 iterations break
the fit, an open end declared closed) fails here, as does a declaration that ``fit`` does not
enforce, enforces with other bounds, or describes wrongly.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import pkgutil
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator

import rankmetric
from rankmetric import _validation as v

from .conftest import estimators

SPECS = estimators.SPECS
make_data = estimators.make_data

#: Fast settings for the admissible-value fits (a few steps); a parameter under test replaces its
#: own entry.
_FEW_STEPS = {"max_iter": 2, "validation_every": 1}

#: Public estimators and transformers that check their parameters by hand, not through
#: ``_parameter_constraints`` (so no bound can be generated for them). Keep this set exact: the
#: coverage test fails when one of them gains declarations, so that it is then covered here.
UNDECLARED = {"Covariances", "RegionCovariances", "StripeHistograms"}


@dataclass(frozen=True)
class Subject:
    """One estimator under test: how to build it fast and what to fit it on."""

    name: str
    module: str
    params: dict[str, Any]
    data: str  # "features", "spd" or "pairs"

    @property
    def cls(self) -> type:
        return getattr(importlib.import_module(self.module), self.name)

    def make(self, **overrides):
        base = {k: val for k, val in self.params.items() if k not in overrides}
        return self.cls(**base, **overrides)

    def fit_data(self):
        if self.data == "pairs":
            X, y = make_data("features", 30)
            rng = np.random.default_rng(0)
            p = rng.integers(0, len(y), size=(60, 2))
            p = p[p[:, 0] != p[:, 1]]
            return X[p], np.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)
        return make_data(self.data, 30)


def _fast(params: dict) -> dict:
    return {**params, **{k: val for k, val in _FEW_STEPS.items() if k in params}}


SUBJECTS = (
    *(Subject(s.name, s.module, _fast(s.params), s.input_kind) for s in SPECS),
    Subject(
        "MultiMetricLMNN",
        "rankmetric.estimators.lmnn",
        {"max_iter": 2, "device": "cpu"},
        "features",
    ),
    Subject(
        "PairClassifier",
        "rankmetric.estimators.pair_classifier",
        {"learner": rankmetric.ITML(max_iter=2, random_state=0)},
        "pairs",
    ),
    Subject("TangentSpace", "rankmetric.preprocessing", {"device": "cpu"}, "spd"),
    Subject("DomainRecentering", "rankmetric.preprocessing", {"device": "cpu"}, "spd"),
    Subject("MDM", "rankmetric.estimators.spd", {"device": "cpu"}, "spd"),
)


# --------------------------------------------------------------------------- the oracle
def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _in_interval(c: v.Interval, value) -> bool:
    if not (_is_int(value) if c.type is numbers.Integral else _is_real(value)):
        return False
    if math.isnan(value):
        return False
    left_closed, right_closed = c.closed in ("left", "both"), c.closed in ("right", "both")
    left = -math.inf if c.left is None else c.left
    right = math.inf if c.right is None else c.right
    if value == -math.inf:  # an infinity only where that end is infinite and closed
        return c.left == -math.inf and left_closed
    if value == math.inf:
        return c.right == math.inf and right_closed
    above = value > left or (value == left and left_closed)
    below = value < right or (value == right and right_closed)
    return above and below


def admits(constraint, value) -> bool:
    """Whether ``constraint`` admits ``value``, from its documented meaning."""
    if constraint is v.NONE:
        return value is None
    if constraint is v.BOOLEAN:
        return isinstance(value, (bool, np.bool_))
    if constraint is v.RANDOM_STATE:
        if isinstance(value, (np.random.Generator, np.random.RandomState)) or value is None:
            return True
        return _is_int(value) and 0 <= value < 2**63
    if constraint is v.DEVICE:
        return value is None or isinstance(value, (str, torch.device))
    if isinstance(constraint, v.Interval):
        return _in_interval(constraint, value)
    if isinstance(constraint, v.Options):
        return any(
            (isinstance(value, str) if isinstance(o, str) else type(value) is type(o))
            and value == o
            for o in constraint.values
        )
    if isinstance(constraint, v.InstanceOf):
        return isinstance(value, constraint.types)
    raise AssertionError(f"no oracle for constraint {constraint!r}: add one to this test")


# --------------------------------------------------------------------------- the values
def _interval_values(c: v.Interval) -> list:
    integral = c.type is numbers.Integral
    left_closed, right_closed = c.closed in ("left", "both"), c.closed in ("right", "both")
    values = [math.nan, True, "1"]

    def step(x, direction):  # the next value of the interval's type from x
        return x + direction if integral else float(np.nextafter(float(x), direction * math.inf))

    inside = []
    if c.left is not None and math.isfinite(c.left):
        inside.append(c.left if left_closed else step(c.left, +1))
        values.append(step(c.left, -1) if left_closed else c.left)
    else:
        values.append(-math.inf)
    if c.right is not None and math.isfinite(c.right) and c.right_label is None:
        inside.append(c.right if right_closed else step(c.right, -1))
        values.append(step(c.right, +1) if right_closed else c.right)
    elif c.right is None or c.right == math.inf:
        values.append(math.inf)
    if not inside:
        inside.append(0 if integral else 0.5)
    if integral:
        values.extend(float(x) for x in inside)  # an integer-valued float is the wrong type
    return values + inside


def _option_values(c: v.Options) -> list:
    values = [*c.values, "not-an-option"]
    values += [o.upper() for o in c.values if isinstance(o, str) and o.upper() != o]
    return values


def candidate_values(constraints) -> list:
    """Values either side of every constraint of one parameter (duplicates removed)."""
    values: list = [object()]
    for c in constraints:
        if c is v.NONE:
            values.append(None)
        elif c is v.BOOLEAN:
            values += [True, False, np.bool_(True), 1, "True"]
        elif c is v.RANDOM_STATE:
            values += [None, 0, 2**63 - 1, np.random.default_rng(0), -1, 2**63, 1.5, True]
        elif c is v.DEVICE:
            values += [None, "cpu", torch.device("cpu"), 0, 1.5]
        elif isinstance(c, v.Interval):
            values += _interval_values(c)
        elif isinstance(c, v.Options):
            values += _option_values(c)
        elif isinstance(c, v.InstanceOf):
            pass  # object() stands outside; an admissible instance depends on the data
        else:
            raise AssertionError(f"no values for constraint {c!r}: add them to this test")
    unique, seen = [], set()
    for value in values:
        key = (type(value), repr(value))
        if key not in seen:
            seen.add(key)
            unique.append(value)
    return unique


#: Declarations that ``fit`` does not enforce as declared (reported; strict, so that the fix
#: shows here).
KNOWN_MISMATCHES: dict = {}  # (estimator, parameter) -> pytest.mark.xfail(strict=True, ...)


def _cases():
    for subject in SUBJECTS:
        cls = subject.cls
        declared = cls._parameter_constraints
        for name in declared:
            marks = KNOWN_MISMATCHES.get((subject.name, name), ())
            yield pytest.param(
                subject, name, declared[name], id=f"{subject.name}-{name}", marks=marks
            )
        for old, new in cls._renamed_parameters.items():  # checked against the new declaration
            yield pytest.param(subject, old, declared[new], id=f"{subject.name}-{old}")


#: Admissible values that a rule tying parameters together (checked in ``fit``, not in the
#: declarations) accepts only beside other settings: ``(class, parameter, value) → settings``.
COMPANIONS = {
    ("KernelWARCA", "n_landmarks", None): {"n_components": 1},  # r <= rank(K) <= n_landmarks
    ("RPLEmbedding", "output", "spd"): {"head": "spd"},  # matrix output: a matrix head
    ("RPLEmbedding", "output", "log"): {"head": "spd"},
    ("SPDNetEmbedding", "head", "spd"): {"loss": "triplet"},  # the loss of SPD outputs
    ("SPDNetEmbedding", "loss", "triplet"): {"head": "spd"},
    ("SPDNetEmbedding", "output", "spd"): {"head": "spd", "loss": "triplet"},
    ("SPDNetEmbedding", "output", "log"): {"head": "spd", "loss": "triplet"},
    ("PairClassifier", "strategy", "max_tpr"): {"min_rate": 0.5},
    ("PairClassifier", "strategy", "max_tnr"): {"min_rate": 0.5},
}


def _companions(subject: Subject, name: str, value) -> dict:
    for key in ((subject.name, name, value), (subject.name, name, None)):
        try:
            if key in COMPANIONS:
                return COMPANIONS[key]
        except TypeError:  # an unhashable value
            pass
    return {}


def _fit_inputs(name: str, value, X, y) -> tuple:
    """``(X, y, fit keyword arguments)``: the data some admissible values need."""
    if isinstance(value, str) and (name, value) == ("positives", "cross_camera"):
        return X, y, {"cameras": np.arange(len(X)) % 2}  # every identity seen by both cameras
    if isinstance(value, str) and (name, value) == ("kernel", "precomputed"):
        return X @ X.T, y, {}
    if isinstance(value, str) and (name, value) == ("similarity", "jaccard"):
        return X, (y[:, None] == np.unique(y)).astype(int), {}  # a label-indicator matrix
    return X, y, {}


def _fit(subject: Subject, name: str, value):
    X, y, kwargs = _fit_inputs(name, value, *subject.fit_data())
    est = subject.make(**{**_companions(subject, name, value), name: value})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few steps, renamed parameters: warnings expected
        return est.fit(X, y, **kwargs)


@pytest.mark.parametrize(("subject", "name", "constraints"), list(_cases()))
def test_fit_enforces_each_bound_exactly(subject, name, constraints):
    expected = f"^{re.escape(name)} must be {re.escape(v.describe(constraints))}, got "
    for value in candidate_values(constraints):
        if any(admits(c, value) for c in constraints):
            try:
                _fit(subject, name, value)
            except Exception as error:  # noqa: BLE001 - any failure of an admissible value
                raise AssertionError(
                    f"{subject.name}({name}={value!r}) is admitted by the declaration "
                    f"{v.describe(constraints)!r}, but fit raised {error!r}"
                ) from error
        else:
            with pytest.raises(ValueError, match=expected):
                _fit(subject, name, value)


def _public_estimator_classes() -> dict[str, type]:
    """Every concrete ``BaseEstimator`` in the ``__all__`` of a public rankmetric module."""
    found = {}
    for info in pkgutil.walk_packages(rankmetric.__path__, "rankmetric."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] in ("cli", "bench"):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, BaseEstimator):
                if not inspect.isabstract(obj) and not name.startswith("Base"):
                    found[name] = obj
    return found


def test_every_public_estimator_and_transformer_is_covered():
    """Each public ``BaseEstimator`` is a subject here, or checks its parameters by hand."""
    from rankmetric.tuning import TunedMetricLearner

    # The self-tuning wrappers (WARCACV, ...) check their own settings by hand
    # (tests/test_tuning.py::test_bad_settings_raise_value_error); their learner is a subject.
    classes = {
        n: c
        for n, c in _public_estimator_classes().items()
        if not issubclass(c, TunedMetricLearner)
    }
    subjects = {s.name for s in SUBJECTS}
    assert set(classes) - UNDECLARED == subjects
    declaring = {n for n in UNDECLARED if "_parameter_constraints" in vars(classes[n])}
    assert not declaring, f"{declaring} now declare their parameters: add them to SUBJECTS"


def test_the_generated_values_reach_both_sides_of_every_bound():
    """The check itself: for a closed and an open end, values on both sides (so it can fail)."""
    closed = v.Interval(numbers.Integral, 1, None, closed="left")
    assert [admits(closed, x) for x in (0, 1)] == [False, True]
    assert {0, 1} <= set(candidate_values([closed]))
    open_ = v.Interval(numbers.Real, 0, 1, closed="right")
    values = candidate_values([open_])
    assert 0 in values and np.nextafter(0.0, 1.0) in values and 1 in values
    assert np.nextafter(1.0, 2.0) in values
    assert not admits(open_, 0) and admits(open_, np.nextafter(0.0, 1.0)) and admits(open_, 1)


def test_a_bound_declared_too_loosely_fails(monkeypatch):
    """A declaration admitting 0 target neighbours, which LMNN cannot use: the test fails."""
    subject = next(s for s in SUBJECTS if s.name == "LMNN")
    loose = [v.Interval(numbers.Integral, 0, None, closed="left")]
    monkeypatch.setitem(subject.cls._parameter_constraints, "n_target_neighbors", loose)
    with pytest.raises(AssertionError, match="n_target_neighbors=0"):
        test_fit_enforces_each_bound_exactly(subject, "n_target_neighbors", loose)
