"""The pair-covariance learners: KISSME and XQDA, closed-form metrics from the covariances of the
differences of same-class and different-class pairs (computed once, in ``_covariances``).

Examples
--------
>>> from sklearn.datasets import load_iris
>>> from rankmetric.estimators.pair_covariance import KISSME, XQDA
>>> X, y = load_iris(return_X_y=True)
>>> KISSME(n_components=3).fit(X, y).transform(X).shape
(150, 3)
>>> XQDA(n_components=2).fit(X, y).transform(X).shape
(150, 2)
"""

from ._covariances import pair_difference_covariances
from .kissme import KISSME
from .kissme import psd_projection as psd_projection
from .xqda import XQDA, xqda_subspace

__all__ = ["KISSME", "XQDA", "pair_difference_covariances", "xqda_subspace"]
