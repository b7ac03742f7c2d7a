"""Input validation shared by every estimator, loss and metric.

Each check raises a ``ValueError`` whose message names the problem, so that bad input never
turns into a silent wrong answer.

Hyper-parameters are validated declaratively, in the shape of scikit-learn's
``_parameter_constraints``: an estimator declares ``{name: [constraint, ...]}`` with
:class:`Interval`, :class:`Options`, :data:`NONE`, :data:`BOOLEAN`, ... and calls
``self._validate_params()`` (:class:`ParameterValidationMixin`) at the start of ``fit``; the
message is generated from the declaration (``"max_iter must be an integer >= 1, got 0."``).
Functions and torch modules check their arguments with the same constraints through
:func:`check_param`. scikit-learn's own machinery (``sklearn.utils._param_validation``) is
private, so this module holds a small equivalent (see ``docs/architecture.md``).
"""

from __future__ import annotations

import functools
import inspect
import numbers
import os
import warnings
from abc import ABC, abstractmethod

import numpy as np
from sklearn.utils.multiclass import type_of_target

__all__ = [
    "ARRAY",
    "BOOLEAN",
    "CHECKPOINTS",
    "DEPRECATED",
    "DEVICE",
    "NONE",
    "PATH",
    "POSITIVE_INT",
    "RANDOM_STATE",
    "VERBOSE",
    "Constraint",
    "InstanceOf",
    "Interval",
    "Options",
    "ParameterValidationMixin",
    "check_param",
    "deprecate_positional_args",
    "describe",
    "validate_params",
    "check_labels",
    "check_finite",
    "check_scale",
    "check_min_per_class",
    "check_spd_array",
]


def check_finite(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Raise if ``X`` holds NaN or infinity."""
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return X


#: Terms a sum of squared distances may add up (an objective's sum over pairs) before it must
#: still be finite: the headroom :func:`check_scale` keeps below the largest float.
SCALE_HEADROOM_TERMS = 10**6


def check_scale(X: np.ndarray, dtype=np.float32, name: str = "X") -> np.ndarray:
    """Raise if the magnitude of ``X`` overflows or underflows squared distances in ``dtype``.

    Distance-based estimators compute ``||a||² + ||b||² − 2aᵀb`` and sums of such terms over
    many pairs. For finite ``X`` this is representable when ``4 · n_features · max|X|²`` times
    :data:`SCALE_HEADROOM_TERMS` stays below the largest ``dtype`` number (about
    ``max|X| < 4.6e15`` for 4 float32 features, ``3.4e150`` in float64), and the squares of the
    largest values do not underflow to zero (``max|X| > 1.1e-19`` in float32, ``1.5e-154`` in
    float64). Outside that range the arithmetic returns inf, nan or zeros, so the input is
    refused with a ``ValueError`` that says so and suggests standardising.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite input (checked by ``validate_data`` before).
    dtype : numpy dtype, default=np.float32
        The arithmetic the estimator computes in.
    name : str, default="X"

    Returns
    -------
    X : ndarray
        Unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric._validation import check_scale
    >>> check_scale(np.ones((3, 2))).shape
    (3, 2)
    """
    X = np.asarray(X)
    if X.size == 0 or X.dtype.kind not in "fiu":
        return X
    largest = float(np.max(np.abs(X)))
    if largest == 0.0 or not np.isfinite(largest):
        return X
    info = np.finfo(dtype)
    n_features = X.shape[1] if X.ndim > 1 else 1
    high = float(np.sqrt(float(info.max) / (4.0 * n_features * SCALE_HEADROOM_TERMS)))
    low = float(np.sqrt(float(info.tiny)))
    if largest > high or largest < low:
        problem = "overflow" if largest > high else "underflow to zero"
        raise ValueError(
            f"{name} has values of magnitude up to {largest:.3g}: the squared distances of "
            f"such input {problem} in {np.dtype(dtype).name} arithmetic (this method needs "
            f"max|{name}| between {low:.2g} and {high:.2g} for {n_features} features). "
            "Standardise the input first (e.g. sklearn.preprocessing.StandardScaler, or "
            "rescale its units)."
        )
    return X


def check_labels(
    y, n_samples: int | None = None, *, min_classes: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Validate class labels and encode them as integers ``0..Q-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (integers or strings).
    n_samples : int, optional
        Expected number of labels (the number of rows of ``X``).
    min_classes : int, default=2
        Fewest distinct classes the caller can learn from.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels.
    codes : ndarray of shape (n_samples,), dtype int64
        ``classes[codes] == y``.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different lengths: {n_samples} samples but {y.shape[0]} labels."
        )
    if y.shape[0] == 0:
        raise ValueError("y is empty.")
    kind = type_of_target(y, input_name="y", raise_unknown=True)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"y must hold class labels, got target type {kind!r}.")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.shape[0] < min_classes:
        raise ValueError(
            f"y has {classes.shape[0]} class(es); at least {min_classes} are needed "
            "to learn a metric."
        )
    return classes, codes.astype(np.int64)


def check_min_per_class(codes: np.ndarray, minimum: int = 2, what: str = "positive pairs") -> None:
    """Raise unless at least one class has ``minimum`` samples (needed to form ``what``)."""
    counts = np.bincount(codes)
    if counts.max() < minimum:
        raise ValueError(
            f"every class has fewer than {minimum} samples, so no {what} can be formed."
        )


def check_spd_array(X, name: str = "X", *, rtol: float = 1e-6) -> np.ndarray:
    """Validate a stack of symmetric positive-definite matrices of shape (n, c, c)."""
    X = np.asarray(X)
    if X.ndim != 3 or X.shape[1] != X.shape[2]:
        raise ValueError(f"{name} must have shape (n_matrices, c, c), got {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    check_finite(X, name)
    asym = np.abs(X - np.swapaxes(X, 1, 2)).max(axis=(1, 2))
    scale = np.abs(X).max(axis=(1, 2)) + np.finfo(X.dtype).tiny
    if np.any(asym > rtol * scale * 10 + 1e-12):
        bad = int(np.argmax(asym / scale))
        raise ValueError(f"{name}[{bad}] is not symmetric.")
    eig_min = np.linalg.eigvalsh(X).min(axis=1)
    if np.any(eig_min <= 0):
        bad = int(np.argmin(eig_min))
        raise ValueError(
            f"{name}[{bad}] is not positive definite (smallest eigenvalue {eig_min[bad]:.3g})."
        )
    return X


# ---------------------------------------------------------------------------------------------
# Declarative hyper-parameter validation (the shape of scikit-learn's ``_parameter_constraints``)
# ---------------------------------------------------------------------------------------------

#: Default of a renamed (deprecated) constructor parameter: "not given".
DEPRECATED = "deprecated"


class Constraint(ABC):
    """One admissible kind of value for a hyper-parameter.

    ``is_satisfied_by(value)`` says whether ``value`` is admissible; ``str(constraint)``
    describes the kind in the words of an error message (``"an integer >= 1"``).
    """

    @abstractmethod
    def is_satisfied_by(self, value) -> bool:
        """Whether ``value`` is admissible."""

    def parts(self) -> list[str]:
        """The alternatives this constraint admits, in words (one, or several for options)."""
        return [str(self)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class Interval(Constraint):
    """Integers or real numbers in an interval, as scikit-learn's ``Interval``.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        Integers (not bools) or real numbers (integers included, bools and NaN excluded).
    left, right : number or None
        Bounds; ``None`` leaves that side unbounded.
    closed : {"left", "right", "both", "neither"}
        Which bounds belong to the interval.
    right_label : str, optional
        Name of a data-dependent right bound, shown in the message (``"n_features"``).

    Infinite values are admitted only where a bound is infinite and closed
    (``Interval(Real, 0, np.inf, closed="right")`` is (0, inf]).
    """

    def __init__(self, type, left, right, *, closed: str, right_label: str | None = None):
        if type not in (numbers.Integral, numbers.Real):
            raise ValueError(f"type must be numbers.Integral or numbers.Real, got {type!r}.")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be 'left', 'right', 'both' or 'neither': {closed!r}.")
        self.type, self.left, self.right, self.closed = type, left, right, closed
        self.right_label = right_label

    def is_satisfied_by(self, value) -> bool:
        if not (_is_integer(value) if self.type is numbers.Integral else _is_real(value)):
            return False
        if np.isnan(value):
            return False
        left_closed = self.closed in ("left", "both")
        right_closed = self.closed in ("right", "both")
        if np.isinf(value) and not (
            (value > 0 and self.right == np.inf and right_closed)
            or (value < 0 and self.left == -np.inf and left_closed)
        ):
            return False
        left = self.left
        if left is not None and (value < left or (value == left and not left_closed)):
            return False
        return self.right is None or value < self.right or (value == self.right and right_closed)

    def __str__(self) -> str:
        kind = "an integer" if self.type is numbers.Integral else "a number"
        if kind == "a number" and (self.left is None or self.right is None):
            kind = "a finite number"  # an unbounded side admits no infinity
        right = self.right if self.right_label is None else f"{self.right_label}={self.right}"
        if self.right is None and self.left is not None:
            return f"{kind} {'>=' if self.closed in ('left', 'both') else '>'} {self.left}"
        if self.left is None and self.right is not None:
            return f"{kind} {'<=' if self.closed in ('right', 'both') else '<'} {right}"
        if self.left is None:
            return kind
        lo = "[" if self.closed in ("left", "both") else "("
        hi = "]" if self.closed in ("right", "both") else ")"
        return f"{kind} in {lo}{self.left}, {right}{hi}"


def _same_kind(value, option) -> bool:
    """Strings match strings (NumPy's too); other options need their exact type (``True != 1``)."""
    return isinstance(value, str) if isinstance(option, str) else type(value) is type(option)


class Options(Constraint):
    """One of a few fixed values (strings, usually), as scikit-learn's ``StrOptions``."""

    def __init__(self, *values):
        self.values = values

    def is_satisfied_by(self, value) -> bool:
        return any(_same_kind(value, v) and value == v for v in self.values)

    def parts(self) -> list[str]:
        return [repr(v) for v in self.values]

    def __str__(self) -> str:
        return _either(self.parts())


class InstanceOf(Constraint):
    """An instance of one of ``types`` (described as ``description``)."""

    def __init__(self, types, description: str):
        self.types, self.description = types, description

    def is_satisfied_by(self, value) -> bool:
        return isinstance(value, self.types)

    def __str__(self) -> str:
        return self.description


class _NoneConstraint(Constraint):
    def is_satisfied_by(self, value) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


class _Boolean(Constraint):
    def is_satisfied_by(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))

    def __str__(self) -> str:
        return "a bool"


class _RandomState(Constraint):
    def is_satisfied_by(self, value) -> bool:
        return (
            value is None
            or _is_integer(value)
            and 0 <= value < 2**63
            or isinstance(value, (np.random.Generator, np.random.RandomState))
        )

    def __str__(self) -> str:
        return "None, a non-negative integer seed, a numpy Generator or RandomState"


class _Device(Constraint):
    def is_satisfied_by(self, value) -> bool:
        import torch  # only when asked: the numpy-only estimators never need it

        return value is None or isinstance(value, (str, torch.device))

    def __str__(self) -> str:
        return "None, 'auto', 'cpu', 'cuda' or a torch.device"


#: ``None`` is admissible.
NONE = _NoneConstraint()
#: ``True`` / ``False`` (NumPy bools too; not 0 / 1).
BOOLEAN = _Boolean()
#: What :func:`rankmetric._utils.make_rng` accepts.
RANDOM_STATE = _RandomState()
#: What :func:`rankmetric._utils.resolve_device` accepts (the device itself is resolved there).
DEVICE = _Device()
#: An ndarray (an initial matrix, a prior); its shape is checked against the data in ``fit``.
ARRAY = InstanceOf(np.ndarray, "an array")
#: A file-system path (a checkpoint directory).
PATH = InstanceOf((str, os.PathLike), "a path")
#: Positive integers, the commonest constraint.
POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")
#: Verbosity: a bool or a non-negative integer.
VERBOSE = [BOOLEAN, Interval(numbers.Integral, 0, None, closed="left")]
#: Where ``training.train`` writes checkpoints, and how often.
CHECKPOINTS = {"checkpoint_dir": [NONE, PATH], "checkpoint_every": [POSITIVE_INT]}


def _either(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


def describe(constraints) -> str:
    """``"None or an integer >= 1"``: the constraints in the words of an error message."""
    return _either([part for c in constraints for part in c.parts()])


def check_param(name: str, value, constraints) -> None:
    """Raise ``ValueError("<name> must be <constraints>, got <value>.")`` unless one holds.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    value : object
    constraints : list of Constraint
    """
    if not any(c.is_satisfied_by(value) for c in constraints):
        raise ValueError(f"{name} must be {describe(constraints)}, got {value!r}.")


def validate_params(estimator) -> None:
    """Check every constructor parameter of ``estimator`` against its declaration.

    The declarations are the class attribute ``_parameter_constraints``
    (``{name: [Constraint, ...]}``, one entry per constructor parameter). A parameter renamed
    in ``_renamed_parameters`` (``{old: new}``) defaults to :data:`DEPRECATED`; when a user sets
    it, it is checked against the new name's constraints and a ``FutureWarning`` names the new
    name.
    """
    declared = type(estimator)._parameter_constraints
    renamed = getattr(type(estimator), "_renamed_parameters", {})
    for name, value in estimator.get_params(deep=False).items():
        if name in renamed:
            if isinstance(value, str) and value == DEPRECATED:
                continue
            warnings.warn(
                f"{type(estimator).__name__}: {name!r} was renamed {renamed[name]!r} in 0.2; "
                f"{name!r} will stop working in 0.3. Use {renamed[name]}={value!r}.",
                FutureWarning,
                stacklevel=4,
            )
            check_param(name, value, declared[renamed[name]])
        else:
            check_param(name, value, declared[name])


class ParameterValidationMixin:
    """``_validate_params()`` with scikit-learn's signature, over ``_parameter_constraints``.

    A subclass declares ``_parameter_constraints`` (and, for renamed parameters,
    ``_renamed_parameters``), calls ``self._validate_params()`` first thing in ``fit``, and reads
    a renamed hyper-parameter with ``self._param(new_name)``. Checks that need the data (an
    upper bound ``n_features``, a matrix shape) stay in ``fit``, through :func:`check_param`.
    """

    _parameter_constraints: dict = {}
    _renamed_parameters: dict = {}

    def _validate_params(self) -> None:
        """Raise ``ValueError`` naming the first hyper-parameter that breaks its declaration."""
        validate_params(self)

    def _param(self, name: str):
        """The value of parameter ``name``, or of its deprecated old name when that was set."""
        for old, new in self._renamed_parameters.items():
            value = getattr(self, old)
            if new == name and not (isinstance(value, str) and value == DEPRECATED):
                return value
        return getattr(self, name)


def deprecate_positional_args(init):
    """Let a keyword-only ``__init__`` take positional arguments this release, with a warning.

    ``Estimator(5)`` still works as ``Estimator(<first keyword>=5)`` and raises a
    ``FutureWarning`` naming the keyword; it will be a ``TypeError`` in 0.3. scikit-learn's
    ``get_params`` and ``clone`` read the keyword-only signature (through ``__wrapped__``).
    """
    names = [
        p.name
        for p in inspect.signature(init).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if args:
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__}() takes keyword arguments only.")
            given = names[: len(args)]
            shown = ", ".join(f"{n}={a!r}" for n, a in zip(given, args, strict=True))
            warnings.warn(
                f"Passing {', '.join(given)} to {type(self).__name__} by position is deprecated "
                f"and will be an error in 0.3; pass {shown} as keywords.",
                FutureWarning,
                stacklevel=2,
            )
            for n in given:
                if n in kwargs:
                    raise TypeError(f"{type(self).__name__}() got multiple values for {n!r}.")
            kwargs.update(zip(given, args, strict=True))
        init(self, **kwargs)

    return wrapper
