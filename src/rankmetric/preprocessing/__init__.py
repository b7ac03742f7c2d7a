"""rankmetric.preprocessing: scikit-learn transformers that prepare raw data for the learners.

- ``Covariances`` turns multichannel trials (EEG, MEG, motion sensors) into the SPD covariance
  matrices that :class:`rankmetric.RPLEmbedding` takes, so that a whole pyRiemann-style pipeline
  runs on raw signals.
- ``TangentSpace`` maps SPD matrices to pyRiemann's tangent-space vectors at their Riemannian
  (or log-Euclidean, Euclidean) mean, so that any vector estimator (logistic regression, WARCA,
  LMNN) runs on them; ``inverse_transform`` maps vectors back to SPD matrices.
- ``DomainRecentering`` re-centres each domain (session, subject) of SPD matrices at its own
  Riemannian mean (pyRiemann's ``TLCenter``), for cross-session and cross-subject transfer;
  domain labels are routed through a Pipeline by scikit-learn's metadata routing.
- ``RegionCovariances`` turns images into region covariance descriptors (Tuzel, Porikli & Meer,
  ECCV 2006): 8 × 8 SPD matrices of per-pixel position, intensity and derivative features.
- ``StripeHistograms`` turns image crops into LOMO-like stripe histograms (intensity, local
  binary patterns, gradient orientation) for re-identification with a χ² kernel.

>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.neighbors import KNeighborsClassifier
>>> from rankmetric import RPLEmbedding
>>> from rankmetric.preprocessing import Covariances
>>> model = make_pipeline(Covariances("scm"), RPLEmbedding(), KNeighborsClassifier())
"""

from __future__ import annotations

from .covariances import Covariances
from .lomo import StripeHistograms
from .recentring import DomainRecentering
from .region_covariance import RegionCovariances, region_covariances
from .tangent_space import TangentSpace

__all__ = [
    "Covariances",
    "DomainRecentering",
    "RegionCovariances",
    "StripeHistograms",
    "TangentSpace",
    "region_covariances",
]
