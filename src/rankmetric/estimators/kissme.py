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

Both covariances are exact averages over *all* pairs, in closed form: for rows
:math:`x_1, \dots, x_n`,
:math:`\sum_{i,j} (x_i - x_j)(x_i - x_j)^\top = 2 n X^\top X - 2 s s^\top` with
:math:`s = \sum_i x_i`, so the per-class and whole-set sums give :math:`\Sigma_S` and
:math:`\Sigma_D` in O(N·D²) time and O(D²) memory, with no pair sampled (the paper draws as many
random dissimilar pairs as there are similar ones, an estimate of the same :math:`\Sigma_D`).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._validation import (
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    check_labels,
    check_min_per_class,
    check_param,
    check_scale,
    deprecate_positional_args,
)
from ..io import register_estimator
from ..resources import check_square_matrices
from ..sampling import POSITIVES, camera_group_codes, check_cameras
from ._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from ._init_parameters import store_parameters
from ._supervision import check_pair_supervision
from .base import MahalanobisMixin, fit_context

__all__ = ["KISSME", "pair_difference_covariances"]

#: float64 (n_features × n_features) matrices held at the peak of a fit (the pair-difference
#: scatter, Σ_S, Σ_D, their two ridge inverses, M and its eigenvectors), checked against the memory
#: budget before the first is formed.
KISSME_MATRICES = 7


def pair_difference_covariances(
    X: np.ndarray, codes: np.ndarray, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Mean outer products of the differences of same-class and of different-class pairs.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    codes : int ndarray of shape (n_samples,)
        Class codes ``0..Q-1``; at least one class with two samples and two classes.
    groups : int ndarray of shape (n_samples,), optional
        (class, camera) group codes (:func:`rankmetric.sampling.camera_group_codes`): the
        same-class pairs are then only those of two different groups (cross-camera pairs).

    Returns
    -------
    sigma_similar : ndarray of shape (n_features, n_features)
        Mean of :math:`(x_i - x_j)(x_i - x_j)^\top` over ordered pairs :math:`i \ne j` of the
        same class.
    sigma_dissimilar : ndarray of shape (n_features, n_features)
        The same over pairs of different classes.
    """
    X = np.asarray(X, dtype=np.float64)
    X = X - X.mean(axis=0)  # differences do not see a shift; centring keeps the sums small
    within, counts, class_sums = _within_group_scatter(X, codes)
    n = X.shape[0]
    total_sum = class_sums.sum(axis=0)
    everything = 2.0 * n * (X.T @ X) - 2.0 * np.outer(total_sum, total_sum)
    n_similar = float((counts * (counts - 1.0)).sum())
    n_dissimilar = float(n * n - (counts**2).sum())
    similar = within
    if groups is not None:  # drop the same-camera pairs: those inside one (class, camera) group
        same_group, group_counts, _ = _within_group_scatter(X, groups)
        similar = within - same_group
        n_similar = float((counts**2).sum() - (group_counts**2).sum())
        if n_similar <= 0:
            raise ValueError(
                "no identity is seen by two cameras, so there is no cross-camera pair "
                "(positives='cross_camera'); use positives='all'."
            )
    sigma_similar = similar / n_similar
    sigma_dissimilar = (everything - within) / n_dissimilar
    return _symmetric(sigma_similar), _symmetric(sigma_dissimilar)


def _within_group_scatter(X: np.ndarray, codes: np.ndarray):
    """``Σ_g Σ_{i,j ∈ g} (x_i − x_j)(x_i − x_j)ᵀ``, the group sizes and the group sums."""
    counts = np.bincount(codes).astype(np.float64)
    sums = np.zeros((counts.shape[0], X.shape[1]))
    np.add.at(sums, codes, X)
    # Σ_g Σ_{i,j ∈ g} (x_i − x_j)(x_i − x_j)ᵀ = 2 Σ_g n_g X_gᵀX_g − 2 Σ_g s_g s_gᵀ
    weighted = X * counts[codes][:, None]
    return 2.0 * (weighted.T @ X) - 2.0 * (sums.T @ sums), counts, sums


def _symmetric(A: np.ndarray) -> np.ndarray:
    return 0.5 * (A + A.T)


def _ridge_inverse(sigma: np.ndarray, regularization: float) -> np.ndarray:
    """``(Σ + ε I)⁻¹`` with ``ε = regularization · trace(Σ) / d`` (and at least a tiny floor)."""
    d = sigma.shape[0]
    eps = max(regularization * np.trace(sigma) / d, np.finfo(np.float64).tiny)
    return np.linalg.inv(sigma + eps * np.eye(d))


def psd_projection(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of the PSD projection of a symmetric matrix.

    Returns
    -------
    eigenvalues : ndarray of shape (d,)
        Clipped at 0, in decreasing order.
    eigenvectors : ndarray of shape (d, d)
        Columns matching ``eigenvalues``.
    """
    values, vectors = np.linalg.eigh(_symmetric(A))
    return np.clip(values[::-1], 0.0, None), vectors[:, ::-1]


class PairCovarianceLearner(MahalanobisMixin, BaseEstimator):
    """What KISSME and XQDA share: the covariances of labelled pair differences.

    The hyper-parameter declarations (``n_components``, the ridge ``regularization``,
    ``positives``), the tag that ``y`` is required, and the checks of ``fit(X, y, cameras=...)``
    (:meth:`_labelled_input`).
    """

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        "n_components": [NONE, POSITIVE_INT],
        "regularization": [Interval(Real, 0, None, closed="left")],
        "positives": [Options(*POSITIVES)],
    }

    def _labelled_input(self, X, y, cameras) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Validated ``X``, class codes (two samples in a class at least) and camera groups."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_scale(X, np.float64)  # magnitudes whose squares overflow are refused
        check_classification_targets(y)
        _, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        return X, codes, cross_camera_groups(self.positives, codes, cameras)


@register_estimator
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
    held_out_check : {"auto", True, False}, default="auto"
        After the fit, the same settings are fitted again on part of the classes (with pairs: of the
        groups the similar pairs join) and the learned distance is compared with the reference on
        the classes held out (``held_out_check_``); below it beyond noise, the fit issues an
        :class:`~rankmetric.training.UntrainedModelWarning`. ``"auto"`` skips it with fewer than 6
        groups (``held_out_check_`` says so), True then also warns, False switches it off. The model
        returned does not depend on it. ``docs/reliability.md``, "Never worse than Euclidean without
        saying so".
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned distance below, return the
        reference instead: ``components_`` becomes the PCA projection (the Euclidean
        distance of the PCA features).

    Attributes
    ----------
    held_out_check_ : dict or None
        The held-out check, as in :class:`rankmetric.WARCA`.
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
    >>> from rankmetric.estimators.kissme import KISSME
    >>> X, y = load_iris(return_X_y=True)
    >>> KISSME(n_components=3).fit(X, y).transform(X).shape
    (150, 3)
    """

    _held_out_hint = "try fewer n_components or a larger regularization"

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

    def _check_n_components(self, n_samples: int, n_features: int) -> int:
        """The number of PCA components, at most ``min(n_features, n_samples - 1)``."""
        limit = min(n_features, max(n_samples - 1, 1))
        if self.n_components is None:
            return limit
        label = "min(n_features, n_samples - 1)"
        check_param(
            "n_components",
            self.n_components,
            [Interval(Integral, 1, limit, closed="both", right_label=label)],
        )
        return int(self.n_components)

    _fitted_arrays = {"mean_": ("n_features_in_",), "pca_components_": (None, "n_features_in_")}

    @fit_context
    def fit(self, X, y, *, cameras=None) -> KISSME:
        """Learn the metric from samples ``X`` (n_samples, n_features) and class labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        cameras : array-like of shape (n_samples,), optional
            Camera id of each row, for ``positives="cross_camera"`` (checked, then unused,
            with ``positives="all"``). In a ``Pipeline``: ``fit(X, y, kissme__cameras=...)``.

        Returns
        -------
        self : KISSME
        """
        X, codes, groups = self._labelled_input(X, y, cameras)
        Z = self._fit_pca(X)
        return self._fit_covariances(*pair_difference_covariances(Z, codes, groups))

    @fit_context
    def fit_pairs(self, X, pairs=None, y=None) -> KISSME:
        r"""Learn the metric from similar (+1) and dissimilar (−1) pairs, without class labels.

        :math:`\Sigma_S` and :math:`\Sigma_D` are the mean outer products of the differences of
        the given similar and dissimilar pairs; the PCA is fitted on the distinct points. The call
        convention and
        the checks on degenerate pairs are those of ``docs/pairs.md``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_pairs, 2, n_features)
            The points (then ``pairs`` holds row indices), or the stacked pairs themselves
            (then the second argument is ``y``).
        pairs : array-like of shape (n_pairs, 2), int
            Row indices into ``X``.
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``−1`` dissimilar.

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
        sim = s.similar
        return self._fit_covariances(
            _symmetric(V[sim].T @ V[sim] / sim.sum()),
            _symmetric(V[~sim].T @ V[~sim] / (~sim).sum()),
        )

    def _held_out_reference(self, X: np.ndarray) -> np.ndarray:
        """The reference of the held-out check: the Euclidean distance of the PCA features."""
        return (np.asarray(X, dtype=np.float64) - self.mean_) @ self.pca_components_.T

    def _use_reference(self) -> None:
        """``fallback="reference"``: the PCA projection, i.e. the Euclidean distance after it."""
        self.components_ = self.pca_components_.astype(self.components_.dtype, copy=True)

    def _fit_pca(self, X: np.ndarray) -> np.ndarray:
        """Fit ``mean_`` and ``pca_components_`` on ``X``; return the PCA features."""
        check_square_matrices(X.shape[1], KISSME_MATRICES, "KISSME")
        r = self._check_n_components(*X.shape)
        X64 = X.astype(np.float64)
        self.mean_ = X64.mean(axis=0)
        self.pca_components_ = _principal_axes(X64 - self.mean_, r)
        return (X64 - self.mean_) @ self.pca_components_.T

    def _fit_covariances(self, sigma_s: np.ndarray, sigma_d: np.ndarray) -> KISSME:
        """``M = Π_PSD(Σ_S⁻¹ − Σ_D⁻¹)`` on the PCA features, folded into ``components_``."""
        M = _ridge_inverse(sigma_s, self.regularization) - _ridge_inverse(
            sigma_d, self.regularization
        )
        values, vectors = psd_projection(M)
        self.metric_eigenvalues_ = values
        self.components_ = (np.sqrt(values)[:, None] * vectors.T) @ self.pca_components_
        return self


def cross_camera_groups(positives: str, codes: np.ndarray, cameras) -> np.ndarray | None:
    """The (class, camera) group codes ``positives="cross_camera"`` needs, else None.

    Checks ``cameras`` whenever given; refuses ``"cross_camera"`` without them.
    """
    cams = None if cameras is None else check_cameras(cameras, codes.shape[0])
    if positives != "cross_camera":
        return None
    if cams is None:
        raise ValueError(
            "positives='cross_camera' forms similar pairs across cameras: pass "
            "fit(X, y, cameras=...) (in a Pipeline, <step>__cameras=...)."
        )
    return camera_group_codes(codes, cams)


def _principal_axes(centered: np.ndarray, r: int) -> np.ndarray:
    """The ``r`` leading principal axes (rows) of centered data, signs fixed for determinism."""
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    axes = vt[:r]
    signs = np.sign(axes[np.arange(r), np.abs(axes).argmax(axis=1)])
    return axes * np.where(signs == 0, 1.0, signs)[:, None]
