r"""Penalties on the weights of a metric: one home for the regularisers of WARCA and SSNE.

* :func:`aon_penalty` — WARCA's approximate orthonormality
  :math:`\tfrac12 \Vert W W^\top - I \Vert_F^2` (Jose & Fleuret, ECCV 2016, eq. 4 with the
  :math:`\tfrac12` of eq. 5);
* :func:`kernel_aon_penalty` — its kernel form :math:`\tfrac12 \Vert A K A^\top - I \Vert_F^2`
  (eq. 8), computed from :math:`K A^\top` alone (no N × N beyond :math:`K`), with an exact
  hand-written gradient;
* :func:`group_norm_penalty` — SSNE's :math:`L_{1,2}` group norm
  :math:`R(W) = \sum_m \Vert w_m \Vert_2` over the columns of :math:`W` (Batra & Shakhnarovich),
  and :func:`group_soft_threshold_`, its proximal operator, which zeroes whole columns (pruned
  units).

These functions were defined in :mod:`rankmetric.losses.warp` and
:mod:`rankmetric.losses.similarity`; both modules re-export them, so old imports keep working.
"""

from __future__ import annotations

import torch

from ._docstrings import fill_doc

__all__ = [
    "aon_penalty",
    "kernel_aon_penalty",
    "group_norm_penalty",
    "group_soft_threshold_",
]


# alike: See Also, citation and example header alike in kernel_aon_penalty (the linear and kernel
# forms of one penalty); the estimators named differ
@fill_doc
def aon_penalty(weight: torch.Tensor) -> torch.Tensor:
    r"""Approximate-orthonormality regulariser (eq. 4 with the :math:`\tfrac12` of eq. 5).

    .. math:: \tfrac12 \Vert W W^\top - I \Vert_F^2

    Parameters
    ----------
    weight : tensor of shape (r, D)

    Returns
    -------
    scalar tensor

    See Also
    --------
    rankmetric.losses.kernel_aon_penalty : The same regulariser for Kernel WARCA.
    rankmetric.WARCA : The estimator that adds it to the WARP loss.

    %(jose_fleuret)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import aon_penalty
    >>> aon_penalty(torch.eye(2, 3))  # orthonormal rows: no penalty
    tensor(0.)
    >>> aon_penalty(2 * torch.eye(2, 3))  # ½ ‖4 I − I‖²_F = ½ · 2 · 9
    tensor(9.)
    """
    gram = weight @ weight.T
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    return 0.5 * (gram - eye).square().sum()


class _KernelAON(torch.autograd.Function):
    """``½||A (K Aᵀ) − I||²`` from a given ``KA = K Aᵀ``; exact gradient ``2 R (K Aᵀ)ᵀ``."""

    @staticmethod
    def forward(ctx, A: torch.Tensor, KA: torch.Tensor) -> torch.Tensor:
        gram = A @ KA
        residual = 0.5 * (gram + gram.T) - torch.eye(gram.shape[0], dtype=A.dtype, device=A.device)
        ctx.save_for_backward(residual, KA)
        return 0.5 * residual.square().sum()

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        residual, KA = ctx.saved_tensors
        return 2.0 * grad_output * (residual @ KA.T), None


@fill_doc
def kernel_aon_penalty(
    A: torch.Tensor, K: torch.Tensor | None = None, KA: torch.Tensor | None = None
) -> torch.Tensor:
    r"""Kernel AON regulariser (eq. 8).

    .. math:: \tfrac12 \Vert A K A^\top - I \Vert_F^2

    Computed as :math:`A (K A^\top)` so that nothing N × N is allocated besides :math:`K`; pass
    ``KA`` when :math:`K A^\top` is already at hand (WARCA computes it once per step for the
    embeddings). The gradient :math:`2 (A K A^\top - I) A K = 2 R (K A^\top)^\top` is exact and
    also needs only :math:`K A^\top`.

    Parameters
    ----------
    A : tensor of shape (r, N)
    K : tensor of shape (N, N), optional
        Symmetric kernel matrix (needed when ``KA`` is not given).
    KA : tensor of shape (N, r), optional
        ``K Aᵀ`` for the current ``A`` (treated as a constant of the graph).

    Returns
    -------
    scalar tensor

    See Also
    --------
    rankmetric.losses.aon_penalty : The linear version.
    rankmetric.KernelWARCA : The estimator that adds it to the WARP loss.

    %(jose_fleuret)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import kernel_aon_penalty
    >>> K = torch.eye(3)  # with K = I it is the linear penalty of A
    >>> kernel_aon_penalty(2 * torch.eye(2, 3), K)
    tensor(9.)
    """
    if KA is None:
        if K is None:
            raise ValueError("kernel_aon_penalty needs K or KA = K @ A.T.")
        with torch.no_grad():
            KA = K @ A.T
    return _KernelAON.apply(A, KA.detach())


@fill_doc
def group_norm_penalty(weight: torch.Tensor) -> torch.Tensor:
    r"""The :math:`L_{1,2}` group norm :math:`R(W) = \sum_m \Vert w_m \Vert_2` over the columns of
    ``weight``.

    Parameters
    ----------
    weight : Tensor of shape (n_rows, n_groups)
        One group per column (for SSNE, ``W`` with the bias in the last row: the bias is part of
        its unit's group, so a zeroed group is a unit that outputs exactly 0).

    Returns
    -------
    Scalar tensor.

    See Also
    --------
    rankmetric.losses.group_soft_threshold_ : Its proximal operator.
    rankmetric.SSNE : The estimator that prunes units with it.

    %(batra_shakhnarovich)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import group_norm_penalty
    >>> group_norm_penalty(torch.tensor([[3.0, 0.0], [4.0, 1.0]]))  # ‖(3, 4)‖ + ‖(0, 1)‖
    tensor(6.)
    """
    return torch.linalg.vector_norm(weight, dim=0).sum()


@fill_doc
@torch.no_grad()
def group_soft_threshold_(
    weight: torch.Tensor, threshold: float, columns: torch.Tensor | None = None
) -> torch.Tensor:
    r"""Proximal operator of :math:`\tau R`, in place.

    .. math:: w_m \leftarrow w_m \, \max\big(0,\ 1 - \tau / \Vert w_m \Vert\big)

    Columns whose norm is at most :math:`\tau` become exactly zero; the others shrink towards
    zero by :math:`\tau` in norm. After a gradient step of size :math:`\eta` on the loss,
    :math:`\tau = \eta \cdot` ``reg_lambda`` makes this a proximal-gradient step on
    ``loss + reg_lambda · R``.

    Parameters
    ----------
    weight : Tensor of shape (n_rows, n_groups)
        Modified in place.
    threshold : float
        ``τ ≥ 0``.
    columns : Tensor, optional
        Indices (or boolean mask) of the columns to threshold; the others are left untouched
        (block-coordinate steps). Default: every column.

    Returns
    -------
    Tensor of shape (n_groups,), bool
        Which columns are non-zero afterwards.

    See Also
    --------
    rankmetric.losses.group_norm_penalty : The penalty whose proximal operator this is.

    %(batra_shakhnarovich)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import group_soft_threshold_
    >>> W = torch.tensor([[3.0, 0.0], [4.0, 1.0]])
    >>> group_soft_threshold_(W, 1.0)  # column norms 5 and 1
    tensor([ True, False])
    >>> W
    tensor([[2.4000, 0.0000],
            [3.2000, 0.0000]])
    """
    if threshold < 0:
        raise ValueError(f"the soft-threshold must be non-negative, got {threshold}.")
    norms = torch.linalg.vector_norm(weight, dim=0)
    shrink = (1.0 - threshold / norms.clamp_min(torch.finfo(weight.dtype).tiny)).clamp_min(0.0)
    if columns is not None:
        keep = torch.ones_like(shrink)
        keep[columns] = shrink[columns]
        shrink = keep
    weight.mul_(shrink)
    return (weight != 0).any(dim=0)
