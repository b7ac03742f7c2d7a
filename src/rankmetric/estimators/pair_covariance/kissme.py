r"""KISSME: "keep it simple and straightforward" metric learning (Köstinger et al., CVPR 2012).

The Mahalanobis matrix is the log-likelihood-ratio test between two zero-mean Gaussians of pair
differences, one fitted to similar pairs and one to dissimilar pairs, computed on PCA features:

.. math::

    \Sigma_S &= \mathop{\mathrm{mean}}_{(i,j) \in S} (x_i - x_j)(x_i - x_j)^\top, \\
    \Sigma_D &= \mathop{\mathrm{mean}}_{(i,j) \in D} (x_i - x_j)(x_i - x_j)^\top, \\
    M &= \Pi_{\mathrm{PSD}}\bigl(\Sigma_S^{-1} - \Sigma_D^{-1}\bigr),

with :math:`S` the ordered same-class pairs :math:`i \ne j`, :math:`D` the different-class pairs
and :math:`\Pi_{\mathrm{PSD}}` the projection onto the positive semi-definite cone (negative
eigenvalues clipped to 0).

Both covariances are exact averages over *all* pairs, in closed form
(:mod:`~rankmetric.estimators.pair_covariance._covariances`; the paper draws as many
random dissimilar pairs as there are similar ones, an estimate of the same :math:`\Sigma_D`).
"""

from __future__ import annotations

import numpy as np

from ..._validation import deprecate_positional_args
from ...io import register_estimator
from ...resources import check_square_matrices
from .._docstrings import fill_doc
from .._init_parameters import store_parameters
from .._supervision import check_pair_supervision
from ..base import fit_context
from ._covariances import (
    PairCovarianceLearner,
    mean_outer,
    pair_difference_covariances,
    ridged,
)

__all__ = [
    "KISSME",
]

#: float64 (n_features × n_features) matrices held at the peak of a fit (the pair-difference
#: scatter, Σ_S, Σ_D, their two ridge inverses, M and its eigenvectors), checked against the memory
#: budget before the first is formed.
KISSME_MATRICES = 7


def psd_projection(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of the PSD projection of a symmetric matrix.

    Returns
    -------
    eigenvalues : ndarray of shape (d,)
        Clipped at 0, in decreasing order.
    eigenvectors : ndarray of shape (d, d)
        Columns matching ``eigenvalues``.
    """
    values, vectors = np.linalg.eigh(0.5 * (A + A.T))
    return np.clip(values[::-1], 0.0, None), vectors[:, ::-1]


@register_estimator
@fill_doc
class KISSME(PairCovarianceLearner):
    r"""KISSME metric learning (Köstinger, Hirzer, Wohlhart, Roth & Bischof, CVPR 2012).

    Fits a PCA, then :math:`M = \Pi_{\mathrm{PSD}}(\Sigma_S^{-1} - \Sigma_D^{-1})` on the PCA
    features, where :math:`\Sigma_S` / :math:`\Sigma_D` are the covariances of the differences of
    same-class / different-class pairs (exact averages over all pairs; see the module docstring).
    Non-iterative: one pass over the data and two ``d × d`` inversions.

    Parameters
    ----------
    n_components : int, optional
        PCA dimensions ``d`` kept before the metric is learned (the paper uses 34 on VIPeR).
        ``None``: ``min(n_features, n_samples − 1)``.
    regularization : float, default=1e-6
        Ridge added to both covariances before inversion, relative to their mean eigenvalue
        (:math:`\Sigma + \text{regularization} \cdot \operatorname{tr}(\Sigma)/d \cdot I`), so
        that a rank-deficient :math:`\Sigma_S` (few
        similar pairs) stays invertible.
    positives : {"all", "cross_camera"}, default="all"
        Which same-label pairs form ``Σ_S``. ``"cross_camera"`` (camera-aware training, as
        XQDA's paper forms its pairs): only pairs of the same identity seen by two different
        cameras; needs ``fit(X, y, cameras=...)``. ``Σ_D`` keeps every different-label pair.
        An identity seen by one camera only gives no similar pair; no identity with two cameras
        is a ``ValueError``.
    %(held_out_check_only)s
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned distance below (or not better), return the
        reference instead: ``components_`` becomes the PCA projection (the Euclidean
        distance of the PCA features).

    Attributes
    ----------
    %(held_out_check_attribute)s
    components_ : ndarray of shape (n_components, n_features)
        :math:`L` with :math:`L^\top L` the metric in the input space
        (:math:`L = \operatorname{diag}(\sqrt\lambda)\, V^\top P`, :math:`P` the PCA axes,
        :math:`(\lambda, V)` the eigen-pairs of :math:`M`); rows of clipped eigenvalues are zero.
    mean_ : ndarray of shape (n_features,)
        Mean of the training data (the PCA centre; distances do not depend on it).
    pca_components_ : ndarray of shape (n_components, n_features)
        The PCA axes ``P``.
    metric_eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues of ``M`` after the PSD projection, decreasing.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.XQDA : KISSME's metric learned jointly with a discriminant subspace.
    rankmetric.ITML : An iterative metric from the same pair constraints.
    rankmetric.PairClassifier : Similar/dissimilar pair classifier over a fitted KISSME.

    References
    ----------
    .. [1] M. Köstinger, M. Hirzer, P. Wohlhart, P. M. Roth and H. Bischof. Large Scale Metric
       Learning from Equivalence Constraints. CVPR 2012.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric.estimators.pair_covariance import KISSME
    >>> X, y = load_iris(return_X_y=True)
    >>> KISSME(n_components=3).fit(X, y).transform(X).shape
    (150, 3)
    """

    # alike: the signature is spelled out, not inherited (scikit-learn reads the parameters)
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        regularization: float = 1e-6,
        positives: str = "all",
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
    ) -> None:
        store_parameters(self, locals())

    _fitted_arrays = {"mean_": ("n_features_in_",), "pca_components_": (None, "n_features_in_")}

    def _fit_labelled(self, X: np.ndarray, codes: np.ndarray, groups) -> KISSME:
        Z = self._fit_pca(X)
        return self._fit_covariances(*pair_difference_covariances(Z, codes, groups))

    @fit_context
    @fill_doc
    def fit_pairs(self, X, pairs=None, y=None) -> KISSME:
        r"""Learn the metric from similar (+1) and dissimilar (−1) pairs, without class labels.

        :math:`\Sigma_S` and :math:`\Sigma_D` are the mean outer products of the differences of
        the given similar and dissimilar pairs; the PCA is fitted on the distinct points. The call
        convention and
        the checks on degenerate pairs are those of ``docs/pairs.md``.

        Parameters
        ----------
        %(pair_constraints)s

        Returns
        -------
        self : KISSME

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 0.0], [0.1, 1.0], [1.0, 0.0], [1.1, 1.0], [0.0, 2.0]])
        >>> pairs = [[0, 1], [2, 3], [1, 4], [0, 2], [1, 3], [3, 4]]
        >>> KISSME().fit_pairs(X, pairs, [1, 1, 1, -1, -1, -1]).components_.shape
        (2, 2)
        """
        self._validate_params()
        s = check_pair_supervision(self, X, pairs, y)
        Z = self._fit_pca(s.X)
        V = Z[s.a] - Z[s.b]
        return self._fit_covariances(mean_outer(V, s.similar), mean_outer(V, ~s.similar))

    def _held_out_reference(self, X: np.ndarray) -> np.ndarray:
        """The reference of the held-out check: the Euclidean distance of the PCA features."""
        return (np.asarray(X, dtype=np.float64) - self.mean_) @ self.pca_components_.T

    def _use_reference(self) -> None:
        """``fallback="reference"``: the PCA projection, i.e. the Euclidean distance after it."""
        self.components_ = self.pca_components_.astype(self.components_.dtype, copy=True)

    def _fit_pca(self, X: np.ndarray) -> np.ndarray:
        """Fit ``mean_`` and ``pca_components_`` on ``X``; return the PCA features."""
        check_square_matrices(X.shape[1], KISSME_MATRICES, "KISSME")
        limit = min(X.shape[1], max(X.shape[0] - 1, 1))
        r = int(self._n_components(limit, "min(n_features, n_samples - 1)") or limit)
        X64 = X.astype(np.float64)
        self.mean_ = X64.mean(axis=0)
        self.pca_components_ = _principal_axes(X64 - self.mean_, r)
        return (X64 - self.mean_) @ self.pca_components_.T

    def _fit_covariances(self, sigma_s: np.ndarray, sigma_d: np.ndarray) -> KISSME:
        """``M = Π_PSD(Σ_S⁻¹ − Σ_D⁻¹)`` on the PCA features, folded into ``components_``."""
        reg = self.regularization
        M = np.linalg.inv(ridged(sigma_s, reg)) - np.linalg.inv(ridged(sigma_d, reg))
        values, vectors = psd_projection(M)
        self.metric_eigenvalues_ = values
        self.components_ = (np.sqrt(values)[:, None] * vectors.T) @ self.pca_components_
        return self


def _principal_axes(centered: np.ndarray, r: int) -> np.ndarray:
    """The ``r`` leading principal axes (rows) of centered data, signs fixed for determinism."""
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    axes = vt[:r]
    signs = np.sign(axes[np.arange(r), np.abs(axes).argmax(axis=1)])
    return axes * np.where(signs == 0, 1.0, signs)[:, None]
