"""Index: add, remove, search (exact, against brute force), filters, ids, attributes."""

import warnings

import numpy as np
import pytest
import torch

from rankmetric.evaluate import knn_search
from rankmetric.index import Index


def brute(Q, G, k, metric="euclidean"):
    if metric == "cosine":
        Gn = G / np.linalg.norm(G, axis=1, keepdims=True)
        Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        d = 1.0 - Qn @ Gn.T
    else:
        d = ((Q[:, None, :].astype(np.float64) - G[None].astype(np.float64)) ** 2).sum(-1)
        d = np.sqrt(d) if metric == "euclidean" else d
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, order, 1), order


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("n_queries", [1, 40])
def test_exact_search_matches_brute_force(rng, metric, n_queries):
    G = rng.normal(size=(3000, 12)).astype(np.float32)
    Q = rng.normal(size=(n_queries, 12)).astype(np.float32)
    index = Index.from_embeddings(G, metric=metric)
    d, ids = index.search(Q, 7)
    d_ref, i_ref = brute(Q, G, 7, metric)
    np.testing.assert_array_equal(ids, i_ref)
    np.testing.assert_allclose(d, d_ref, rtol=1e-4, atol=1e-4)


def test_tiled_batches_match_knn_search(rng, monkeypatch):
    from rankmetric.index import _exact

    monkeypatch.setattr(_exact, "FULL_WIDTH_ELEMENTS", 10)  # force the tiled path
    G = rng.normal(size=(2500, 8)).astype(np.float32)
    Q = rng.normal(size=(30, 8)).astype(np.float32)
    d, ids = Index.from_embeddings(G).search(Q, 5)
    d_ref, i_ref = knn_search(Q, G, 5, device="cpu")  # the index searches on the CPU
    np.testing.assert_array_equal(ids, i_ref)
    np.testing.assert_array_equal(d, d_ref)


def test_add_in_chunks_remove_and_readd(rng):
    model = lambda X: X[:, :4] * 2.0  # noqa: E731  a transform callable
    X = rng.normal(size=(1000, 6))
    index = Index(model, chunk_size=128).add(X[:600]).add(X[600:])
    assert len(index) == 1000 and index.dim == 4
    np.testing.assert_array_equal(index.ids, np.arange(1000))
    np.testing.assert_allclose(index.embedding_vectors(), (X[:, :4] * 2).astype(np.float32))
    _, first = index.search(X[:3], 1)
    np.testing.assert_array_equal(first.ravel(), [0, 1, 2])
    assert index.remove([0, 2]) == 2
    _, first = index.search(X[:3], 1)
    assert 0 not in first and 2 not in first and first[1, 0] == 1
    assert len(index) == 998
    index.add(X[:1], ids=[0])  # an id may come back after removal
    assert index.search(X[:1], 1)[1][0, 0] == 0
    assert index.add(X[:2]).ids[-2:].tolist() == [1000, 1001]  # fresh ids continue


def test_ids_of_any_hashable_type_and_errors(rng):
    E = rng.normal(size=(5, 3))
    index = Index.from_embeddings(E, ids=["a", ("b", 1), 7, "d", frozenset({1})])
    assert index.search(E[1:2], 1)[1][0, 0] == ("b", 1)
    with pytest.raises(ValueError, match="already in the index"):
        index.add_embeddings(E[:1], ids=["a"])
    with pytest.raises(ValueError, match="repeat"):
        Index.from_embeddings(E[:2], ids=[1, 1])
    with pytest.raises(ValueError, match="not in the index"):
        index.remove(["zz"])
    with pytest.raises(ValueError, match="one id per row"):
        Index.from_embeddings(E, ids=[1, 2])
    with pytest.raises(ValueError, match="pass ids"):
        index.add_embeddings(E[:1])
    with pytest.raises(ValueError, match="dimensions"):
        index.search(E[:, :2], 1)
    with pytest.raises(ValueError, match="NaN"):
        index.add_embeddings(np.full((1, 3), np.nan), ids=["n"])
    with pytest.raises(ValueError, match="k must"):
        index.search(E, 0)
    with pytest.raises(ValueError, match="empty"):
        Index().search(E, 1)


def test_filters_mask_set_callable(rng):
    E = rng.normal(size=(400, 5)).astype(np.float32)
    year = np.arange(400) % 10 + 2015
    index = Index.from_embeddings(
        E, attributes={"year": year, "shop": np.where(year > 2019, "x", "y")}
    )
    Q = rng.normal(size=(6, 5)).astype(np.float32)
    keep = year >= 2020
    d_ref, i_ref = brute(Q, E[keep], 4)
    expected = np.flatnonzero(keep)[i_ref]
    for flt in (
        keep,
        lambda a: a["year"] >= 2020,
        lambda a: a["shop"] == "x",
        set(np.flatnonzero(keep).tolist()),
    ):
        d, ids = index.search(Q, 4, filter=flt)
        np.testing.assert_array_equal(ids, expected)
        np.testing.assert_allclose(d, d_ref, rtol=1e-4, atol=1e-5)
    # a filter keeping more than a quarter masks in place; a smaller one gathers: same answers
    wide = year >= 2016
    d_ref, i_ref = brute(Q, E[wide], 4)
    np.testing.assert_array_equal(index.search(Q, 4, filter=wide)[1], np.flatnonzero(wide)[i_ref])
    # fewer admissible items than k: padded with inf and -1
    d, ids = index.search(Q, 3, filter={5, 17})
    assert (ids[:, 2] == -1).all() and np.isinf(d[:, 2]).all()
    with pytest.raises(ValueError, match="boolean array"):
        index.search(Q, 3, filter=np.ones(3, bool))
    with pytest.raises(ValueError, match="index.s names"):
        index.add_embeddings(E[:1], attributes={"colour": ["r"]})
    with pytest.raises(ValueError, match="has attributes"):
        index.add_embeddings(E[:1])


def test_model_metric_and_readonly_catalogue(rng, tmp_path):
    from rankmetric import SSNE

    X, y = rng.normal(size=(120, 6)), np.repeat(np.arange(12), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ssne = SSNE(n_components=4, max_iter=5).fit(X, y)
    assert Index(ssne).metric == "cosine"
    assert Index(lambda X: X).metric == "euclidean"
    np.save(tmp_path / "c.npy", X.astype(np.float32))
    G = np.load(tmp_path / "c.npy", mmap_mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not writable" warning, from Index or knn_search
        knn_search(G[:3], G, 2)
        Index.from_embeddings(G).search(G[:3], 2)
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("k", [1, 20])
def test_few_query_blocks_keep_exact_tie_order(rng, monkeypatch, k):
    from rankmetric.index import _exact

    monkeypatch.setattr(_exact, "FEW_QUERIES_BLOCK", 64)  # many blocks, duplicates across them
    E = np.repeat(rng.normal(size=(50, 4)).astype(np.float32), 30, axis=0)
    rng.shuffle(E)
    Q = rng.normal(size=(3, 4)).astype(np.float32)
    d, ids = Index.from_embeddings(E).search(Q, k)
    d_ref, i_ref = knn_search(Q, E, k)
    np.testing.assert_array_equal(ids, i_ref)
    np.testing.assert_allclose(d, d_ref, rtol=1e-5)  # NumPy's BLAS: the last bits may differ
