"""Exact k-nearest-neighbour search, k-NN classification and k-NN accuracy."""

from __future__ import annotations

import numpy as np
import torch

from .._threads import call_threads, search_work
from .._validation import check_option
from ..neighbors import (
    Gallery,
    check_metric,
    faiss_available,
    faiss_search,
    nearest_chunks,
    to_distance,
)
from ._inputs import as_label_array, check_ks, embedding_tensors, encode_labels

__all__ = ["knn_search", "knn_predict", "knn_accuracy"]

BACKENDS = ("auto", "torch", "faiss")


def _resolve_backend(backend: str) -> str:
    """ "auto" → "torch" (faiss-cpu's flat index was slower here; see docs/evaluation.md)."""
    check_option("backend", backend, BACKENDS)
    if backend == "faiss" and not faiss_available():
        raise ImportError("backend='faiss' needs the faiss package: pip install faiss-cpu.")
    return "torch" if backend == "auto" else backend


@call_threads(
    lambda a: search_work(a["gallery"] if a["gallery"] is not None else a["queries"], a["queries"])
)
def knn_search(
    queries,
    gallery=None,
    k: int = 1,
    *,
    metric: str = "euclidean",
    exclude_self: bool | None = None,
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
    backend: str = "auto",
    n_threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest gallery items of each query.

    float32 searches on the CPU score the gallery in cache-sized tiles and keep a running
    top-k per query (memory ``O(chunk × (1024 + k))``; see :mod:`rankmetric.neighbors.tiled`);
    float64, CUDA and ``k > 256`` score full-width chunks of queries.

    Parameters
    ----------
    queries : array-like or tensor of shape (n_queries, n_features)
    gallery : array-like or tensor of shape (n_gallery, n_features), optional
        Items to search. None searches ``queries`` themselves, leaving each query out.
    k : int, default=1
        Neighbours per query; at most ``n_gallery`` (``n_gallery − 1`` when self is excluded).
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
        ``cosine`` is ``1 − cos(q, g)``; a zero vector is at distance 1 from everything.
    exclude_self : bool, optional
        Query ``i`` is gallery item ``i`` and is not its own neighbour (the item is excluded by
        index, so exact duplicates of a query are still found). Defaults to ``gallery is None``;
        with an explicit gallery it requires ``n_queries <= n_gallery``.
    chunk_size : int, optional
        Queries per chunk; None picks 1,024 on the tiled path, else a chunk whose
        temporaries take about 256 MB.
    device : str or torch.device, optional
        Where to compute; None uses CUDA when available.
    backend : {"auto", "torch", "faiss"}, default="auto"
        ``"auto"`` uses the torch search; ``"faiss"`` an exact faiss flat index on the CPU
        (faiss must be installed; float32 only; much slower for large ``k``; which of several
        items tied at the k-th place it keeps is its own choice, see
        :mod:`rankmetric.neighbors._faiss`).
    n_threads : int, optional
        CPU threads (``-1``: every core). None: one thread for small searches (fewer than
        10⁷ multiply-adds), else torch's thread count (see :mod:`rankmetric._threads`).

    Returns
    -------
    distances : ndarray of shape (n_queries, k)
        Ascending per row; float64 if an input is float64, else float32.
    indices : ndarray of shape (n_queries, k), dtype int64
        Gallery indices; equal distances are ordered by the lower index, and the lower index is
        kept when equal distances compete for the last place.

    See Also
    --------
    rankmetric.neighbors.Gallery : The same search against a fixed gallery, many query batches.
    rankmetric.evaluate.knn_predict : The majority vote of the neighbours found.
    rankmetric.evaluate.rerank_k_reciprocal : Re-rank the neighbours (re-identification).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import knn_search
    >>> gallery = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    >>> distances, indices = knn_search(np.array([[0.9, 0.0]]), gallery, k=2)
    >>> indices.tolist(), distances.round(3).tolist()
    ([[1, 0]], [[0.1, 0.9]])
    >>> knn_search(gallery, k=1)[1].ravel().tolist()  # leave-one-out: no item finds itself
    [1, 0, 1]
    """
    metric = check_metric(metric)
    backend = _resolve_backend(backend)
    Q, G = embedding_tensors(queries, gallery, ("queries", "gallery"), device)
    G = Q if G is None else G
    exclude_self = gallery is None if exclude_self is None else bool(exclude_self)
    if exclude_self and Q.shape[0] > G.shape[0]:
        raise ValueError(
            "exclude_self=True means query i is gallery item i, but there are more queries "
            f"({Q.shape[0]}) than gallery items ({G.shape[0]})."
        )
    (k,) = check_ks(k, G.shape[0] - int(exclude_self))
    if backend == "faiss":
        return faiss_search(Q, G, k, metric, exclude_self)
    return _torch_search(Q, G, k, metric, exclude_self, chunk_size)


def _torch_search(Q, G, k, metric, exclude_self, chunk_size) -> tuple[np.ndarray, np.ndarray]:
    """The torch path of :func:`knn_search` on validated tensors."""
    from ..resources import check_memory

    need = Q.shape[0] * k * (Q.element_size() + 8)  # the (queries × k) result
    if need > 1 << 20:  # reading the budget costs ~0.2-1 ms: not for a small search in a loop
        check_memory(
            need,
            f"knn_search's {Q.shape[0]} × {k} neighbours",
            "Ask for fewer neighbours (k) or search the queries in batches.",
        )
    distances = torch.empty((Q.shape[0], k), dtype=Q.dtype, device=Q.device)
    indices = torch.empty((Q.shape[0], k), dtype=torch.int64, device=Q.device)
    chunks = nearest_chunks(
        Q, Gallery.build(G, metric), k, exclude_self=exclude_self, chunk_size=chunk_size
    )
    for rows, values, nearest, const in chunks:
        indices[rows] = nearest
        distances[rows] = to_distance(values, const, metric)
    return distances.cpu().numpy(), indices.cpu().numpy()


def _majority_vote(neighbor_codes: np.ndarray) -> np.ndarray:
    """Most frequent code of each row (n, k); ties go to the smallest code, like scikit-learn."""
    n, k = neighbor_codes.shape
    s = np.sort(neighbor_codes, axis=1)
    run_start = np.ones((n, k), dtype=bool)
    run_start[:, 1:] = s[:, 1:] != s[:, :-1]
    run_id = np.cumsum(run_start.ravel()) - 1
    counts = np.bincount(run_id)[run_id].reshape(n, k)
    return s[np.arange(n), np.argmax(counts, axis=1)]


def knn_predict(X_train, y_train, X_test, k: int = 3, **search_kw) -> np.ndarray:
    """Majority vote of the ``k`` nearest training points.

    Parameters
    ----------
    X_train : array-like or tensor of shape (n_train, n_features)
    y_train : array-like of shape (n_train,)
    X_test : array-like or tensor of shape (n_test, n_features)
    k : int, default=3
    **search_kw
        Passed to :func:`knn_search` (``metric``, ``chunk_size``, ``device``, ``backend``;
        ``exclude_self=True`` with ``X_test`` = ``X_train`` gives leave-one-out predictions).

    Returns
    -------
    ndarray of shape (n_test,)
        Predicted labels (of ``y_train``'s type). Neighbours are chosen as in
        :func:`knn_search`; a tied vote goes to the smallest label, as in scikit-learn's
        ``KNeighborsClassifier(weights="uniform")``.

    See Also
    --------
    rankmetric.evaluate.knn_search : The neighbour search it votes over.
    rankmetric.evaluate.knn_accuracy : The accuracy of these predictions.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import knn_predict
    >>> X_train = np.array([[0.0], [0.2], [4.0], [4.1]])
    >>> knn_predict(X_train, ["a", "a", "b", "b"], np.array([[0.1], [3.9]]), k=3).tolist()
    ['a', 'b']
    """
    n_train = X_train.shape[0] if hasattr(X_train, "shape") else len(X_train)
    classes, (codes,) = encode_labels(y_train, lengths=[n_train], names=["y_train"])
    _, idx = knn_search(X_test, X_train, k, **search_kw)
    return classes[_majority_vote(codes[idx])]


def knn_accuracy(X_train, y_train, X_test, y_test, k: int = 3, **search_kw) -> float:
    """Fraction of test points whose k-NN majority vote (see :func:`knn_predict`) is right.

    Parameters
    ----------
    X_train : array-like or tensor of shape (n_train, n_features)
    y_train : array-like of shape (n_train,)
    X_test : array-like or tensor of shape (n_test, n_features)
    y_test : array-like of shape (n_test,)
    k : int, default=3
    **search_kw
        Passed to :func:`knn_search`.

    Returns
    -------
    float in [0, 1]

    See Also
    --------
    rankmetric.evaluate.knn_predict : The predictions it scores.
    rankmetric.evaluate.repeated_cv_knn : The accuracy of a learned metric under repeated CV.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import knn_accuracy
    >>> X_train, y_train = np.array([[0.0], [0.2], [4.0], [4.1]]), np.array([0, 0, 1, 1])
    >>> knn_accuracy(X_train, y_train, np.array([[0.1], [3.9], [2.5]]), [0, 1, 0], k=1)
    0.6666666666666666
    """
    y_test = as_label_array(y_test, "y_test")
    n_test = X_test.shape[0] if hasattr(X_test, "shape") else len(X_test)
    if y_test.shape[0] != n_test:
        raise ValueError(f"y_test has {y_test.shape[0]} labels but X_test has {n_test} rows.")
    predicted = knn_predict(X_train, y_train, X_test, k, **search_kw)
    return float(np.mean(predicted == y_test))
