"""A catalogue sharded over the workers of a Dask cluster, searched exactly.

Each worker holds one contiguous slice of the catalogue's prepared vectors as an exact index
(the norms computed there, once). A query batch is embedded where it is asked, sent to every
shard, each shard returns its ``k`` best (distance, row) and the lists are merged by
(distance, global row): the catalogue's rows are in the same order as in one process, so the
merged top-k is the single-process top-k, ties included. If any shard fails or its worker is
lost, the search raises: an answer is complete or absent, never partial.
"""

from __future__ import annotations

import numpy as np

from .._threads import threads
from .._validation import POSITIVE_INT, check_param
from ._exact import exact_search
from ._rows import Rows

__all__ = ["ShardedIndex"]


def _build_shard(vectors: np.ndarray, metric: str) -> Rows:
    """A shard's rows (vectors already prepared: unit rows for cosine), built on its worker."""
    return Rows.from_arrays(
        np.ascontiguousarray(vectors), np.arange(vectors.shape[0]), None, metric
    )


def _shard_size(rows: Rows) -> int:
    return rows.n


def _search_shard(rows: Rows, E: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    with threads(1):  # one thread per shard: the workers share the machine's cores
        return exact_search(rows, E, min(k, rows.n), None)


class ShardedIndex:
    """An index's catalogue split over the workers of a Dask cluster; exact top-k merged.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster's client.
    index : Index
        The catalogue to shard (its model embeds the queries here, on the client).
    n_shards : int, optional
        Shards (default: one per worker); shard ``s`` goes to worker ``s mod n_workers``.

    Attributes
    ----------
    n_shards : int
        The number of shards.
    shard_sizes : list of int
        Items per shard.

    See Also
    --------
    rankmetric.index.Index : The single-process index it reproduces.

    Examples
    --------
    >>> import numpy as np
    >>> from dask.distributed import Client, LocalCluster
    >>> from rankmetric.index import Index, ShardedIndex
    >>> rng = np.random.default_rng(0)
    >>> index = Index.from_embeddings(rng.normal(size=(1000, 8)).astype(np.float32))
    >>> with LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as cluster:
    ...     with Client(cluster) as client:
    ...         sharded = ShardedIndex(client, index)
    ...         Q = rng.normal(size=(3, 8)).astype(np.float32)
    ...         same = np.array_equal(sharded.search(Q, k=5)[1], index.search(Q, k=5)[1])
    >>> same
    True
    """

    def __init__(self, client, index, n_shards: int | None = None) -> None:
        try:
            from distributed import wait
        except ImportError:  # pragma: no cover - dask is in the test extra
            raise ImportError("ShardedIndex needs Dask: pip install 'rankmetric[dask]'.") from None

        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise ValueError("the Dask cluster has no workers.")
        n_shards = len(workers) if n_shards is None else n_shards
        check_param("n_shards", n_shards, [POSITIVE_INT])
        vectors = index.embedding_vectors()
        if n_shards > vectors.shape[0]:
            raise ValueError(f"n_shards={n_shards} exceeds the {vectors.shape[0]} items.")
        self._client, self._index = client, index
        self._ids = index.ids
        bounds = np.linspace(0, vectors.shape[0], n_shards + 1).astype(np.int64)
        self._starts = bounds[:-1]
        self._shards = []
        for s in range(n_shards):  # one task per shard
            worker = workers[s % len(workers)]
            [part] = client.scatter(
                [vectors[bounds[s] : bounds[s + 1]]], workers=[worker], hash=False
            )
            shard = client.submit(
                _build_shard, part, index.metric, workers=[worker], allow_other_workers=False,
                pure=False,
            )  # fmt: skip
            self._shards.append((worker, shard))
        wait([f for _, f in self._shards])
        sizes = [
            client.submit(_shard_size, f, workers=[w], allow_other_workers=False, pure=False)
            for w, f in self._shards
        ]
        self._check(sizes, "building")  # the shards stay on their workers
        self.n_shards = n_shards
        self.shard_sizes = np.diff(bounds).tolist()

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    def _check(self, futures, what: str):
        try:
            return self._client.gather(futures)
        except Exception as exc:  # a lost worker, a cancelled or failed shard: never partial
            for f in futures:
                f.cancel()
            raise RuntimeError(
                f"a shard of the index failed while {what} ({type(exc).__name__}: {exc}); no "
                "partial answer is returned. Rebuild the ShardedIndex on the remaining workers."
            ) from exc

    def search(self, Q, k: int = 10, *, embedded: bool = False):
        """The exact ``k`` nearest items of each query over all shards.

        Parameters
        ----------
        Q : array-like of shape (n_queries, n_features)
            Raw queries (embeddings when ``embedded=True`` or the index has no model).
        k : int, default=10
            Neighbours per query.
        embedded : bool, default=False
            ``Q`` is already embedded.

        Returns
        -------
        distances : ndarray of shape (n_queries, k), float32
            Ascending per row.
        ids : ndarray of shape (n_queries, k)
            The items' ids, as :meth:`Index.search` returns them.

        Raises
        ------
        RuntimeError
            If a shard fails or its worker is lost during the query.
        """
        check_param("k", k, [POSITIVE_INT])
        k = min(int(k), len(self))
        E = self._index._queries(Q, embedded)
        [Ef] = self._client.scatter([E], broadcast=True, hash=False)
        futures = [
            self._client.submit(
                _search_shard, shard, Ef, k, workers=[w], allow_other_workers=False, pure=False
            )
            for w, shard in self._shards
        ]
        parts = self._check(futures, "answering a query")
        distances = np.concatenate([d for d, _ in parts], axis=1)
        rows = np.concatenate(
            [
                np.where(r >= 0, r + start, -1)
                for (_, r), start in zip(parts, self._starts, strict=True)
            ],
            axis=1,
        )
        key = np.where(rows >= 0, rows, np.iinfo(np.int64).max)
        order = np.lexsort((key, distances), axis=-1)[:, :k]
        return np.take_along_axis(distances, order, 1), self._ids[
            np.take_along_axis(rows, order, 1)
        ]
