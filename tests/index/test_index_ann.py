"""Approximate backends (faiss IVF-Flat, IVF-PQ, HNSW), to_faiss, and evaluate_index."""

import numpy as np
import pytest

from rankmetric import KISSME
from rankmetric.index import Index, evaluate_index, to_faiss

faiss = pytest.importorskip("faiss")


def clustered(rng, n, d, n_clusters=50):
    centres = rng.normal(size=(n_clusters, d)) * 4
    labels = rng.integers(n_clusters, size=n)
    return (centres[labels] + rng.normal(size=(n, d))).astype(np.float32), labels


@pytest.mark.parametrize("backend", ["ivf", "ivfpq", "hnsw"])
def test_backends_recall_and_exact_distances(rng, backend):
    E, labels = clustered(rng, 6000, 16)
    index = Index.from_embeddings(E, backend=backend, attributes={"label": labels})
    assert index.resolved_backend == backend
    Q, q_labels = clustered(rng, 50, 16)
    d, ids = index.search(Q, 10)
    d_exact, ids_exact = index.search(Q, 10, exact=True)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, ids_exact, strict=True)])
    assert recall >= 0.9, recall
    # distances are exact (re-ranked) for the items found
    G = index.embedding_vectors()
    np.testing.assert_allclose(d, np.linalg.norm(Q[:, None] - G[ids], axis=2), rtol=1e-4)
    report = index.evaluate(Q, q_labels, k=10)
    assert report["backend"] == backend and report["recall@k"] == pytest.approx(recall)
    assert set(report["exact"]) == {"cmc@1", "cmc@5", "cmc@10", "map@r", "map", "seconds_per_query"}
    assert report["approximate"]["map@r"] <= report["exact"]["map@r"] + 0.05


def test_filters_and_removal_in_approximate_search(rng):
    E, labels = clustered(rng, 4000, 8)
    index = Index.from_embeddings(E, backend="hnsw", attributes={"label": labels})
    index.remove(list(range(100)))
    Q = E[:20]
    _, ids = index.search(Q, 5, filter=lambda a: a["label"] % 2 == 0)
    assert (ids >= 100).all() and (labels[ids] % 2 == 0).all()
    d, ids = index.search(Q, 5, filter={150, 151})
    assert set(ids[0, :2]) == {150, 151} and (ids[:, 2:] == -1).all() and np.isinf(d[:, 2:]).all()


def test_linear_map_baked_in_as_pretransform(rng):
    X, y = rng.normal(size=(3000, 10)), np.repeat(np.arange(300), 10)
    model = KISSME(n_components=4).fit(X, y)
    index = Index.build(model, X, backend="ivf", nlist=8, nprobe=8)
    assert isinstance(index._ann.index, faiss.IndexPreTransform)
    np.testing.assert_array_equal(
        index.search(X[:30], 5)[1], index.search(X[:30], 5, exact=True)[1]
    )
    flat = index.to_faiss()  # raw rows in, the catalogue inside
    _, found = flat.search(X[:30].astype(np.float32), 5)
    np.testing.assert_array_equal(found, index.search(X[:30], 5, exact=True)[1])
    hnsw = to_faiss(model, "HNSW16")
    assert hnsw.d == 10 and hnsw.index.d == 4 and hnsw.ntotal == 0
    with pytest.raises(ValueError, match="factory"):
        to_faiss(model, "NoSuchIndex")


def test_auto_backend_by_size(monkeypatch, rng):
    from rankmetric.index import _ann

    E = rng.normal(size=(500, 4)).astype(np.float32)
    assert Index.from_embeddings(E).resolved_backend == "exact"
    monkeypatch.setattr(_ann, "AUTO_EXACT_BELOW", 100)
    assert Index.from_embeddings(E).resolved_backend == "ivf"
    monkeypatch.setattr(_ann, "AUTO_PQ_FROM", 200)
    assert Index.from_embeddings(E).resolved_backend == "ivfpq"
    with pytest.raises(ValueError, match="backend"):
        Index(backend="annoy")
    with pytest.raises(ValueError, match="nprobe"):
        Index(nprobe=0)


def test_evaluate_index_against_brute_force_scores(rng):
    from rankmetric.evaluate import map_at_r

    E, labels = clustered(rng, 600, 6, n_clusters=12)
    index = Index.from_embeddings(E)
    Q, q_labels = E[:40] + 0.3, labels[:40]
    report = evaluate_index(index, Q, q_labels, labels, k=5, ranks=(1, 3))
    assert report["recall@k"] == 1.0
    # mAP@R of the queries against the catalogue: rankmetric.evaluate's figure
    expected = map_at_r(E, labels, query_embeddings=Q, query_labels=q_labels)
    assert report["exact"]["map@r"] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="attribute 'label'"):
        evaluate_index(index, Q, q_labels)


def test_cosine_after_a_linear_map(rng):
    X, y = rng.normal(size=(2000, 10)), np.repeat(np.arange(200), 10)
    # random features: no metric beats Euclidean there (the check would say so); the index is tested
    model = KISSME(n_components=4, held_out_check=False).fit(X, y)
    index = Index.build(model, X, metric="cosine", backend="ivf", nlist=4, nprobe=4)
    d_exact, exact = index.search(X[:20], 5, exact=True)
    d, _ = index.search(X[:20], 5)  # every list visited: the same items (near ties may swap)
    np.testing.assert_allclose(d, d_exact, atol=1e-5)
    flat = index.to_faiss()  # raw rows in: map, unit rows, inner product
    similarity, found = flat.search(X[:20].astype(np.float32), 5)
    np.testing.assert_allclose(1.0 - similarity, d_exact, atol=1e-5)
    assert np.mean(found == exact) > 0.9


def test_search_survives_faiss_torch_utils(rng):
    """pytorch-metric-learning imports ``faiss.contrib.torch_utils``, which replaces every faiss
    index's ``search`` with a wrapper that takes no ``params``: the IVF search must still run."""
    pytest.importorskip("faiss.contrib.torch_utils")
    E, labels = clustered(rng, 3000, 8)
    index = Index.from_embeddings(E, backend="ivf", attributes={"label": labels})
    Q, _ = clustered(rng, 5, 8)
    _, ids = index.search(Q, 5, filter=lambda a: a["label"] % 2 == 0)
    assert (labels[ids.astype(int)] % 2 == 0).all()
