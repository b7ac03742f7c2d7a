"""Matrix products of CPU tensors without autograd through NumPy's BLAS.

On the CPU, torch's matrix products go to the BLAS torch was built with (MKL in the PyPI
wheels), NumPy's to its own (OpenBLAS in the PyPI wheels). For the shapes of the SPD geometry,
tall-and-skinny products with an inner dimension c ≤ 64 and stacks of small c × c products,
NumPy's are the faster ones on the machines we measured (float64 on an AMD EPYC: 39 against
16 GFLOP/s for a 9600 × 32 × 2048 product, 1.5 against 2.2 µs for a 32 × 32 product in a
stack; ``benchmarks/bench_geometry.py``), and the eigen-solvers are MKL's (as fast or faster).
The inference paths of :mod:`rankmetric.geometry` (no tensor needs a gradient) therefore
compute their products here and keep ``torch.linalg`` for the decompositions; with gradients
the products stay in torch, so a training step computes what it computed before.

The tensors are shared with NumPy, not copied (``Tensor.numpy()`` / ``torch.from_numpy``), and
NumPy's BLAS runs on one thread inside :func:`blas_threads` (torch's threads split the
eigen-solver).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from .._threads import single_blas_thread

__all__ = ["blas_threads", "host_matmul", "side_by_side", "use_host_blas", "whiten_pairs_host"]

_FLOATS = (torch.float32, torch.float64)

#: Smallest matrix size whose stacked products go to NumPy: below it both take under 0.1 µs a
#: product and the call overhead decides.
MIN_HOST_SIZE = 8


def use_host_blas(*tensors: torch.Tensor) -> bool:
    """Whether the products of ``tensors`` go to NumPy: real float CPU tensors of matrices of
    at least ``MIN_HOST_SIZE`` rows, none of which autograd tracks."""
    tracked = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    return not tracked and all(
        t.device.type == "cpu" and t.dtype in _FLOATS and t.shape[-1] >= MIN_HOST_SIZE
        for t in tensors
    )


def host_matmul(*factors: torch.Tensor) -> torch.Tensor:
    """The product of (stacks of) matrices, broadcast as ``torch.matmul``, left to right in
    NumPy. Each product of a stack is one small BLAS call per matrix (single-threaded in
    OpenBLAS at these sizes)."""
    out = factors[0].detach().numpy()
    for factor in factors[1:]:
        out = np.matmul(out, factor.detach().numpy())
    return torch.from_numpy(out)


@contextmanager
def blas_threads() -> Iterator[None]:
    """Run NumPy's BLAS on one thread for the block (restored afterwards).

    The products here are a tenth of the work and come in cache-sized blocks; torch's threads
    go to the eigen-solver, which ``eigen.eigh``/``eigvalsh`` split over them. A
    multi-threaded BLAS call on such blocks only wakes threads (on a busy 2-core machine two
    BLAS threads made the 300 × 300 pairwise AIRM of 8 × 8 matrices 5× slower).
    """
    with single_blas_thread():
        yield


def side_by_side(B: torch.Tensor) -> np.ndarray:
    """The matrices ``B_j`` (m, c, c) side by side, ``[k, (j, r)] = B_j[k, r]``: (c, m · c), the
    right factor of :func:`whiten_pairs_host` (columns ``j·c`` to ``(j+1)·c`` are ``B_j``)."""
    m, c = B.shape[0], B.shape[-1]
    return B.detach().numpy().transpose(1, 0, 2).reshape(c, m * c)


def whiten_pairs_host(W: torch.Tensor, B: torch.Tensor | np.ndarray) -> torch.Tensor:
    """All congruences ``W_i B_j W_iᵀ`` of symmetric ``B_j`` with two NumPy GEMMs and no copy
    in between: (a, c, c), (m, c, c) → (a, m, c, c).

    ``B`` may also be given as :func:`side_by_side` of the stack, or a slice of its columns
    (a caller that whitens the same ``B`` against many ``W`` arranges it once). The first
    product gives ``P[i, l, j, r] = (W_i B_j)[l, r]``; for each ``i`` the rows ``(l, j)`` of
    ``P`` times ``W_iᵀ`` give ``(W_i B_j W_iᵀ)[l, q]`` at ``[i, l, j, q]``, which the returned
    view reorders to ``[i, j, l, q]`` (its matrices are strided; the eigen-solver copies its
    input anyway).
    """
    a, c = W.shape[0], W.shape[-1]
    B_side = side_by_side(B) if isinstance(B, torch.Tensor) else B
    m = B_side.shape[1] // c
    W_np = W.detach().numpy()
    P = W_np.reshape(a * c, c) @ B_side  # [(i, l), (j, r)] = (W_i B_j)[l, r]
    full = np.matmul(P.reshape(a, c * m, c), W_np.transpose(0, 2, 1))  # [i, (l, j), q]
    return torch.from_numpy(full).view(a, c, m, c).transpose(1, 2)
