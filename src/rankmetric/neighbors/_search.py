"""Chunked exact nearest-neighbour search: the engine behind every ranking metric.

Queries are processed in chunks of rows, so memory is ``O(chunk × n_gallery)`` for the
distances of one chunk plus whatever the caller keeps per query. Within a chunk, the ranking
uses a *ranking score* that orders gallery items exactly as the distance does but skips the
per-query constant:

* ``"euclidean"`` / ``"sqeuclidean"``: ``s(q, g) = ||g||² − 2 qᵀg = ||q − g||² − ||q||²``;
* ``"cosine"``: ``s(q, g) = −q̂ᵀĝ = (1 − cos(q, g)) − 1`` with ``x̂ = x / ||x||`` (a zero
  vector has cosine similarity 0 to everything, as in scikit-learn).

One fused matrix product (``addmm``) yields a chunk of scores. Ties are broken by the lower
gallery index, among equal *computed* scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..geometry.aliases import canonical_metric

__all__ = [
    "METRICS",
    "Gallery",
    "auto_chunk_size",
    "for_each_chunk",
    "ranking_keys",
    "relevant_places",
    "smallest_k",
    "squared_norms",
    "to_distance",
]

METRICS = ("euclidean", "sqeuclidean", "cosine")
MEMORY_BUDGET = 256 * 2**20  # bytes for the per-chunk temporaries


def check_metric(metric: str) -> str:
    """The canonical name of a vector metric of :data:`METRICS`, else raise ``ValueError``.

    Resolved by :func:`rankmetric.geometry.canonical_metric`, the one resolver of metric names:
    aliases (pyRiemann's ``"euclid"``) and any case are accepted.

    Parameters
    ----------
    metric : str
        ``"euclidean"`` (or ``"euclid"``), ``"sqeuclidean"`` or ``"cosine"``.

    Returns
    -------
    str
        The canonical name, one of :data:`METRICS`.

    Raises
    ------
    ValueError
        If ``metric`` is not one of :data:`METRICS` or their aliases.

    See Also
    --------
    rankmetric.geometry.canonical_metric : The one resolver of metric names.

    Examples
    --------
    >>> from rankmetric.neighbors import check_metric
    >>> check_metric("Euclid")
    'euclidean'
    """
    if callable(metric):
        raise ValueError(f"metric must be one of {METRICS}, got the callable {metric!r}.")
    return canonical_metric(metric, METRICS, name="metric")


def squared_norms(X: torch.Tensor, block: int = 4096) -> torch.Tensor:
    """``||x||²`` of each row of ``X`` (n, d), in cache-sized row blocks (no n × d temporary).

    Parameters
    ----------
    X : tensor of shape (n, d)
        The rows.
    block : int, default=4096
        Rows per block.

    Returns
    -------
    tensor of shape (n,)
        The squared Euclidean norm of each row, in ``X``'s dtype and device.

    See Also
    --------
    rankmetric.neighbors.Gallery : Keeps the squared norms of a gallery.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import squared_norms
    >>> squared_norms(torch.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([25.,  1.])
    """
    out = torch.empty(X.shape[0], dtype=X.dtype, device=X.device)
    for start in range(0, X.shape[0], block):  # loop over row blocks, not samples
        out[start : start + block] = X[start : start + block].square().sum(dim=1)
    return out


def _unit_rows(X: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit norm; zero rows stay zero."""
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    return X / torch.where(norms > 0, norms, torch.ones_like(norms))


@dataclass(frozen=True)
class Gallery:
    """A gallery prepared for scoring: rows (unit rows for cosine) and the per-item offset.

    Parameters
    ----------
    vectors : tensor of shape (n_gallery, d)
        The gallery rows (unit rows for cosine); :meth:`build` prepares them.
    offset : tensor of shape (n_gallery,)
        ``||g||²`` for the Euclidean metrics, zeros for cosine.
    metric : {"euclidean", "sqeuclidean", "cosine"}
        The metric of the search.

    Attributes
    ----------
    vectors : tensor of shape (n_gallery, d)
    offset : tensor of shape (n_gallery,)
        ``||g||²`` for the Euclidean metrics, zeros for cosine.
    metric : str

    See Also
    --------
    rankmetric.neighbors.nearest_chunks : The k nearest gallery items of each query.
    rankmetric.neighbors.for_each_chunk : Full rows of scores against the gallery.
    rankmetric.evaluate.knn_search : The user-facing search built on it.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import Gallery
    >>> gallery = Gallery.build(torch.tensor([[0.0, 0.0], [3.0, 4.0]]), "euclidean")
    >>> queries = torch.tensor([[0.0, 1.0], [3.0, 3.0]])
    >>> Qp, query_const = gallery.prepare_queries(queries)
    >>> scores = gallery.scores(Qp)  # ‖g‖² − 2 q·g: ranks as the distance does
    >>> scores
    tensor([[  0.,  17.],
            [  0., -17.]])
    >>> from rankmetric.neighbors import to_distance
    >>> to_distance(scores, query_const, "euclidean")
    tensor([[1.0000, 4.2426],
            [4.2426, 1.0000]])
    """

    vectors: torch.Tensor
    offset: torch.Tensor
    metric: str

    @classmethod
    def build(cls, G: torch.Tensor, metric: str) -> Gallery:
        metric = check_metric(metric)
        if metric == "cosine":
            return cls(
                _unit_rows(G), torch.zeros(G.shape[0], dtype=G.dtype, device=G.device), metric
            )
        return cls(G, squared_norms(G), metric)

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def prepare_queries(self, Q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries in the gallery's form and their constant ``||q||²`` (0 for cosine)."""
        if self.metric == "cosine":
            return _unit_rows(Q), torch.zeros(Q.shape[0], dtype=Q.dtype, device=Q.device)
        return Q, squared_norms(Q)

    def scores(
        self, Qc: torch.Tensor, out: torch.Tensor | None = None, items: slice = slice(None)
    ) -> torch.Tensor:
        """Ranking scores of a chunk of prepared queries, shape (n_chunk, n_items).

        ``items``: a block of gallery items (default: all); ``out`` (contiguous, that shape)
        receives the scores when given.
        """
        alpha = -1.0 if self.metric == "cosine" else -2.0
        offset, vectors = self.offset[items].unsqueeze(0), self.vectors[items]
        return torch.addmm(offset, Qc, vectors.T, alpha=alpha, out=out)


def to_distance(scores: torch.Tensor, query_const: torch.Tensor, metric: str) -> torch.Tensor:
    """Turn ranking scores (n, m) back into distances, given each query's constant (n,).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Ranking scores from :meth:`Gallery.scores`.
    query_const : tensor of shape (n,)
        Each query's constant, ``||q||²`` (0 for cosine), from :meth:`Gallery.prepare_queries`.
    metric : {"euclidean", "sqeuclidean", "cosine"}
        The gallery's metric.

    Returns
    -------
    tensor of shape (n, m)
        The distances; ``scores`` is modified in place and must not be used afterwards.

    See Also
    --------
    rankmetric.neighbors.Gallery : Computes the scores.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import to_distance
    >>> to_distance(torch.tensor([[-2.0, 7.0]]), torch.tensor([2.0]), "sqeuclidean")
    tensor([[0., 9.]])
    """
    if metric == "cosine":
        return (scores + 1.0).clamp_(0.0, 2.0)
    squared = (scores + query_const.unsqueeze(1)).clamp_(min=0.0)
    return squared.sqrt_() if metric == "euclidean" else squared


def auto_chunk_size(
    n_queries: int, n_gallery: int, itemsize: int, n_selected: int = 0, budget: int = MEMORY_BUDGET
) -> int:
    """Rows per chunk so that one chunk's temporaries fit in ``budget`` bytes.

    Per query row: the scores and one copy of them (``itemsize`` each), a few boolean masks
    (4 bytes), and about 64 bytes per selected neighbour (indices, values, sort buffers).

    Parameters
    ----------
    n_queries : int
        Number of queries (the result never exceeds it).
    n_gallery : int
        Number of gallery items each query is scored against.
    itemsize : int
        Bytes per score (4 for float32).
    n_selected : int, default=0
        Neighbours kept per query.
    budget : int, default=256 MiB
        Bytes that one chunk's temporaries may take.

    Returns
    -------
    int
        Queries per chunk, between 1 and ``n_queries``.

    See Also
    --------
    rankmetric.neighbors.resolve_chunk_size : A user's ``chunk_size``, or this one.

    Examples
    --------
    >>> from rankmetric.neighbors import auto_chunk_size
    >>> auto_chunk_size(100_000, 1_000_000, itemsize=4)
    22
    >>> auto_chunk_size(10, 1_000, itemsize=4)
    10
    """
    per_row = n_gallery * (2 * itemsize + 4) + n_selected * 64
    return int(max(1, min(n_queries, budget // max(per_row, 1))))


def resolve_chunk_size(chunk_size, n_queries: int, **auto_kw) -> int:
    """``chunk_size`` validated, or chosen from the memory budget when None.

    Parameters
    ----------
    chunk_size : int or None
        A positive number of queries per chunk, or None.
    n_queries : int
        Number of queries.
    **auto_kw
        ``n_gallery``, ``itemsize``, ... passed to :func:`auto_chunk_size` when ``chunk_size``
        is None.

    Returns
    -------
    int
        The number of queries per chunk.

    See Also
    --------
    rankmetric.neighbors.auto_chunk_size : The choice made when ``chunk_size`` is None.

    Examples
    --------
    >>> from rankmetric.neighbors import resolve_chunk_size
    >>> resolve_chunk_size(64, 1000)
    64
    >>> resolve_chunk_size(None, 1000, n_gallery=500, itemsize=4)
    1000
    """
    if chunk_size is None:
        return auto_chunk_size(n_queries, **auto_kw)
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, (int, np.integer))
        or chunk_size < 1
    ):
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}.")
    return int(chunk_size)


def for_each_chunk(
    Q: torch.Tensor,
    gallery: Gallery,
    chunk_size: int,
    visit: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None],
    *,
    exclude_self: bool = False,
    order: torch.Tensor | None = None,
) -> None:
    """Score successive chunks of queries and hand each to ``visit(rows, scores, query_const)``.

    Every chunk is scored into the same buffer (no fresh allocation and page faults per
    chunk), so at most one chunk of scores exists at a time and ``visit`` must not keep
    ``scores`` (a view of that buffer) beyond its call.

    Parameters
    ----------
    Q : tensor of shape (n_queries, d)
        Raw queries (they are prepared here).
    gallery : Gallery
    chunk_size : int
    visit : callable
        Called with ``rows`` (n_chunk,), the query indices of the chunk; ``scores``
        (n_chunk, n_gallery); and ``query_const`` (n_chunk,), ``||q||²`` (0 for cosine), which
        turns scores into distances with :func:`to_distance`.
    exclude_self : bool, default=False
        Query ``i`` is gallery item ``i``: its own score is set to ``+inf``.
    order : tensor of shape (n_queries,), optional
        The order in which queries are visited (default: ``0..n_queries-1``).

    Returns
    -------
    None
        The results are whatever ``visit`` records.

    See Also
    --------
    rankmetric.neighbors.nearest_chunks : Only the k nearest of each query, chunk by chunk.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import Gallery
    >>> gallery = Gallery.build(torch.tensor([[0.0, 0.0], [3.0, 4.0]]), "euclidean")
    >>> queries = torch.tensor([[0.0, 1.0], [3.0, 3.0]])
    >>> from rankmetric.neighbors import for_each_chunk
    >>> seen = []
    >>> for_each_chunk(queries, gallery, 1, lambda rows, scores, c: seen.append(scores.argmin(1)))
    >>> torch.cat(seen).tolist()
    [0, 1]
    """
    for rows, scores, const in _score_chunks(Q, gallery, chunk_size, exclude_self, order):
        visit(rows, scores, const)


def _score_chunks(Q, gallery: Gallery, chunk_size: int, exclude_self: bool, order):
    """Yield ``(rows, scores, query_const)`` of successive chunks, scored into one buffer."""
    Qp, const = gallery.prepare_queries(Q)
    if order is None:
        order = torch.arange(Q.shape[0], device=Q.device)
    buffer = torch.empty(
        (min(chunk_size, Q.shape[0]), len(gallery)), dtype=Qp.dtype, device=Qp.device
    )
    for start in range(0, Q.shape[0], chunk_size):  # loop over query chunks
        rows = order[start : start + chunk_size]
        scores = gallery.scores(Qp[rows], out=buffer[: rows.shape[0]])
        if exclude_self:
            exclude_own_items(scores, rows, 0)
        yield rows, scores, const[rows]


def exclude_own_items(scores: torch.Tensor, rows: torch.Tensor, start: int) -> None:
    """Set ``scores[i, rows[i] − start]`` to +inf where query ``rows[i]`` is gallery item
    ``rows[i]`` and falls in the block of items from ``start`` (the whole gallery: 0)."""
    inside = (rows >= start) & (rows < start + scores.shape[1])
    local = inside.nonzero().squeeze(1)
    scores[local, rows[local] - start] = torch.inf


def _on_numpy(t: torch.Tensor) -> bool:
    """Whether ``t`` lives on the CPU, where NumPy's selection and sorting are faster."""
    return t.device.type == "cpu"


def _kth_smallest(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The k-th smallest value of each row (n,); introselect on the CPU, top-k elsewhere."""
    if _on_numpy(scores):
        part = np.partition(scores.numpy(), k - 1, axis=1)[:, k - 1]
        return torch.from_numpy(np.ascontiguousarray(part))
    return torch.topk(scores, k, dim=1, largest=False, sorted=True).values[:, -1]


def _first_ties_only(
    rows: torch.Tensor, values: torch.Tensor, kth: torch.Tensor, n_rows: int, k: int
) -> torch.Tensor:
    """Mask over candidates ``values <= kth[rows]`` keeping exactly ``k`` per row.

    Candidates strictly below the threshold are all kept; of those equal to it, only the
    first ``k − #below`` (lowest gallery index, since candidates are in index order).
    """
    at_kth = values == kth[rows]
    n_below = torch.bincount(rows[~at_kth], minlength=n_rows)
    ties_so_far = torch.cumsum(at_kth.to(torch.int64), dim=0)
    counts = torch.bincount(rows, minlength=n_rows)
    row_start = torch.cumsum(counts, dim=0) - counts
    ties_before_row = ties_so_far[row_start] - at_kth[row_start].to(torch.int64)
    tie_rank = ties_so_far - ties_before_row[rows]  # 1-based rank of a tie within its row
    return ~at_kth | (tie_rank <= (k - n_below)[rows])


def _sortable_bits(values: torch.Tensor) -> torch.Tensor:
    """Map float32 to int32 so that integer order is float order (−0.0 counts as +0.0).

    The map flips the 31 low bits of negative numbers and is its own inverse.
    """
    bits = (values + 0.0).view(torch.int32)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def _sort_rows(keys: torch.Tensor) -> torch.Tensor:
    """Sort each row of an int64 tensor (NumPy's vectorised sort on the CPU)."""
    if _on_numpy(keys):
        return torch.from_numpy(np.sort(keys.numpy(), axis=1))
    return torch.sort(keys, dim=1).values


def _sort_by_value_then_index(
    values: torch.Tensor, cols: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reorder each row of ``(values, cols)`` by value, then by column index.

    ``cols`` must be ascending within each row. float32 rows are sorted as one int64 key per
    entry (value bits, then index), which is much faster than an argsort; other dtypes use a
    stable sort on the values.
    """
    if values.dtype == torch.float32:
        return unpack_keys(_sort_rows(pack_keys(values, cols)))
    values, order = torch.sort(values, dim=1, stable=True)
    return values, cols.gather(1, order)


def pack_keys(values: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Unique int64 keys of float32 ``values`` at columns ``cols`` (same shape, ``< 2**32``):
    order-preserving bits of the value in the high half, the column in the low half, so that
    integer order is (value, lower column) order."""
    return (_sortable_bits(values).to(torch.int64) << 32) | cols


def unpack_keys(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 values and int64 columns of :func:`pack_keys`' keys."""
    bits = (keys >> 32).to(torch.int32)
    return (bits ^ ((bits >> 31) & 0x7FFFFFFF)).view(torch.float32), keys & 0xFFFFFFFF


def ranking_keys(scores: torch.Tensor) -> torch.Tensor:
    """Unique int64 keys that order each row's entries by (score, lower column index).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Finite ranking scores (``m < 2**32``).

    Returns
    -------
    int64 tensor of shape (n, m)
        ``keys[i, a] < keys[i, b]`` exactly when entry ``a`` ranks before entry ``b`` in row
        ``i``. float32 scores are packed with their column (order-preserving bits of the score,
        then the index: no sort); other dtypes get each entry's position in a stable sort.

    See Also
    --------
    rankmetric.neighbors.smallest_k : The k smallest entries of each row in the same order.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import ranking_keys
    >>> keys = ranking_keys(torch.tensor([[0.5, 0.1, 0.5]]))
    >>> keys.argsort(dim=1).tolist()  # ties ordered by the lower column
    [[1, 0, 2]]
    """
    cols = torch.arange(scores.shape[1], device=scores.device)
    if scores.dtype == torch.float32:
        return pack_keys(scores, cols)
    order = torch.sort(scores, dim=1, stable=True).indices
    return torch.empty_like(order).scatter_(1, order, cols.expand_as(order).contiguous())


def smallest_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` smallest entries of each row, ordered by (value, column index).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Finite values, or ``+inf`` for excluded entries; ``k`` must not exceed the number of
        finite entries per row, and ``m < 2**32``.
    k : int

    Returns
    -------
    values : tensor of shape (n, k)
    indices : tensor of shape (n, k), dtype int64
        Column indices; among equal values the lower index comes first, and which of several
        equal values at the k-th place are kept is decided the same way.

    See Also
    --------
    rankmetric.neighbors.ranking_keys : The keys of the same order.
    rankmetric.neighbors.nearest_chunks : The search that uses it per chunk.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import smallest_k
    >>> values, indices = smallest_k(torch.tensor([[0.5, 0.1, 0.5, 0.9]]), 3)
    >>> values.tolist(), indices.tolist()
    ([[0.10000000149011612, 0.5, 0.5]], [[1, 0, 2]])
    """
    n = scores.shape[0]
    kth = _kth_smallest(scores, k).to(scores.device)
    rows, cols = (scores <= kth.unsqueeze(1)).nonzero(as_tuple=True)
    if rows.shape[0] != n * k:  # more than one candidate equal to some row's k-th value
        keep = _first_ties_only(rows, scores[rows, cols], kth, n, k)
        cols = cols[keep]
    cols = cols.view(n, k)
    return _sort_by_value_then_index(scores.gather(1, cols), cols)


NO_KEY = torch.iinfo(torch.int64).max  # sorts after every key
_FEW_TIES = 8  # tied relevant items of a row counted one by one; more: the row's keys


def _sorted_rows(scores: torch.Tensor, depth: int, workspace: torch.Tensor | None) -> torch.Tensor:
    """The ``depth`` smallest values of each row in ascending order, shape (n, depth).

    On the CPU the rows are copied into ``workspace`` (reused: no fresh pages per chunk),
    partitioned at ``depth`` when it is below the row length, and sorted there (NumPy's
    vectorised sort); elsewhere ``torch.sort`` / ``torch.topk``.
    """
    n, m = scores.shape
    if not _on_numpy(scores):
        if depth < m:
            return torch.topk(scores, depth, dim=1, largest=False, sorted=True).values
        return torch.sort(scores, dim=1).values
    if workspace is None or workspace.dtype != scores.dtype or workspace.shape[0] < n:
        workspace = torch.empty_like(scores)
    buffer = workspace.numpy()[:n, :m] if workspace.shape[1] != m else workspace.numpy()[:n]
    np.copyto(buffer, scores.numpy())
    if depth < m:
        buffer.partition(depth - 1, axis=1)
        head = np.sort(buffer[:, :depth], axis=1)
        return torch.from_numpy(head)
    buffer.sort(axis=1)
    return torch.from_numpy(buffer)


def _count_equal_before(
    block: torch.Tensor, values: torch.Tensor, columns: torch.Tensor
) -> torch.Tensor:
    """``#{g : block[i, g] == values[i], g < columns[i]}`` for each row ``i`` of ``block``."""
    if _on_numpy(block):
        equal = block.numpy() == values.numpy()[:, None]
        equal &= np.arange(block.shape[1]) < columns.numpy()[:, None]
        return torch.from_numpy(np.count_nonzero(equal, axis=1).astype(np.int64))
    column = torch.arange(block.shape[1], device=block.device)
    equal = (block == values.unsqueeze(1)) & (column < columns.unsqueeze(1))
    return torch.count_nonzero(equal, dim=1)


def exact_places(scores: torch.Tensor, values: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """``1 + #{g : s_g < v} + #{g : s_g = v, g < c}``: the 1-based place of the entry ``(v, c)``
    in each row's ranking by (score, lower column)."""
    smaller = torch.count_nonzero(scores < values.unsqueeze(1), dim=1)
    return 1 + smaller + _count_equal_before(scores, values, columns)


def _places_by_keys(scores: torch.Tensor, relevant: torch.Tensor, width: int) -> torch.Tensor:
    """Places of each row's relevant items with unique int64 keys: exact under any ties.

    ``O(m log R)`` a row (a binary search of every entry among the relevant keys and a
    histogram); :func:`relevant_places` uses it only for rows with many tied scores.
    Returns shape (n, width), ``width`` at least the most relevant items of a row.
    """
    n = scores.shape[0]
    keys = ranking_keys(scores)
    r_max = width
    rel_keys = keys.masked_fill(~relevant, NO_KEY).topk(r_max, dim=1, largest=False).values
    rel_keys = rel_keys.sort(dim=1).values.contiguous()
    bucket = torch.searchsorted(rel_keys, keys)  # relevant items ranked before each entry
    others = torch.isfinite(scores) & ~relevant
    bucket.masked_fill_(~others, r_max + 1)  # uncounted entries go to a spare bin
    bucket += (torch.arange(n, device=keys.device) * (r_max + 2)).unsqueeze(1)
    hist = torch.bincount(bucket.view(-1), minlength=n * (r_max + 2)).view(n, r_max + 2)
    del bucket, keys
    before = torch.cumsum(hist[:, :r_max], dim=1)  # other entries ranked before relevant j
    return torch.arange(1, r_max + 1, device=scores.device) + before


def relevant_places(
    scores: torch.Tensor,
    columns: torch.Tensor,
    counted: torch.Tensor,
    *,
    depth: int | None = None,
    tie_rows: int = 0,
    workspace: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Places (1-based) of each row's relevant entries in the row's ranking, in order.

    A row ranks its finite entries by (score, lower column); ``+inf`` entries are out of the
    ranking (the caller writes ``+inf`` over what a protocol removes: the query itself, junk,
    same-camera twins).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Ranking scores (lower is nearer); finite, or ``+inf`` for entries outside the ranking.
        No NaN.
    columns : int64 tensor of shape (n, w)
        Candidate relevant columns of each row, ascending where ``counted``.
    counted : bool tensor of shape (n, w)
        Which candidates are relevant (their scores must be finite).
    depth : int, optional
        Only places up to ``depth`` are needed (mAP@R, Recall@K): a relevant entry ranked
        deeper gets the place ``depth + 1``, except the first one, whose place is always exact
        (MRR). The rows are then partitioned at ``depth`` rather than sorted. None: every
        place.
    tie_rows : int, default=0
        Rows (or tied items) per block in the exact counting of ties (0: all at once).
    workspace : tensor of shape (≥ n, m), optional
        Scratch space of ``scores``' dtype, reused across calls (CPU only).

    Returns
    -------
    places : int64 tensor of shape (n, max(1, max R))
        ``places[q, j]`` = place of row ``q``'s (j+1)-th relevant entry among its finite
        entries (``depth + 1`` for those deeper than ``depth``); entries ``j ≥ R_q`` are
        meaningless.
    R : int64 tensor of shape (n,)
        Relevant entries per row.

    See Also
    --------
    rankmetric.neighbors.ranking_keys : The order it follows, as int64 keys.
    rankmetric.evaluate.retrieval_report : Average precision and more from these places.

    Notes
    -----
    The rows are sorted by value (vectorised float sort, no 64-bit keys, no index array) and
    each relevant value finds its place by binary search in its sorted row: ``O(m log m)`` a
    row in the sort, ``O(R log m)`` in the search. Where a relevant value equals another
    entry's, the order among equals is the lower column: the equal entries of lower column
    are counted by one comparison of the row (a few such items a row, as float32 scores of
    distinct points give), or, for rows with more, the row is ranked again with unique
    (score, column) keys (:func:`ranking_keys`). The result is exact whatever the ties.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import relevant_places
    >>> scores = torch.tensor([[0.3, 0.1, 0.2, 0.1], [0.5, float("inf"), 0.4, 0.9]])
    >>> columns = torch.tensor([[0, 3], [0, 3]])
    >>> counted = torch.tensor([[True, True], [True, True]])
    >>> places, R = relevant_places(scores, columns, counted)
    >>> places.tolist(), R.tolist()
    ([[2, 4], [2, 3]], [2, 2])
    """
    n = scores.shape[0]
    R = counted.sum(dim=1)
    width = max(int(R.max()) if n else 0, 1)
    if columns.shape[1] == 0:
        return torch.zeros((n, width), dtype=torch.int64, device=scores.device), R
    m = scores.shape[1]
    depth = m if depth is None else int(min(max(depth, 1), m))
    values = scores.gather(1, columns).masked_fill_(~counted, torch.inf)
    values, columns = _sort_by_value_then_index(values, columns)  # relevant first
    values, columns = values[:, :width].contiguous(), columns[:, :width]
    ranked = _sorted_rows(scores, depth, workspace)
    below = torch.searchsorted(ranked, values)  # entries with a smaller score (up to depth)
    places = below + 1
    is_rel = torch.arange(width, device=R.device) < R.unsqueeze(1)
    # ranked[below] is the relevant value itself; another entry ties with it when the next
    # sorted value equals it (at the depth itself the next one is not at hand: counted too).
    following = ranked.gather(1, places.clamp(max=depth - 1))
    tied = ((following == values) & (places < depth) | (places == depth)) & is_rel
    if bool(tied.any()):
        n_tied = tied.sum(dim=1)
        many = n_tied > _FEW_TIES  # rows of heavy ties: unique keys, O(m log R) a row
        at, j = (tied & ~many.unsqueeze(1)).nonzero(as_tuple=True)
        step = tie_rows if tie_rows > 0 else max(at.shape[0], 1)
        for start in range(0, at.shape[0], step):  # loop over blocks of tied (row, item) pairs
            a, k = at[start : start + step], j[start : start + step]
            places[a, k] += _count_equal_before(scores[a], values[a, k], columns[a, k])
        rows = many.nonzero().squeeze(1)
        step = tie_rows if tie_rows > 0 else max(rows.shape[0], 1)
        for start in range(0, rows.shape[0], step):  # loop over blocks of rows with many ties
            block = rows[start : start + step]
            relevant = torch.zeros((block.shape[0], m), dtype=torch.bool, device=scores.device)
            at, k = is_rel[block].nonzero(as_tuple=True)
            relevant[at, columns[block][at, k]] = True
            places[block, :width] = _places_by_keys(scores[block], relevant, width)
    if depth < m:
        places.clamp_(max=depth + 1)
        deep = ((places[:, 0] > depth) & (R > 0)).nonzero().squeeze(1)
        step = tie_rows if tie_rows > 0 else max(deep.shape[0], 1)
        for start in range(0, deep.shape[0], step):  # the first relevant place stays exact
            rows = deep[start : start + step]
            places[rows, 0] = exact_places(scores[rows], values[rows, 0], columns[rows, 0])
    return places, R
