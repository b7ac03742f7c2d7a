r"""The one squared-Euclidean kernel: every squared distance between rows is computed here.

Two forms, one numerical treatment each:

- :func:`squared_euclidean` (every row of ``X`` against every row of ``Y``): the Gram form
  :math:`\Vert x \Vert^2 + \Vert y \Vert^2 - 2 x^\top y`, the norms summed first and the product
  added by one fused ``addmm`` (no ``(n, m, d)`` temporary; one GEMM, the fastest kernel on every
  device), **clamped at 0** (rounding leaves tiny negative values where ``x ≈ y``, which a square
  root or a comparison with 0 would misread), and **exactly 0 on the diagonal** when ``Y`` is
  omitted (a point's distance to itself is 0, not a rounding residue: losses take square roots of
  it and k-NN excludes it by value).
- :func:`paired_squared_euclidean` (row ``i`` against row ``i``, broadcasting): the difference
  form :math:`\sum (a - b)^2`, exact to rounding and O(n d), with no cancellation.

Three callers keep, for a stated reason, another order of the same Gram form; they are here
too, so that every squared distance of the package lives in this module:

- :func:`squared_euclidean_in_place` (kernel WARCA's RBF and χ² kernels): the product first,
  then the norms added **in place** in the one ``(n, m)`` buffer, which the kernel then
  exponentiates in place (the memory of one kernel block, not two).
- :func:`centered_squared_euclidean` (``geometry``'s log-Euclidean and Euclidean matrices): both
  sets centered on the first set's mean first, for points far from the origin (a whole set at
  once, never chunked, so the chunk caveat below does not apply).
- :func:`floored_squared_euclidean` (WARCA's sampled WARP engine): floored at a positive
  ``floor`` rather than 0, so that its square root has a finite gradient, and batched over
  problems. Its two halves are public for the engine's dense detection, which computes
  :func:`partial_squared_euclidean` (:math:`\Vert y \Vert^2 - 2 x^\top y`) once against all N
  items, gathers the drawn columns, and only then adds :math:`\Vert x \Vert^2`
  (:func:`complete_squared_euclidean`); :func:`squared_norms` is the difference form's last step,
  for callers that keep the differences (the engine's fused backward).

The exact searches rank with :func:`partial_squared_euclidean` too (it orders items as the
distance does; ``neighbors``' chunks score into one ``out=`` buffer with the gallery's kept
norms, the index's few-queries path takes NumPy's matrix-vector product), and add
:math:`\Vert x \Vert^2` only to the neighbours they keep.

Moving those callers to the fused kernel would change the last bits of their fits (kernel
WARCA by about 1e-6), and so the published tables they produced; each order is kept and named.

Why not centring everywhere (``geometry``'s log-Euclidean matrix centred both sets on one mean) or
rescaling (the batch losses divided by a power of two): both are exact in real arithmetic and
serve callers whose data they know; centring a chunk on its own mean gives one pair different
values in different chunks, which breaks the chunked searches. Callers that need the dynamic
range keep their rescaling around this kernel (:func:`rankmetric.losses.pair_distances.
pairwise_distance` divides by a power of two first, exactly); input whose squares overflow is
refused before (:func:`rankmetric._validation.check_scale`).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "paired_squared_euclidean",
    "squared_euclidean",
    "squared_euclidean_in_place",
    "centered_squared_euclidean",
    "floored_squared_euclidean",
    "partial_squared_euclidean",
    "complete_squared_euclidean",
    "squared_norms",
]


def squared_euclidean(
    X: torch.Tensor,
    Y: torch.Tensor | None = None,
    *,
    X_sq: torch.Tensor | None = None,
    Y_sq: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""``‖x_i − y_j‖²`` for every row of ``X`` and every row of ``Y``, from the Gram matrix.

    Parameters
    ----------
    X : tensor of shape (n, d)
    Y : tensor of shape (m, d), optional
        Defaults to ``X``; then the diagonal is exactly 0.
    X_sq, Y_sq : tensor of shape (n,) / (m,), optional
        The squared row norms, when the caller already has them (chunked searches).
    out : tensor of shape (n, m), optional
        A buffer to write into (allocated once by a chunked search); returned.

    Returns
    -------
    tensor of shape (n, m)
        Non-negative, in the dtype of ``X``; differentiable unless ``out`` is given.

    Examples
    --------
    >>> import torch
    >>> squared_euclidean(torch.tensor([[0.0, 0.0], [3.0, 4.0]]))
    tensor([[ 0., 25.],
            [25.,  0.]])
    """
    other = X if Y is None else Y
    if X_sq is None:
        X_sq = (X * X).sum(1)
    if Y_sq is None:
        Y_sq = X_sq if Y is None else (other * other).sum(1)
    if out is None:
        sq = torch.addmm(X_sq[:, None] + Y_sq[None, :], X, other.T, alpha=-2.0)
    else:
        sq = torch.add(X_sq[:, None], Y_sq[None, :], out=out).addmm_(X, other.T, alpha=-2.0)
    sq.clamp_min_(0.0)
    if Y is None:
        sq.fill_diagonal_(0.0)
    return sq


def paired_squared_euclidean(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    r"""``‖a − b‖²`` over the last dimension of matching (broadcast) rows: the difference form.

    Parameters
    ----------
    A, B : tensors or NumPy arrays of broadcastable shapes (..., d)

    Returns
    -------
    tensor or ndarray of the broadcast shape without the last dimension

    Examples
    --------
    >>> import torch
    >>> paired_squared_euclidean(torch.tensor([[1.0, 2.0]]), torch.tensor([[4.0, 6.0]]))
    tensor([25.])
    """
    return ((A - B) ** 2).sum(-1)


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
def squared_euclidean_in_place(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``‖x_i − y_j‖²`` from the Gram matrix, built in one ``(n, m)`` buffer in place.

    The product first, then ``‖x‖²`` and ``‖y‖²`` added in place, clamped at 0: the order kernel
    WARCA's kernels were fitted with (see the module's notes).

    Parameters
    ----------
    X : tensor of shape (n, d)
    Y : tensor of shape (m, d)

    Returns
    -------
    tensor of shape (n, m)
        Non-negative, in the dtype of ``X``.

    Examples
    --------
    >>> import torch
    >>> squared_euclidean_in_place(torch.tensor([[0.0, 0.0]]), torch.tensor([[3.0, 4.0]]))
    tensor([[25.]])
    """
    sq = (X @ Y.T).mul_(-2.0)
    sq.add_((X * X).sum(1)[:, None]).add_((Y * Y).sum(1)[None, :])
    return sq.clamp_min_(0.0)


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
def centered_squared_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``‖a_i − b_j‖²`` with both sets first centered on ``a``'s mean, clamped at 0.

    Distances do not change; the cancellation in ``‖a‖² + ‖b‖² − 2 aᵀb`` stays small when the
    points sit far from the origin (``geometry``'s log-Euclidean matrices).

    Parameters
    ----------
    a : tensor of shape (n, d)
    b : tensor of shape (m, d)

    Returns
    -------
    tensor of shape (n, m)

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([[100.0, 0.0], [103.0, 4.0]])
    >>> centered_squared_euclidean(a, a)
    tensor([[ 0., 25.],
            [25.,  0.]])
    """
    center = a.mean(0).detach()
    a, b = a - center, b - center
    squared = torch.addmm((b * b).sum(1)[None, :], a, b.T, alpha=-2.0)
    return squared.add_((a * a).sum(1, keepdim=True)).clamp_min_(0)


def floored_squared_euclidean(a: torch.Tensor, b: torch.Tensor, floor: float) -> torch.Tensor:
    """``max(‖a_i − b_j‖², floor)`` for every row pair, also batched over problems.

    Parameters
    ----------
    a : tensor of shape (n_a, r), or (p, n_a, r) for p batched problems
    b : tensor of shape (n_b, r), or (p, n_b, r)
    floor : float
        Positive floor (its square root has a finite gradient).

    Returns
    -------
    tensor of shape (n_a, n_b) or (p, n_a, n_b)

    Examples
    --------
    >>> import torch
    >>> floored_squared_euclidean(torch.zeros(1, 2), torch.zeros(1, 2), 1e-12)
    tensor([[1.0000e-12]])
    """
    sq_a = squared_norms(a)  # first: the order of the operations (and of their backward) kept
    return complete_squared_euclidean(partial_squared_euclidean(a, b), sq_a, floor)


def squared_norms(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``Σ x²`` over the last dimension: the squared norm of each row (of a difference, its
    squared distance). ``out``: a buffer of ``x``'s shape for the squares (returned summed).

    Examples
    --------
    >>> import torch
    >>> squared_norms(torch.tensor([[3.0, 4.0]]))
    tensor([25.])
    """
    return (x.square() if out is None else torch.mul(x, x, out=out)).sum(-1)


def partial_squared_euclidean(
    a: torch.Tensor | np.ndarray,
    b: torch.Tensor | np.ndarray,
    *,
    sq_b: torch.Tensor | np.ndarray | None = None,
    out: torch.Tensor | np.ndarray | None = None,
) -> torch.Tensor | np.ndarray:
    r"""``‖b_j‖² − 2 a_iᵀ b_j`` for every row pair: the Gram form without ``‖a_i‖²``.

    It orders the rows of ``b`` as ``‖a_i − b_j‖²`` does, so the chunked searches rank with it
    (:class:`rankmetric.neighbors.Gallery`) and add ``‖a_i‖²`` only to the few kept; WARCA's
    WARP engine gathers it first and finishes it with :func:`complete_squared_euclidean`.

    Parameters
    ----------
    a : tensor of shape (n, d) or (p, n, d), or ndarray of shape (d,) or (n, d)
        The queries (``p`` batched problems). A NumPy vector is one query, scored by a
        matrix-vector product (a search's few-queries path).
    b : tensor of shape (m, d) or (p, m, d), or ndarray of shape (m, d)
        The items.
    sq_b : tensor or ndarray of shape (m,) or (p, m), optional
        ``‖b_j‖²``, when the caller keeps it (a search's prepared gallery); ``+inf`` entries
        rank their items last (a filter).
    out : tensor or ndarray of the result's shape, optional
        A buffer to write into (allocated once by a chunked search); returned.

    Returns
    -------
    tensor of shape (n, m) or (p, n, m), or ndarray of shape (m,) or (n, m)
        In the type and dtype of ``a``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> partial_squared_euclidean(torch.tensor([[1.0, 0.0]]), torch.tensor([[3.0, 4.0]]))
    tensor([[19.]])
    >>> partial_squared_euclidean(np.array([1.0, 0.0]), np.array([[3.0, 4.0], [1.0, 0.0]]))
    array([19., -1.])
    """
    if isinstance(a, np.ndarray):
        if sq_b is None:
            sq_b = np.einsum("md,md->m", b, b)
        out = np.dot(b, a, out=out) if a.ndim == 1 else np.dot(a, b.T, out=out)
        out *= -2.0
        out += sq_b
        return out
    if sq_b is None:
        sq_b = squared_norms(b)
    if a.dim() == 2:
        return torch.addmm(sq_b[None, :], a, b.T, alpha=-2.0, out=out)
    return torch.baddbmm(sq_b[:, None, :], a, b.transpose(-1, -2), alpha=-2.0, out=out)


def complete_squared_euclidean(
    partial: torch.Tensor, sq_a: torch.Tensor, floor: float
) -> torch.Tensor:
    """``max(partial + ‖a‖², floor)``: finish :func:`partial_squared_euclidean` (``sq_a`` of
    shape ``partial.shape[:-1]``, from :func:`squared_norms`).

    Examples
    --------
    >>> import torch
    >>> complete_squared_euclidean(torch.tensor([[19.0]]), torch.tensor([1.0]), 1e-12)
    tensor([[20.]])
    """
    return (partial + sq_a[..., None]).clamp_min(floor)
