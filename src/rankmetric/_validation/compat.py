"""The one deprecation mechanism: old names keep working for one release, with a ``FutureWarning``.

Every deprecation of rankmetric goes through :func:`warn_deprecated`, with one removal version,
:data:`REMOVAL_VERSION`:

- a renamed constructor parameter of an estimator: the old name stays in the signature with the
  default :data:`DEPRECATED` and is listed in ``_renamed_parameters``
  (:func:`rankmetric._validation.constraints.validate_params` calls :func:`warn_renamed`);
- a renamed keyword of a function or torch module: :func:`renamed_keywords`;
- positional arguments to a keyword-only constructor: :func:`deprecate_positional_args`;
- a changed default used without being set: :func:`note_changed_default` (once per process).

Every warning of the package that concerns the user's own call points at the user's line, not at
rankmetric's or scikit-learn's code (:func:`warn_at_caller`).
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "DEPRECATED",
    "REMOVAL_VERSION",
    "deprecate_positional_args",
    "deprecated_alias",
    "is_deprecated_default",
    "note_changed_default",
    "renamed_keywords",
    "warn_at_caller",
    "warn_deprecated",
    "warn_renamed",
]

#: The release in which every name deprecated in this one stops working.
REMOVAL_VERSION = "0.3"

#: Default of a renamed (deprecated) constructor parameter: "not given".
DEPRECATED = "deprecated"


#: Files whose frames a warning skips to reach the user's line: rankmetric's, scikit-learn's and
#: joblib's (a Pipeline, ``set_output``'s wrappers and a search call the estimators from there).
_LIBRARY_DIRS = (str(Path(__file__).resolve().parents[1]),)


def _library_dirs() -> tuple[str, ...]:
    import joblib
    import sklearn

    others = (Path(m.__file__).resolve().parent for m in (sklearn, joblib))
    return (*_LIBRARY_DIRS, *(str(p) for p in others))


def _caller_stacklevel(prefixes: tuple[str, ...]) -> int:
    """``stacklevel`` (for a ``warnings.warn`` in the caller's caller) of the first user frame."""
    frame, level = sys._getframe(2), 1
    while frame is not None and any(
        str(Path(frame.f_code.co_filename).resolve()).startswith(p) for p in prefixes
    ):
        frame, level = frame.f_back, level + 1
    return level


# alike: the warnings.catch_warnings doctest idiom, alike in estimators/_early_stopping.py; the
# warnings differ
def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the first line outside rankmetric and scikit-learn: the user's own call.

    ``Pipeline.fit`` and ``set_output`` call the estimators through scikit-learn's code, so a
    fixed ``stacklevel`` would point there. Python 3.12's ``skip_file_prefixes`` does the walk;
    on older versions the frames are walked here.

    Parameters
    ----------
    message : str
    category : Warning subclass, default=UserWarning

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_at_caller("look here")
    >>> str(caught[0].message), caught[0].filename.endswith("compat.py")
    ('look here', False)
    """
    prefixes = _library_dirs()
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=prefixes)
    else:
        warnings.warn(message, category, stacklevel=_caller_stacklevel(prefixes) + 1)


#: The (owner, parameter) pairs whose changed default was already noted in this process.
_NOTED_DEFAULTS: set[tuple[str, str]] = set()


def note_changed_default(owner: str, name: str, old, new, since: str) -> None:
    """Say once per process that a default changed, when a user relies on it without setting it.

    A ``FutureWarning`` at the user's line (:func:`warn_at_caller`):
    ``"<owner>: the default name=new (since <since>; it was old) is used ..."``.

    Parameters
    ----------
    owner : str
        The class or function.
    name : str
        The parameter.
    old, new : object
        Its default before and after ``since``.
    since : str
        The release that changed it.

    Examples
    --------
    >>> import warnings
    >>> _NOTED_DEFAULTS.discard(("Cov", "estimator"))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     note_changed_default("Cov", "estimator", "oas", "scm", "0.2")
    ...     note_changed_default("Cov", "estimator", "oas", "scm", "0.2")  # once
    >>> len(caught), caught[0].category.__name__
    (1, 'FutureWarning')
    """
    if (owner, name) in _NOTED_DEFAULTS:
        return
    _NOTED_DEFAULTS.add((owner, name))
    warn_at_caller(
        f"{owner}: {name} was not set, so it is {new!r}, the default since {since} (it was "
        f"{old!r} before). Set {name}={new!r} to keep it and silence this note, or "
        f"{name}={old!r} for the old results.",
        FutureWarning,
    )


def is_deprecated_default(value) -> bool:
    """Whether ``value`` is the :data:`DEPRECATED` default, i.e. the old name was not set."""
    return isinstance(value, str) and value == DEPRECATED


def warn_deprecated(what: str, instead: str, *, stacklevel: int | None = 2) -> None:
    """Raise a deprecation's ``FutureWarning``: ``"<what> will stop working in 0.3. <instead>."``.

    Parameters
    ----------
    what : str
        What is deprecated (the subject of "will stop working").
    instead : str
        What to do instead (a sentence, without the final full stop).
    stacklevel : int or None, default=2
        As :func:`warnings.warn`'s, counted from the caller of this function; None: the user's
        own line, the first frame outside rankmetric and scikit-learn (:func:`warn_at_caller`).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated("f(k=...)", "Use f(n_neighbors=...)")
    >>> str(caught[0].message)
    'f(k=...) will stop working in 0.3. Use f(n_neighbors=...).'
    """
    message = f"{what} will stop working in {REMOVAL_VERSION}. {instead}."
    if stacklevel is None:
        warn_at_caller(message, FutureWarning)
    else:
        warnings.warn(message, FutureWarning, stacklevel=stacklevel + 1)


def warn_renamed(owner: str, old: str, new: str, value, *, stacklevel: int = 2) -> None:
    """The ``FutureWarning`` of a renamed parameter: ``"<owner>: 'old' was renamed 'new' ..."``.

    Parameters
    ----------
    owner : str
        The class or function the parameter belongs to.
    old, new : str
        The parameter's old and new names.
    value : object
        The value the user gave (shown in the advice ``new=value``).
    stacklevel : int, default=2
        Counted from the caller of this function.
    """
    warn_deprecated(
        f"{owner}: {old!r} was renamed {new!r} in 0.2; {old!r}",
        f"Use {new}={value!r}",
        stacklevel=stacklevel + 1,
    )


def renamed_keywords(**renames: str) -> Callable:
    """Decorate a function or ``__init__`` so that each old keyword (``old="new"``) still works.

    A call that passes an old name gets a ``FutureWarning`` (:func:`warn_renamed`) and is
    forwarded under the new name; passing both is a ``TypeError``, as a repeated argument is in
    Python. Positional calls are unchanged.

    Parameters
    ----------
    **renames : str
        ``old_name="new_name"`` pairs.

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(distance="metric")
    ... def score(x, *, metric="euclidean"):
    ...     return metric
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     score(1, distance="cosine")
    'cosine'
    """

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"got both {old!r} and its new name {new!r}; pass {new!r}.")
                owner = function.__qualname__.removesuffix(".__init__")
                if function.__name__ == "__init__" and args:
                    owner = type(args[0]).__name__
                warn_renamed(owner, old, new, kwargs[old], stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate


def deprecated_alias(function: Callable, old_name: str) -> Callable:
    """``function`` under its name before 0.2, warning on each call (:func:`warn_deprecated`).

    Parameters
    ----------
    function : callable
        The function under its current name.
    old_name : str
        The name it had.

    Returns
    -------
    callable
        Calls ``function`` after a ``FutureWarning`` naming the new name.

    Examples
    --------
    >>> import warnings
    >>> def optimize(x):
    ...     return x
    >>> optimise = deprecated_alias(optimize, "optimise")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     optimise(3)
    3
    """

    @functools.wraps(function)
    def alias(*args, **kwargs):
        warn_deprecated(
            f"{old_name} was renamed {function.__name__} in 0.2 (one spelling: American); "
            f"{old_name}",
            f"Use {function.__name__}",
            stacklevel=2,
        )
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    return alias


def deprecate_positional_args(init):
    """Let a keyword-only ``__init__`` take positional arguments this release, with a warning.

    ``Estimator(5)`` still works as ``Estimator(<first keyword>=5)`` and raises a
    ``FutureWarning`` naming the keyword; it will be a ``TypeError`` in :data:`REMOVAL_VERSION`.
    scikit-learn's ``get_params`` and ``clone`` read the keyword-only signature (through
    ``__wrapped__``).
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
            warn_deprecated(
                f"Passing {', '.join(given)} to {type(self).__name__} by position",
                f"Keyword-only: pass {shown} as keywords",
                stacklevel=2,
            )
            for n in given:
                if n in kwargs:
                    raise TypeError(f"{type(self).__name__}() got multiple values for {n!r}.")
            kwargs.update(zip(given, args, strict=True))
        init(self, **kwargs)

    return wrapper
