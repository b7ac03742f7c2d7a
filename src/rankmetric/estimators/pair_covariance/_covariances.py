r"""What KISSME and XQDA share: the covariances of the differences of labelled pairs.

Both covariances are exact averages over *all* pairs, in closed form: for rows
:math:`x_1, \dots, x_n`,
:math:`\sum_{i,j} (x_i - x_j)(x_i - x_j)^\top = 2 n X^\top X - 2 s s^\top` with
:math:`s = \sum_i x_i`, so the per-class and whole-set sums give :math:`\Sigma_S` and
:math:`\Sigma_D` in O(N·D²) time and O(D²) memory, with no pair sampled. Both learners add the
same relative ridge (:func:`ridged`) before inverting or whitening.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from ..._validation import (
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    check_param,
)
from ...sampling import POSITIVES, camera_group_codes, check_cameras
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from .._supervision import check_labelled_samples
from ..base import MahalanobisMixin, fit_context

__all__ = [
    "PairCovarianceLearner",
    "cross_camera_groups",
    "mean_outer",
    "pair_difference_covariances",
    "ridged",
]


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


def mean_outer(V: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``mean_p v_p v_pᵀ`` over the rows ``rows`` (a mask) of ``V`` (pair differences),
    symmetrised. (Two gathers: a product ``A.T @ A`` of one array takes another BLAS path.)"""
    return _symmetric(V[rows].T @ V[rows] / rows.sum())


def ridged(sigma: np.ndarray, regularization: float) -> np.ndarray:
    """``Σ + ε I`` with ``ε = regularization · trace(Σ) / d`` (and at least a tiny floor)."""
    d = sigma.shape[0]
    eps = max(regularization * np.trace(sigma) / d, np.finfo(np.float64).tiny)
    return sigma + eps * np.eye(d)


class PairCovarianceLearner(MahalanobisMixin, BaseEstimator):
    """What KISSME and XQDA share: the covariances of labelled pair differences.

    The hyper-parameter declarations (``n_components``, the ridge ``regularization``,
    ``positives``), the tag that ``y`` is required, and ``fit(X, y, cameras=...)`` with its
    checks, which hands the class codes and camera groups to the learner's ``_fit_labelled``.
    """

    _held_out_hint = "try fewer n_components or a larger regularization"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        "n_components": [NONE, POSITIVE_INT],
        "regularization": [Interval(Real, 0, None, closed="left")],
        "positives": [Options(*POSITIVES)],
    }

    @fit_context
    def fit(self, X, y, *, cameras=None):
        """Learn the metric from samples ``X`` (n_samples, n_features) and class labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class (identity) labels; a class with two samples at least.
        cameras : array-like of shape (n_samples,), optional
            Camera id of each row, for ``positives="cross_camera"`` (checked, then unused,
            with ``positives="all"``). In a ``Pipeline``: ``fit(X, y, <step>__cameras=...)``.

        Returns
        -------
        self
        """
        X, _, codes = check_labelled_samples(self, X, y, np.float64, "positive pairs")
        return self._fit_labelled(X, codes, cross_camera_groups(self.positives, codes, cameras))

    def _n_components(self, limit: int, label: str) -> int | None:
        """``n_components``, checked: None, or at most ``limit`` (``label`` in the message)."""
        bound = Interval(Integral, 1, limit, closed="both", right_label=label)
        check_param("n_components", self.n_components, [NONE, bound])
        return self.n_components


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
