"""Declarative hyper-parameter validation, the shape of scikit-learn's ``_parameter_constraints``.

An estimator declares ``{name: [constraint, ...]}`` with :class:`Interval`, :class:`Options`,
:data:`NONE`, :data:`BOOLEAN`, ... and calls ``self._validate_params()``
(:class:`ParameterValidationMixin`) at the start of ``fit``; the message is generated from the
declaration (``"max_iter must be an integer >= 1, got 0."``). Functions and torch modules check
their arguments with the same constraints through :func:`check_param`. scikit-learn's own
machinery (``sklearn.utils._param_validation``) is private, so this module holds a small
equivalent (see ``docs/architecture.md``). Renamed parameters warn through
:mod:`rankmetric._validation.compat`.
"""

from __future__ import annotations

import numbers
import os
from abc import ABC, abstractmethod

import numpy as np

from .compat import is_deprecated_default, warn_renamed

__all__ = [
    "ARRAY",
    "BOOLEAN",
    "CHECKPOINTS",
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
    "check_option",
    "check_param",
    "describe",
    "validate_params",
]


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
NONE = InstanceOf(type(None), "None")
#: ``True`` / ``False`` (NumPy bools too; not 0 / 1).
BOOLEAN = InstanceOf((bool, np.bool_), "a bool")
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


def check_option(name: str, value, choices: tuple):
    """``value`` if it is one of ``choices``, else ``ValueError("<name> must be one of ...")``.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    value : object
    choices : tuple
        The admissible values.

    Returns
    -------
    object
        ``value``.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def validate_params(estimator) -> None:
    """Check every constructor parameter of ``estimator`` against its declaration.

    The declarations are the class attribute ``_parameter_constraints``
    (``{name: [Constraint, ...]}``, one entry per constructor parameter). A parameter renamed
    in ``_renamed_parameters`` (``{old: new}``) defaults to ``DEPRECATED``; when a user sets
    it, it is checked against the new name's constraints and a ``FutureWarning`` names the new
    name.
    """
    declared = type(estimator)._parameter_constraints
    renamed = getattr(type(estimator), "_renamed_parameters", {})
    for name, value in estimator.get_params(deep=False).items():
        if name in renamed:
            if is_deprecated_default(value):
                continue
            warn_renamed(type(estimator).__name__, name, renamed[name], value, stacklevel=4)
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
            if new == name and not is_deprecated_default(value):
                return value
        return getattr(self, name)
