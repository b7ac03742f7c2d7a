"""Distances of the flat SPD metrics: log-Euclidean (``‖log A − log B‖_F``) and Euclidean.

Both are Frobenius distances between a map of each matrix, so one Gram-matrix computation
serves both pairwise versions (:func:`_pairwise_frobenius`). The affine-invariant distance is in
:mod:`rankmetric.geometry.distances`, which re-exports these functions.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._distances import centered_squared_euclidean
from ._common import as_matrix_stack, broadcast_pair, common_dtype, safe_sqrt
from ._docstrings import fill_doc
from .checks import as_symmetric_tensor
from .matrix_functions import log_unchecked, sym_to_vec, symmetrize

__all__ = [
    "log_euclidean_distance",
    "pairwise_log_euclidean",
    "euclidean_distance",
    "pairwise_euclidean",
]


@fill_doc
def log_euclidean_distance(A, B) -> torch.Tensor:
    r"""Log-Euclidean distance between paired SPD matrices.

    .. math:: \delta_{LE}(A, B) = \Vert \log A - \log B \Vert_F

    %(paired_spd)s

    References
    ----------
    .. [1] V. Arsigny, P. Fillard, X. Pennec, N. Ayache, "Geometric means in a novel vector space
       structure on symmetric positive-definite matrices", SIAM J. Matrix Anal. Appl. 29(1), 2007.

    %(example_pair)s
    >>> round(geometry.log_euclidean_distance(A, B).item(), 4)  # ‖log A − log B‖_F
    2.2361
    """
    A, B = common_dtype(as_symmetric_tensor(A, "A"), as_symmetric_tensor(B, "B"))
    broadcast_pair(A[..., :1, :1], B[..., :1, :1])  # a ValueError before any work
    difference = log_unchecked(A, "A") - log_unchecked(B, "B")
    return safe_sqrt((difference**2).sum(dim=(-2, -1)))


@fill_doc
def pairwise_log_euclidean(A, B=None) -> torch.Tensor:
    r"""Matrix of log-Euclidean distances: one matrix logarithm per input, then Euclidean distances.

    .. math:: D_{ij} = \Vert \log A_i - \log B_j \Vert_F

    The squared distances come from the Gram matrix of the flattened logarithms
    (:math:`\Vert a\Vert^2 + \Vert b\Vert^2 - 2 a^\top b`, as pyRiemann and scikit-learn do): one
    matrix product, with an absolute error of about
    :math:`\epsilon \lVert \log A_i \rVert_F^2` on :math:`D_{ij}^2` (:math:`\epsilon` the machine
    epsilon of the dtype).

    %(pairwise_spd)s

    References
    ----------
    .. [1] V. Arsigny, P. Fillard, X. Pennec, N. Ayache, SIAM J. Matrix Anal. Appl. 29(1), 2007
       (see :func:`log_euclidean_distance`).

    %(example_pair)s
    >>> geometry.pairwise_log_euclidean(torch.stack([A, B]), A[None]).round(decimals=4)
    tensor([[0.0000],
            [2.2361]], dtype=torch.float64)
    """
    return _pairwise_frobenius(A, B, log_unchecked)


@fill_doc
def euclidean_distance(A, B) -> torch.Tensor:
    r"""Euclidean (Frobenius) distance between paired symmetric matrices.

    .. math:: \delta_E(A, B) = \Vert A - B \Vert_F

    %(paired_symmetric)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import euclidean_distance
    >>> euclidean_distance(torch.eye(2), 3 * torch.eye(2))  # ‖2 I‖_F
    tensor(2.8284)
    """
    A, B = common_dtype(as_symmetric_tensor(A, "A"), as_symmetric_tensor(B, "B"))
    A, B = broadcast_pair(A, B)
    return safe_sqrt(((A - B) ** 2).sum(dim=(-2, -1)))


@fill_doc
def pairwise_euclidean(A, B=None) -> torch.Tensor:
    r"""Matrix of Euclidean (Frobenius) distances between two sets of symmetric matrices.

    .. math:: D_{ij} = \Vert A_i - B_j \Vert_F

    Computed as :func:`pairwise_log_euclidean` is, from the Gram matrix of the half-vectorised
    matrices (:func:`~rankmetric.geometry.sym_to_vec` is an isometry), without the logarithm.

    %(pairwise_symmetric)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import pairwise_euclidean
    >>> pairwise_euclidean(torch.stack([torch.eye(2), 3 * torch.eye(2)])).round(decimals=4)
    tensor([[0.0000, 2.8284],
            [2.8284, 0.0000]])
    """
    return _pairwise_frobenius(A, B, lambda X, name: symmetrize(X))


def _pairwise_frobenius(A, B, f: Callable[[torch.Tensor, str], torch.Tensor]) -> torch.Tensor:
    """``‖f(A_i) − f(B_j)‖_F`` for every pair: ``f`` (a symmetric-matrix map that takes the
    input's name for its errors) once per input, then the Gram matrix of the
    :func:`sym_to_vec` vectors (an isometry onto c(c+1)/2 numbers: half the product of
    flattening). With ``B=None`` the result is exactly symmetric and 0 on the diagonal."""
    A = as_matrix_stack(A, "A")
    if B is not None:
        A, B = common_dtype(A, as_matrix_stack(B, "B"))
    vec_a = sym_to_vec(f(A, "A"))
    vec_b = vec_a if B is None else sym_to_vec(f(B, "B"))
    squared = centered_squared_euclidean(vec_a, vec_b)
    if B is None:
        squared = (squared + squared.T).mul_(0.5).fill_diagonal_(0.0)
    return safe_sqrt(squared)
