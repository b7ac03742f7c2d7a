r"""One entry point for the SPD distances, by metric name or callable (pyRiemann's dispatcher).

:func:`distance` (paired) and :func:`pairwise_distance` (every pair of two sets) look the metric
up in :data:`distance_functions` / :data:`pairwise_distance_functions` after resolving its name
through :func:`~rankmetric.geometry.canonical_metric` (pyRiemann's ``"riemann"``,
``"logeuclid"``, ``"euclid"`` and our ``"airm"``, ``"log_euclidean"``, ``"euclidean"``). They
call the functions of :mod:`rankmetric.geometry.distances`; nothing is computed here.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from . import distances
from .aliases import canonical_metric

__all__ = ["distance", "pairwise_distance", "distance_functions", "pairwise_distance_functions"]

#: Canonical metric name -> paired distance ``f(A, B)`` over (..., c, c) stacks.
distance_functions: dict[str, Callable] = {
    "airm": distances.airm_distance,
    "log_euclidean": distances.log_euclidean_distance,
    "euclidean": distances.euclidean_distance,
}

#: Canonical metric name -> matrix of distances ``f(X, Y=None)`` of shape (n_x, n_y).
pairwise_distance_functions: dict[str, Callable] = {
    "airm": distances.pairwise_airm,
    "log_euclidean": distances.pairwise_log_euclidean,
    "euclidean": distances.pairwise_euclidean,
}


def distance(A, B, metric: str | Callable = "airm") -> torch.Tensor:
    r"""Distance between paired SPD matrices, for a metric given by name or as a callable.

    Parameters
    ----------
    A, B : Tensor or ndarray of shape (..., c, c)
        SPD matrices; leading dimensions broadcast against each other.
    metric : str or callable, default="airm"
        ``"airm"`` / ``"riemann"`` (:func:`~rankmetric.geometry.airm_distance`),
        ``"log_euclidean"`` / ``"logeuclid"``
        (:func:`~rankmetric.geometry.log_euclidean_distance`) or ``"euclidean"`` / ``"euclid"``
        (:func:`~rankmetric.geometry.euclidean_distance`); any alias of
        :data:`~rankmetric.geometry.METRIC_ALIASES`, case ignored. A callable is called as
        ``metric(A, B)`` and its result returned.

    Returns
    -------
    Tensor of shape (...,)
        Distances, differentiable in ``A`` and ``B``.

    Raises
    ------
    ValueError
        If ``metric`` is an unknown name (the message lists the known ones), or the inputs are
        not SPD matrices of matching sizes.

    See Also
    --------
    pairwise_distance : The distances between every pair of two sets.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import distance
    >>> A = torch.eye(2, dtype=torch.float64)
    >>> B = torch.diag(torch.tensor([1.0, 4.0], dtype=torch.float64))
    >>> distance(A, B, metric="riemann")  # |log 4|
    tensor(1.3863, dtype=torch.float64)
    >>> distance(A, B, metric="euclid")
    tensor(3., dtype=torch.float64)
    >>> distance(A, B, metric=lambda a, b: (a - b).abs().sum((-2, -1)))
    tensor(3., dtype=torch.float64)
    """
    metric = canonical_metric(metric)
    if callable(metric):
        return metric(A, B)
    return distance_functions[metric](A, B)


# alike: numpydoc Returns / Raises skeleton of a pairwise distance, alike in pairwise_airm
# (distances.py)
def pairwise_distance(X, Y=None, metric: str | Callable = "airm") -> torch.Tensor:
    r"""Matrix of distances between every matrix of ``X`` and every matrix of ``Y``.

    Parameters
    ----------
    X : Tensor or ndarray of shape (n_x, c, c)
        SPD matrices.
    Y : Tensor or ndarray of shape (n_y, c, c), optional
        SPD matrices; ``X`` when omitted (the diagonal is then exactly 0 for a named metric).
    metric : str or callable, default="airm"
        A name or alias as in :func:`distance` (:func:`~rankmetric.geometry.pairwise_airm`,
        :func:`~rankmetric.geometry.pairwise_log_euclidean` or
        :func:`~rankmetric.geometry.pairwise_euclidean`). A callable ``metric(A, B)`` must
        broadcast over leading dimensions, as the paired distances do: it is called once, as
        ``metric(X[:, None], Y[None, :])``, and must return shape (n_x, n_y).

    Returns
    -------
    Tensor of shape (n_x, n_y)
        Distances, differentiable in ``X`` and ``Y``.

    Raises
    ------
    ValueError
        If ``metric`` is an unknown name, the inputs are not stacks of SPD matrices of shape
        (n, c, c), or a callable returns another shape.

    See Also
    --------
    distance : The distance between paired matrices.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import pairwise_distance
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()
    >>> pairwise_distance(X, metric="logeuclid").round(decimals=4)
    tensor([[0.0000, 1.9605],
            [1.9605, 0.0000]], dtype=torch.float64)
    """
    metric = canonical_metric(metric)
    if not callable(metric):
        return pairwise_distance_functions[metric](X, Y)
    X = torch.as_tensor(X)
    Y = X if Y is None else torch.as_tensor(Y)
    if X.ndim != 3 or Y.ndim != 3:
        shapes = f"{tuple(X.shape)} and {tuple(Y.shape)}"
        raise ValueError(f"X and Y must have shape (n, c, c), got {shapes}.")
    out = metric(X[:, None], Y[None, :])
    expected = (X.shape[0], Y.shape[0])
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"the metric callable must return shape {expected}, got {got}.")
    return out
