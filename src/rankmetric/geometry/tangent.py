r"""Logarithmic and exponential maps at a reference SPD matrix, in pyRiemann's coordinates.

The tangent space at a reference :math:`M` is the space of symmetric matrices; these maps are
those of pyRiemann's ``tangent_space`` / ``untangent_space`` (0.12), so that
``sym_to_vec(log_map(X, M, metric))`` is the vector pyRiemann's ``TangentSpace`` computes:

- ``"airm"`` (``"riemann"``): :math:`\log(M^{-1/2} X M^{-1/2})`, with the symmetric inverse
  square root, and back :math:`M^{1/2} \exp(T) M^{1/2}`. Its Frobenius norm is the AIRM distance
  :math:`\delta_R(M, X)`. (Any other square root, e.g. a Cholesky factor, gives the same norms
  but rotated vectors: the symmetric one is what makes the coordinates pyRiemann's.)
- ``"log_euclidean"`` (``"logeuclid"``): :math:`D\exp_{\log M}[\log X - \log M]`, the
  log-Euclidean logarithmic map (Arsigny et al. 2007, eq. 3.4), and back
  :math:`\exp(\log M + D\log_M[T])`. The directional derivatives are Daleckii–Krein products
  with the first divided differences of
  :func:`~rankmetric.geometry.matrix_functions.divided_differences`.
- ``"euclidean"`` (``"euclid"``): :math:`X - M` and back :math:`T + M`.
"""

from __future__ import annotations

import torch

from ._common import common_dtype
from ._host_blas import host_matmul, use_host_blas
from .aliases import canonical_metric
from .checks import as_symmetric_tensor
from .eigen import eigh
from .matrix_functions import (
    divided_differences,
    exp_unchecked,
    log_unchecked,
    spd_inv_sqrt,
    spd_sqrt,
    symmetrize,
)
from .means import riemannian_mean

__all__ = ["log_map", "exp_map", "congruence", "whiten", "mean_whitening", "TANGENT_METRICS"]

#: Metrics with a logarithmic / exponential map here (aliases resolve through ``canonical_metric``).
TANGENT_METRICS = ("airm", "log_euclidean", "euclidean")


def congruence(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    r"""The congruence :math:`W X W` of a stack ``X`` (..., c, c) by a symmetric ``W``.

    The one congruence of the package: whitening (:func:`whiten`), the SPD estimators' input
    whitening, and the batch normalisations' centring and bias all call it. No checks: the
    caller's tensors are symmetric and share a dtype and device.

    Parameters
    ----------
    X : Tensor of shape (..., c, c)
        Symmetric matrices.
    W : Tensor of shape (c, c) or (..., c, c)
        Symmetric matrices, broadcast against ``X``.

    Returns
    -------
    Tensor of shape (..., c, c)
        Exactly symmetric.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import congruence
    >>> W = torch.diag(torch.tensor([2.0, 3.0]))
    >>> congruence(torch.eye(2)[None], W)[0].diagonal()
    tensor([4., 9.])
    """
    return symmetrize(W @ X @ W)


def mean_whitening(X) -> torch.Tensor:
    r""":math:`M^{-1/2}` for the Riemannian mean :math:`M` of a stack ``X``: its whitening matrix.

    ``congruence(X, mean_whitening(X))`` re-centres the matrices at the identity, as
    ``whiten(X, riemannian_mean(X))``; the matrix itself is what a fitted model keeps (the SPD
    estimators' ``whitening_``).

    Parameters
    ----------
    X : Tensor or ndarray of shape (n, c, c)
        SPD matrices.

    Returns
    -------
    Tensor of shape (c, c)
        Symmetric positive definite.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import mean_whitening
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()  # Riemannian mean 2 I
    >>> torch.allclose(mean_whitening(X), torch.eye(2, dtype=torch.float64) / 2**0.5)
    True
    """
    return spd_inv_sqrt(riemannian_mean(X))


def whiten(X, reference) -> torch.Tensor:
    r"""Re-centre SPD matrices from ``reference`` to the identity: :math:`M^{-1/2} X M^{-1/2}`.

    The congruence by the symmetric inverse square root of :math:`M` (the affine-invariant
    parallel transport of :math:`M` to :math:`I`, Zanini et al. 2018): AIRM distances between
    the matrices are unchanged, and matrices whose Riemannian mean is :math:`M` get the
    identity as their mean.

    Parameters
    ----------
    X : Tensor or ndarray of shape (..., c, c)
        SPD matrices.
    reference : Tensor or ndarray of shape (c, c)
        SPD matrix :math:`M`.

    Returns
    -------
    Tensor of shape (..., c, c)
        SPD matrices (exactly symmetric), differentiable in ``X`` and ``reference``.

    Raises
    ------
    ValueError
        If ``X`` is not symmetric or ``reference`` not SPD, or their sizes or devices differ.

    See Also
    --------
    rankmetric.preprocessing.DomainRecentering : Whitening by each domain's mean, as a transformer.
    rankmetric.geometry.spd_inv_sqrt : The inverse square root it applies.

    References
    ----------
    .. [1] P. Zanini, M. Congedo, C. Jutten, S. Said, Y. Berthoumieu, "Transfer learning: a
       Riemannian geometry framework with applications to brain-computer interfaces", IEEE TBME
       65(5), 2018.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import whiten
    >>> M = torch.diag(torch.tensor([4.0, 9.0], dtype=torch.float64))
    >>> torch.allclose(whiten(M, M), torch.eye(2, dtype=torch.float64))
    True
    """
    X, M = _checked_pair(X, reference, "X")
    return congruence(X, spd_inv_sqrt(M))


# alike: numpydoc See Also / Examples skeleton alike in sym_to_vec (matrix_functions.py); the maps
# differ
def log_map(X, reference, metric: str = "airm") -> torch.Tensor:
    r"""Logarithmic map of SPD matrices at ``reference``: symmetric tangent matrices.

    .. math::
        \operatorname{Log}^{\text{airm}}_M(X) = \log(M^{-1/2} X M^{-1/2}), \qquad
        \operatorname{Log}^{\text{le}}_M(X) = D\exp_{\log M}[\log X - \log M], \qquad
        \operatorname{Log}^{\text{euclid}}_M(X) = X - M

    (pyRiemann's ``log_map_riemann``, ``log_map_logeuclid``, ``log_map_euclid``; see the
    module docstring). ``sym_to_vec`` of the result is pyRiemann's tangent vector.

    Parameters
    ----------
    X : Tensor or ndarray of shape (..., c, c)
        SPD matrices.
    reference : Tensor or ndarray of shape (c, c)
        The SPD reference point :math:`M`.
    metric : str, default="airm"
        ``"airm"`` / ``"riemann"``, ``"log_euclidean"`` / ``"logeuclid"`` or
        ``"euclidean"`` / ``"euclid"``.

    Returns
    -------
    Tensor of shape (..., c, c)
        Symmetric matrices, in the promoted dtype of ``X`` and ``reference``; differentiable in
        ``X`` (and in ``reference`` for ``"airm"`` and ``"euclidean"``).

    Raises
    ------
    ValueError
        If ``X`` or ``reference`` is not SPD, their sizes or devices differ, or the metric is
        unknown.

    See Also
    --------
    rankmetric.geometry.exp_map : The inverse map.
    rankmetric.preprocessing.TangentSpace : Tangent vectors of SPD matrices as a transformer.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import airm_distance, log_map
    >>> M = torch.diag(torch.tensor([1.0, 4.0], dtype=torch.float64))
    >>> X = torch.eye(2, dtype=torch.float64)
    >>> T = log_map(X, M, "riemann")
    >>> bool(torch.isclose(torch.linalg.matrix_norm(T), airm_distance(M, X)))
    True
    """
    metric = canonical_metric(metric, TANGENT_METRICS)
    X, M = _checked_pair(X, reference, "X")
    return log_map_unchecked(X, M, metric)


def log_map_unchecked(X: torch.Tensor, M: torch.Tensor, metric: str) -> torch.Tensor:
    """:func:`log_map` for checked tensors of one dtype and device, ``M`` SPD and ``metric``
    canonical (callers that validated their input once, e.g. ``TangentSpace.transform``)."""
    if metric == "airm":
        W = spd_inv_sqrt(M)
        product = host_matmul if use_host_blas(X, W) else torch.matmul
        return log_unchecked(product(product(W, X), W), "X")  # the log symmetrises a copy
    if metric == "euclidean":
        return symmetrize(X - M)
    values, vectors, log_values, log_M = _reference_log(M)
    loewner = divided_differences(log_values, values, torch.exp)  # of exp at log λ: exp = λ
    inner = vectors.mT @ (log_unchecked(X, "X") - log_M) @ vectors
    return symmetrize(vectors @ (loewner * inner) @ vectors.mT)


# alike: numpydoc See Also / Examples skeleton alike in losses/indices.py and neighbors/_search.py;
# the functions differ
def exp_map(T, reference, metric: str = "airm") -> torch.Tensor:
    r"""Exponential map at ``reference`` of symmetric tangent matrices: the inverse of
    :func:`log_map`.

    .. math::
        \operatorname{Exp}^{\text{airm}}_M(T) = M^{1/2} \exp(T) M^{1/2}, \qquad
        \operatorname{Exp}^{\text{le}}_M(T) = \exp(\log M + D\log_M[T]), \qquad
        \operatorname{Exp}^{\text{euclid}}_M(T) = T + M

    Parameters
    ----------
    T : Tensor or ndarray of shape (..., c, c)
        Symmetric matrices (tangent vectors at ``reference``, in :func:`log_map`'s coordinates).
    reference : Tensor or ndarray of shape (c, c)
        The SPD reference point :math:`M`.
    metric : str, default="airm"
        As in :func:`log_map`.

    Returns
    -------
    Tensor of shape (..., c, c)
        SPD matrices (symmetric, not necessarily positive definite for ``"euclidean"``).

    Raises
    ------
    ValueError
        If ``T`` is not symmetric, ``reference`` is not SPD, their sizes or devices differ, or
        the metric is unknown.

    See Also
    --------
    rankmetric.geometry.log_map : The inverse map.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import exp_map, log_map
    >>> M = torch.diag(torch.tensor([1.0, 4.0], dtype=torch.float64))
    >>> X = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
    >>> torch.allclose(exp_map(log_map(X, M), M), X)
    True
    """
    metric = canonical_metric(metric, TANGENT_METRICS)
    T, M = _checked_pair(T, reference, "T")
    return exp_map_unchecked(T, M, metric)


def exp_map_unchecked(T: torch.Tensor, M: torch.Tensor, metric: str) -> torch.Tensor:
    """:func:`exp_map` for checked tensors (see :func:`log_map_unchecked`)."""
    if metric == "airm":
        S = spd_sqrt(M)
        return symmetrize(S @ exp_unchecked(T) @ S)
    if metric == "euclidean":
        return symmetrize(T + M)
    values, vectors, log_values, log_M = _reference_log(M)
    loewner = divided_differences(values, log_values, torch.reciprocal)
    inner = vectors.mT @ symmetrize(T) @ vectors
    return exp_unchecked(log_M + vectors @ (loewner * inner) @ vectors.mT)


def _checked_pair(X, reference, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` (..., c, c) and ``reference`` (c, c) as checked tensors of one dtype and size."""
    X = as_symmetric_tensor(X, name)
    M = as_symmetric_tensor(reference, "reference")
    if M.ndim != 2:
        raise ValueError(f"reference must be one (c, c) matrix, got shape {tuple(M.shape)}.")
    if M.shape[-1] != X.shape[-1]:
        raise ValueError(
            f"{name} holds {X.shape[-1]} x {X.shape[-1]} matrices but reference is "
            f"{M.shape[-1]} x {M.shape[-1]}."
        )
    if not isinstance(reference, torch.Tensor):
        M = M.to(X.device)
    X, M = common_dtype(X, M)
    M = symmetrize(M)
    if bool(torch.linalg.cholesky_ex(M.detach())[1]):
        raise ValueError("reference is not positive definite (Cholesky factorisation failed).")
    return X, M


def _reference_log(M: torch.Tensor):
    """``(λ, U, log λ, log M)`` of the SPD reference (checked positive definite by
    ``_checked_pair``)."""
    values, vectors = eigh(M.detach())
    values = values.clamp_min(torch.finfo(M.dtype).tiny)
    log_values = torch.log(values)
    return values, vectors, log_values, (vectors * log_values.unsqueeze(-2)) @ vectors.mT
