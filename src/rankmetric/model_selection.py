"""The one-standard-error selection, documented here before 0.2: it lives in
:mod:`rankmetric.training.model_selection`, re-exported under this name."""

from .training.model_selection import OneStandardErrorSelector, paired_gain, per_query_scores

__all__ = ["OneStandardErrorSelector", "paired_gain", "per_query_scores"]
