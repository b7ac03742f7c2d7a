r"""Distances between SPD matrices: affine-invariant Riemannian (AIRM) and log-Euclidean.

The AIRM distance is computed from the generalised eigenvalues of the pencil :math:`(B, A)`, i.e.
the eigenvalues of :math:`L^{-1} B L^{-\top}` with :math:`A = L L^\top` (Cholesky), which are those
of :math:`A^{-1/2} B A^{-1/2}` at a fraction of the cost. Every function here is differentiable.
The AIRM backward is written with the generalised eigenvectors (see :class:`_AirmSquared`): it
involves eigenvalues only, so it is exact and finite when eigenvalues repeat (e.g. at
:math:`A = B`). The square root has a zero derivative at zero.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch.autograd.function import once_differentiable

from .._validation import POSITIVE_INT, check_param
from ._common import (
    as_matrix_stack,
    broadcast_pair,
    cholesky,
    common_dtype,
    condition_proxy,
    inverse_congruence,
    safe_sqrt,
    triangular_inverse,
)
from ._docstrings import fill_doc
from ._host_blas import blas_threads, side_by_side, use_host_blas, whiten_pairs_host
from .checks import (
    as_symmetric_tensor,
    raise_if_not_positive,
    raise_if_singular,
    singular_limit,
)
from .eigen import MIN_WORK_PER_THREAD, eigh, eigvalsh
from .flat_distances import (
    euclidean_distance,
    log_euclidean_distance,
    pairwise_euclidean,
    pairwise_log_euclidean,
)
from .matrix_functions import symmetrize

__all__ = [
    "safe_sqrt",
    "airm_distance",
    "pairwise_airm",
    "log_euclidean_distance",
    "pairwise_log_euclidean",
    "euclidean_distance",
    "pairwise_euclidean",
]

#: Numbers in the ``(rows, columns, c, c)`` block of whitened matrices built at once, by device.
CHUNK_ELEMENTS = {"cpu": 2**21, "cuda": 2**26}
#: Numbers in one block of whitened matrices in CPU inference (without gradients): small
#: enough to stay in a core's cache between the products, the copy and the eigen-solver.
CACHE_BLOCK_ELEMENTS = 2**19
#: ``pairwise_airm(A)`` (one set) runs in at least this many row chunks (n/64 rows each), so
#: that the pairs ``j <= i`` inside each chunk's block, computed and discarded, stay under 1 %.
SAME_SET_CHUNKS = 64


class _AirmSquared(torch.autograd.Function):
    r"""Squared AIRM distances :math:`\sum_k \log^2 \lambda_k(A, B)` with a closed-form backward.

    With :math:`A = L L^\top` and :math:`L^{-1} B L^{-\top} = U \Lambda U^\top`, the columns of
    :math:`V = L^{-\top} U` are the generalised eigenvectors (:math:`V^\top A V = I`,
    :math:`V^\top B V = \Lambda`), and
    :math:`d\lambda_k = v_k^\top dB\, v_k - \lambda_k v_k^\top dA\, v_k`. Hence

    .. math::
        \frac{\partial d^2}{\partial B}
            = V \operatorname{diag}\Big(\frac{2 \log \lambda}{\lambda}\Big) V^\top, \qquad
        \frac{\partial d^2}{\partial A} = -V \operatorname{diag}(2 \log \lambda) V^\top,

    which only involves eigenvalues (no :math:`1/(\lambda_i - \lambda_j)`): exact and finite when
    eigenvalues repeat, e.g. at :math:`A = B`.

    The inputs are symmetrised first, so the (symmetric) gradient is that of the computed function.

    ``all_pairs=False``: ``A``, ``B`` of the same shape (..., c, c) → (...,).
    ``all_pairs=True``: ``A`` (a, c, c), ``B`` (m, c, c) → (a, m).
    """

    @staticmethod
    def forward(ctx, A, B, all_pairs):
        A, B = symmetrize(A), symmetrize(B)  # the backward is the gradient of this function
        ctx.all_pairs, ctx.dtype = all_pairs, A.dtype
        with_vectors = any(ctx.needs_input_grad)
        eigenvalues, V = _pencil_checked(A, B, all_pairs, with_vectors)
        if with_vectors:
            ctx.save_for_backward(eigenvalues, V)
        return _sum_log_squared(eigenvalues, A.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        eigenvalues, V = ctx.saved_tensors
        weights = 2 * torch.log(eigenvalues) * grad_output.unsqueeze(-1)
        grad_A = grad_B = None
        if ctx.needs_input_grad[0]:
            grad_A = -(V * weights.unsqueeze(-2)) @ V.mT
            grad_A = grad_A.sum(1) if ctx.all_pairs else grad_A
        if ctx.needs_input_grad[1]:
            grad_B = (V * (weights / eigenvalues).unsqueeze(-2)) @ V.mT
            grad_B = grad_B.sum(0) if ctx.all_pairs else grad_B
        cast = lambda g: None if g is None else g.to(ctx.dtype)  # noqa: E731
        return cast(grad_A), cast(grad_B), None


#: Largest condition number (of ``A``, or of the whitened ``A^{-1/2} B A^{-1/2}``) at which the
#: AIRM distance is computed in float32; beyond it float32 loses more than about 1e-4 relative
#: (5e-3 at 1e5), and the whitening and eigenvalues are computed in float64 instead.
FLOAT32_MAX_CONDITION = 1e3


def _sum_log_squared(eigenvalues: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``Σ_k log² λ_k`` over the last dimension, in ``dtype``."""
    return torch.log(eigenvalues).square_().sum(-1).to(dtype)


def _pencil_checked(A, B, all_pairs: bool, with_vectors: bool):
    """:func:`_airm_core`, or :func:`_airm_float32` for float32 input."""
    if A.dtype == torch.float32:
        return _airm_float32(A, B, all_pairs, with_vectors)
    return _airm_core(A, B, all_pairs, with_vectors)


def _airm_core(A, B, all_pairs: bool, with_vectors: bool):
    """``(eigenvalues, V)`` of the pencil ``(B, A)`` (``V`` is ``None`` without vectors);
    ``ValueError`` naming ``A`` or ``B`` if one is not positive definite."""
    eigenvalues, V = _pencil(_checked_factor(A), B, all_pairs, with_vectors)
    return _checked_pencil_values(eigenvalues), V


def _pencil(L, B, all_pairs: bool, with_vectors: bool):
    """Eigenvalues (and generalised eigenvectors ``V = L⁻ᵀ U``) of ``L⁻¹ B L⁻ᵀ``."""
    if all_pairs:
        L_inv = triangular_inverse(L)
        if not with_vectors and use_host_blas(L_inv, B):  # inference: NumPy's faster GEMMs
            return eigvalsh(whiten_pairs_host(L_inv, B), refine=False), None
        whitened = _whiten(L_inv, B)
    else:
        whitened = inverse_congruence(L, B)
    if not with_vectors:
        return eigvalsh(whitened, refine=False), None
    eigenvalues, U = eigh(whitened, refine=False)
    if all_pairs:
        return eigenvalues, L_inv.mT.unsqueeze(1) @ U
    return eigenvalues, torch.linalg.solve_triangular(L.mT, U, upper=True)


def _airm_float32(A, B, all_pairs: bool, with_vectors: bool):
    """:func:`_airm_core` in float32, with only the pairs float32 cannot resolve recomputed in
    float64: a failed float32 Cholesky of ``A``, a condition number of ``A`` (lower bound from
    its Cholesky factor) or of the whitened matrix beyond ``FLOAT32_MAX_CONDITION``, or a
    non-positive whitened eigenvalue. Eigenvalues and vectors come back in float64 when any
    pair was recomputed (the distance is cast to float32 by the caller)."""
    L, info = torch.linalg.cholesky_ex(A)
    bad_a = (info != 0) | ~(condition_proxy(L) <= FLOAT32_MAX_CONDITION)
    if bool(bad_a.any()):  # a placeholder factor; those pairs are recomputed below
        eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        L = torch.where(bad_a[..., None, None], eye, L)
    eigenvalues, V = _pencil(L, B, all_pairs, with_vectors)
    smallest, largest = eigenvalues[..., 0], eigenvalues[..., -1]
    bad = ~(smallest > 0) | ~(largest <= FLOAT32_MAX_CONDITION * smallest)
    bad = bad | (bad_a[:, None] if all_pairs else bad_a)
    if not bool(bad.any()):
        return eigenvalues, V
    if all_pairs:  # position in the flattened (a · m) batch of pairs
        rows, cols = bad.nonzero(as_tuple=True)
        flat = rows * bad.shape[1] + cols
    else:  # paired: the same batch position in A and B (a batch shape may be ())
        rows = cols = flat = torch.nonzero(bad.reshape(-1))[:, 0]
    c = A.shape[-1]
    A_rows, B_cols = A.reshape(-1, c, c)[rows].double(), B.reshape(-1, c, c)[cols].double()
    L64, info = torch.linalg.cholesky_ex(A_rows)
    _raise_at(info != 0, rows, "A", "Cholesky factorisation failed")
    limit = singular_limit(c, torch.float64)
    singular = "singular to working precision: regularise it, e.g. with shrinkage"
    _raise_at(~(condition_proxy(L64) <= limit), rows, "A", singular)
    refined, V64 = _pencil(L64, B_cols, False, with_vectors)
    _raise_at(~(refined[:, 0] > 0), cols, "B", "smallest generalised eigenvalue <= 0")
    _raise_at(~(refined[:, -1] <= limit * refined[:, 0]), cols, "B", singular)
    values = eigenvalues.double().reshape(-1, c)  # a new tensor: the reshapes are views
    values[flat] = refined
    eigenvalues = values.reshape(eigenvalues.shape)
    if V is not None:
        vectors = V.double().reshape(-1, c, c)
        vectors[flat] = V64
        V = vectors.reshape(V.shape)
    return eigenvalues, V


def _raise_at(failed: torch.Tensor, index: torch.Tensor, name: str, why: str) -> None:
    """``ValueError`` naming the original index of the first failed matrix of a subset."""
    if bool(failed.any()):
        bad = int(index[torch.nonzero(failed)[0, 0]])
        raise ValueError(f"{name}[{bad}] is not positive definite ({why}).")


@fill_doc
def airm_distance(A, B) -> torch.Tensor:
    r"""Affine-invariant Riemannian distance between paired SPD matrices.

    .. math::
        \delta_R(A, B) = \Vert \log(A^{-1/2} B A^{-1/2}) \Vert_F
        = \Big(\sum_k \log^2 \lambda_k(A, B)\Big)^{1/2}

    with :math:`\lambda_k(A, B)` the generalised eigenvalues (:math:`B v = \lambda A v`), computed
    as the eigenvalues of :math:`L^{-1} B L^{-\top}`, :math:`A = L L^\top`.

    Parameters
    ----------
    A, B : Tensor or ndarray of shape (..., c, c)
        SPD matrices; leading dimensions broadcast against each other.

    Returns
    -------
    Tensor of shape (...,)
        Distances, differentiable in ``A`` and ``B`` (zero gradient where the distance is 0).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not a stack of SPD matrices, their sizes differ or their batch
        shapes do not broadcast.

    See Also
    --------
    rankmetric.geometry.pairwise_airm : All the distances between two sets.
    rankmetric.geometry.distance : Any named metric (pyRiemann's names accepted).
    rankmetric.geometry.log_euclidean_distance : The log-Euclidean distance, cheaper to compute.

    Notes
    -----
    In float32, the pairs where ``A`` or the whitened :math:`A^{-1/2} B A^{-1/2}` has a condition
    number beyond ``FLOAT32_MAX_CONDITION`` (1e3) are recomputed in float64 (the result is
    float32); the other pairs stay in float32.

    References
    ----------
    .. [1] W. Förstner, B. Moonen, "A metric for covariance matrices", 1999.
    .. [2] X. Pennec, P. Fillard, N. Ayache, "A Riemannian framework for tensor computing",
       IJCV 66(1), 2006.

    %(example_pair)s
    >>> round(geometry.airm_distance(A, B).item(), 4)  # √(1² + 2²)
    2.2361
    """
    A, B = common_dtype(as_symmetric_tensor(A, "A"), as_symmetric_tensor(B, "B"))
    A, B = broadcast_pair(A, B)
    return safe_sqrt(_AirmSquared.apply(A, B, False))


@fill_doc
def pairwise_airm(A, B=None, chunk_size: int | None = None) -> torch.Tensor:
    r"""Matrix of affine-invariant Riemannian distances between two sets of SPD matrices.

    Each :math:`A_i = L_i L_i^\top` is factored once; for a chunk of rows, all whitened matrices
    :math:`L_i^{-1} B_j L_i^{-\top}` are built with two matrix products (no Python loop over rows or
    pairs) and their eigenvalues computed in one batched call. With ``B=None`` only the pairs
    ``j > i`` are computed (as one batch of pairs when they fit in one chunk, e.g. a training
    batch) and the matrix is mirrored; its diagonal is exactly 0.

    .. math:: D_{ij} = \Big(\sum_k \log^2 \lambda_k(A_i, B_j)\Big)^{1/2}

    Parameters
    ----------
    A : Tensor or ndarray of shape (n_a, c, c)
        SPD matrices.
    B : Tensor or ndarray of shape (n_b, c, c), optional
        SPD matrices; ``A`` when omitted.
    chunk_size : int, optional
        Rows of ``A`` handled at once; by default as many as keep the block of whitened matrices
        under ``CHUNK_ELEMENTS`` numbers (2**21 on the CPU, 2**26 on CUDA). Memory is
        O(chunk_size · n_b · c²), times 2 with gradients (the eigenvectors are kept).

    Returns
    -------
    Tensor of shape (n_a, n_b)
        Distances, differentiable in ``A`` and ``B``.

    Raises
    ------
    ValueError
        If an input is not a stack of SPD matrices of shape (n, c, c), or ``chunk_size < 1``.

    %(see_also_pairwise_airm)s

    References
    ----------
    .. [1] X. Pennec, P. Fillard, N. Ayache, IJCV 66(1), 2006 (see :func:`airm_distance`).

    %(example_pair)s
    >>> geometry.pairwise_airm(torch.stack([A, B])).round(decimals=4)
    tensor([[0.0000, 2.2361],
            [2.2361, 0.0000]], dtype=torch.float64)
    """
    A = as_matrix_stack(A, "A")
    same = B is None
    B = A if same else as_matrix_stack(B, "B")
    A, B = common_dtype(A, B)
    n_a, n_b, c = A.shape[0], B.shape[0], A.shape[-1]
    rows = _rows_per_chunk(chunk_size, n_b, c, A.device)
    if same and chunk_size is None and _pairs_fit(n_a, c, A.device):
        return safe_sqrt(_upper_pairs_squared(A))  # one batch of the n(n−1)/2 pairs i < j
    if same and chunk_size is None:  # thin chunks: a chunk's block wastes its rows²/2 pairs j <= i
        rows = min(rows, max(-(-n_a // SAME_SET_CHUNKS), _rows_for_threads(n_a, c, A.device)))
    if torch.is_grad_enabled() and (A.requires_grad or B.requires_grad):
        squared = _pairwise_squared_autograd(A, B, same, rows)
    else:
        squared = _pairwise_squared_inference(A, B, same, rows)
    if same:
        squared = torch.triu(squared, diagonal=1)
        squared = squared + squared.mT
    return safe_sqrt(squared)


def _pairwise_squared_autograd(A, B, same: bool, rows: int) -> torch.Tensor:
    """The (n_a, n_b) squared distances, row chunk by row chunk, through :class:`_AirmSquared`
    (``same``: the columns left of a chunk's first row are zeros)."""
    blocks = []
    for start in range(0, A.shape[0], rows):
        first_col = start if same else 0
        block = _AirmSquared.apply(A[start : start + rows], B[first_col:], True)
        blocks.append(torch.nn.functional.pad(block, (first_col, 0)))
    return torch.cat(blocks)


def _pairwise_squared_inference(A, B, same: bool, rows: int) -> torch.Tensor:
    """:func:`_pairwise_squared_autograd` without autograd: the inputs are symmetrised once,
    each chunk is written in place, and CPU products go to NumPy's BLAS (``_host_blas``)."""
    A = symmetrize(A)
    B = A if same else symmetrize(B)
    n_a, n_b, c = A.shape[0], B.shape[0], A.shape[-1]
    squared = A.new_zeros(n_a, n_b)
    host = use_host_blas(A, B)
    # float64 on the CPU: every A_i factored and checked once; float32 refines pair by pair
    W = triangular_inverse(_checked_factor(A)) if host and A.dtype == torch.float64 else None
    B_side = side_by_side(B) if W is not None else None
    with blas_threads() if host else nullcontext():
        for start in range(0, n_a, rows):
            stop = min(start + rows, n_a)
            first_col = start if same else 0
            # on the CPU, blocks that stay in cache: columns cut to CACHE_BLOCK_ELEMENTS numbers
            cols = max(1, CACHE_BLOCK_ELEMENTS // ((stop - start) * c * c)) if host else n_b
            for col in range(first_col, n_b, cols):
                block = slice(col, col + cols)
                if W is None:
                    eigenvalues, _ = _pencil_checked(A[start:stop], B[block], True, False)
                else:
                    whitened = whiten_pairs_host(W[start:stop], B_side[:, col * c : block.stop * c])
                    eigenvalues = _checked_pencil_values(eigvalsh(whitened, refine=False))
                squared[start:stop, block] = _sum_log_squared(eigenvalues, A.dtype)
    return squared


def _checked_factor(A: torch.Tensor) -> torch.Tensor:
    """The Cholesky factors ``L`` of ``A = L Lᵀ``; ``ValueError`` naming ``A`` if one is not
    positive definite or is singular to working precision."""
    L = cholesky(A, "A")
    raise_if_singular(condition_proxy(L), L.shape[-1], "A")
    return L


def _checked_pencil_values(eigenvalues: torch.Tensor) -> torch.Tensor:
    """``eigenvalues`` of whitened ``B`` (ascending), or a ``ValueError`` naming ``B`` if one
    is not positive or the pencil is singular to working precision (one test when all pass)."""
    smallest, largest = eigenvalues[..., 0], eigenvalues[..., -1]
    limit = singular_limit(eigenvalues.shape[-1], eigenvalues.dtype)
    # largest <= limit · smallest fails for smallest <= 0 too (and for NaN): ascending order
    # gives |largest| <= |smallest| when both are negative, and limit > 1
    if bool((largest <= limit * smallest).all()):
        return eigenvalues
    raise_if_not_positive(smallest, "B")
    raise_if_singular(largest / smallest, eigenvalues.shape[-1], "B")
    return eigenvalues


def _rows_for_threads(n: int, c: int, device: torch.device) -> int:
    """Rows of a one-set chunk whose eigenproblems fill every CPU thread (``eigh``'s split)."""
    threads = torch.get_num_threads() if device.type == "cpu" else 1
    if threads < 2:
        return 1
    return -(-threads * MIN_WORK_PER_THREAD // (max(n // 2, 1) * c**3))


def _pairs_fit(n: int, c: int, device: torch.device) -> bool:
    """Whether the n(n−1)/2 whitened matrices of one set fit in one chunk's budget."""
    return n * (n - 1) // 2 * c * c <= CHUNK_ELEMENTS["cuda" if device.type == "cuda" else "cpu"]


def _upper_pairs_squared(A: torch.Tensor) -> torch.Tensor:
    """Symmetric (n, n) matrix of squared AIRM distances from the pairs ``i < j`` alone.

    Half the eigenproblems of the (n, n) block (a loss over a batch of B embeddings needs
    B(B−1)/2 of them); each pair factors its own ``A_i`` (a Cholesky costs a fraction of an
    eigen-decomposition).
    """
    n = A.shape[0]
    cholesky(A.double(), "A")  # an error names the matrix of A, not of the list of pairs
    i, j = torch.triu_indices(n, n, offset=1, device=A.device)
    squared = _AirmSquared.apply(A[i], A[j], False)
    full = torch.zeros(n, n, dtype=squared.dtype, device=A.device)
    return full.index_put((i, j), squared).index_put((j, i), squared)


def _whiten(W: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """All congruences ``W_i B_j W_iᵀ`` with two GEMMs: (a, c, c), (m, c, c) → (a, m, c, c)."""
    a, m, c = W.shape[0], B.shape[0], W.shape[-1]
    W_t_side_by_side = W.permute(2, 0, 1).reshape(c, a * c)  # [k, (i, l)] = W_i[l, k]
    right = B.reshape(m * c, c) @ W_t_side_by_side  # [(j, r), (i, l)] = (B_j W_iᵀ)[r, l]
    right = right.view(m, c, a, c).permute(2, 1, 0, 3).reshape(a, c, m * c)
    full = W @ right  # [i, q, (j, l)] = (W_i B_j W_iᵀ)[q, l]
    return full.view(a, c, m, c).transpose(1, 2)


def _rows_per_chunk(chunk_size: int | None, n_cols: int, c: int, device: torch.device) -> int:
    if chunk_size is None:
        budget = CHUNK_ELEMENTS["cuda" if device.type == "cuda" else "cpu"]
        return max(1, budget // (n_cols * c * c))
    check_param("chunk_size", chunk_size, [POSITIVE_INT])
    return int(chunk_size)
