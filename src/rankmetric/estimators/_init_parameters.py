"""The constraints every trained estimator shares, and ``store_parameters`` (``_utils``'s)."""

from __future__ import annotations

from .._utils import store_parameters
from .._validation import DEVICE, RANDOM_STATE, VERBOSE

__all__ = ["TRAINING_PARAMETER_CONSTRAINTS", "store_parameters"]

#: Constraints of the seed, device and progress parameters every trained estimator takes.
TRAINING_PARAMETER_CONSTRAINTS = {
    "random_state": [RANDOM_STATE],
    "device": [DEVICE],
    "verbose": VERBOSE,
}
