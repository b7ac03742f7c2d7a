"""The metric learners as scikit-learn estimators: WARCA, SSNE, RPL and their baselines.

WARCA and KernelWARCA, SSNE, RPLEmbedding and SPDNetEmbedding (SPD matrices), the baselines
LMNN, MultiMetricLMNN, ITML, KISSME and XQDA, and PairClassifier (same / different decisions on
pairs with a calibrated threshold). Each is imported on first use
(``rankmetric.estimators.LMNN``, or ``from rankmetric import LMNN``).

Every estimator's docstring lists its parameters, fitted attributes, related estimators and
papers, with an example that runs as a doctest.

Examples
--------
>>> from sklearn.datasets import load_iris
>>> from rankmetric.estimators import LMNN
>>> X, y = load_iris(return_X_y=True)
>>> LMNN(n_components=2, random_state=0).fit(X, y).transform(X).shape
(150, 2)
"""

from __future__ import annotations

import importlib

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
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rankmetric.estimators' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
