"""Exact search of an index's rows through the project's kernel, with the norms kept prepared.

The rows' squared norms (the Gram form's per-item offset, :class:`rankmetric.neighbors.Gallery`)
are computed once when items are added, so a query costs one matrix product over the catalogue
and a selection: up to ``FEW_QUERIES`` queries are scored one matrix-vector product each; more,
up to ``FULL_WIDTH_ELEMENTS`` scores, in one block
(:func:`~rankmetric.neighbors.smallest_k`); larger batches take the tiled running top-k of
:func:`~rankmetric.neighbors.nearest_chunks`. Ties are ordered by the lower row, i.e. the
earlier-added item.
"""

from __future__ import annotations

import numpy as np
import torch

from .._distances import partial_squared_euclidean
from ..neighbors import Gallery, nearest_chunks, smallest_k, to_distance
from ._rows import Rows

__all__ = ["exact_search", "FULL_WIDTH_ELEMENTS", "SUBSET_FRACTION"]

#: Queries × items scored in one full-width block (64 MiB of float32 scores); beyond, tiles.
FULL_WIDTH_ELEMENTS = 1 << 24
#: Up to this many queries, each is scored by one matrix-vector product (NumPy's BLAS).
FEW_QUERIES = 8
#: Items scored per block on that path: 64k float32 scores (256 KiB) stay in the cache.
FEW_QUERIES_BLOCK = 1 << 16
#: A filter that keeps less than this fraction of the items searches a gathered copy of them.
SUBSET_FRACTION = 0.25


def _gallery(rows: Rows, allowed: np.ndarray | None) -> tuple[Gallery, np.ndarray | None]:
    """The gallery to search and, for a gathered subset, the map from its rows to stored rows."""
    vectors = rows.tensor()
    offset = rows.offset[: rows.n]
    if allowed is None:
        return Gallery(vectors, offset, rows.metric), None
    if allowed.sum() < SUBSET_FRACTION * rows.n:
        keep = np.flatnonzero(allowed)
        sel = torch.from_numpy(keep)
        return Gallery(vectors[sel], offset[sel], rows.metric), keep
    offset = offset.masked_fill(~torch.from_numpy(np.ascontiguousarray(allowed)), torch.inf)
    return Gallery(vectors, offset, rows.metric), None


def exact_search(
    rows: Rows, Q: np.ndarray, k: int, allowed: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Distances (n_q, k) and stored rows (int64; -1 past the admissible items) of ``Q``."""
    n_allowed = rows.n - rows.n_dead if allowed is None else int(allowed.sum())
    n_q = Q.shape[0]
    distances = np.full((n_q, k), np.inf, dtype=np.float32)
    found = np.full((n_q, k), -1, dtype=np.int64)
    k_eff = min(k, n_allowed)
    if k_eff == 0 or n_q == 0:
        return distances, found
    if allowed is None and rows.n_dead:
        allowed = rows.alive[: rows.n]
    gallery, subset = _gallery(rows, allowed)
    Qt = torch.from_numpy(Q)
    _search_into(Qt, gallery, k_eff, distances, found)
    if subset is not None:
        valid = found[:, :k_eff]
        found[:, :k_eff] = subset[valid]
    return distances, found


def _few_queries(Q: np.ndarray, gallery: Gallery, k: int, distances, found) -> None:
    """A few queries: matrix-vector products through NumPy's BLAS, block by block, then select.

    The scores are :meth:`Gallery.scores`' ranking scores (:func:`_block_scores`), computed
    with NumPy's BLAS, whose matrix-vector product streams a large catalogue about 1.5× faster
    than torch's on one thread (``benchmarks/bench_index.py``): a single query against a
    catalogue in memory is bound by reading it once. Each block of ``FEW_QUERIES_BLOCK`` items
    is scored into one cache-sized buffer; its items that beat the running k-th score (all up
    to its own k-th while fewer than ``k`` are kept) are merged into the running list, ordered
    by (score, row): exact, ties to the lower row, as the tiled search.
    """
    V = gallery.vectors.numpy()
    offset = gallery.offset.numpy()
    Qp, const = gallery.prepare_queries(torch.from_numpy(Q))
    n = V.shape[0]
    buffer = np.empty(min(n, FEW_QUERIES_BLOCK), dtype=np.float32)
    for i, q in enumerate(Qp.numpy()):  # a few queries (at most FEW_QUERIES), not samples
        rows, values = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        for start in range(0, n, FEW_QUERIES_BLOCK):  # blocks of items
            items = slice(start, min(start + FEW_QUERIES_BLOCK, n))
            block = _block_scores(q, V[items], offset[items], gallery.metric, buffer)
            if rows.shape[0] == k:  # beat the running k-th (a tie loses: its row is higher)
                keep = np.flatnonzero(block < values[-1])
            elif block.shape[0] > k:  # the block's own k smallest, ties at its k-th included
                keep = np.flatnonzero(block <= np.partition(block, k - 1)[k - 1])
            else:
                keep = np.arange(block.shape[0])
            if keep.shape[0]:
                rows = np.concatenate([rows, keep + start])
                values = np.concatenate([values, block[keep]])
                best = np.lexsort((rows, values))[:k]
                rows, values = rows[best], values[best]
        scores = torch.from_numpy(np.ascontiguousarray(values[None]))
        distances[i, :k] = to_distance(scores, const[i : i + 1], gallery.metric).numpy()[0]
        found[i, :k] = rows


def _block_scores(q: np.ndarray, V: np.ndarray, offset: np.ndarray, metric: str, buffer):
    """:meth:`Gallery.scores` of one query against a block of items, through NumPy's BLAS,
    into the start of ``buffer``: ``‖g‖² − 2 qᵀg`` (the one kernel's partial form), or
    ``offset − q̂ᵀĝ`` for cosine."""
    block = buffer[: V.shape[0]]
    if metric != "cosine":
        return partial_squared_euclidean(q, V, sq_b=offset, out=block)
    np.dot(V, q, out=block)
    np.negative(block, out=block)
    block += offset
    return block


def _search_into(Q, gallery: Gallery, k: int, distances, found) -> None:
    if Q.shape[0] <= FEW_QUERIES and gallery.vectors.device.type == "cpu":
        return _few_queries(Q.numpy(), gallery, k, distances, found)
    if Q.shape[0] * len(gallery) <= FULL_WIDTH_ELEMENTS:
        Qp, const = gallery.prepare_queries(Q)
        values, idx = smallest_k(gallery.scores(Qp), k)
        distances[:, :k] = to_distance(values, const, gallery.metric).numpy()
        found[:, :k] = idx.numpy()
        return
    for rows, values, idx, const in nearest_chunks(Q, gallery, k):
        r = rows.numpy()
        distances[r, :k] = to_distance(values, const, gallery.metric).numpy()
        found[r, :k] = idx.numpy()
