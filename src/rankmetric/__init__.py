"""rankmetric: supervised metric and similarity learning (WARCA, SSNE, RPL and baselines).

The estimators (scikit-learn API: ``fit``, ``transform``, ``pair_distances``, ``save``) are
importable from here: :class:`WARCA`, :class:`KernelWARCA`, :class:`SSNE`,
:class:`RPLEmbedding`, :class:`SPDNetEmbedding`, :class:`LMNN`, :class:`MultiMetricLMNN`,
:class:`ITML`, :class:`KISSME`, :class:`XQDA` and :class:`PairClassifier`; with them
:func:`save_model` / :func:`load_model` (model files without pickle), :func:`threads` and the
memory budget (:func:`memory_budget`, :func:`memory_limit`, :func:`set_memory_limit`).

The subpackages: :mod:`rankmetric.preprocessing` (covariances, tangent space, image
descriptors), :mod:`rankmetric.losses` (the PyTorch losses and miners),
:mod:`rankmetric.evaluate` (k-NN, retrieval, re-identification and verification scores),
:mod:`rankmetric.geometry` (SPD matrix functions, distances and means),
:mod:`rankmetric.neighbors` (exact chunked search), :mod:`rankmetric.sampling` and
:mod:`rankmetric.datasets`.

References
----------
.. [1] C. Jose and F. Fleuret. Scalable Metric Learning via Weighted Approximate Rank
   Component Analysis. ECCV 2016 (WARCA).
.. [2] D. Batra and G. Shakhnarovich. Similarity Sensitive Nonlinear Embeddings. Toyota
   Technological Institute at Chicago, workshop extended abstract (SSNE).
.. [3] B. H. Kim, Y.-J. Suh, H. Lee and S. Jo. Nonlinear Ranking Loss on Riemannian Potato
   Embedding. KAIST and Looxid Labs, poster (RPL).

Examples
--------
>>> from sklearn.datasets import load_iris
>>> from rankmetric import KISSME
>>> X, y = load_iris(return_X_y=True)
>>> Z = KISSME(n_components=2).fit(X, y).transform(X)
>>> Z.shape
(150, 2)
"""

from __future__ import annotations

import importlib

from . import _model_classes

__version__ = "0.1.0"

# Public estimators, imported lazily so that ``import rankmetric`` stays fast.
_LAZY = {
    "WARCA": "rankmetric.estimators.warca",
    "KernelWARCA": "rankmetric.estimators.kernel_warca",
    "SSNE": "rankmetric.estimators.ssne",
    "RPLEmbedding": "rankmetric.estimators.rpl",
    "SPDNetEmbedding": "rankmetric.estimators.spdnet",
    "LMNN": "rankmetric.estimators.lmnn",
    "MultiMetricLMNN": "rankmetric.estimators.lmnn",
    "ITML": "rankmetric.estimators.itml",
    "KISSME": "rankmetric.estimators.pair_covariance",
    "XQDA": "rankmetric.estimators.pair_covariance",
    "PairClassifier": "rankmetric.estimators.pair_classifier",
    "MDM": "rankmetric.estimators.mdm",
    "Index": "rankmetric.index",
    "WARCACV": "rankmetric.tuning",
    "KernelWARCACV": "rankmetric.tuning",
    "SSNECV": "rankmetric.tuning",
    "ITMLCV": "rankmetric.tuning",
    "KISSMECV": "rankmetric.tuning",
    "XQDACV": "rankmetric.tuning",
    "LMNNCV": "rankmetric.tuning",
    "save_model": "rankmetric.io",
    "load_model": "rankmetric.io",
    "threads": "rankmetric._threads",
    "UntrainedModelWarning": "rankmetric.training",
    "memory_budget": "rankmetric.resources",
    "memory_limit": "rankmetric.resources",
    "set_memory_limit": "rankmetric.resources",
}

__all__ = ["__version__", *_LAZY]

# Model files name their estimator's class: tell rankmetric.io where each one lives.
_model_classes.announce({n: m for n, m in _LAZY.items() if m.startswith("rankmetric.estimators.")})


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rankmetric' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
