"""A catalogue sharded over a Dask LocalCluster: the single-process top-k, or a clear error."""

import asyncio
import time

import numpy as np
import pytest

from rankmetric.index import Index, ShardedIndex

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield cluster, client


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_sharded_equals_single_process(cluster, metric):
    _, client = cluster
    rng = np.random.default_rng(1)
    E = rng.normal(size=(200_000, 16)).astype(np.float32)  # the test-sized 200k catalogue
    index = Index.from_embeddings(
        E, ids=[f"i{i}" for i in range(len(E))], metric=metric, backend="exact"
    )
    sharded = ShardedIndex(client, index)
    assert sharded.n_shards == 2 and sum(sharded.shard_sizes) == 200_000
    Q = rng.normal(size=(25, 16)).astype(np.float32)
    d, ids = sharded.search(Q, 10)
    d_ref, ids_ref = index.search(Q, 10)
    np.testing.assert_array_equal(ids, ids_ref)
    np.testing.assert_array_equal(d, d_ref)


def test_ties_across_shards_ordered_as_one_process(cluster):
    _, client = cluster
    E = np.zeros((10, 3), dtype=np.float32)  # every item at the same distance
    index = Index.from_embeddings(E)
    sharded = ShardedIndex(client, index, n_shards=3)
    np.testing.assert_array_equal(sharded.search(E[:2], 4)[1], index.search(E[:2], 4)[1])


def test_worker_lost_mid_query_is_an_error(monkeypatch):
    from rankmetric.index import sharded as module

    rng = np.random.default_rng(2)
    index = Index.from_embeddings(rng.normal(size=(2000, 8)).astype(np.float32))
    slow = module._search_shard

    def slow_search(rows, E, k):
        time.sleep(1.0)
        return slow(rows, E, k)

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        sharded = ShardedIndex(client, index)
        monkeypatch.setattr(module, "_search_shard", slow_search)
        victim = next(iter(cluster.workers.values()))
        loop = cluster.loop.asyncio_loop
        loop.call_later(0.3, lambda: asyncio.ensure_future(victim.close()))
        with pytest.raises(RuntimeError, match="no partial answer"):
            sharded.search(rng.normal(size=(3, 8)).astype(np.float32), 5)
