"""Deprecated keyword names of the torch modules' constructors (kept working, with a warning)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

__all__ = ["renamed_keywords"]


def renamed_keywords(**renames: str) -> Callable:
    """Decorate ``__init__`` so that each old keyword (``old="new"``) still works.

    A call that passes an old name gets a ``FutureWarning`` naming the new one and is forwarded
    under the new name; passing both is a ``TypeError``, as a repeated argument is in Python.
    Positional calls are unchanged.

    Parameters
    ----------
    **renames : str
        ``old_name="new_name"`` pairs.
    """

    def decorate(init: Callable) -> Callable:
        @functools.wraps(init)
        def wrapper(self, *args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"got both {old!r} and its new name {new!r}; pass {new!r}.")
                warnings.warn(
                    f"{type(self).__name__}({old}=...) is deprecated and will be removed in "
                    f"0.4; use {new}=... (the name torch.nn uses).",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return init(self, *args, **kwargs)

        return wrapper

    return decorate
