"""Exact k-nearest-neighbour search at the matrix-product limit: tiles and a running top-k.

A chunk of queries is scored against the gallery one *block* of items at a time, so a score
tile (``chunk × block``, 4 MB by default: it stays in the L3 cache) is the largest
temporary and memory is ``O(chunk × (block + k))`` whatever the gallery size. Each query keeps
its ``k`` best items as a running list; after the first blocks, few items of a tile beat a
query's current k-th score: a row-wise minimum over the tile finds the queries that improve,
and only their items below the k-th score are merged into their lists. The matrix products
then dominate the time.

Exact tie order: a float32 score and its gallery index are packed into one int64 *key*
(order-preserving bits of the score in the high half, the index in the low half), so keys are
unique and ``torch.topk`` on keys orders by (score, lower index) exactly. A later block only
ever holds higher indices, so an item of it enters a query's list only when its score is
strictly below the current k-th score.

The tiled path serves float32 searches on the CPU with ``k <= MAX_TILED_K``; other searches
(float64, CUDA, very large ``k``) score full-width chunks and select with
:func:`~rankmetric.neighbors.smallest_k` — same results, more memory traffic.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from ._places import NO_KEY, pack_keys, smallest_k, unpack_keys
from ._search import Gallery, exclude_own_items, resolve_chunk_size, score_chunks

__all__ = ["MAX_TILED_K", "nearest_chunks", "uses_tiles"]

TILE_QUERIES = 1024  # queries per chunk on the tiled path
TILE_ITEMS = 1024  # gallery items per block: a 1024 × 1024 float32 tile is 4 MB
MAX_TILED_K = 256  # beyond this, full-width selection is as fast and simpler


def uses_tiles(Q: torch.Tensor, k: int) -> bool:
    """Whether a search of ``k`` neighbours for queries ``Q`` takes the tiled path.

    Parameters
    ----------
    Q : tensor of shape (n_queries, d)
        The queries (their dtype and device decide).
    k : int
        Neighbours per query.

    Returns
    -------
    bool
        True for float32 queries on the CPU and ``k <= MAX_TILED_K``.

    See Also
    --------
    rankmetric.neighbors.nearest_chunks : The search that takes either path.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import uses_tiles
    >>> uses_tiles(torch.zeros(4, 2), 10), uses_tiles(torch.zeros(4, 2, dtype=torch.float64), 10)
    (True, False)
    """
    return Q.dtype == torch.float32 and Q.device.type == "cpu" and k <= MAX_TILED_K


def _merge(
    running: torch.Tensor, threshold: torch.Tensor, rows: torch.Tensor, keys: torch.Tensor
) -> None:
    """Merge candidate ``keys`` of query ``rows`` (grouped by row) into the running top-k.

    The candidates of each improving row are laid out after its ``k`` running keys in one
    padded matrix, whose ``k`` smallest keys per row become the new running list.
    """
    k = running.shape[1]
    counts = torch.bincount(rows, minlength=running.shape[0])
    improving = counts.nonzero().squeeze(1)
    slot = torch.cumsum(counts > 0, dim=0) - 1  # row → its line in the padded matrix
    first = torch.cumsum(counts, dim=0) - counts  # row → position of its first candidate
    position = torch.arange(rows.shape[0], device=rows.device) - first[rows]
    padded = torch.full(
        (improving.shape[0], k + int(counts.max())), NO_KEY, dtype=torch.int64, device=rows.device
    )
    padded[:, :k] = running[improving]
    padded[slot[rows], k + position] = keys
    merged = padded.topk(k, dim=1, largest=False, sorted=True).values
    running[improving] = merged
    threshold[improving] = unpack_keys(merged[:, -1])[0]


def _tiled_chunk(
    Qc: torch.Tensor,
    rows: torch.Tensor,
    gallery: Gallery,
    k: int,
    block: int,
    buffer: torch.Tensor,
    exclude_self: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` smallest scores of each prepared query of a chunk, with their indices."""
    n = Qc.shape[0]
    running = torch.full((n, k), NO_KEY, dtype=torch.int64, device=Qc.device)
    threshold = torch.full((n,), torch.inf, dtype=Qc.dtype, device=Qc.device)
    for start in range(0, len(gallery), block):  # loop over gallery blocks (not samples)
        width = min(block, len(gallery) - start)
        tile = gallery.scores(Qc, out=buffer[:n, :width], items=slice(start, start + width))
        if exclude_self:
            exclude_own_items(tile, rows, start)
        improving = (tile.amin(dim=1) < threshold).nonzero().squeeze(1)
        if improving.numel() == 0:
            continue
        sub = tile[improving]
        r, c = (sub < threshold[improving].unsqueeze(1)).nonzero(as_tuple=True)
        _merge(running, threshold, improving[r], pack_keys(sub[r, c], c + start))
    return unpack_keys(running)


def nearest_chunks(
    Q: torch.Tensor,
    gallery: Gallery,
    k: int | torch.Tensor,
    *,
    exclude_self: bool = False,
    order: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Yield, chunk of queries by chunk, their nearest gallery items in exact order.

    Parameters
    ----------
    Q : tensor of shape (n_queries, d)
        Raw queries (prepared here for the gallery's metric).
    gallery : Gallery
    k : int or int tensor of shape (n_queries,)
        Neighbours per query; with a tensor, a chunk gets the largest ``k`` of its queries.
        At most ``len(gallery)`` (minus one with ``exclude_self``).
    exclude_self : bool, default=False
        Query ``i`` is gallery item ``i`` and is not its own neighbour.
    order : tensor of shape (n_queries,), optional
        The order in which queries are visited (default: ``0..n_queries-1``).
    chunk_size : int, optional
        Queries per chunk; None picks 1,024 on the tiled path, else a 256 MB memory budget.

    Yields
    ------
    rows : tensor of shape (n_chunk,)
        The query indices of the chunk.
    scores : tensor of shape (n_chunk, k_chunk)
        Ranking scores (see :class:`Gallery`), ascending; ties ordered by the lower index.
    indices : tensor of shape (n_chunk, k_chunk), dtype int64
    query_const : tensor of shape (n_chunk,)
        Turns scores into distances with :func:`~rankmetric.neighbors.to_distance`.

    See Also
    --------
    rankmetric.neighbors.for_each_chunk : Full rows of scores instead of the k nearest.
    rankmetric.evaluate.knn_search : The user-facing search built on it.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import Gallery, nearest_chunks, to_distance
    >>> line = Gallery.build(torch.arange(5.0).unsqueeze(1), "sqeuclidean")  # 0, 1, 2, 3, 4
    >>> found = nearest_chunks(torch.tensor([[1.2], [3.9]]), line, 2)
    >>> for rows, scores, indices, query_const in found:
    ...     print(rows.tolist(), indices.tolist(), to_distance(scores, query_const, "sqeuclidean"))
    [0, 1] [[1, 2], [4, 3]] tensor([[0.0400, 0.6400],
            [0.0100, 0.8100]])
    """
    per_query = isinstance(k, torch.Tensor)
    k_max = int(k.max()) if per_query else int(k)
    k_of = (lambda rows: int(k[rows].max())) if per_query else (lambda rows: k_max)
    if not uses_tiles(Q, k_max):  # full-width chunks, then a selection
        chunk = resolve_chunk_size(
            chunk_size, Q.shape[0], n_gallery=len(gallery), itemsize=Q.element_size(),
            n_selected=k_max,
        )  # fmt: skip
        for rows, scores, const in score_chunks(Q, gallery, chunk, exclude_self, order):
            yield rows, *smallest_k(scores, k_of(rows)), const
        return
    Qp, const = gallery.prepare_queries(Q)
    order = torch.arange(Q.shape[0], device=Q.device) if order is None else order
    chunk = TILE_QUERIES if chunk_size is None else resolve_chunk_size(chunk_size, 0)
    chunk = min(chunk, Q.shape[0])
    block = max(TILE_ITEMS, k_max + 1)
    buffer = torch.empty((chunk, min(block, len(gallery))), dtype=Qp.dtype)
    for start in range(0, Q.shape[0], chunk):  # loop over query chunks
        rows = order[start : start + chunk]
        values, idx = _tiled_chunk(Qp[rows], rows, gallery, k_of(rows), block, buffer, exclude_self)
        yield rows, values, idx, const[rows]
