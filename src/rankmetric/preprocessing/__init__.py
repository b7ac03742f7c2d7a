"""rankmetric.preprocessing: scikit-learn transformers that prepare raw data for the learners.

``Covariances`` turns multichannel trials (EEG, MEG, motion sensors) into the SPD covariance
matrices that :class:`rankmetric.RPLEmbedding` takes, so that a whole pyRiemann-style pipeline
runs on raw signals:

>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.neighbors import KNeighborsClassifier
>>> from rankmetric import RPLEmbedding
>>> from rankmetric.preprocessing import Covariances
>>> model = make_pipeline(Covariances(), RPLEmbedding(), KNeighborsClassifier())
"""

from __future__ import annotations

from .covariances import Covariances

__all__ = ["Covariances"]
