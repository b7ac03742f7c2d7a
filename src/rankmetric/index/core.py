"""``Index``: a learned metric's catalogue, searchable, filterable, saved and served."""

from __future__ import annotations

import os

import numpy as np

from .._threads import call_threads
from .._validation import POSITIVE_INT, check_param
from ..neighbors import check_metric
from . import _ann
from ._exact import exact_search
from ._filters import allowed_rows
from ._model import (
    EMBED_CHUNK,
    as_float32_rows,
    embedded_chunks,
    implied_metric,
    linear_map,
    transform_of,
)
from ._rows import Rows, as_ids, unit_rows

__all__ = ["Index", "BACKENDS"]

BACKENDS = ("auto", "exact", "ivf", "ivfpq", "hnsw")


class Index:
    """A catalogue embedded by a learned metric, searched exactly or approximately.

    The index keeps the embedded catalogue (float32), each item's id (integers, strings or any
    hashable) and optional per-item attributes; it embeds what is added in bounded-memory
    chunks, searches with the metric the model implies (learned Euclidean; cosine on the sphere
    for :class:`~rankmetric.SSNE`), filters by mask, id set or a predicate over the attributes,
    and is saved to a folder that loads without executing code, its vectors memory-mapped.

    Parameters
    ----------
    model : fitted estimator, callable or None, default=None
        What embeds raw rows: a fitted estimator (its ``transform``), any callable
        ``X -> embeddings``, or None when only precomputed embeddings are added.
    metric : {"euclidean", "sqeuclidean", "cosine"}, optional
        Defaults to the metric the model implies: ``"cosine"`` for SSNE, else ``"euclidean"``.
    backend : {"auto", "exact", "ivf", "ivfpq", "hnsw"}, default="auto"
        ``"exact"``: the project's exact kernel with prepared norms. ``"ivf"`` (faiss
        IVF-Flat), ``"ivfpq"`` (IVF with product quantisation, candidates re-ranked exactly) and
        ``"hnsw"``: approximate, built when the catalogue is first added (faiss-cpu needed).
        ``"auto"``: exact below 200,000 items, IVF-Flat below 10 million, IVF-PQ beyond.
    nlist, nprobe : int, optional
        IVF lists and lists visited per query (default ``4 √n`` and ``nlist / 16``).
    hnsw_m, ef_search : int, optional
        HNSW links per node (default 32) and search breadth (default ``max(64, 4 k)``).
    pq_m : int, optional
        IVF-PQ sub-quantisers (default: the largest divisor of the dimension up to ``dim / 4``).
    refine : int, optional
        Candidates fetched per result and re-ranked by exact distance (default 4 for IVF-PQ,
        1 otherwise).
    random_state : int, default=0
        Seed of the training sample of the IVF quantisers.
    chunk_size : int, default=65536
        Rows embedded at once by :meth:`add`.
    n_threads : int, optional
        Search threads (``-1``: every core); None: sized by the search's work, or as an
        enclosing :func:`rankmetric.threads` block says.

    Attributes
    ----------
    ids : ndarray of shape (n_items,)
        The items' ids, in the order they were added (removed items left out).
    dim : int
        The embedding dimension (None before the first add).

    See Also
    --------
    rankmetric.evaluate.knn_search : Stateless exact search, for one-off evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric import Index
    >>> catalogue = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    >>> index = Index.from_embeddings(catalogue, ids=["a", "b", "c"])
    >>> distances, ids = index.search(np.array([[0.9, 0.0]]), k=2)
    >>> ids.tolist(), [[round(float(d), 3) for d in row] for row in distances]
    ([['b', 'a']], [[0.1, 0.9]])
    >>> index.search(np.array([[0.9, 0.0]]), k=1, filter={"a", "c"})[1].tolist()
    [['a']]
    """

    def __init__(
        self,
        model=None,
        *,
        metric: str | None = None,
        backend: str = "auto",
        nlist: int | None = None,
        nprobe: int | None = None,
        hnsw_m: int = 32,
        ef_search: int | None = None,
        pq_m: int | None = None,
        refine: int | None = None,
        random_state: int = 0,
        chunk_size: int = EMBED_CHUNK,
        n_threads: int | None = None,
    ) -> None:
        self._transform = transform_of(model)
        self.model = model
        self.metric = check_metric(metric if metric is not None else implied_metric(model))
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}.")
        self.backend = backend
        self.params = _ann.check_params(
            nlist=nlist, nprobe=nprobe, hnsw_m=hnsw_m, ef_search=ef_search, pq_m=pq_m,
            refine=refine, random_state=random_state,
        )  # fmt: skip
        check_param("chunk_size", chunk_size, [POSITIVE_INT])
        self.chunk_size = chunk_size
        self.n_threads = n_threads
        self._rows: Rows | None = None
        self._ann: _ann.ApproximateIndex | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def build(cls, model, X, ids=None, attributes=None, **params) -> Index:
        """An index of catalogue ``X`` embedded by ``model`` (see :meth:`add`).

        Parameters
        ----------
        model : fitted estimator or callable
            What embeds the rows of ``X``.
        X : array-like of shape (n_items, n_features)
            The raw catalogue (may be memory-mapped: it is read chunk by chunk).
        ids, attributes : optional
            As in :meth:`add`.
        **params
            The other parameters of :class:`Index`.

        Returns
        -------
        Index
            The index, trained and filled.
        """
        return cls(model, **params).add(X, ids, attributes)

    @classmethod
    def from_embeddings(cls, embeddings, ids=None, attributes=None, **params) -> Index:
        """An index of precomputed ``embeddings`` (no model: queries are embeddings too).

        Parameters
        ----------
        embeddings, ids, attributes
            As in :meth:`add_embeddings`: the embedded catalogue, and optionally its ids and
            attributes.
        **params
            The other parameters of :class:`Index` (``metric=``, ``backend=``, ...).

        Returns
        -------
        Index
            The index, trained and filled.
        """
        return cls(None, **params).add_embeddings(embeddings, ids, attributes)

    # ------------------------------------------------------------------ contents
    def __len__(self) -> int:
        return 0 if self._rows is None else self._rows.n - self._rows.n_dead

    def __repr__(self) -> str:
        return (
            f"Index(n_items={len(self)}, dim={self.dim}, metric={self.metric!r}, "
            f"backend={self.resolved_backend!r})"
        )

    @property
    def dim(self) -> int | None:
        return None if self._rows is None else self._rows.dim

    @property
    def ids(self) -> np.ndarray:
        return np.empty(0, dtype=np.int64) if self._rows is None else self._rows.live_ids()

    @property
    def attributes(self) -> dict[str, np.ndarray]:
        """The per-item attributes of the living items, in :attr:`ids` order."""
        return {} if self._rows is None else self._rows.live_attributes()

    @property
    def resolved_backend(self) -> str:
        """The backend in use: ``backend``, or what ``"auto"`` chose at the first add."""
        if self._ann is not None:
            return self._ann.kind
        return self.backend if self.backend != "auto" or self._rows is None else "exact"

    def embedding_vectors(self) -> np.ndarray:
        """The living items' embeddings (float32, :attr:`ids` order; unit rows for cosine).

        Returns
        -------
        ndarray of shape (n_items, dim)
            A view of the stored (possibly memory-mapped) vectors when nothing was removed.
        """
        return np.empty((0, 0), np.float32) if self._rows is None else self._rows.live_vectors()

    def embed(self, X) -> np.ndarray:
        """Raw rows embedded by the index's model (rows are returned as they are without one).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Raw rows (or embeddings, for an index without a model).

        Returns
        -------
        ndarray of shape (n, dim), float32
            The embeddings.
        """
        parts = [E for _, E in embedded_chunks(self._transform, X, self.chunk_size)]
        if not parts:
            raise ValueError("X is empty.")
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def add(self, X, ids=None, attributes=None) -> Index:
        """Embed the raw rows ``X`` chunk by chunk and add them.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Raw rows (embeddings when the index has no model); may be memory-mapped.
        ids : sequence of hashables, optional
            One id per row, unique in the index; default: consecutive integers after the largest
            integer id in use.
        attributes : dict of str to array-like of shape (n,), optional
            Per-item attributes (numbers or strings) for filtering; once an index has
            attributes every add must give the same names.

        Returns
        -------
        Index
            ``self``.
        """
        if self._transform is None:
            return self.add_embeddings(X, ids, attributes)
        n = len(X)
        ids, attributes = self._check_new(n, ids, attributes)
        self._prepare_backend(n, lambda rows: self.embed(X[rows]))
        for rows, E in embedded_chunks(self._transform, X, self.chunk_size):
            self._append(E, ids[rows], _slice(attributes, rows))
        return self

    def add_embeddings(self, embeddings, ids=None, attributes=None) -> Index:
        """Add precomputed embeddings (already mapped by the model).

        Parameters
        ----------
        embeddings : array-like of shape (n, dim)
            The embedded items.
        ids, attributes : optional
            As in :meth:`add`.

        Returns
        -------
        Index
            ``self``.
        """
        E = as_float32_rows(embeddings, "embeddings")
        ids, attributes = self._check_new(E.shape[0], ids, attributes)
        self._prepare_backend(E.shape[0], lambda rows: E[rows])
        for start in range(0, E.shape[0], self.chunk_size):  # chunks of rows
            rows = slice(start, start + self.chunk_size)
            self._append(E[rows], ids[rows], _slice(attributes, rows))
        return self

    def remove(self, ids) -> int:
        """Remove the items ``ids`` (each must be in the index).

        Parameters
        ----------
        ids : iterable of hashables
            The ids to remove.

        Returns
        -------
        int
            The number of items removed.
        """
        if self._rows is None:
            raise ValueError("the index is empty: there is nothing to remove.")
        return self._rows.remove(ids)

    def set_search(self, *, nprobe=None, ef_search=None, refine=None) -> Index:
        """Change the breadth of the approximate search (the structure is not rebuilt).

        Parameters
        ----------
        nprobe : int, optional
            IVF lists visited per query.
        ef_search : int, optional
            HNSW search breadth.
        refine : int, optional
            Candidates fetched per result and re-ranked exactly.

        Returns
        -------
        Index
            ``self``; parameters left at None keep their value.
        """
        given = {"nprobe": nprobe, "ef_search": ef_search, "refine": refine}
        checked = _ann.check_params(
            **{k: self.params[k] for k in ("nlist", "hnsw_m", "pq_m", "random_state")}, **given
        )
        self.params.update({k: checked[k] for k, v in given.items() if v is not None})
        return self

    # ------------------------------------------------------------------ search
    @call_threads(lambda a: float(len(a["Q"])) * len(a["self"]) * (a["self"].dim or 0))
    def search(self, Q, k: int = 10, *, filter=None, exact: bool = False, embedded: bool = False):
        """The ``k`` nearest items of each query.

        Parameters
        ----------
        Q : array-like of shape (n_queries, n_features)
            Raw queries, embedded by the model (or embeddings when ``embedded=True`` or the
            index has no model).
        k : int, default=10
            Neighbours per query.
        filter : boolean array, set of ids or callable, optional
            Which items may be returned: a boolean array over :attr:`ids`; a ``set`` of ids; or
            a callable taking the dict of attribute arrays and returning such a boolean array
            (vectorised: ``lambda a: a["year"] >= 2020``).
        exact : bool, default=False
            Search exactly even when the index has an approximate backend.
        embedded : bool, default=False
            ``Q`` is already embedded.

        Returns
        -------
        distances : ndarray of shape (n_queries, k), float32
            Ascending per row; ``inf`` past the number of admissible items.
        ids : ndarray of shape (n_queries, k)
            The items' ids (int64 for integer ids, else object); -1 (integer ids) or None past
            the number of admissible items. Equal distances are ordered by the earlier-added
            item.
        """
        rows = self._nonempty()
        check_param("k", k, [POSITIVE_INT])
        E = self._queries(Q, embedded)
        allowed = allowed_rows(rows, filter)
        if self._ann is not None and not exact:
            raw = None if (embedded or self._transform is None) else Q
            distances, found = self._ann.search(rows, E, raw, int(k), allowed)
        else:
            distances, found = exact_search(rows, E, int(k), allowed)
        return distances, self._ids_of(found)

    def evaluate(self, Q, query_labels, labels=None, **options) -> dict:
        """Recall@k of the approximate search against exact search, and the retrieval scores.

        See :func:`rankmetric.index.evaluate_index` for the options and the result.

        Parameters
        ----------
        Q : array-like of shape (n_queries, n_features)
            Raw queries (embeddings for an index without a model).
        query_labels : array-like of shape (n_queries,)
            Each query's identity or class.
        labels : array-like of shape (n_items,) or str, optional
            The items' labels, or the name of the attribute holding them (default
            ``"label"``).
        **options
            ``k``, ``ranks``, ``depth``, ``filter``.

        Returns
        -------
        dict
            ``{"recall@k": ..., "exact": {...}, "approximate": {...}}``.
        """
        from .evaluation import evaluate_index

        return evaluate_index(self, Q, query_labels, labels, **options)

    # ------------------------------------------------------------------ files and export
    def save(self, path: str | os.PathLike) -> None:
        """Write the index to the folder ``path`` (created or replaced; see :func:`load_index`).

        Parameters
        ----------
        path : str or path-like
            The folder.

        Returns
        -------
        None
            The folder holds the vectors, ids, attributes, model and approximate structure.
        """
        from ._store import save_index

        save_index(self, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        mmap: bool = True,
        rebuild: bool = False,
        verify: bool = True,
    ) -> Index:
        """Read an index folder written by :meth:`save` (no code is executed).

        Parameters
        ----------
        path : str or path-like
            The folder.
        mmap : bool, default=True
            Memory-map the vectors instead of reading them.
        rebuild : bool, default=False
            Rebuild the approximate structure from the vectors instead of reading faiss's file.
        verify : bool, default=True
            Check every file's SHA-256 and that the vectors are finite (one read of the
            catalogue); False checks sizes and headers only, for a trusted, very large folder.

        Returns
        -------
        Index
            The index.
        """
        from ._store import load_index

        return load_index(path, mmap=mmap, rebuild=rebuild, verify=verify)

    def to_faiss(self, factory: str | None = None):
        """A faiss index of this catalogue, the model's linear map baked in as pre-transform.

        Parameters
        ----------
        factory : str, optional
            A faiss index-factory string for the embedded space (default ``"Flat"``); one that
            needs training is trained on the catalogue's embeddings.

        Returns
        -------
        faiss.Index
            Holding the catalogue (faiss id ``i`` is ``ids[i]``); it takes raw rows when the
            model is linear (``IndexPreTransform``), else embeddings.
        """
        from .export import to_faiss

        index = to_faiss(self.model, factory or "Flat", dim=self.dim, metric=self.metric)
        vectors = self.embedding_vectors()
        if len(self):
            _ann.train_embedded(index, vectors)
            _ann.add_embedded(index, vectors)
        return index

    def export_onnx(self, path: str | os.PathLike) -> None:
        """Write the model's transform as an ONNX graph (see :func:`rankmetric.index.export_onnx`).

        Parameters
        ----------
        path : str or path-like
            The ``.onnx`` file.

        Returns
        -------
        None
            The file maps raw float32 rows to the embeddings the index stores.
        """
        from .export import export_onnx

        export_onnx(self.model, path)

    # ------------------------------------------------------------------ internals
    def _nonempty(self) -> Rows:
        if self._rows is None or len(self) == 0:
            raise ValueError("the index is empty: add items before searching it.")
        return self._rows

    def _queries(self, Q, embedded: bool) -> np.ndarray:
        E = as_float32_rows(Q, "Q") if embedded or self._transform is None else self.embed(Q)
        if E.shape[1] != self.dim:
            raise ValueError(f"the queries have {E.shape[1]} dimensions, the index {self.dim}.")
        return E

    def _ids_of(self, found: np.ndarray):
        ids = self._rows.ids[np.where(found >= 0, found, 0)]
        if (found < 0).any():
            ids = ids.copy()
            ids[found < 0] = -1 if ids.dtype == np.int64 else None
        return ids

    def _check_new(self, n: int, ids, attributes):
        if n == 0:
            raise ValueError("X is empty: nothing to add.")
        rows = self._rows
        if ids is None:
            ids = rows.next_ids(n) if rows is not None else np.arange(n, dtype=np.int64)
        ids = as_ids(ids, n)
        if len(set(ids.tolist())) != n:
            raise ValueError("ids repeat within the items being added.")
        if rows is not None:
            rows.check_new_ids(ids)
        return ids, _check_attributes(attributes, n, rows)

    def _prepare_backend(self, n: int, embed_rows) -> None:
        """At the first add: pick the backend for ``n`` items and train it on a sample."""
        if self._ann is not None or (self._rows is not None and self._rows.n):
            return
        kind = _ann.resolve_backend(self.backend, n)
        if kind == "exact":
            return
        dim = embed_rows(np.arange(1)).shape[1]
        ann = _ann.ApproximateIndex.create(
            kind, dim, n, self.params, self.metric, linear=linear_map(self.model)
        )
        if ann.needs_training:
            sample = embed_rows(_ann.training_rows(n, ann.nlist(), self.params["random_state"]))
            if self.metric == "cosine":
                sample = unit_rows(sample)
            ann.train(sample)
        self._ann = ann

    def _append(self, E: np.ndarray, ids, attributes) -> None:
        if self._rows is None:
            self._rows = Rows(E.shape[1], self.metric)
            if attributes is not None:
                self._rows.attributes = {
                    name: np.empty(0, dtype=v.dtype) for name, v in attributes.items()
                }
        elif E.shape[1] != self._rows.dim:
            raise ValueError(f"the new items have {E.shape[1]} dimensions, the index {self.dim}.")
        first = self._rows.n
        self._rows.append(E, ids, attributes)
        if self._ann is not None:
            self._ann.add(self._rows.vectors[first : self._rows.n])


def _slice(attributes: dict | None, rows: slice) -> dict | None:
    return None if attributes is None else {k: v[rows] for k, v in attributes.items()}


def _check_attributes(attributes, n: int, rows: Rows | None) -> dict | None:
    """Per-item attributes as 1-D arrays of numbers or strings (object), checked."""
    expected = None if rows is None or rows.n == 0 else rows.attributes
    if attributes is None:
        if expected:
            raise ValueError(f"this index has attributes {sorted(expected)}: give them too.")
        return None
    if not isinstance(attributes, dict) or not all(isinstance(k, str) for k in attributes):
        raise ValueError("attributes must be a dict of str to arrays.")
    if rows is not None and rows.n and set(attributes) != set(expected or ()):
        raise ValueError(
            f"attributes must have the index's names {sorted(expected or ())}, got "
            f"{sorted(attributes)}."
        )
    out = {}
    for name, values in attributes.items():
        a = np.asarray(values)
        if a.shape != (n,):
            raise ValueError(
                f"attribute {name!r} must have one value per item ({n},), got {a.shape}."
            )
        if a.dtype.kind in "US":
            a = a.astype(str).astype(object)
        elif a.dtype.kind not in "biuf":
            raise ValueError(f"attribute {name!r} must hold numbers or strings, got {a.dtype}.")
        out[name] = a
    return out
