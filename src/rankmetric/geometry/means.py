r"""Means and geodesics of SPD matrices under the affine-invariant and log-Euclidean metrics.

The affine-invariant computations use a Cholesky factor :math:`M = L L^\top` in place of the
symmetric square root :math:`M^{1/2}`: by congruence invariance,
:math:`\operatorname{Log}_M(X) = L \log(L^{-1} X L^{-\top}) L^\top` and
:math:`\operatorname{Exp}_M(V) = L \exp(L^{-1} V L^{-\top}) L^\top` for any such factor, so one
Cholesky factorisation replaces two eigen-decompositions. Everything is plain torch and
differentiable (the Karcher mean by unrolling its iterations).
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .._validation import POSITIVE_INT, Interval, check_param
from ._common import (
    as_matrix_stack,
    broadcast_pair,
    cholesky,
    common_dtype,
    inverse_congruence,
    triangular_inverse,
)
from ._host_blas import host_matmul, use_host_blas
from .aliases import canonical_metric
from .checks import as_symmetric_tensor, raise_if_not_positive
from .eigen import eigh
from .matrix_functions import exp_unchecked, log_unchecked, symmetrize

__all__ = ["riemannian_mean", "log_euclidean_mean", "spd_mean", "geodesic", "METRICS"]

METRICS = ("airm", "log_euclidean")

#: Factor of the Karcher step after an iteration that decreased ``step * ||T||`` (pyRiemann's).
STEP_DECAY = 0.95

#: Elements of the stack (matrices × c²) that the Karcher iteration reads at once, without
#: gradients: about 32 MiB of float64 per temporary, whatever the number of matrices.
MEAN_CHUNK_ELEMENTS = 1 << 22

#: Metrics :func:`spd_mean` averages under (the arithmetic mean is the ``"euclidean"`` one).
MEAN_METRICS = ("airm", "log_euclidean", "euclidean")


def riemannian_mean(
    X,
    weights=None,
    *,
    init=None,
    max_iter: int = 50,
    tol: float = 1e-8,
) -> torch.Tensor:
    r"""Affine-invariant Riemannian (Karcher / Fréchet) mean of SPD matrices.

    .. math:: \bar M = \arg\min_M \sum_i w_i \, \delta_R^2(M, X_i)

    found by the fixed-point (Riemannian gradient) iteration [1]_ [2]_

    .. math::
        T_k = \sum_i w_i \log(L_k^{-1} X_i L_k^{-\top}), \qquad
        M_{k+1} = L_k \exp(\nu_k T_k) L_k^\top, \qquad M_k = L_k L_k^\top,

    with step :math:`\nu_0 = 1`, multiplied by 0.95 after each iteration where
    :math:`\nu \Vert T \Vert_F` decreases and halved when it does not (pyRiemann's
    ``mean_riemann`` schedule: the damping makes the iteration converge in fewer steps than a
    fixed :math:`\nu = 1`, e.g. 7 instead of 10 on 100 sample covariances of size 32). It
    stops when the Riemannian gradient norm
    :math:`\Vert T_k \Vert_F \le \max(\text{tol}, 50\, c\, \epsilon)`, with :math:`\epsilon` the
    machine epsilon of the dtype: float32 rounding alone keeps the norm near :math:`10^{-6}`, so the
    default ``tol=1e-8`` would otherwise never be met in float32.

    Parameters
    ----------
    X : Tensor or ndarray of shape (n_matrices, c, c)
        SPD matrices.
    weights : Tensor or ndarray of shape (n_matrices,), optional
        Non-negative weights, normalised to sum to 1; uniform by default.
    init : Tensor or ndarray of shape (c, c), optional
        Starting point; the weighted arithmetic mean by default.
    max_iter : int, default=50
        Maximum number of iterations.
    tol : float, default=1e-8
        Tolerance on the Frobenius norm of the whitened tangent mean :math:`T_k` (raised to
        ``50 * c * eps`` of the dtype: 1.9e-4 in float32, 3.6e-13 in float64 for c = 32).

    Returns
    -------
    Tensor of shape (c, c)
        The mean, in the dtype of ``X``; differentiable in ``X`` and ``weights``. Float32 input
        is averaged in float64 (float32 rounding stalls the iteration on ill-conditioned input)
        and the mean cast back to float32.

    Warns
    -----
    ConvergenceWarning
        If the tolerance is not reached within ``max_iter`` iterations.

    Raises
    ------
    ValueError
        On non-SPD input, bad weights, or a non-positive ``max_iter`` / ``tol``.

    See Also
    --------
    rankmetric.geometry.log_euclidean_mean : A closed-form approximation.
    rankmetric.geometry.spd_mean : The mean under a named metric.

    References
    ----------
    .. [1] H. Karcher, "Riemannian center of mass and mollifier smoothing", Comm. Pure Appl. Math.
       30(5), 1977.
    .. [2] M. Moakher, "A differential geometric approach to the geometric mean of symmetric
       positive-definite matrices", SIAM J. Matrix Anal. Appl. 26(3), 2005.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import riemannian_mean
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()
    >>> torch.allclose(riemannian_mean(X), 2 * torch.eye(2, dtype=torch.float64))
    True
    """
    X = as_matrix_stack(X, "X")
    w = _normalised_weights(weights, X)
    check_param("max_iter", max_iter, [POSITIVE_INT])
    check_param("tol", tol, [Interval(Real, 0, np.inf, closed="both")])
    tracked = X.requires_grad or w.requires_grad or getattr(init, "requires_grad", False)
    if torch.is_grad_enabled() and tracked:  # differentiable: unrolled over the whole stack
        X = symmetrize(X)  # so that the gradient is symmetric
        if X.dtype == torch.float32:  # float32 stalls from condition 1e5: iterate in float64
            init = None if init is None else _as_init(init, X).double()
            mean = riemannian_mean(X.double(), w.double(), init=init, max_iter=max_iter, tol=tol)
            return mean.to(torch.float32)
    # without gradients, the stack is read in chunks (symmetrised and, from float32, raised to
    # float64 chunk by chunk): extra memory of a chunk, not copies of the stack
    work = torch.float64 if X.dtype == torch.float32 else X.dtype
    w = w.to(work)
    mean = _weighted_sum(X, w) if init is None else _as_init(init, X).to(work)
    tol = max(tol, 50 * X.shape[-1] * torch.finfo(work).eps)  # the smallest norm ``work`` resolves
    step, best = 1.0, float("inf")
    for _ in range(max_iter):
        L = cholesky(mean, "the current mean")
        tangent = _weighted_log_at(L, X, w)
        mean = _exp_at(L, step * tangent)
        norm = float(torch.linalg.matrix_norm(tangent.detach()))
        if norm <= tol:
            return mean.to(X.dtype)
        if step * norm < best:  # pyRiemann's schedule: a slightly shorter step after progress
            best = step * norm
            step *= STEP_DECAY
        else:
            step /= 2
    warnings.warn(
        f"riemannian_mean did not converge in {max_iter} iterations (gradient norm {norm:.3g} > "
        f"tol={tol:g}); increase max_iter or tol.",
        ConvergenceWarning,
        stacklevel=2,
    )
    return mean.to(X.dtype)


def log_euclidean_mean(X, weights=None) -> torch.Tensor:
    r"""Log-Euclidean mean of SPD matrices.

    .. math:: \bar M = \exp\Big(\sum_i w_i \log X_i\Big)

    Parameters
    ----------
    X : Tensor or ndarray of shape (n_matrices, c, c)
        SPD matrices.
    weights : Tensor or ndarray of shape (n_matrices,), optional
        Non-negative weights, as in :func:`riemannian_mean`.

    Returns
    -------
    Tensor of shape (c, c)
        The mean; differentiable.

    Raises
    ------
    ValueError
        On non-SPD input or bad weights.

    See Also
    --------
    rankmetric.geometry.riemannian_mean : The affine-invariant (Karcher) mean.
    rankmetric.geometry.spd_mean : The mean under a named metric.

    References
    ----------
    .. [1] V. Arsigny, P. Fillard, X. Pennec, N. Ayache, SIAM J. Matrix Anal. Appl. 29(1), 2007.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import log_euclidean_mean
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()
    >>> log_euclidean_mean(X).diagonal().round(decimals=8)  # exp(log 2): 2 up to the last bit
    tensor([2., 2.], dtype=torch.float64)
    """
    X = as_matrix_stack(X, "X")
    w = _normalised_weights(weights, X)
    return exp_unchecked((w[:, None, None] * log_unchecked(X, "X")).sum(0))


def spd_mean(X, metric: str = "airm", weights=None) -> torch.Tensor:
    r"""Mean of SPD matrices under a named metric (pyRiemann's ``mean_covariance``).

    ``"airm"`` / ``"riemann"``: :func:`riemannian_mean`; ``"log_euclidean"`` / ``"logeuclid"``:
    :func:`log_euclidean_mean`; ``"euclidean"`` / ``"euclid"``: the weighted arithmetic mean
    :math:`\sum_i w_i X_i`.

    Parameters
    ----------
    X : Tensor or ndarray of shape (n_matrices, c, c)
        SPD matrices.
    metric : str, default="airm"
        A name or alias of :data:`rankmetric.geometry.METRIC_ALIASES`.
    weights : Tensor or ndarray of shape (n_matrices,), optional
        Non-negative weights, normalised to sum to 1; uniform by default.

    Returns
    -------
    Tensor of shape (c, c)

    Raises
    ------
    ValueError
        On non-SPD input, bad weights or an unknown metric.

    See Also
    --------
    rankmetric.geometry.riemannian_mean : The affine-invariant (Karcher) mean.
    rankmetric.geometry.log_euclidean_mean : The log-Euclidean mean.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import spd_mean
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()
    >>> spd_mean(X, "riemann").diagonal().round(decimals=8)
    tensor([2., 2.], dtype=torch.float64)
    """
    metric = canonical_metric(metric, MEAN_METRICS)
    if metric == "airm":
        return riemannian_mean(X, weights)
    if metric == "log_euclidean":
        return log_euclidean_mean(X, weights)
    X = as_matrix_stack(X, "X")
    w = _normalised_weights(weights, X)
    return symmetrize((w[:, None, None] * X).sum(0))


def geodesic(A, B, t, metric: str = "airm") -> torch.Tensor:
    r"""Point at position ``t`` on the geodesic from ``A`` (``t = 0``) to ``B`` (``t = 1``).

    .. math::
        \gamma_{\text{airm}}(t) = A^{1/2} (A^{-1/2} B A^{-1/2})^t A^{1/2}
            = L \exp\big(t \log(L^{-1} B L^{-\top})\big) L^\top, \quad A = L L^\top

        \gamma_{\text{log\_euclidean}}(t) = \exp\big((1 - t) \log A + t \log B\big)

    Parameters
    ----------
    A, B : Tensor or ndarray of shape (..., c, c)
        SPD matrices; leading dimensions broadcast.
    t : float or Tensor of shape broadcastable to (...,)
        Position; values outside [0, 1] extrapolate along the geodesic.
    metric : {"airm", "log_euclidean"}, default="airm"

    Returns
    -------
    Tensor of shape (..., c, c)
        SPD matrices; differentiable in ``A``, ``B`` and ``t``.

    Raises
    ------
    ValueError
        On non-SPD input, a non-numeric or non-finite ``t``, batch shapes that do not
        broadcast, or an unknown ``metric``.

    See Also
    --------
    rankmetric.geometry.airm_distance : The length of the affine-invariant geodesic.
    rankmetric.geometry.riemannian_mean : The midpoint (``t = 1/2``) is the mean of two matrices.

    References
    ----------
    .. [1] R. Bhatia, "Positive Definite Matrices", Princeton University Press 2007, ch. 6.
    .. [2] V. Arsigny, P. Fillard, X. Pennec, N. Ayache, SIAM J. Matrix Anal. Appl. 29(1), 2007.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import geodesic
    >>> A, B = torch.eye(2).double(), 4 * torch.eye(2).double()
    >>> geodesic(A, B, 0.5).diagonal().round(decimals=8)  # the geometric midpoint
    tensor([2., 2.], dtype=torch.float64)
    """
    metric = canonical_metric(metric, METRICS)
    A, B = common_dtype(as_symmetric_tensor(A, "A"), as_symmetric_tensor(B, "B"))
    A, B = broadcast_pair(symmetrize(A), symmetrize(B))  # symmetric input: symmetric gradient
    t = _position(t, A)
    t = t[..., None, None]
    if metric == "log_euclidean":
        return exp_unchecked((1 - t) * log_unchecked(A, "A") + t * log_unchecked(B, "B"))
    L, B = torch.broadcast_tensors(cholesky(A, "A"), B)
    return _exp_at(L, t * log_unchecked(inverse_congruence(L, B), "B"))


def _position(t, A: torch.Tensor) -> torch.Tensor:
    """``t`` as a finite tensor that broadcasts against the batch shape of ``A``."""
    try:
        t = torch.as_tensor(t, dtype=A.dtype, device=A.device)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"t must be a number or a tensor of numbers, got {t!r}.") from None
    if not bool(torch.isfinite(t).all()):
        raise ValueError("t must be finite.")
    try:
        torch.broadcast_shapes(t.shape, A.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"t has shape {tuple(t.shape)}, which does not broadcast against the batch shape "
            f"{tuple(A.shape[:-2])} of A and B."
        ) from None
    return t


def _chunks(X: torch.Tensor, dtype: torch.dtype):
    """``(slice, chunk)``: ``X`` symmetrised in its own dtype, then in ``dtype``, a chunk of
    about ``MEAN_CHUNK_ELEMENTS`` elements at a time (the stack itself is never copied)."""
    step = max(1, MEAN_CHUNK_ELEMENTS // max(X.shape[-1] ** 2, 1))
    for start in range(0, X.shape[0], step):  # chunks of matrices, vectorised inside
        sl = slice(start, start + step)
        yield sl, symmetrize(X[sl]).to(dtype)


def _weighted_sum(X: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_i w_i \operatorname{sym}(X_i)`, chunk by chunk."""
    total = torch.zeros(X.shape[1:], dtype=w.dtype, device=X.device)
    for sl, chunk in _chunks(X, w.dtype):
        total += (w[sl, None, None] * chunk).sum(0)
    return total


def _weighted_log_at(L: torch.Tensor, X: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_i w_i \log(L^{-1} X_i L^{-\top})`; without gradients, the weighted sum of the
    reconstructions ``U_i diag(w_i log λ_i) U_iᵀ`` is one matrix product a chunk (see
    :func:`_chunks`)."""
    L_inv = triangular_inverse(L)  # one c × c inverse, then GEMMs
    if torch.is_grad_enabled() and (X.requires_grad or w.requires_grad or L.requires_grad):
        return (w[:, None, None] * log_unchecked(L_inv @ X @ L_inv.mT, "X")).sum(0)
    product = host_matmul if use_host_blas(X) else torch.matmul
    total = torch.zeros_like(L)
    for sl, chunk in _chunks(X, L.dtype):
        eigenvalues, U = eigh(product(product(L_inv, chunk), L_inv.mT))  # the lower triangle
        raise_if_not_positive(eigenvalues[..., 0], "X")
        scaled = U * (w[sl, None] * torch.log(eigenvalues)).unsqueeze(-2)
        total += torch.einsum("ipk,iqk->pq", scaled, U)
    return symmetrize(total)


def _exp_at(L: torch.Tensor, tangent: torch.Tensor) -> torch.Tensor:
    r""":math:`L \exp(T) L^\top` for a whitened tangent vector ``T``."""
    return L @ exp_unchecked(tangent) @ L.mT


def _as_init(init, X: torch.Tensor) -> torch.Tensor:
    init = symmetrize(as_symmetric_tensor(init, "init").to(dtype=X.dtype, device=X.device))
    if init.shape != X.shape[1:]:
        raise ValueError(f"init must have shape {tuple(X.shape[1:])}, got {tuple(init.shape)}.")
    return init


def _normalised_weights(weights, X: torch.Tensor) -> torch.Tensor:
    n = X.shape[0]
    if weights is None:
        return torch.full((n,), 1.0 / n, dtype=X.dtype, device=X.device)
    w = torch.as_tensor(weights, dtype=X.dtype, device=X.device)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {tuple(w.shape)}.")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError("weights must be finite and non-negative.")
    total = w.sum()
    if not bool(total > 0):
        raise ValueError("weights sum to zero.")
    return w / total
