"""rankmetric: supervised metric and similarity learning (WARCA, SSNE, RPL and baselines)."""

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
    "MultiMetricLMNN": "rankmetric.estimators.mlmnn",
    "ITML": "rankmetric.estimators.itml",
    "KISSME": "rankmetric.estimators.kissme",
    "XQDA": "rankmetric.estimators.xqda",
    "PairClassifier": "rankmetric.estimators.pair_classifier",
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
