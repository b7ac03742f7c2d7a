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

from .._lazy import lazy_exports
from .._registry import ESTIMATORS

_LAZY = {e.cls: e.path for e in ESTIMATORS}  # the one table of estimators

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
