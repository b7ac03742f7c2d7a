"""rankmetric.preprocessing: scikit-learn transformers that prepare raw data for the learners.

- ``Covariances`` turns multichannel trials (EEG, MEG, motion sensors) into the SPD covariance
  matrices that :class:`rankmetric.RPLEmbedding` takes, so that a whole pyRiemann-style pipeline
  runs on raw signals.
- ``StripeHistograms`` turns image crops into LOMO-like stripe histograms (intensity, local
  binary patterns, gradient orientation) for re-identification with a χ² kernel.

>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.neighbors import KNeighborsClassifier
>>> from rankmetric import RPLEmbedding
>>> from rankmetric.preprocessing import Covariances
>>> model = make_pipeline(Covariances(), RPLEmbedding(), KNeighborsClassifier())
"""

from __future__ import annotations

from .covariances import Covariances
from .lomo import StripeHistograms

__all__ = ["Covariances", "StripeHistograms"]
