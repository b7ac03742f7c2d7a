"""Batched eigen-decompositions of symmetric matrices, as the geometry computes them.

:func:`eigh` and :func:`eigvalsh` split large CPU batches over torch's threads (a batched CPU
decomposition runs on one thread) and redo in float64 the float32 matrices whose spectrum
float32 cannot resolve; :func:`orient_columns` fixes the signs of eigenvectors, so that a model
started from them is the same on every CPU. The matrix functions of
:mod:`rankmetric.geometry.matrix_functions` and the distances decompose through them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

__all__ = ["eigh", "eigvalsh", "orient_columns"]

#: float32 matrices with ``min |λ| <= FLOAT32_REFINE_RATIO * max |λ|`` are decomposed in float64.
FLOAT32_REFINE_RATIO = 100 * torch.finfo(torch.float32).eps

#: Least work (matrices × c³) given to a thread when a CPU batch of decompositions is split.
MIN_WORK_PER_THREAD = 2**18


@torch.no_grad()
def eigh(S: torch.Tensor, refine: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigen-decomposition of symmetric matrices, refined in float64 where float32 falls short.

    Large CPU batches are split over ``torch.get_num_threads()`` threads (torch runs a batched
    CPU eigen-decomposition on one thread). Not differentiable: used inside this package's custom
    autograd functions.

    Parameters
    ----------
    S : Tensor of shape (..., c, c)
        Symmetric matrices (only the lower triangle is read).
    refine : bool, default=True
        Whether to redo in float64 the float32 matrices whose spectrum float32 cannot resolve
        (``False`` for a caller that checks and recomputes them itself).

    Returns
    -------
    eigenvalues : Tensor of shape (..., c)
        In ascending order, dtype of ``S``.
    eigenvectors : Tensor of shape (..., c, c)
        Orthonormal columns, dtype of ``S``.
    """
    eigenvalues, eigenvectors = _threaded(torch.linalg.eigh, S)
    unresolved = _float32_unresolved(eigenvalues) if refine else None
    if unresolved is not None:
        refined_values, refined_vectors = torch.linalg.eigh(S[unresolved].double())
        eigenvalues[unresolved] = refined_values.to(S.dtype)
        eigenvectors[unresolved] = refined_vectors.to(S.dtype)
    return eigenvalues, eigenvectors


@torch.no_grad()
def eigvalsh(S: torch.Tensor, refine: bool = True) -> torch.Tensor:
    """Eigenvalues of symmetric matrices, with the same refinement and threads as :func:`eigh`.

    Parameters
    ----------
    S : Tensor of shape (..., c, c)
    refine : bool, default=True
        As in :func:`eigh`.

    Returns
    -------
    eigenvalues : Tensor of shape (..., c)
        In ascending order.
    """
    eigenvalues = _threaded(torch.linalg.eigvalsh, S)
    unresolved = _float32_unresolved(eigenvalues) if refine else None
    if unresolved is not None:
        eigenvalues[unresolved] = torch.linalg.eigvalsh(S[unresolved].double()).to(S.dtype)
    return eigenvalues


def _threaded(decomposition: Callable, S: torch.Tensor):
    """Run a batched CPU decomposition over slices of the batch, one per torch thread."""
    c = S.shape[-1]
    parts = min(torch.get_num_threads(), S.shape[:-2].numel() * c**3 // MIN_WORK_PER_THREAD)
    if S.device.type != "cpu" or parts < 2:
        return decomposition(S)  # (a strided S is copied once, by the decomposition itself)
    flat = S.reshape(-1, c, c)
    no_grad = torch.no_grad()(decomposition)  # grad mode is per thread
    results = list(_thread_pool(parts).map(no_grad, flat.tensor_split(parts)))
    batch = S.shape[:-2]
    if isinstance(results[0], torch.Tensor):
        return torch.cat(results).reshape(*batch, c)
    values, vectors = zip(*results, strict=True)
    return torch.cat(values).reshape(*batch, c), torch.cat(vectors).reshape(*batch, c, c)


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads for this process (a forked child gets a fresh one)."""
    key = (os.getpid(), workers)
    if key not in _POOLS:
        _POOLS[key] = ThreadPoolExecutor(workers, thread_name_prefix="rankmetric-eigh")
    return _POOLS[key]


def _float32_unresolved(eigenvalues: torch.Tensor) -> torch.Tensor | None:
    """Boolean mask of float32 matrices whose spectrum is too wide for float32, or None."""
    if eigenvalues.dtype != torch.float32:
        return None
    magnitude = eigenvalues.abs()
    unresolved = magnitude.amin(-1) <= FLOAT32_REFINE_RATIO * magnitude.amax(-1)
    return unresolved if bool(unresolved.any()) else None


def orient_columns(vectors: torch.Tensor) -> torch.Tensor:
    """Eigen- or singular vectors (columns) with a sign that does not depend on the LAPACK.

    An eigenvector is defined up to its sign, and which sign ``eigh`` returns depends on the
    library and its kernels (another CPU may flip a column). Each column is flipped so that its
    entry of largest magnitude is positive (scikit-learn's ``svd_flip`` convention); entries
    within ``sqrt(eps)`` (relative) of the largest count as tied, and the first of them decides,
    so that a column such as ``(1, −1) / √2`` is oriented alike whichever entry rounding made
    larger. A model started from these vectors is then the same on every CPU.

    Parameters
    ----------
    vectors : tensor of shape (..., n, k)
        Eigen- or singular vectors, one per column.

    Returns
    -------
    tensor of shape (..., n, k)
        The same columns, each possibly negated.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry.eigen import orient_columns
    >>> orient_columns(torch.tensor([[0.6, -0.8], [-0.8, -0.6]]))
    tensor([[-0.6000,  0.8000],
            [ 0.8000,  0.6000]])
    """
    magnitude = vectors.abs()
    top = magnitude.amax(dim=-2, keepdim=True)
    tied = magnitude >= top * (1 - torch.finfo(vectors.dtype).eps ** 0.5)
    first = tied.to(torch.int8).argmax(dim=-2, keepdim=True)  # the first of the (near-)largest
    signs = torch.sign(torch.gather(vectors, -2, first))
    return vectors * torch.where(signs == 0, 1.0, signs).to(vectors.dtype)
