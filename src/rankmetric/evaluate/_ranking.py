"""The ranked pass shared by every exact ranking score, and the relevant columns of each query.

Each consumer (``retrieval_scores``, ``retrieval_report``, ``reid_scores``, ``cmc_curve``)
scores a chunk of queries against the whole gallery, writes ``+inf`` over the entries its
protocol removes, and hands the relevant columns of each query to
:func:`~rankmetric.neighbors.relevant_places`, which returns the place of every relevant item
without sorting keys or copying dtypes (:func:`for_each_ranked_chunk`).
"""

from __future__ import annotations

import torch

from ..neighbors import Gallery, for_each_chunk, relevant_places, resolve_chunk_size
from ._precision import average_precision


class ClassColumns:
    """The gallery columns of every class, in column order (a CSR index of the labels).

    Parameters
    ----------
    codes : int64 tensor of shape (n_gallery,)
        Class code of each gallery item.
    n_classes : int
        Number of codes (query codes may exceed the gallery's).
    """

    def __init__(self, codes: torch.Tensor, n_classes: int):
        self.order = torch.argsort(codes, stable=True)
        self.size = torch.bincount(codes, minlength=n_classes)
        self.start = torch.cumsum(self.size, dim=0) - self.size

    def of(self, query_codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``columns`` (n, w) of each query's class and ``inside`` (n, w): the real entries."""
        size = self.size[query_codes]
        width = max(int(size.max()) if size.numel() else 0, 1)
        j = torch.arange(width, device=query_codes.device)
        inside = j < size.unsqueeze(1)
        at = (self.start[query_codes].unsqueeze(1) + j).clamp_(max=max(self.order.shape[0] - 1, 0))
        return self.order[at], inside


def for_each_ranked_chunk(
    Q, G, metric, q_codes, g_codes, visit, *, chunk_size=None, exclude_self=False, depth=None,
    remove=None,
) -> None:  # fmt: skip
    """Rank the gallery for each chunk of queries and hand the places of their relevant items
    (the gallery items of their own code) to ``visit(rows, scores, columns, counted, places, R)``.

    ``G`` None: ``Q`` holds precomputed distances (rows are copied, ``metric`` is ignored).
    ``exclude_self``: query ``i`` is gallery item ``i`` and leaves its ranking. ``depth``: an
    int, or the deepest place each query needs (n_queries,): then queries are visited in its
    order, so that a chunk ranks only as deep as its own deepest query; None: every place.
    ``remove(rows, scores, columns, counted)``, when given, writes ``+inf`` over the entries a
    protocol removes and returns the relevant items that count.
    """
    dev, n_q = Q.device, Q.shape[0]
    n_g = Q.shape[1] if G is None else G.shape[0]
    n_codes = int(max(q_codes.max(), g_codes.max())) + 1
    classes = ClassColumns(torch.as_tensor(g_codes, device=dev), n_codes)
    q_codes = torch.as_tensor(q_codes, device=dev)
    chunk = resolve_chunk_size(chunk_size, n_q, n_gallery=n_g, itemsize=Q.element_size())
    order = None
    if depth is not None and not isinstance(depth, int):
        depth = torch.as_tensor(depth, device=dev)
        order = torch.argsort(depth, stable=True)

    def rank(rows, scores, _=None):
        columns, counted = classes.of(q_codes[rows])
        if exclude_self:  # the query's own score is +inf already
            counted &= columns != rows.unsqueeze(1)
        if remove is not None:
            counted = remove(rows, scores, columns, counted)
        deepest = int(depth[rows].max()) if order is not None else depth
        places, R = relevant_places(scores, columns, counted, depth=deepest)
        visit(rows, scores, columns, counted, places, R)

    if G is None:
        for rows in torch.arange(n_q, device=dev).split(chunk):  # loop over query chunks
            rank(rows, Q[rows].clone())
    else:
        gallery = Gallery.build(G, metric)
        for_each_chunk(Q, gallery, chunk, rank, exclude_self=exclude_self, order=order)


def first_places_and_ap(places: torch.Tensor, R: torch.Tensor):
    """Each query's first relevant place (0: none) and its average precision over every
    relevant item; also ``j`` (the relevant items' indices) and ``counted`` (``j < R``)."""
    j = torch.arange(places.shape[1], device=places.device)
    counted = j < R.unsqueeze(1)
    first = torch.where(R > 0, places[:, 0], 0)
    return first, average_precision(j + 1, places, counted, R), j, counted
