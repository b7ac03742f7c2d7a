"""Public names of a package imported on first use (PEP 562 ``__getattr__`` and ``__dir__``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    table: Mapping[str, str],
    names: Iterable[str],
    cache: MutableMapping[str, object] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package with lazy exports.

    Parameters
    ----------
    package : str
        The package's ``__name__`` (the anchor of relative module paths, and the errors' name).
    table : mapping of str to str
        Public name -> the module that defines it (absolute, or relative to ``package``).
    names : iterable of str
        What ``dir(package)`` lists (its ``__all__``).
    cache : mutable mapping, optional
        The package's ``globals()``, to keep each name once imported (later lookups then do not
        call ``__getattr__``); without it every lookup imports through the table.

    Returns
    -------
    (__getattr__, __dir__) : tuple of callables
        ``__getattr__`` raises ``AttributeError`` for a name outside ``table``.

    Examples
    --------
    >>> from rankmetric._lazy import lazy_exports
    >>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"}, ["sqrt"])
    >>> getattr_("sqrt")(4.0), dir_()
    (2.0, ['sqrt'])
    """
    listed = sorted(names)

    def __getattr__(name: str) -> object:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name], package), name)
        if cache is not None:
            cache[name] = value
        return value

    def __dir__() -> list[str]:
        return list(listed)

    return __getattr__, __dir__
