"""XQDA: cross-view quadratic discriminant analysis (Liao, Hu, Zhu & Li, CVPR 2015).

XQDA learns a subspace ``W`` (d × r) and a metric ``M`` in it at once, in closed form, from the
covariances of intra-personal and extra-personal differences (the ``Σ_S`` / ``Σ_D`` of KISSME,
computed by the same :func:`~rankmetric.estimators.pair_covariance.pair_difference_covariances`):

    Σ_I = mean_{same identity} (x_i − x_j)(x_i − x_j)ᵀ + ε I ,
    Σ_E = mean_{different identities} (x_i − x_j)(x_i − x_j)ᵀ ,
    W   = the r leading generalised eigenvectors of  Σ_E w = λ Σ_I w   (λ_1 ≥ … ≥ λ_r),
    M   = (Wᵀ Σ_I W)⁻¹ − (Wᵀ Σ_E W)⁻¹ ,     d(x, z) = (x − z)ᵀ W M Wᵀ (x − z) .

With ``W`` normalised so that ``Wᵀ Σ_I W = I`` (``scipy.linalg.eigh``'s convention),
``Wᵀ Σ_E W = diag(λ)`` and ``M = diag(1 − 1/λ)``, positive semi-definite when every kept
``λ ≥ 1`` (the paper keeps exactly those by default); any ``λ < 1`` a user asks for is clipped
to a zero weight. So ``L = diag(√(1 − 1/λ)) Wᵀ`` and ``d(x, z) = ||L x − L z||²``.

The paper forms differences between the two camera views only; with identity labels alone (the
scikit-learn face) every same-identity and every different-identity pair counts, which on a
two-view data set with one image per view is the same intra-personal set.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..._validation import deprecate_positional_args
from ...io import register_estimator
from ...resources import check_square_matrices
from .._docstrings import fill_doc
from .._init_parameters import store_parameters
from ._covariances import PairCovarianceLearner, pair_difference_covariances, ridged

__all__ = ["XQDA", "xqda_subspace"]

#: float64 (n_features × n_features) matrices held at the peak of a fit (Σ_I, Σ_E, the ridge, the
#: generalised eigenproblem's two working copies and its eigenvectors, the scatter), checked
#: against the memory budget before the first is formed.
XQDA_MATRICES = 7


def xqda_subspace(
    sigma_intra: np.ndarray, sigma_extra: np.ndarray, regularization: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised eigen-pairs of ``Σ_E w = λ (Σ_I + ε I) w``, ``ε = regularization · tr(Σ_I)/d``.

    Parameters
    ----------
    sigma_intra, sigma_extra : ndarray of shape (d, d)
        Covariances of intra- and extra-personal differences.
    regularization : float
        Ridge on ``Σ_I`` relative to its mean eigenvalue (the paper adds 0.001 to the diagonal
        of features of unit scale).

    Returns
    -------
    eigenvalues : ndarray of shape (d,)
        ``λ``, decreasing.
    eigenvectors : ndarray of shape (d, d)
        Columns ``w`` with ``Wᵀ (Σ_I + ε I) W = I``.
    """
    values, vectors = scipy.linalg.eigh(sigma_extra, ridged(sigma_intra, regularization))
    return values[::-1], vectors[:, ::-1]


@register_estimator
@fill_doc
class XQDA(PairCovarianceLearner):
    r"""Cross-view quadratic discriminant analysis (Liao et al., CVPR 2015), the LOMO baseline.

    Closed form (see Notes): one pass over the data for the two difference covariances, one
    ``d × d`` generalised eigenproblem.

    Parameters
    ----------
    n_components : int, optional
        Dimension ``r`` of the subspace. ``None`` (the paper's rule): every generalised
        eigenvalue above 1, at least one.
    regularization : float, default=1e-3
        Ridge added to :math:`\Sigma_I`, relative to its mean eigenvalue.
    positives : {"all", "cross_camera"}, default="all"
        Which same-identity pairs form :math:`\Sigma_I`. ``"cross_camera"``: only pairs seen by
        two different cameras, as the paper forms them; needs ``fit(X, y, cameras=...)``.
        :math:`\Sigma_E` keeps every different-identity pair. An identity seen by one camera
        only gives no intra-personal pair; no identity with two cameras is a ``ValueError``.
    %(held_out_check)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    components_ : ndarray of shape (n_components, n_features)
        :math:`L = \operatorname{diag}(\sqrt{\max(1 - 1/\lambda, 0)})\, W^\top`, so that
        :math:`L^\top L = W M W^\top`.
    eigenvalues_ : ndarray of shape (n_components,)
        The kept generalised eigenvalues ``λ``, decreasing.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.KISSME : The same metric without the joint subspace.
    rankmetric.preprocessing.StripeHistograms : LOMO-like features that XQDA was designed for.
    rankmetric.evaluate.reid_scores : CMC and mAP of the re-identification protocol.

    Notes
    -----
    The covariances of the differences of same-identity and of different-identity pairs,

    .. math::

        \Sigma_I &= \operatorname{mean}_{y_i = y_j}\, (x_i - x_j)(x_i - x_j)^\top
                    + \varepsilon I, \\
        \Sigma_E &= \operatorname{mean}_{y_i \ne y_j}\, (x_i - x_j)(x_i - x_j)^\top,

    (:math:`\varepsilon` is ``regularization`` times the mean eigenvalue of :math:`\Sigma_I`)
    give the subspace :math:`W`, the :math:`r` leading generalised eigenvectors of
    :math:`\Sigma_E w = \lambda \Sigma_I w` (:math:`\lambda_1 \ge \dots \ge \lambda_r`), and
    the metric in it,

    .. math::

        M &= (W^\top \Sigma_I W)^{-1} - (W^\top \Sigma_E W)^{-1}, \\
        d(x, z) &= (x - z)^\top W M W^\top (x - z).

    With :math:`W^\top \Sigma_I W = I` (``scipy.linalg.eigh``'s convention),
    :math:`W^\top \Sigma_E W = \operatorname{diag}(\lambda)` and
    :math:`M = \operatorname{diag}(1 - 1/\lambda)`, positive semi-definite when every kept
    :math:`\lambda \ge 1` (the paper keeps exactly those by default; a :math:`\lambda < 1` that
    ``n_components`` asks for gets weight 0). So ``components_`` is
    :math:`L = \operatorname{diag}(\sqrt{1 - 1/\lambda})\, W^\top` and
    :math:`d(x, z) = \lVert L x - L z \rVert^2`.

    References
    ----------
    .. [1] S. Liao, Y. Hu, X. Zhu and S. Z. Li. Person Re-identification by Local Maximal
       Occurrence Representation and Metric Learning. CVPR 2015.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric.estimators.pair_covariance import XQDA
    >>> X, y = load_iris(return_X_y=True)
    >>> XQDA(n_components=2).fit(X, y).transform(X).shape
    (150, 2)
    """

    # alike: the signature is spelled out, not inherited (scikit-learn reads the parameters)
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        regularization: float = 1e-3,
        positives: str = "all",
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
    ) -> None:
        store_parameters(self, locals())

    def _fit_labelled(self, X: np.ndarray, codes: np.ndarray, groups) -> XQDA:
        check_square_matrices(X.shape[1], XQDA_MATRICES, "XQDA")
        r = self._n_components(X.shape[1], "n_features")
        sigma_i, sigma_e = pair_difference_covariances(X.astype(np.float64), codes, groups)
        values, vectors = xqda_subspace(sigma_i, sigma_e, float(self.regularization))
        if r is None:
            r = max(1, int((values > 1.0).sum()))
        self.eigenvalues_ = values[:r]
        weights = np.clip(1.0 - 1.0 / np.maximum(values[:r], np.finfo(np.float64).tiny), 0.0, None)
        self.components_ = np.sqrt(weights)[:, None] * vectors[:, :r].T
        return self
