"""Where the estimator classes that a model file may name are defined, announced from above.

:mod:`rankmetric.io` rebuilds an estimator from the class name a model file records. The class
registers itself (``io.register_estimator``) when its module is imported; in a fresh process the
module may not be imported yet. Rather than reaching up to the estimators, ``io`` asks this table,
which the root package fills from its own lazy table (``rankmetric/__init__.py``), for the module
to import. So the estimators depend on ``io``, and ``io`` only on this bottom-layer table.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["announce", "module_of"]

_MODULES: dict[str, str] = {}


def announce(modules: Mapping[str, str]) -> None:
    """Record ``{class name: module defining it}``."""
    _MODULES.update(modules)


def module_of(name: str) -> str | None:
    """The module announced for the class ``name``, or ``None``."""
    return _MODULES.get(name)
