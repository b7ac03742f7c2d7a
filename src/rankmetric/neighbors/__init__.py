"""Exact nearest-neighbour search on tensors: the engine below both estimators and evaluation.

=====================  =====================================================================
``nearest_chunks``     chunk by chunk, the k nearest gallery items of each query (exact order)
``Gallery``            a gallery prepared for scoring under a metric
``for_each_chunk``     full-width score chunks, for consumers that need whole rows (CMC)
``ranking_keys``       unique int64 keys ordering each row by (score, lower index)
``relevant_places``    the place of each relevant item in each row's ranking (exact, no keys)
``smallest_k``         the k smallest entries of each row, ties by the lower column
``to_distance``        ranking scores back to distances
``faiss_search``       the same search with a faiss flat index (optional dependency)
=====================  =====================================================================

Input validation (array types, NaNs, neighbour counts) is the caller's: these functions take
tensors. Users call :func:`rankmetric.evaluate.knn_search`.
"""

from ._faiss import faiss_available, faiss_search
from ._places import ranking_keys, relevant_places, smallest_k
from ._search import (
    METRICS,
    Gallery,
    auto_chunk_size,
    check_metric,
    for_each_chunk,
    resolve_chunk_size,
    squared_norms,
    to_distance,
)
from .tiled import MAX_TILED_K, nearest_chunks, uses_tiles

__all__ = [
    "METRICS",
    "MAX_TILED_K",
    "Gallery",
    "auto_chunk_size",
    "check_metric",
    "faiss_available",
    "faiss_search",
    "for_each_chunk",
    "nearest_chunks",
    "ranking_keys",
    "relevant_places",
    "resolve_chunk_size",
    "smallest_k",
    "squared_norms",
    "to_distance",
    "uses_tiles",
]
