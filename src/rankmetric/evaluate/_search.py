"""Moved to :mod:`rankmetric.neighbors`; this alias keeps old imports working."""

from ..neighbors._search import (  # noqa: F401
    MEMORY_BUDGET,
    METRICS,
    Gallery,
    auto_chunk_size,
    check_metric,
    for_each_chunk,
    resolve_chunk_size,
    smallest_k,
    to_distance,
)

__all__ = ["METRICS", "Gallery", "auto_chunk_size", "for_each_chunk", "smallest_k", "to_distance"]
