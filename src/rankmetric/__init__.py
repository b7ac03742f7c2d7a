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

from . import _registry
from ._lazy import lazy_exports

__version__ = "0.1.0"

# Public names, imported lazily so that ``import rankmetric`` stays fast: the estimators and
# their tuned variants (from the one table of estimators, ``_registry``), then the rest.
_LAZY = {
    **_registry.exports(),
    "Index": "rankmetric.index",
    "save_model": "rankmetric.io",
    "load_model": "rankmetric.io",
    "threads": "rankmetric._threads",
    "UntrainedModelWarning": "rankmetric.training",
    "memory_budget": "rankmetric.resources",
    "memory_limit": "rankmetric.resources",
    "set_memory_limit": "rankmetric.resources",
}

__all__ = ["__version__", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
