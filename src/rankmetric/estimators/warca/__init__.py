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

from . import solver, validation
from .base import WARP_PARAMETER_CONSTRAINTS, BaseWARCA
from .kernel import KernelWARCA
from .linear import WARCA
from .solver import *  # noqa: F403 - the schedule's public names (solver.__all__)
from .validation import *  # noqa: F403 - the validation constants (validation.__all__)

__all__ = [
    "WARCA",
    "KernelWARCA",
    "BaseWARCA",
    "WARP_PARAMETER_CONSTRAINTS",
    *solver.__all__,
    *validation.__all__,
]
