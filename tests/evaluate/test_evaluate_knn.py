"""knn_search, knn_predict and knn_accuracy against brute force and scikit-learn."""

from __future__ import annotations

import importlib.util
from collections import Counter

import numpy as np
import pytest
import torch
from sklearn.neighbors import KNeighborsClassifier

from rankmetric.evaluate import knn_accuracy, knn_predict, knn_search, recall_at_k
from rankmetric.evaluate.knn import _majority_vote

HAS_FAISS = importlib.util.find_spec("faiss") is not None


def _tie_data(ref, rng, metric, n):
    return ref.axis_data(rng, n) if metric == "cosine" else ref.integer_data(rng, n)


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("k", [1, 4, 29])
def test_leave_one_out_search_matches_brute_force_with_ties(ref, rng, metric, k):
    X = _tie_data(ref, rng, metric, 30)
    dist, idx = knn_search(X, k=k, metric=metric, device="cpu")
    ref_dist, ref_idx = ref.knn(X, X, k, metric, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-6, atol=1e-6)
    assert dist.dtype == np.float32 and idx.dtype == np.int64


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
def test_gallery_search_matches_brute_force_with_ties(ref, rng, metric):
    Q, G = _tie_data(ref, rng, metric, 17), _tie_data(ref, rng, metric, 40)
    dist, idx = knn_search(Q, G, k=6, metric=metric, device="cpu")
    ref_dist, ref_idx = ref.knn(Q, G, 6, metric, exclude_self=False)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-6, atol=1e-6)


def test_continuous_float64_search_keeps_precision(ref, rng):
    Q, G = rng.normal(size=(9, 5)), rng.normal(size=(50, 5))
    dist, idx = knn_search(Q, G, k=7, device="cpu")
    ref_dist, ref_idx = ref.knn(Q, G, 7, "euclidean", exclude_self=False)
    assert dist.dtype == np.float64
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-10)


def test_exclude_self_drops_the_query_not_its_duplicates():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [0.0, 0.0]], dtype=np.float32)
    dist, idx = knn_search(X, k=2)
    np.testing.assert_array_equal(idx[[0, 1, 3]], [[1, 3], [0, 3], [0, 1]])
    np.testing.assert_array_equal(dist[[0, 1, 3]], 0.0)


def test_exclude_self_with_explicit_gallery_is_leave_one_out(ref, rng):
    X = ref.integer_data(rng, 25)
    np.testing.assert_array_equal(
        knn_search(X, X, k=3, exclude_self=True)[1], knn_search(X, k=3)[1]
    )
    # the first queries of a longer gallery are its first items
    d, i = knn_search(X[:5], X, k=3, exclude_self=True)
    np.testing.assert_array_equal(i, knn_search(X, k=3)[1][:5])
    # and an explicit gallery includes the query itself by default
    assert np.all(knn_search(X, X, k=1)[0][:, 0] == 0)


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 1000])
def test_chunked_equals_unchunked(ref, rng, chunk_size):
    X = ref.integer_data(rng, 40)
    full = knn_search(X, k=5, chunk_size=None)
    chunked = knn_search(X, k=5, chunk_size=chunk_size)
    np.testing.assert_array_equal(full[1], chunked[1])
    np.testing.assert_array_equal(full[0], chunked[0])


def test_torch_inputs_match_numpy(rng):
    Q, G = rng.normal(size=(10, 4)).astype(np.float32), rng.normal(size=(30, 4)).astype(np.float32)
    Gt = torch.from_numpy(G).requires_grad_(True)
    d1, i1 = knn_search(Q, G, k=4, metric="cosine", device="cpu")  # one device: equal bits
    d2, i2 = knn_search(torch.from_numpy(Q), Gt, k=4, metric="cosine", device=torch.device("cpu"))
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


@pytest.mark.skipif(not HAS_FAISS, reason="faiss is an optional dependency (pip install faiss-cpu)")
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("gallery", [False, True])
def test_faiss_backend_matches_torch(rng, metric, gallery):
    Q = rng.normal(size=(40, 6)).astype(np.float32)
    G = rng.normal(size=(60, 6)).astype(np.float32) if gallery else None
    d_t, i_t = knn_search(Q, G, k=5, metric=metric, backend="torch")
    d_f, i_f = knn_search(Q, G, k=5, metric=metric, backend="faiss")
    np.testing.assert_array_equal(i_t, i_f)
    np.testing.assert_allclose(d_t, d_f, rtol=1e-4, atol=1e-5)


def test_faiss_backend_unavailable_raises(monkeypatch):
    import rankmetric.evaluate.knn as knn_module

    monkeypatch.setattr(knn_module, "faiss_available", lambda: False)
    with pytest.raises(ImportError, match="faiss"):
        knn_search(np.eye(3), k=1, backend="faiss")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"queries": np.array([[0.0, np.nan], [1.0, 1.0]])}, "NaN or infinity"),
        ({"queries": np.array([[0.0, np.inf], [1.0, 1.0]])}, "NaN or infinity"),
        ({"queries": np.array([[1e30, 0.0], [1.0, 1.0]], dtype=np.float32)}, "too large"),
        ({"queries": np.zeros(4)}, "shape"),
        ({"queries": np.zeros((0, 3))}, "empty"),
        ({"queries": np.zeros((3, 2)), "gallery": np.zeros((4, 3))}, "features"),
        ({"queries": np.zeros((3, 2)), "k": 3}, "larger than the 2"),
        ({"queries": np.zeros((3, 2)), "gallery": np.zeros((4, 2)), "k": 5}, "larger than the 4"),
        ({"queries": np.zeros((3, 2)), "k": 0}, "positive"),
        ({"queries": np.zeros((3, 2)), "metric": "manhattan"}, "metric"),
        ({"queries": np.zeros((3, 2)), "backend": "annoy"}, "backend"),
        ({"queries": np.zeros((3, 2)), "chunk_size": 0}, "chunk_size"),
        (
            {"queries": np.zeros((5, 2)), "gallery": np.zeros((4, 2)), "exclude_self": True},
            "more queries",
        ),
        ({"queries": np.array([["a", "b"], ["c", "d"]])}, "real numbers"),
    ],
)
def test_bad_input_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        knn_search(**kwargs)


@pytest.mark.parametrize("k", [1.5, 2.0, np.float64(2.0), None, True, "2", [1.5]])
def test_non_integer_k_raises_value_error(k):
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(ValueError, match="k"):
        knn_search(X, k=k)
    with pytest.raises(ValueError, match="ks"):
        recall_at_k(X, np.array([0, 0, 0, 1, 1, 1]), ks=k)


def test_majority_vote_matches_counter(rng):
    codes = rng.integers(0, 4, size=(300, 6))
    expected = []
    for row in codes:
        counts = Counter(row.tolist())
        top = max(counts.values())
        expected.append(min(c for c, n in counts.items() if n == top))
    np.testing.assert_array_equal(_majority_vote(codes), expected)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_knn_predict_equals_scikit_learn(rng, k):
    X_train, X_test = rng.normal(size=(120, 5)), rng.normal(size=(80, 5))
    names = np.array(["cat", "dog", "eel", "fox"])
    y_train = names[rng.integers(0, 4, 120)]
    ours = knn_predict(X_train, y_train, X_test, k=k)
    theirs = KNeighborsClassifier(n_neighbors=k).fit(X_train, y_train).predict(X_test)
    np.testing.assert_array_equal(ours, theirs)
    y_test = names[rng.integers(0, 4, 80)]
    sk_score = KNeighborsClassifier(n_neighbors=k).fit(X_train, y_train).score(X_test, y_test)
    assert knn_accuracy(X_train, y_train, X_test, y_test, k=k) == pytest.approx(sk_score)


def test_knn_predict_vote_ties_go_to_the_smallest_label():
    X_train = np.array([[0.0], [1.0], [-1.5], [2.5]])
    y_train = np.array([7, 3, 5, 3])
    # neighbours of 0.1 with k=2: labels 7 and 3 (one vote each) -> 3
    assert knn_predict(X_train, y_train, [[0.1]], k=2)[0] == 3
    # k=3 adds label 5: three-way tie -> 3
    assert knn_predict(X_train, y_train, [[0.1]], k=3)[0] == 3


def test_knn_accuracy_validates_labels(rng):
    X = rng.normal(size=(10, 2))
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match="y_test has 9 labels"):
        knn_accuracy(X, y, X, y[:9])
    with pytest.raises(ValueError, match="y_train has 9 labels"):
        knn_accuracy(X, y[:9], X, y)
    with pytest.raises(ValueError, match="larger than"):
        knn_accuracy(X, y, X, y, k=11)
