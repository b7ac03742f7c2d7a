"""The one validation scorer: leave-one-out retrieval among the validation items, per query.

Validation scores **retrieval among the validation items**: each item queries the other
validation items (``"recall@1"``: whether its nearest one shares its label; ``"map"``: average
precision), so held-out identities can be scored. The places of the relevant items come from
the exact ranking kernel :func:`rankmetric.neighbors.relevant_places` (ties: the lower index;
no full sort of the rows) and average precision from :mod:`rankmetric.evaluate`'s one formula.
Used by early stopping (:func:`retrieval_validator`), the one-standard-error selection of the
SPD networks and the held-out check.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._distances import squared_euclidean
from ..evaluate import average_precision
from ..neighbors import relevant_places

__all__ = [
    "MAX_VALIDATION_ITEMS",
    "RETRIEVAL_METRICS",
    "per_query_retrieval",
    "per_query_scores",
    "retrieval_score",
    "retrieval_validator",
]

#: Leave-one-out retrieval scores among the validation items.
RETRIEVAL_METRICS = ("recall@1", "map")
#: Most validation items a validation ranks (a fixed random subset, whole classes, beyond).
MAX_VALIDATION_ITEMS = 2000
#: Rows of the distance matrix computed at once.
_CHUNK_ROWS = 512


@torch.no_grad()
def per_query_scores(dist: torch.Tensor, relevant: torch.Tensor, metric: str) -> torch.Tensor:
    """Per-query score of a gallery ranked by ``dist``.

    Parameters
    ----------
    dist : tensor of shape (n_queries, n_gallery)
        Lower is nearer; ``+inf`` (or NaN) leaves an entry out of the query's ranking (the query
        itself, same-camera twins).
    relevant : bool tensor of shape (n_queries, n_gallery)
        Which gallery items are the query's matches (those left out of the ranking never count).
    metric : {"recall@1", "map"}
        Whether the nearest gallery item is relevant (ties: the lowest index; one ``argmin``
        a row), or average precision (the places of the relevant items from
        :func:`~rankmetric.neighbors.relevant_places`).

    Returns
    -------
    float64 tensor of shape (n_queries,)
        NaN for queries without any relevant gallery item.

    Examples
    --------
    >>> import torch
    >>> dist = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 0.5]])
    >>> relevant = torch.tensor([[False, False, True], [True, False, False]])
    >>> per_query_scores(dist, relevant, "map").tolist()
    [0.3333333333333333, 0.3333333333333333]
    """
    dist = dist.masked_fill(torch.isnan(dist), torch.inf)
    counted = relevant & torch.isfinite(dist)
    n_rel = counted.sum(dim=1)
    if metric == "recall@1":  # the nearest item (the first of equals): one pass, no sort
        scores = counted.gather(1, dist.argmin(dim=1, keepdim=True))[:, 0].to(torch.float64)
        return torch.where(n_rel > 0, scores, torch.nan)
    row, col = counted.nonzero(as_tuple=True)  # row-major: each row's columns ascending
    starts = torch.cumsum(n_rel, 0) - n_rel
    width = max(int(n_rel.max()) if n_rel.numel() else 0, 1)
    columns = torch.zeros((dist.shape[0], width), dtype=torch.int64, device=dist.device)
    columns[row, torch.arange(row.shape[0], device=dist.device) - starts[row]] = col
    j = torch.arange(width, device=dist.device)
    places, n_rel = relevant_places(dist, columns, j < n_rel[:, None])
    scores = average_precision(j + 1, places, j < n_rel[:, None], n_rel)
    return torch.where(n_rel > 0, scores, torch.nan)


@torch.no_grad()
def per_query_retrieval(
    Z: torch.Tensor, codes: torch.Tensor, metric: str, cameras: torch.Tensor | None = None
) -> torch.Tensor:
    """Leave-one-out retrieval score of every item of ``Z`` among the others.

    Parameters
    ----------
    Z : tensor of shape (n, d)
        Embeddings; compared with the squared Euclidean distance, in their dtype.
    codes : int tensor of shape (n,)
    metric : {"recall@1", "map"}
        As :func:`per_query_scores`.
    cameras : int tensor of shape (n,), optional
        Camera of each item: a query's own identity seen by its own camera is left out of its
        gallery too (the Market-1501 protocol), so only cross-camera matches count.

    Returns
    -------
    float64 tensor of shape (n,)
        NaN for an item without another of its label (seen by another camera).

    Examples
    --------
    >>> import torch
    >>> Z = torch.tensor([[0.0], [0.1], [1.0], [1.2]])
    >>> per_query_retrieval(Z, torch.tensor([0, 0, 1, 0]), "recall@1").tolist()
    [1.0, 1.0, nan, 0.0]
    """
    sq = (Z * Z).sum(dim=1)
    out = torch.empty(Z.shape[0], dtype=torch.float64, device=Z.device)
    for start in range(0, Z.shape[0], _CHUNK_ROWS):
        rows = slice(start, min(start + _CHUNK_ROWS, Z.shape[0]))
        dist = squared_euclidean(Z[rows], Z, X_sq=sq[rows], Y_sq=sq)
        local = torch.arange(dist.shape[0], device=Z.device)
        dist[local, local + start] = torch.inf  # leave the query out
        relevant = codes[rows, None] == codes[None, :]
        if cameras is not None:  # same identity, same camera: not in the gallery
            dist[relevant & (cameras[rows, None] == cameras[None, :])] = torch.inf
        out[rows] = per_query_scores(dist, relevant, metric)
    return out


def retrieval_score(Z: torch.Tensor, codes: torch.Tensor, metric: str) -> float:
    """Mean of :func:`per_query_retrieval` over the items that have a match (0 when none has).

    Examples
    --------
    >>> import torch
    >>> retrieval_score(torch.tensor([[0.0], [0.1], [1.0], [1.2]]), torch.tensor([0, 0, 1, 1]),
    ...                 "recall@1")
    1.0
    """
    scores = per_query_retrieval(Z, codes, metric)
    valid = ~torch.isnan(scores)
    return float(scores[valid].mean()) if bool(valid.any()) else 0.0


def retrieval_validator(
    embed: Callable[[], torch.Tensor], codes: torch.Tensor, metric: str
) -> Callable[[], float]:
    """The ``validate`` closure of :func:`rankmetric.training.train`: the mean leave-one-out
    ``metric`` of ``embed()`` (the validation items' embeddings) among themselves.

    Examples
    --------
    >>> import torch
    >>> validate = retrieval_validator(lambda: torch.eye(2), torch.tensor([0, 1]), "map")
    >>> validate()
    0.0
    """

    def validate() -> float:
        with torch.no_grad():
            return retrieval_score(embed(), codes, metric)

    return validate
