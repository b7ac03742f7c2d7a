"""rankmetric.preprocessing: feature extractors (scikit-learn transformers) for metric learning."""

from __future__ import annotations

from .lomo import StripeHistograms

__all__ = ["StripeHistograms"]
