"""Approximate backends on faiss (optional dependency): IVF-Flat, IVF-PQ and HNSW.

faiss indexes the *embedded* catalogue, row ``i`` of the index as faiss id ``i`` (rows are only
appended; removed items are masked at search time with an ``IDSelectorBitmap``, as filters are).
For a linear model (``transform(X) = X @ L.T``) the faiss index is an ``IndexPreTransform``
whose ``LinearTransform`` is ``L``: queries go in raw and faiss applies the learned map. The
candidates faiss returns (``refine × k`` of them) are re-ranked by their exact distance to the
query embedding, so reported distances are exact and only *which* items are found is
approximate (IVF-PQ's compressed distances never reach the user). A query left with fewer
than ``k`` admissible items (a selective filter on a graph or a few lists) is answered by the
exact search: never fewer results than exist.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import torch

from .._distances import paired_squared_euclidean
from .._validation import NONE, POSITIVE_INT, Interval, check_param
from ._exact import exact_search
from ._rows import unit_rows

__all__ = [
    "ApproximateIndex",
    "check_params",
    "import_faiss",
    "resolve_backend",
    "AUTO_EXACT_BELOW",
]

KINDS = ("ivf", "ivfpq", "hnsw")
#: ``backend="auto"``: exact search below this many items (a full scan of 200,000 × 64 float32
#: items takes milliseconds), IVF-Flat from here ...
AUTO_EXACT_BELOW = 200_000
#: ... and IVF-PQ (4 bytes per vector component become 1/4 byte) from here.
AUTO_PQ_FROM = 10_000_000
_TRAIN_PER_LIST = 64  # training rows per IVF list (faiss warns below 39)
_INT_PARAMS = ("nlist", "nprobe", "hnsw_m", "ef_search", "pq_m", "refine")


def check_params(**params) -> dict:
    """The approximate-search parameters, each a positive integer or None."""
    for name in _INT_PARAMS:
        check_param(name, params[name], [NONE, POSITIVE_INT])
    check_param(
        "random_state", params["random_state"], [Interval(Integral, None, None, closed="neither")]
    )
    return {k: (None if v is None else int(v)) for k, v in params.items()}


def resolve_backend(backend: str, n: int) -> str:
    """``backend``, with ``"auto"`` chosen by the catalogue size ``n``."""
    if backend == "auto":
        if n < AUTO_EXACT_BELOW:
            return "exact"
        backend = "ivf" if n < AUTO_PQ_FROM else "ivfpq"
    return backend


def import_faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss is in the test extra
        raise ImportError(
            "approximate backends need faiss: pip install 'rankmetric[faiss]' (faiss-cpu)."
        ) from exc
    return faiss


def default_nlist(n: int) -> int:
    """``4 √n`` lists, at most one per 39 items (faiss's least training sample per list)."""
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


def default_pq_m(dim: int) -> int:
    """The largest divisor of ``dim`` up to ``dim / 4`` (8-bit codes: ``dim`` bytes → m)."""
    return max(m for m in range(1, max(1, dim // 4) + 1) if dim % m == 0)


def pq_bits(n: int) -> int:
    """Bits per PQ code: 8 (256 centroids per sub-quantiser) once 39 × 256 items train them."""
    return int(min(8, max(4, math.floor(math.log2(max(n, 16) / 39)))))


def training_rows(n: int, nlist: int, seed: int) -> np.ndarray:
    """Sorted rows of the IVF training sample (``64 × nlist``, or all)."""
    size = min(n, _TRAIN_PER_LIST * nlist)
    if size == n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def pre_transformed(L: np.ndarray, sub, metric: str):
    """``IndexPreTransform``: the linear map ``L`` (then unit rows for cosine), then ``sub``.

    The pre-transform owns its transforms and ``sub`` (their Python wrappers are disowned).
    """
    faiss = import_faiss()
    lt = faiss.LinearTransform(L.shape[1], L.shape[0], False)  # x @ L.T
    faiss.copy_array_to_vector(np.ascontiguousarray(L, dtype=np.float32).ravel(), lt.A)
    lt.is_trained = True
    if metric == "cosine":
        norm = faiss.NormalizationTransform(L.shape[0], 2.0)
        index = faiss.IndexPreTransform(norm, sub)
        index.prepend_transform(lt)
        norm.this.disown()
    else:
        index = faiss.IndexPreTransform(lt, sub)
    index.own_fields = True
    lt.this.disown()
    sub.this.disown()
    return index


def _inner(index):
    """``index`` past its pre-transform, when it has one (the structure embeddings go into)."""
    faiss = import_faiss()
    pre = isinstance(index, faiss.IndexPreTransform)
    return faiss.downcast_index(index.index) if pre else index


def add_embedded(index, E: np.ndarray) -> None:
    """Add embeddings to ``index``, past its pre-transform when it has one."""
    sub = _inner(index)
    sub.add(E)
    index.ntotal = sub.ntotal


def train_embedded(index, E: np.ndarray) -> None:
    """Train ``index`` (past its pre-transform) on embeddings, when it needs training."""
    sub = _inner(index)
    if not sub.is_trained:
        sub.train(np.ascontiguousarray(E, dtype=np.float32))
        index.is_trained = True


class ApproximateIndex:
    """A faiss structure over an index's rows (internal: :class:`Index` drives it)."""

    def __init__(self, kind: str, index, params: dict, metric: str) -> None:
        self.kind, self.index, self.params, self.metric = kind, index, params, metric

    @classmethod
    def create(cls, kind: str, dim: int, n: int, params: dict, metric: str, linear=None):
        faiss = import_faiss()
        if kind == "hnsw":
            sub = faiss.IndexHNSWFlat(dim, params["hnsw_m"] or 32)
            sub.hnsw.efConstruction = 80
        else:
            nlist = params["nlist"] or default_nlist(n)
            quantizer = faiss.IndexFlatL2(dim)
            if kind == "ivf":
                sub = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_L2)
            else:
                m = params["pq_m"] or default_pq_m(dim)
                if dim % m:
                    raise ValueError(f"pq_m={m} must divide the dimension {dim}.")
                sub = faiss.IndexIVFPQ(quantizer, dim, nlist, m, pq_bits(n))
            sub.own_fields = True
            quantizer.this.disown()  # sub owns it now
        index = sub if linear is None else pre_transformed(linear, sub, metric)
        return cls(kind, index, params, metric)

    @property
    def sub(self):
        return _inner(self.index)

    @property
    def needs_training(self) -> bool:
        return not self.sub.is_trained

    def train(self, E: np.ndarray) -> None:
        train_embedded(self.index, E)

    def add(self, E: np.ndarray) -> None:
        add_embedded(self.index, np.ascontiguousarray(E, dtype=np.float32))

    def nlist(self) -> int | None:
        return getattr(self.sub, "nlist", None)

    def _search_parameters(self, k: int, allowed: np.ndarray | None):
        """faiss search parameters (breadth and id selector), and what must outlive the call."""
        faiss = import_faiss()
        keep = []
        if self.kind == "hnsw":
            inner = faiss.SearchParametersHNSW()
            inner.efSearch = self.params["ef_search"] or max(64, 4 * k)
        else:
            inner = faiss.SearchParametersIVF()
            inner.nprobe = min(self.params["nprobe"] or max(1, self.nlist() // 16), self.nlist())
        if allowed is not None:
            bits = np.packbits(allowed, bitorder="little")
            selector = faiss.IDSelectorBitmap(allowed.shape[0], faiss.swig_ptr(bits))
            inner.sel = selector
            keep += [bits, selector]
        if isinstance(self.index, faiss.IndexPreTransform):
            outer = faiss.SearchParametersPreTransform()
            outer.index_params = inner
            keep.append(inner)
            return outer, keep
        return inner, keep

    def search(self, rows, E: np.ndarray, raw, k: int, allowed: np.ndarray | None):
        """Distances (exact, re-ranked) and rows (-1 past the admissible items) of ``E``."""
        faiss = import_faiss()
        if self.metric == "cosine":
            E = unit_rows(E)
        refine = self.params["refine"] or (4 if self.kind == "ivfpq" else 1)
        fetch = max(1, min(k * refine, rows.n))
        params, keep = self._search_parameters(k, allowed)
        use_raw = raw is not None and isinstance(self.index, faiss.IndexPreTransform)
        queries = np.ascontiguousarray(np.asarray(raw), dtype=np.float32) if use_raw else E
        # faiss.contrib.torch_utils (imported by pytorch-metric-learning, for one) replaces
        # Index.search with a wrapper that drops ``params``; its original stays search_numpy
        search = getattr(self.index, "search_numpy", self.index.search)
        _, found = search(queries, fetch, params=params)
        del keep
        distances, found = self._rerank(rows, E, found, k)
        # a selective filter can leave a graph or list search short of k admissible items:
        # those queries are answered exactly rather than with fewer results than exist
        n_allowed = rows.n - rows.n_dead if allowed is None else int(allowed.sum())
        short = (found[:, : min(k, n_allowed)] < 0).any(axis=1)
        if short.any():
            alive = (
                allowed if allowed is not None else (rows.alive[: rows.n] if rows.n_dead else None)
            )
            d, f = exact_search(rows, np.ascontiguousarray(E[short]), k, alive)
            distances[short], found[short] = d, f
        return distances, found

    def _rerank(self, rows, E: np.ndarray, found: np.ndarray, k: int):
        """Exact distances of the candidates, sorted by (distance, row); the best ``k`` kept."""
        valid = found >= 0
        cand = torch.from_numpy(rows.vectors[np.where(valid, found, 0)])  # (n_q, fetch, d)
        d2 = paired_squared_euclidean(torch.from_numpy(E)[:, None, :], cand).numpy()
        d2 = np.where(valid, d2, np.inf).astype(np.float32)
        order = np.lexsort((np.where(valid, found, np.iinfo(np.int64).max), d2), axis=-1)
        d2 = np.take_along_axis(d2, order, axis=1)[:, :k]
        found = np.take_along_axis(found, order, axis=1)[:, :k]
        if found.shape[1] < k:
            pad = k - found.shape[1]
            d2 = np.pad(d2, ((0, 0), (0, pad)), constant_values=np.inf)
            found = np.pad(found, ((0, 0), (0, pad)), constant_values=-1)
        found = np.where(np.isfinite(d2), found, -1)
        if self.metric == "cosine":
            return np.clip(d2 / 2.0, 0.0, 2.0).astype(np.float32), found
        return (np.sqrt(d2) if self.metric == "euclidean" else d2), found

    def to_bytes(self) -> np.ndarray:
        return import_faiss().serialize_index(self.index)

    @classmethod
    def from_bytes(cls, kind: str, blob: np.ndarray, params: dict, metric: str):
        return cls(kind, import_faiss().deserialize_index(blob), params, metric)
