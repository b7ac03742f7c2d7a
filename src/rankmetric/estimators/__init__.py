"""rankmetric.estimators: the metric learners, imported lazily (``rankmetric.estimators.LMNN``)."""

from __future__ import annotations

import importlib

_LAZY = {
    "WARCA": "rankmetric.estimators.warca",
    "KernelWARCA": "rankmetric.estimators.kernel_warca",
    "SSNE": "rankmetric.estimators.ssne",
    "RPLEmbedding": "rankmetric.estimators.rpl",
    "SPDNetEmbedding": "rankmetric.estimators.spdnet",
    "LMNN": "rankmetric.estimators.lmnn",
    "MultiMetricLMNN": "rankmetric.estimators.mlmnn",
    "ITML": "rankmetric.estimators.itml",
    "KISSME": "rankmetric.estimators.kissme",
    "XQDA": "rankmetric.estimators.xqda",
    "PairClassifier": "rankmetric.estimators.pair_classifier",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rankmetric.estimators' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
