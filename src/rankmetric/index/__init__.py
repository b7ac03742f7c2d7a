"""Serving a learned metric: a persistent, filterable index, approximate search, export, shards.

=====================  ====================================================================
``Index``              a catalogue embedded by a model: add, remove, search (exact or faiss
                       IVF / IVF-PQ / HNSW), filter, save / load, evaluate
``evaluate_index``     recall@k of the approximate search and CMC / mAP / mAP@R through it,
                       next to the exact figures
``to_faiss``           a faiss index with the model's linear map as pre-transform
``onnx_graph``         the ONNX graph of a model's ``transform``
``export_onnx``        the same, written to a file
``ShardedIndex``       a catalogue sharded over the workers of a Dask cluster
=====================  ====================================================================

See ``docs/user_guide/serving.md``.
"""

from .core import BACKENDS, Index
from .evaluation import evaluate_index
from .export import export_onnx, onnx_graph, to_faiss
from .sharded import ShardedIndex

__all__ = [
    "BACKENDS",
    "Index",
    "ShardedIndex",
    "evaluate_index",
    "export_onnx",
    "onnx_graph",
    "to_faiss",
]
