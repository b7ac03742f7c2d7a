"""Validation shared by every estimator, loss and metric, in three modules by job.

- :mod:`.checks`: data checks (finite values, scale, class labels and the one label encoder,
  SPD stacks); each raises a ``ValueError`` whose message names the problem.
- :mod:`.constraints`: the declarative hyper-parameter checks (``_parameter_constraints`` +
  :func:`check_param`, :class:`ParameterValidationMixin`).
- :mod:`.compat`: the one deprecation mechanism (``FutureWarning``, one removal version).

Every name is re-exported here, so ``from rankmetric._validation import check_labels`` (the import
path before the split) keeps working.
"""

from __future__ import annotations

from . import checks, compat, constraints
from .checks import *  # noqa: F403 - every name of each module's __all__, re-exported
from .compat import *  # noqa: F403
from .constraints import *  # noqa: F403

__all__ = [*checks.__all__, *constraints.__all__, *compat.__all__]
