"""Small linear-algebra helpers shared by the distance and mean modules (``as_matrix_stack``,
now in :mod:`.checks`, stays importable from here)."""

from __future__ import annotations

import torch

from .checks import as_matrix_stack, raise_if_cholesky_failed

__all__ = [
    "safe_sqrt",
    "as_matrix_stack",
    "broadcast_pair",
    "cholesky",
    "common_dtype",
    "condition_proxy",
    "inverse_congruence",
    "triangular_inverse",
]


def cholesky(A: torch.Tensor, name: str) -> torch.Tensor:
    """Lower Cholesky factor of ``A`` (..., c, c); ``ValueError`` naming ``name`` if not PD."""
    L, info = torch.linalg.cholesky_ex(A)
    raise_if_cholesky_failed(info, name)
    return L


def broadcast_pair(
    A: torch.Tensor, B: torch.Tensor, names: tuple[str, str] = ("A", "B")
) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.broadcast_tensors(A, B)``, or a ``ValueError`` naming the two batch shapes."""
    try:
        return torch.broadcast_tensors(A, B)
    except RuntimeError:
        raise ValueError(
            f"{names[0]} and {names[1]} have batch shapes {tuple(A.shape[:-2])} and "
            f"{tuple(B.shape[:-2])}, which do not broadcast."
        ) from None


def condition_proxy(L: torch.Tensor) -> torch.Tensor:
    r""":math:`(\max \operatorname{diag} L / \min \operatorname{diag} L)^2` of Cholesky factors.

    ``L`` has shape (..., c, c); the result is a lower bound of the condition number of
    :math:`L L^\top`, free once :math:`L` is known."""
    diagonal = L.diagonal(dim1=-2, dim2=-1).abs()
    return (diagonal.amax(-1) / diagonal.amin(-1)) ** 2


def inverse_congruence(L: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    r""":math:`L^{-1} X L^{-\top}` (``L`` lower-triangular, ``X`` symmetric, (..., c, c))."""
    L, X = broadcast_pair(L, X)
    half = torch.linalg.solve_triangular(L, X, upper=False)  # L⁻¹ X
    return torch.linalg.solve_triangular(L, half.mT, upper=False)  # L⁻¹ (L⁻¹ X)ᵀ = L⁻¹ X L⁻ᵀ


def common_dtype(A: torch.Tensor, B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cast two matrix stacks to their promoted dtype, checking matrix size and device."""
    if A.shape[-1] != B.shape[-1]:
        raise ValueError(
            f"A and B hold matrices of different sizes: {A.shape[-1]} and {B.shape[-1]}."
        )
    if A.device != B.device:
        raise ValueError(f"A and B are on different devices: {A.device} and {B.device}.")
    dtype = torch.promote_types(A.dtype, B.dtype)
    return A.to(dtype), B.to(dtype)


def safe_sqrt(x: torch.Tensor) -> torch.Tensor:
    """Square root of a non-negative tensor whose derivative is 0 (not infinite) at 0.

    Parameters
    ----------
    x : Tensor of any shape
        Squared distances (negative rounding noise is treated as 0).

    Returns
    -------
    Tensor of the same shape
    """
    if not x.requires_grad:  # the same values, without the mask the gradient needs
        return x.clamp_min(0).sqrt_()
    positive = x > 0
    return torch.where(positive, x.clamp_min(torch.finfo(x.dtype).tiny).sqrt(), 0.0)


def triangular_inverse(L: torch.Tensor) -> torch.Tensor:
    """``L⁻¹`` for lower-triangular ``L`` of shape (..., c, c)."""
    eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand_as(L)
    return torch.linalg.solve_triangular(L, eye, upper=False)
