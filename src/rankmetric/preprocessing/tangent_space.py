"""``TangentSpace``: SPD matrices (n, c, c) → tangent vectors (n, c (c + 1) / 2).

The scikit-learn face of :func:`rankmetric.geometry.log_map` / :func:`~rankmetric.geometry.exp_map`
and :func:`~rankmetric.geometry.spd_mean` (the formulas live there, once), shaped like
``pyriemann.tangentspace.TangentSpace`` and giving the same vectors: the upper triangle of the
logarithmic map at the reference, row by row, off-diagonal entries weighted by √2.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._utils import resolve_device
from .._validation import (
    ARRAY,
    DEVICE,
    NONE,
    InstanceOf,
    Options,
    ParameterValidationMixin,
)
from ..geometry import canonical_metric, spd_mean, sym_to_vec, vec_to_sym
from ..geometry.checks import as_symmetric_tensor, working_dtype
from ..geometry.tangent import TANGENT_METRICS, exp_map_unchecked, log_map_unchecked
from ._matrix_output import MatrixInputMixin, input_matrices

__all__ = ["TangentSpace", "resolve_metrics"]


def resolve_metrics(metric) -> tuple[str, str]:
    """``(mean metric, map metric)`` of a name or of pyRiemann's ``{"mean": ..., "map": ...}``.

    Parameters
    ----------
    metric : str or dict
        A metric name or alias (``"riemann"``, ``"logeuclid"``, ``"euclid"``, ...) used for
        both, or a dict with the keys ``"mean"`` and ``"map"``.

    Returns
    -------
    tuple of str
        Canonical names (``"airm"``, ``"log_euclidean"``, ``"euclidean"``).

    Raises
    ------
    ValueError
        On an unknown name, or a dict without exactly the keys ``"mean"`` and ``"map"``.
    """
    if isinstance(metric, dict):
        if set(metric) != {"mean", "map"}:
            raise ValueError(
                f"metric as a dict must have the keys 'mean' and 'map', got {sorted(metric)}."
            )
        mean, mapping = metric["mean"], metric["map"]
    else:
        mean = mapping = metric
    return (
        canonical_metric(mean, TANGENT_METRICS, name="metric"),
        canonical_metric(mapping, TANGENT_METRICS, name="metric"),
    )


class TangentSpace(
    MatrixInputMixin,
    ParameterValidationMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
):
    """Tangent-space vectors of SPD matrices at a reference point (pyRiemann's ``TangentSpace``).

    Each matrix :math:`X` is mapped to the tangent space at the reference :math:`M` by the
    logarithmic map of ``metric`` (:func:`rankmetric.geometry.log_map`; for ``"riemann"``,
    :math:`\\log(M^{-1/2} X M^{-1/2})`) and vectorised as its upper triangle with off-diagonal
    entries weighted by √2 (:func:`rankmetric.geometry.sym_to_vec`), so Euclidean geometry on
    the vectors approximates the manifold's near :math:`M`. The vectors are the same as
    pyRiemann's, in the same order. Computed in batched torch, on ``device``.

    Parameters
    ----------
    metric : str or dict, default="riemann"
        ``"riemann"`` (``"airm"``), ``"logeuclid"`` (``"log_euclidean"``) or ``"euclid"``
        (``"euclidean"``): the metric of the mean and of the map; or pyRiemann's
        ``{"mean": ..., "map": ...}`` to choose them separately.
    reference : {"mean", "identity"} or ndarray of shape (c, c), default="mean"
        ``"mean"``: the (weighted) mean of the training matrices under the mean metric, as
        pyRiemann; ``"identity"``: the identity (no fit needed beyond the shape); an SPD array:
        that fixed point.
    device : str or torch.device, optional
        Where the maps are computed (``None``/``"auto"``: CUDA when available).
    dtype : {"float32", "float64"}, optional
        Precision of the computation and of the output; ``None``: float32 for float32 input,
        float64 otherwise (pyRiemann's numbers need float64).

    Attributes
    ----------
    reference_ : ndarray of shape (n_channels, n_channels)
        The reference point.
    n_channels_ : int
        Size of the matrices seen in ``fit``.
    metric_mean_, metric_map_ : str
        The canonical names of the two metrics.

    See Also
    --------
    rankmetric.geometry.log_map : The logarithmic map applied to each matrix.
    rankmetric.geometry.sym_to_vec : The vectorisation of the mapped matrices.
    rankmetric.preprocessing.DomainRecentering : Re-centre each session before the map.
    rankmetric.SPDNetEmbedding : A learned (rather than fixed) map of SPD matrices.

    References
    ----------
    .. [1] A. Barachant, S. Bonnet, M. Congedo and C. Jutten, IEEE Transactions on Biomedical
       Engineering 59(4), 2012 (see :class:`rankmetric.MDM`).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_spd_clusters
    >>> from rankmetric.preprocessing import TangentSpace
    >>> X, y = make_spd_clusters(20, 4, 2, random_state=0)
    >>> ts = TangentSpace(metric="riemann", device="cpu").fit(X)
    >>> V = ts.transform(X)
    >>> V.shape
    (20, 10)
    >>> bool(np.allclose(ts.inverse_transform(V), X))
    True
    """

    _parameter_constraints = {
        "metric": [InstanceOf((str, dict), "a metric name or a dict {'mean': ..., 'map': ...}")],
        "reference": [Options("mean", "identity"), ARRAY],
        "device": [DEVICE],
        "dtype": [NONE, Options("float32", "float64")],
    }

    def __init__(self, *, metric="riemann", reference="mean", device=None, dtype=None) -> None:
        self.metric = metric
        self.reference = reference
        self.device = device
        self.dtype = dtype

    def fit(self, X, y=None, sample_weight=None) -> TangentSpace:
        """Compute the reference point.

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
            SPD matrices.
        y : ignored
        sample_weight : array-like of shape (n_matrices,), optional
            Non-negative weights of the mean (``reference="mean"`` only).

        Returns
        -------
        self
        """
        self._fit(X, sample_weight)
        return self

    def fit_transform(self, X, y=None, sample_weight=None) -> np.ndarray:
        """Fit, then return the tangent vectors of ``X`` (one conversion of ``X``).

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
        y : ignored
        sample_weight : array-like of shape (n_matrices,), optional

        Returns
        -------
        ndarray of shape (n_matrices, c (c + 1) / 2)
        """
        X = self._fit(X, sample_weight)
        return self._vectors(X)

    def transform(self, X) -> np.ndarray:
        """Tangent vectors of SPD matrices at ``reference_``.

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
            SPD matrices.

        Returns
        -------
        ndarray of shape (n_matrices, c (c + 1) / 2)
            Upper triangles of the logarithmic maps, off-diagonal entries weighted by √2.
        """
        check_is_fitted(self, "reference_")
        return self._vectors(self._matrices(X))

    def inverse_transform(self, X) -> np.ndarray:
        """SPD matrices of tangent vectors: the exponential map at ``reference_``.

        Parameters
        ----------
        X : array-like of shape (n_matrices, c (c + 1) / 2)
            Tangent vectors (e.g. the output of ``transform``, or a pandas frame of it).

        Returns
        -------
        ndarray of shape (n_matrices, c, c)
            SPD matrices.
        """
        check_is_fitted(self, "reference_")
        V = torch.as_tensor(np.asarray(X), dtype=working_dtype(self.dtype, X))
        V = V.to(resolve_device(self.device))
        expected = self._n_features_out
        if V.ndim != 2 or V.shape[1] != expected:
            raise ValueError(
                f"X must have shape (n_matrices, {expected}) (tangent vectors of "
                f"{self.n_channels_} x {self.n_channels_} matrices), got {tuple(V.shape)}."
            )
        if not bool(torch.isfinite(V).all()):
            raise ValueError("X contains NaN or infinity.")
        reference = self._reference_tensor(V.dtype)
        with torch.no_grad():
            out = exp_map_unchecked(vec_to_sym(V), reference, self.metric_map_)
        return out.cpu().numpy()

    @property
    def _n_features_out(self) -> int:
        c = self.n_channels_
        return c * (c + 1) // 2

    # internals -----------------------------------------------------------------------------

    def _fit(self, X, sample_weight) -> torch.Tensor:
        self._validate_params()
        self.metric_mean_, self.metric_map_ = resolve_metrics(self.metric)
        X = self._matrices(X, reset=True)
        fixed = not (isinstance(self.reference, str) and self.reference == "mean")
        if fixed and sample_weight is not None:
            raise ValueError("sample_weight is only used with reference='mean'.")
        if isinstance(self.reference, np.ndarray):
            reference = as_symmetric_tensor(self.reference, "reference")
            if reference.shape != X.shape[1:]:
                raise ValueError(
                    f"reference must have shape {tuple(X.shape[1:])}, got {tuple(reference.shape)}."
                )
            reference = reference.to(dtype=X.dtype, device=X.device)
            if bool(torch.linalg.cholesky_ex(reference)[1]):
                raise ValueError(
                    "reference is not positive definite (Cholesky factorisation failed)."
                )
        elif self.reference == "identity":
            reference = torch.eye(X.shape[-1], dtype=X.dtype, device=X.device)
        else:
            with torch.no_grad():
                reference = spd_mean(X, self.metric_mean_, _weights(sample_weight, X))
        self.reference_ = reference.cpu().numpy()
        return X

    def _vectors(self, X: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            tangent = log_map_unchecked(X, self._reference_tensor(X.dtype), self.metric_map_)
        return sym_to_vec(tangent).cpu().numpy()

    def _matrices(self, X, reset: bool = False) -> torch.Tensor:
        """``X`` as a checked (n, c, c) tensor of the working dtype on the device."""
        X = input_matrices(self, X, None if reset else self.n_channels_)
        if reset:
            self.n_channels_ = int(X.shape[-1])
        return X

    def _reference_tensor(self, dtype: torch.dtype) -> torch.Tensor:
        return torch.as_tensor(self.reference_, dtype=dtype, device=resolve_device(self.device))


def _weights(sample_weight, X: torch.Tensor):
    if sample_weight is None:
        return None
    return torch.as_tensor(np.asarray(sample_weight), dtype=X.dtype, device=X.device)
