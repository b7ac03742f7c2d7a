"""Validation shared by every estimator, loss and metric, in three modules by job.

- :mod:`.checks`: data checks (finite values, scale, class labels and the one label encoder,
  SPD stacks); each raises a ``ValueError`` whose message names the problem.
- :mod:`.constraints`: the declarative hyper-parameter checks (``_parameter_constraints`` +
  :func:`check_param`, :class:`ParameterValidationMixin`).
- :mod:`.deprecation`: the one deprecation mechanism (``FutureWarning``, one removal version).

Every name is re-exported here, so ``from rankmetric._validation import check_labels`` (the import
path before the split) keeps working.
"""

from __future__ import annotations

from .checks import (
    SCALE_HEADROOM_TERMS,
    SYMMETRY_RTOL,
    check_finite,
    check_labels,
    check_min_per_class,
    check_scale,
    check_spd_array,
    encode_labels,
)
from .constraints import (
    ARRAY,
    BOOLEAN,
    CHECKPOINTS,
    DEVICE,
    NONE,
    PATH,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Constraint,
    InstanceOf,
    Interval,
    Options,
    ParameterValidationMixin,
    check_param,
    describe,
    validate_params,
)
from .deprecation import (
    DEPRECATED,
    REMOVAL_VERSION,
    deprecate_positional_args,
    deprecated_alias,
    is_deprecated_default,
    renamed_keywords,
    warn_deprecated,
    warn_renamed,
)

__all__ = [  # every public name of .checks, .constraints and .deprecation
    "SCALE_HEADROOM_TERMS",
    "SYMMETRY_RTOL",
    "check_finite",
    "check_labels",
    "check_min_per_class",
    "check_scale",
    "check_spd_array",
    "encode_labels",
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
    "check_param",
    "describe",
    "validate_params",
    "DEPRECATED",
    "REMOVAL_VERSION",
    "deprecate_positional_args",
    "deprecated_alias",
    "is_deprecated_default",
    "renamed_keywords",
    "warn_deprecated",
    "warn_renamed",
]
