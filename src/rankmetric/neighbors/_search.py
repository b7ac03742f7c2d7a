"""Chunked exact nearest-neighbour search: the engine behind every ranking metric.

Queries are processed in chunks of rows, so memory is ``O(chunk × n_gallery)`` for the
distances of one chunk plus whatever the caller keeps per query. Within a chunk, the ranking
uses a *ranking score* that orders gallery items exactly as the distance does but skips the
per-query constant:

* ``"euclidean"`` / ``"sqeuclidean"``: ``s(q, g) = ||g||² − 2 qᵀg = ||q − g||² − ||q||²``;
* ``"cosine"``: ``s(q, g) = −q̂ᵀĝ = (1 − cos(q, g)) − 1`` with ``x̂ = x / ||x||`` (a zero
  vector has cosine similarity 0 to everything, as in scikit-learn).

One fused matrix product (``addmm``) yields a chunk of scores; the Euclidean ones are
:func:`rankmetric._distances.partial_squared_euclidean`, the one kernel's Gram form without
the query's norm. Ties are broken by the lower
gallery index, among equal *computed* scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._distances import partial_squared_euclidean
from .._distances import squared_norms as row_squared_norms
from .._validation import NONE, POSITIVE_INT, check_param
from ..geometry.aliases import canonical_metric

__all__ = [
    "METRICS",
    "Gallery",
    "auto_chunk_size",
    "check_metric",
    "for_each_chunk",
    "resolve_chunk_size",
    "score_chunks",
    "squared_norms",
    "to_distance",
]

METRICS = ("euclidean", "sqeuclidean", "cosine")
MEMORY_BUDGET = 256 * 2**20  # bytes for the per-chunk temporaries


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
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


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
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
        out[start : start + block] = row_squared_norms(X[start : start + block])
    return out


def _prepared(X: torch.Tensor, metric: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows in the form of ``metric``'s scores and their offsets: unit rows (zero rows stay
    zero) and zeros for cosine, the rows and their squared norms otherwise."""
    if metric != "cosine":
        return X, squared_norms(X)
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    unit = X / torch.where(norms > 0, norms, torch.ones_like(norms))
    return unit, torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)


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
        return cls(*_prepared(G, metric), metric)

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def prepare_queries(self, Q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries in the gallery's form and their constant ``||q||²`` (0 for cosine)."""
        return _prepared(Q, self.metric)

    def scores(
        self, Qc: torch.Tensor, out: torch.Tensor | None = None, items: slice = slice(None)
    ) -> torch.Tensor:
        """Ranking scores of a chunk of prepared queries, shape (n_chunk, n_items).

        ``items``: a block of gallery items (default: all); ``out`` (contiguous, that shape)
        receives the scores when given.
        """
        offset, vectors = self.offset[items], self.vectors[items]
        if self.metric == "cosine":  # −q̂ᵀĝ: an inner product (the offset: 0, or +inf)
            return torch.addmm(offset.unsqueeze(0), Qc, vectors.T, alpha=-1.0, out=out)
        return partial_squared_euclidean(Qc, vectors, sq_b=offset, out=out)


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
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
    check_param("chunk_size", chunk_size, [NONE, POSITIVE_INT])
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
    >>> from rankmetric.neighbors import Gallery, for_each_chunk
    >>> cosine = Gallery.build(torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), "cosine")
    >>> seen = []
    >>> record = lambda rows, scores, c: seen.append(scores.argmin(1))
    >>> for_each_chunk(torch.tensor([[0.0, 5.0], [4.0, 1.0]]), cosine, 1, record)
    >>> torch.cat(seen).tolist()  # the most similar direction
    [1, 0]
    """
    for rows, scores, const in score_chunks(Q, gallery, chunk_size, exclude_self, order):
        visit(rows, scores, const)


def score_chunks(Q, gallery: Gallery, chunk_size: int, exclude_self: bool = False, order=None):
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
