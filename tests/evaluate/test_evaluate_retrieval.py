"""Recall@K, precision@1 and mAP@R against brute-force definitions and pytorch-metric-learning."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from rankmetric.evaluate import map_at_r, precision_at_1, recall_at_k, retrieval_scores

HAS_PML = importlib.util.find_spec("pytorch_metric_learning") is not None


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_leave_one_out_matches_brute_force_with_ties(ref, metric, seed):
    rng = np.random.default_rng(seed)
    X = ref.axis_data(rng, 45) if metric == "cosine" else ref.integer_data(rng, 45)
    y = rng.integers(0, 4, 45)
    ours = retrieval_scores(X, y, ks=(1, 2, 5, 44), metric=metric)
    assert ours == pytest.approx(ref.retrieval(X, y, (1, 2, 5, 44), metric=metric), abs=1e-12)


def test_query_gallery_mode_matches_brute_force(ref, rng):
    G, Q = ref.integer_data(rng, 50), ref.integer_data(rng, 20)
    g_labels, q_labels = rng.integers(0, 5, 50), rng.integers(0, 5, 20)
    ours = retrieval_scores(G, g_labels, ks=(1, 3, 50), query_embeddings=Q, query_labels=q_labels)
    assert ours == pytest.approx(ref.retrieval(G, g_labels, (1, 3, 50), Q, q_labels), abs=1e-12)


def test_hand_computed_example():
    # 1-D points; class a = {0, 1, 3}, class b = {2, 10}
    X = np.array([[0.0], [1.0], [3.0], [2.0], [10.0]])
    y = np.array(["a", "a", "a", "b", "b"])
    # ranked lists (ties -> lower index): 0: 1,3,2,4  1: 0,3,2,4  2: 3,1,0,4  3: 1,2,0,4  4: 2,3,1,0
    # relevance and R:  0: a b | a b, R=2 -> AP = (1/1)/2       1: same -> 1/2
    #                   2: b a | a b, R=2 -> AP = (1/2)/2        3: a | a a b, R=1 -> 0
    #                   4: a | b a a, R=1 -> 0   (only the first R places count)
    expected_map = (0.5 + 0.5 + 0.25 + 0 + 0) / 5
    scores = retrieval_scores(X, y, ks=(1, 2))
    assert scores["map@r"] == pytest.approx(expected_map)
    assert scores["precision@1"] == pytest.approx(2 / 5)
    assert scores["recall@1"] == pytest.approx(2 / 5)
    assert scores["recall@2"] == pytest.approx(4 / 5)


def test_queries_without_relevant_items(ref, rng):
    X = ref.integer_data(rng, 30)
    y = np.r_[rng.integers(0, 3, 27), 7, 8, 9]  # three singleton classes
    ours = retrieval_scores(X, y, ks=(1, 4))
    assert ours == pytest.approx(ref.retrieval(X, y, (1, 4)), abs=1e-12)
    # recall counts the 3 singletons as misses; precision@1 leaves them out
    assert ours["recall@1"] == pytest.approx(ours["precision@1"] * 27 / 30)


@pytest.mark.parametrize("chunk_size", [1, 4, 13])
def test_chunked_equals_unchunked(ref, rng, chunk_size):
    X, y = ref.integer_data(rng, 60), rng.integers(0, 3, 60)
    assert retrieval_scores(X, y, ks=(1, 5), chunk_size=chunk_size) == retrieval_scores(
        X, y, ks=(1, 5)
    )


def test_single_metric_functions_agree_with_the_combined_pass(rng):
    X, y = rng.normal(size=(80, 6)).astype(np.float32), rng.integers(0, 4, 80)
    both = retrieval_scores(X, y, ks=(1, 3, 8))
    assert recall_at_k(X, y, ks=(1, 3, 8)) == {
        1: both["recall@1"],
        3: both["recall@3"],
        8: both["recall@8"],
    }
    assert recall_at_k(X, y, ks=5) == {5: retrieval_scores(X, y, ks=5)["recall@5"]}
    assert precision_at_1(X, y) == both["precision@1"]
    assert map_at_r(X, y) == both["map@r"]


def test_torch_inputs_match_numpy(rng):
    X, y = rng.normal(size=(50, 4)).astype(np.float32), rng.integers(0, 3, 50)
    assert retrieval_scores(torch.from_numpy(X), torch.from_numpy(y), device="cpu") == (
        retrieval_scores(X, y)
    )


@pytest.mark.skipif(not HAS_PML, reason="pytorch-metric-learning is an optional peer")
@pytest.mark.parametrize("cross", [False, True])
def test_agrees_with_pytorch_metric_learning(rng, cross):
    pytest.importorskip("faiss", reason="AccuracyCalculator searches with faiss")
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    centres = rng.normal(size=(6, 8))
    y = rng.integers(0, 6, 300)
    X = (centres[y] + rng.normal(size=(300, 8))).astype(np.float32)
    calc = AccuracyCalculator(
        include=("precision_at_1", "mean_average_precision_at_r"),
        k="max_bin_count",
        device=torch.device("cpu"),
    )
    if cross:
        theirs = calc.get_accuracy(X[:100], y[:100], X[100:], y[100:])
        ours = retrieval_scores(
            X[100:], y[100:], ks=1, query_embeddings=X[:100], query_labels=y[:100]
        )
    else:
        theirs = calc.get_accuracy(X, y)
        ours = retrieval_scores(X, y, ks=1)
    assert ours["precision@1"] == pytest.approx(theirs["precision_at_1"], abs=1e-12)
    assert ours["map@r"] == pytest.approx(theirs["mean_average_precision_at_r"], abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": np.zeros(10)}, "single class"),
        ({"labels": np.arange(10)}, "no query has a same-class item"),
        ({"labels": np.arange(9) % 2}, "9 labels"),
        ({"labels": np.arange(10) % 2, "ks": (1, 10)}, "larger than the 9"),
        ({"labels": np.arange(10) % 2, "ks": ()}, "empty"),
        ({"labels": np.arange(10) % 2, "ks": (1.5,)}, "positive integers"),
        ({"labels": np.arange(10) % 2, "query_embeddings": np.zeros((3, 2))}, "together"),
        ({"labels": np.arange(10) % 2, "metric": "l1"}, "metric"),
        ({"labels": np.linspace(0, 1, 10)}, "class labels"),
        (
            {
                "labels": np.arange(10) % 2,
                "query_embeddings": np.zeros((3, 5)),
                "query_labels": np.zeros(3),
            },
            "features",
        ),
    ],
)
def test_bad_input_raises(rng, kwargs, message):
    with pytest.raises(ValueError, match=message):
        retrieval_scores(rng.normal(size=(10, 2)), **kwargs)


def test_small_evaluations_size_their_threads_at_the_entry(two_threads, monkeypatch):
    import torch

    from rankmetric.evaluate import retrieval as retrieval_module

    seen = []
    original = retrieval_module._ranked_pass

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(retrieval_module, "_ranked_pass", spy)
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 4
    retrieval_module.retrieval_scores(X, y)  # a small search: one thread
    retrieval_module.retrieval_report(X, y, clustering=False)
    assert seen == [1, 1]
    assert torch.get_num_threads() == 2  # restored
