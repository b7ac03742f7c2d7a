"""The WARCA family (Jose & Fleuret, ECCV 2016): linear :class:`WARCA` and :class:`KernelWARCA`.

``linear.py`` and ``kernel.py`` hold the two estimators, ``base.py`` what they share (parameter
declarations, the labelled-data preamble, training), ``solver.py`` the step schedule and the WARP
training loop, ``validation.py`` the early-stopping set, its scorer and the check against the
Euclidean distance.

Examples
--------
>>> from sklearn.datasets import load_iris
>>> from rankmetric.estimators.warca import WARCA
>>> X, y = load_iris(return_X_y=True)
>>> WARCA(n_components=2, random_state=0).fit(X, y).transform(X).shape
(150, 2)
"""

from __future__ import annotations

from .base import WARP_PARAMETER_CONSTRAINTS, BaseWARCA
from .kernel import KernelWARCA
from .linear import WARCA
from .solver import (
    AUTO_BATCH,
    AUTO_DRAWS,
    AUTO_WINDOW,
    SCHEDULE_0_1,
    STATS_CHUNK_ROWS,
    auto_draws,
    auto_schedule,
    column_stats,
)
from .validation import VALIDATION_K, VALIDATION_METRICS, VALIDATION_REFERENCE_SIZE

__all__ = [
    "WARCA",
    "KernelWARCA",
    "BaseWARCA",
    "WARP_PARAMETER_CONSTRAINTS",
    "auto_draws",
    "auto_schedule",
    "column_stats",
    "AUTO_BATCH",
    "AUTO_DRAWS",
    "AUTO_WINDOW",
    "SCHEDULE_0_1",
    "STATS_CHUNK_ROWS",
    "VALIDATION_K",
    "VALIDATION_METRICS",
    "VALIDATION_REFERENCE_SIZE",
]
