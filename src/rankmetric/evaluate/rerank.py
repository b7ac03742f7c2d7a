"""Re-ranking for re-identification: k-reciprocal encoding (Zhong et al., CVPR 2017) and
average query expansion.

``rerank_k_reciprocal`` follows the published algorithm (the authors' ``re_ranking.py``): on the
``N = n_query + n_gallery`` items, ``d²`` normalised by each item's largest ``d²`` is the
original distance; ``R(i, k)`` = the items ``j`` among ``i``'s ``k + 1`` nearest (``i``
included) that have ``i`` among their own ``k + 1`` nearest (k-reciprocal neighbours); each
``c ∈ R(i, k1)`` whose ``R(c, round(k1/2))`` shares more than 2/3 of its items with
``R(i, k1)`` adds that set (expansion); ``V[i]`` puts weight ``exp(−d̃(i, j))``, normalised to
sum 1, on the expanded set; local query expansion replaces ``V[i]`` by the mean of ``V`` over
``i``'s ``k2`` nearest; the Jaccard distance is ``1 − m/(2 − m)`` with
``m = Σ_k min(V[q, k], V[g, k])``; the final distance is ``(1 − λ)·Jaccard + λ·d̃``.

The authors' code holds several dense ``N × N`` matrices (the distances, their full argsort,
``V``): 20,000 items take about 5 GB. Here nothing ``N × N`` exists: the distances are scored
in chunks (:func:`~rankmetric.neighbors.for_each_chunk`) keeping each row's ``k1 + 1`` nearest
and its largest distance, ``V`` is a sparse matrix (``N × ~k1·k1/2`` entries at most), and the
Jaccard sums are accumulated through an inverted index one block of queries at a time; the only
large array is the ``n_query × n_gallery`` result.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import torch

from .._distances import paired_squared_euclidean
from .._threads import call_threads, search_work
from .._validation import Interval, check_param
from ..neighbors import (
    Gallery,
    check_metric,
    for_each_chunk,
    resolve_chunk_size,
    smallest_k,
    to_distance,
)
from ._inputs import check_int, embedding_tensors
from .knn import knn_search

__all__ = ["average_query_expansion", "rerank_k_reciprocal"]

TRIPLES_PER_BLOCK = 2_000_000  # (query, shared item, gallery item) terms per Jaccard block
BLOCK_BYTES = 32 * 2**20  # one float64 (block × n_gallery) array of a Jaccard block


def _pair_sq_distance(A: torch.Tensor, B: torch.Tensor, metric: str) -> torch.Tensor:
    """``d(a, b)²`` for rows ``A`` (n, d) against ``B`` (n, m, d), per pair: shape (n, m); the
    rows of a :class:`~rankmetric.neighbors.Gallery` (unit rows for cosine)."""
    if metric == "cosine":
        d = (1.0 - (B @ A.unsqueeze(-1)).squeeze(-1)).clamp(0.0, 2.0)
    else:
        d = paired_squared_euclidean(B, A.unsqueeze(1))
        if metric == "euclidean":
            return d  # d² of the Euclidean distance
    return d.square()


def _neighbors_and_scale(X: torch.Tensor, metric: str, k: int, chunk_size) -> tuple:
    """Each item's ``k`` nearest items (itself included; ties by lower index), its largest
    squared distance to any item, in one chunked pass, and the items as the search saw them
    (unit rows for cosine)."""
    N = X.shape[0]
    nn = torch.empty((N, k), dtype=torch.int64, device=X.device)
    scale = torch.empty(N, dtype=torch.float64, device=X.device)
    chunk = resolve_chunk_size(chunk_size, N, n_gallery=N, itemsize=X.element_size(), n_selected=k)

    def visit(rows, scores, const):
        nn[rows] = smallest_k(scores, k)[1]
        d = to_distance(scores, const, metric)
        scale[rows] = d.max(dim=1).values.to(torch.float64).square()

    gallery = Gallery.build(X, metric)
    for_each_chunk(X, gallery, chunk, visit)
    return nn, scale, gallery.vectors


def _reciprocal(nn: torch.Tensor, k: int) -> torch.Tensor:
    """``mask[i, m]``: ``nn[i, m]`` is a k-reciprocal neighbour of ``i`` (uses ``nn[:, :k+1]``)."""
    top = nn[:, : k + 1]
    me = torch.arange(nn.shape[0], device=nn.device).view(-1, 1, 1)
    out = torch.empty(top.shape, dtype=torch.bool, device=nn.device)
    step = max(1, 2**22 // (top.shape[1] ** 2))
    for s in range(0, top.shape[0], step):  # loop over row blocks
        out[s : s + step] = (top[top[s : s + step]] == me[s : s + step]).any(dim=-1)
    return out


def _encode(X, nn, scale, k1: int, metric: str):  # X: the rows of the search's Gallery
    """The sparse k-reciprocal encoding ``V`` (scipy CSR, N × N), rows summing to 1."""
    from scipy.sparse import csr_matrix

    N = X.shape[0]
    half = int(np.around(k1 / 2.0))
    R = nn[:, : k1 + 1]
    in_R = _reciprocal(nn, k1)  # (N, k1+1)
    H = nn[:, : half + 1]
    in_H = _reciprocal(nn, half)  # (N, half+1)
    rows_all, cols_all, vals_all = [], [], []
    width = (k1 + 1) * (half + 2)  # expanded-set candidates per row
    # row blocks: the membership test (n·(k1+1)²·(half+1) bools) and the gathered candidate
    # rows (n·width·d numbers) stay around 4M elements each
    step = max(1, min(2**22 // ((k1 + 1) ** 2 * (half + 1)), 2**22 // (width * X.shape[1])))
    for s in range(0, N, step):  # loop over row blocks
        r, r_in = R[s : s + step], in_R[s : s + step]
        n = r.shape[0]
        cand_H, cand_in = H[r], in_H[r] & r_in.unsqueeze(-1)  # (n, k1+1, half+1)
        member = (cand_H.unsqueeze(-1) == r.view(n, 1, 1, -1)) & r_in.view(n, 1, 1, -1)
        shared = (member.any(dim=-1) & cand_in).sum(dim=-1)
        size = cand_in.sum(dim=-1)
        accept = r_in & (shared > (2.0 / 3.0) * size)
        extra = torch.where(accept.unsqueeze(-1) & cand_in, cand_H, -1).view(n, -1)
        items = torch.cat([torch.where(r_in, r, -1), extra], dim=1)
        items = items.sort(dim=1).values
        keep = items >= 0
        keep[:, 1:] &= items[:, 1:] != items[:, :-1]
        d2 = _pair_sq_distance(X[s : s + n], X[items.clamp(min=0)], metric)
        dn = d2.to(torch.float64) / scale[s : s + n].unsqueeze(1).clamp(min=1e-300)
        w = torch.where(keep, torch.exp(-dn), 0.0)
        w = w / w.sum(dim=1, keepdim=True)
        row, col = keep.nonzero(as_tuple=True)
        rows_all.append((row + s).cpu().numpy())
        cols_all.append(items[row, col].cpu().numpy())
        vals_all.append(w[row, col].cpu().numpy())
    return csr_matrix(
        (np.concatenate(vals_all), (np.concatenate(rows_all), np.concatenate(cols_all))),
        shape=(N, N),
    )


def _query_expand(V, nn, k2: int):
    """Local query expansion: each row of ``V`` replaced by the mean of its ``k2`` nearest's."""
    from scipy.sparse import csr_matrix

    N = V.shape[0]
    cols = nn[:, :k2].cpu().numpy().ravel()
    A = csr_matrix((np.full(cols.shape[0], 1.0 / k2), (np.repeat(np.arange(N), k2), cols)),
                   shape=(N, N))  # fmt: skip
    return (A @ V).tocsr()


def _jaccard_blocks(V, n_query: int):
    """Yield ``(start, stop, m)``: ``m[i, j] = Σ_k min(V[q_i, k], V[g_j, k])`` for a block of
    queries, through the inverted index (the gallery rows of ``V`` by column)."""
    Vq = V[:n_query].tocsr()
    Vg = V[n_query:].tocsc()  # column k: the gallery items using item k, and their weights
    n_gallery = Vg.shape[0]
    col_count = np.diff(Vg.indptr)
    entry_row = np.repeat(np.arange(n_query), np.diff(Vq.indptr))
    per_query = np.bincount(entry_row, weights=col_count[Vq.indices], minlength=n_query)
    start = 0
    while start < n_query:
        total = np.cumsum(per_query[start:])
        rows = int(np.searchsorted(total, TRIPLES_PER_BLOCK, side="right"))
        stop = start + max(1, min(rows, BLOCK_BYTES // (8 * n_gallery)))
        lo, hi = Vq.indptr[start], Vq.indptr[stop]
        k, v = Vq.indices[lo:hi], Vq.data[lo:hi]
        q = np.repeat(np.arange(stop - start), np.diff(Vq.indptr[start : stop + 1]))
        counts = col_count[k]
        first = Vg.indptr[k]
        offset = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        g, w = Vg.indices[offset], Vg.data[offset]
        terms = np.minimum(np.repeat(v, counts), w)
        flat = np.repeat(q, counts) * n_gallery + g
        m = np.bincount(flat, weights=terms, minlength=(stop - start) * n_gallery)
        yield start, stop, m.reshape(stop - start, n_gallery)
        start = stop


@call_threads(lambda a: search_work(a["gallery"], a["query"]) * 4)
def rerank_k_reciprocal(
    query,
    gallery,
    *,
    k1: int = 20,
    k2: int = 6,
    lambda_value: float = 0.3,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """k-reciprocal re-ranking (Zhong et al., CVPR 2017) of a query set against a gallery.

    Parameters
    ----------
    query : array-like or tensor of shape (n_query, n_features)
        Embeddings of the queries (e.g. ``model.transform(X_query)`` of any learned metric).
    gallery : array-like or tensor of shape (n_gallery, n_features)
    k1 : int, default=20
        Size of the k-reciprocal neighbourhoods (the paper's 20).
    k2 : int, default=6
        Neighbours averaged in the local query expansion (1: none).
    lambda_value : float in [0, 1], default=0.3
        Weight of the original distance in the final one.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
        The distance ``d`` that is re-ranked (``d²``, normalised, is the original distance).
    chunk_size : int, optional
        Items per chunk of the neighbour search (None: about 256 MB of temporaries).
    device : str or torch.device, optional
        Where the distances are scored (None: CUDA when available); the sparse steps run on
        the CPU.

    Returns
    -------
    ndarray of shape (n_query, n_gallery)
        The re-ranked distances (lower is nearer), in the inputs' precision; pass them to
        :func:`reid_scores` with ``metric="precomputed"``.

    See Also
    --------
    rankmetric.evaluate.average_query_expansion : A cheaper re-ranking by expanded queries.
    rankmetric.evaluate.reid_scores : Score the re-ranked distances (``metric="precomputed"``).

    Notes
    -----
    Memory: ``O(n_query × n_gallery)`` for the result plus ``O(N · k1²)`` for the sparse
    encoding and one chunk of scores, instead of the reference code's several ``N × N``
    matrices. The module docstring gives the algorithm. Ties are ordered by the lower index
    (queries first, then gallery items).

    References
    ----------
    .. [1] Z. Zhong, L. Zheng, D. Cao and S. Li. Re-ranking Person Re-identification with
       k-reciprocal Encoding. CVPR 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import rerank_k_reciprocal, reid_scores
    >>> rng = np.random.default_rng(0)
    >>> ids = np.repeat(np.arange(30), 4)
    >>> X = rng.normal(size=(30, 8))[ids] + 0.5 * rng.normal(size=(120, 8))
    >>> q = np.arange(120) % 4 == 0
    >>> D = rerank_k_reciprocal(X[q], X[~q], k1=6, k2=3)
    >>> D.shape
    (30, 90)
    >>> reid_scores(D, ids[q], None, None, ids[~q], None, metric="precomputed",
    ...             protocol="single-view", ranks=1)["cmc"][1]
    0.9
    """
    metric = check_metric(metric)
    k1 = check_int(k1, "k1")
    k2 = check_int(k2, "k2")
    check_param("lambda_value", lambda_value, [Interval(Real, 0, 1, closed="both")])
    Q, G = embedding_tensors(query, gallery, ("query", "gallery"), device)
    dtype = Q.dtype
    n_query, N = Q.shape[0], Q.shape[0] + G.shape[0]
    if k1 + 1 > N or k2 > N:
        raise ValueError(f"k1 + 1 = {k1 + 1} and k2 = {k2} must not exceed the {N} items "
                         "(queries and gallery together).")  # fmt: skip
    X = torch.cat([Q, G])
    nn, scale, vectors = _neighbors_and_scale(X, metric, max(k1 + 1, k2), chunk_size)
    V = _encode(vectors, nn, scale, k1, metric)
    if k2 != 1:
        V = _query_expand(V, nn, k2)
    del nn
    out = np.empty((n_query, G.shape[0]), dtype=np.float64 if dtype == torch.float64
                   else np.float32)  # fmt: skip
    gal = Gallery.build(G, metric)
    Qp, const = gal.prepare_queries(Q)
    for start, stop, m in _jaccard_blocks(V, n_query):  # loop over query blocks
        scores = gal.scores(Qp[start:stop])
        d = to_distance(scores, const[start:stop], metric).to(torch.float64).square()
        original = (d / scale[start:stop].unsqueeze(1).clamp(min=1e-300)).cpu().numpy()
        jaccard = 1.0 - m / (2.0 - m)
        out[start:stop] = (1 - lambda_value) * jaccard + lambda_value * original
    return out


def average_query_expansion(
    query, gallery, *, k: int = 5, metric: str = "euclidean", device=None
) -> np.ndarray:
    """Average query expansion (Chum et al., 2007): each query replaced by the mean of itself
    and its ``k`` nearest gallery items.

    Parameters
    ----------
    query : array-like of shape (n_query, n_features)
    gallery : array-like of shape (n_gallery, n_features)
    k : int, default=5
        Gallery neighbours averaged in (at most ``n_gallery``).
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
        The distance that finds the neighbours.
    device : str or torch.device, optional

    Returns
    -------
    ndarray of shape (n_query, n_features)
        The expanded queries; rank the gallery with them as with the originals.

    See Also
    --------
    rankmetric.evaluate.rerank_k_reciprocal : k-reciprocal re-ranking, a stronger re-ranker.
    rankmetric.evaluate.knn_search : The neighbour search it averages over.

    References
    ----------
    .. [1] O. Chum, J. Philbin, J. Sivic, M. Isard and A. Zisserman. Total Recall: Automatic Query
       Expansion with a Generative Feature Model for Object Retrieval. ICCV 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import average_query_expansion
    >>> average_query_expansion(np.zeros((1, 2)), np.array([[1.0, 0], [3, 0], [9, 9]]), k=2)
    array([[1.33333333, 0.        ]])
    """
    k = check_int(k, "k")
    _, idx = knn_search(query, gallery, k=k, metric=metric, device=device)
    Q, G = np.asarray(query), np.asarray(gallery)
    dtype = np.result_type(Q.dtype, G.dtype, np.float32)
    return ((Q + G[idx].sum(axis=1)) / (k + 1)).astype(dtype)
