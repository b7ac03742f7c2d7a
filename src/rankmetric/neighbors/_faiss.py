"""Exact search with a faiss flat index (optional dependency: ``pip install faiss-cpu``).

faiss computes float32 scores with its own blocked matrix products and keeps each query's k
best in a heap: which of several items tied at the k-th place it keeps is its own choice (not
always the lower index). The k it returns are re-ordered here by (distance, lower index), so
results differ from the torch path only when distinct items tie at the last place.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import torch

from ._search import Gallery, to_distance

__all__ = ["faiss_available", "faiss_search"]


def faiss_available() -> bool:
    """Whether the ``faiss`` package can be imported.

    Returns
    -------
    bool
        True when ``faiss`` is installed (``pip install rankmetric[faiss]``).

    See Also
    --------
    rankmetric.neighbors.faiss_search : The search it enables.

    Examples
    --------
    >>> from rankmetric.neighbors import faiss_available
    >>> isinstance(faiss_available(), bool)
    True
    """
    return importlib.util.find_spec("faiss") is not None


def faiss_search(
    Q: torch.Tensor, G: torch.Tensor, k: int, metric: str, exclude_self: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Distances (n_queries, k) and indices (int64) with faiss ``IndexFlatL2``/``IndexFlatIP``.

    Computed in float32 on the CPU; distances are returned in ``Q``'s precision.

    Parameters
    ----------
    Q : tensor of shape (n_queries, d)
        The queries.
    G : tensor of shape (n_gallery, d)
        The gallery.
    k : int
        Neighbours per query.
    metric : {"euclidean", "sqeuclidean", "cosine"}
        The distance.
    exclude_self : bool
        Query ``i`` is gallery item ``i`` and is not its own neighbour.

    Returns
    -------
    distances : ndarray of shape (n_queries, k)
        Ascending per row.
    indices : ndarray of shape (n_queries, k), int64
        Gallery indices.

    See Also
    --------
    rankmetric.evaluate.knn_search : The same search in torch (``backend="faiss"`` uses this).
    rankmetric.neighbors.faiss_available : Whether faiss is installed.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import faiss_search
    >>> G = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    >>> distances, indices = faiss_search(G, G, 1, "euclidean", exclude_self=True)
    >>> indices.tolist()
    [[1], [0]]
    """
    import faiss

    space = Gallery.build(G.to("cpu", torch.float32), metric)
    Qp, _ = space.prepare_queries(Q.to("cpu", torch.float32))
    index = faiss.IndexFlatIP(G.shape[1]) if metric == "cosine" else faiss.IndexFlatL2(G.shape[1])
    index.add(space.vectors.numpy())
    found, idx = index.search(Qp.numpy(), k + int(exclude_self))
    if exclude_self:
        found, idx = _drop_self(found, idx, k)
    # faiss gives ||q − g||² (L2) or q̂ᵀĝ (inner product); as ranking scores with a zero query
    # constant these are ||q − g||² and −q̂ᵀĝ, which to_distance turns into distances.
    scores = torch.from_numpy(np.ascontiguousarray(-found if metric == "cosine" else found))
    dist = to_distance(scores, torch.zeros(scores.shape[0]), metric).numpy()
    order = np.lexsort((idx, dist), axis=-1)
    dtype = np.float64 if Q.dtype == torch.float64 else np.float32
    dist = np.take_along_axis(dist, order, axis=1).astype(dtype, copy=False)
    return dist, np.take_along_axis(idx.astype(np.int64), order, axis=1)


def _drop_self(found: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Remove each query's own index from ``k + 1`` results (or the last one if absent)."""
    is_self = idx == np.arange(idx.shape[0])[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    keep = ~is_self
    return found[keep].reshape(-1, k), idx[keep].reshape(-1, k)
