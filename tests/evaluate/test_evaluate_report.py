"""The full retrieval report against brute-force definitions and pytorch-metric-learning."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

from rankmetric.evaluate import retrieval_report, retrieval_scores

HAS_PML = importlib.util.find_spec("pytorch_metric_learning") is not None
RANKING = ("map", "map@r", "r_precision", "mrr", "precision@1")


def brute_force_report(ref, X, y, ks, Xq=None, yq=None, metric="euclidean", average="micro"):
    """Every ranking score from its definition: one query, one rank at a time."""
    loo = Xq is None
    Xq, yq = (X, y) if loo else (Xq, yq)
    D = ref.distance_matrix(Xq, X, metric)
    per_query = {name: [] for name in RANKING}
    hits = {k: [] for k in ks}
    scored = []
    for i in range(len(Xq)):
        order = ref.ranked(D[i], i if loo else None)  # ties: lower reference index first
        rel = np.asarray([y[j] == yq[i] for j in order])
        R = int(rel.sum())
        for k in ks:
            hits[k].append(float(rel[:k].any()))
        scored.append(R > 0)
        if R == 0:
            for name in RANKING:
                per_query[name].append(0.0)
            continue
        precision = [rel[:pos].sum() / pos for pos in range(1, len(rel) + 1)]
        per_query["map"].append(sum(precision[p] for p in range(len(rel)) if rel[p]) / R)
        per_query["map@r"].append(sum(precision[p] for p in range(R) if rel[p]) / R)
        per_query["r_precision"].append(rel[:R].sum() / R)
        per_query["mrr"].append(1.0 / (1 + int(np.argmax(rel))))
        per_query["precision@1"].append(float(rel[0]))
    scored = np.asarray(scored)

    def mean(values, mask):
        values = np.asarray(values)[mask]
        if average == "micro":
            return float(np.mean(values))
        labels = np.asarray(yq)[mask]
        return float(np.mean([values[labels == c].mean() for c in np.unique(labels)]))

    out = {name: mean(v, scored) for name, v in per_query.items()}
    out.update({f"recall@{k}": mean(hits[k], np.ones(len(Xq), bool)) for k in ks})
    return out


@pytest.mark.parametrize("average", ["micro", "macro"])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("seed", [0, 1])
def test_leave_one_out_matches_brute_force_with_ties(ref, average, metric, seed):
    rng = np.random.default_rng(seed)
    X = ref.axis_data(rng, 40) if metric == "cosine" else ref.integer_data(rng, 40)
    y = rng.integers(0, 4, 40)
    y[-1] = 9  # a lone query (R = 0)
    ours = retrieval_report(
        X, y, ks=(1, 3, 39), metric=metric, average=average, clustering=False, chunk_size=7
    )
    expected = brute_force_report(ref, X, y, (1, 3, 39), metric=metric, average=average)
    assert ours == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_separate_reference_matches_brute_force(ref, rng, average):
    G, Q = ref.integer_data(rng, 50), ref.integer_data(rng, 20)
    g_labels, q_labels = rng.integers(0, 5, 50), rng.integers(0, 6, 20)  # class 5: no reference
    ours = retrieval_report(
        G, g_labels, (1, 4), Q, q_labels, average=average, clustering=False, chunk_size=3
    )
    expected = brute_force_report(ref, G, g_labels, (1, 4), Q, q_labels, average=average)
    assert ours == pytest.approx(expected, abs=1e-12)


def test_hand_computed_example():
    X = np.array([[0.0], [0.1], [5.0], [5.2], [0.3]])
    y = np.array([0, 0, 1, 1, 1])
    # query 4 (class 1) ranks 1, 0, 2, 3: relevant at places 3 and 4, R = 2
    report = retrieval_report(X, y, ks=(1, 2), clustering=False)
    assert report["mrr"] == pytest.approx((4 + 1 / 3) / 5)
    assert report["map"] == pytest.approx((4 + (1 / 3 + 2 / 4) / 2) / 5)
    assert report["r_precision"] == pytest.approx(4 / 5)
    assert report["map@r"] == pytest.approx(4 / 5)
    macro = retrieval_report(X, y, ks=(1, 2), clustering=False, average="macro")
    assert macro["mrr"] == pytest.approx((1 + (2 + 1 / 3) / 3) / 2)


def test_shared_scores_equal_retrieval_scores(ref, rng):
    X, y = ref.integer_data(rng, 60), rng.integers(0, 5, 60)
    report = retrieval_report(X, y, ks=(1, 5), clustering=False)
    scores = retrieval_scores(X, y, ks=(1, 5))
    assert {k: report[k] for k in scores} == pytest.approx(scores, abs=1e-12)


def test_chunk_size_does_not_change_the_report(ref, rng):
    X, y = ref.integer_data(rng, 50), rng.integers(0, 3, 50)
    full = retrieval_report(X, y, ks=(1, 2), clustering=False)
    chunked = retrieval_report(X, y, ks=(1, 2), clustering=False, chunk_size=1)
    assert chunked == pytest.approx(full, abs=1e-14)


def test_clustering_scores_are_kmeans_nmi_and_ami_of_the_queries(rng):
    centres = rng.normal(size=(4, 5)) * 2
    y = rng.integers(0, 4, 120)
    X = (centres[y] + rng.normal(size=(120, 5))).astype(np.float32)
    G, g_labels = X[40:], y[40:]
    report = retrieval_report(
        G, g_labels, 1, X[:40], y[:40], random_state=3, kmeans="sklearn", n_init=10
    )
    clusters = KMeans(n_clusters=len(np.unique(y[:40])), n_init=10, random_state=3).fit_predict(
        X[:40]
    )
    assert report["nmi"] == pytest.approx(normalized_mutual_info_score(y[:40], clusters))
    assert report["ami"] == pytest.approx(adjusted_mutual_info_score(y[:40], clusters))
    assert report["ami"] < report["nmi"] < 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"average": "weighted"}, "average must be one of"),
        ({"ks": 0}, "ks"),
        ({"ks": 40}, "ks"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"metric": "manhattan"}, "metric"),
    ],
)
def test_bad_arguments(ref, rng, kwargs, message):
    X, y = ref.integer_data(rng, 40), rng.integers(0, 3, 40)
    kwargs = {"clustering": False, **kwargs}
    with pytest.raises(ValueError, match=message):
        retrieval_report(X, y, **kwargs)


def test_bad_inputs(ref, rng):
    X, y = ref.integer_data(rng, 20), rng.integers(0, 3, 20)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite|NaN"):
        retrieval_report(bad, y, clustering=False)
    with pytest.raises(ValueError, match="single class"):
        retrieval_report(X, np.zeros(20, int), clustering=False)
    with pytest.raises(ValueError, match="no query"):
        retrieval_report(X, y, query_embeddings=X[:3], query_labels=[7, 7, 8], clustering=False)
    with pytest.raises(ValueError, match="together"):
        retrieval_report(X, y, query_embeddings=X[:3], clustering=False)
    with pytest.raises(ValueError, match="queries hold a single class"):
        retrieval_report(X, y, query_embeddings=X[:3], query_labels=[1, 1, 1])
    with pytest.raises(ValueError):
        retrieval_report(X, y[:-1], clustering=False)
    with pytest.raises(ValueError):
        retrieval_report(X, y, query_embeddings=X[:3, :2], query_labels=y[:3], clustering=False)


PML_NAMES = {
    "mean_average_precision": "map",
    "mean_average_precision_at_r": "map@r",
    "r_precision": "r_precision",
    "mean_reciprocal_rank": "mrr",
    "precision_at_1": "precision@1",
    "NMI": "nmi",
    "AMI": "ami",
}


def _sklearn_kmeans(x, n_clusters):
    """The k-means of ``retrieval_report`` (seed 0, 10 restarts) as PML's ``kmeans_func``."""
    clusters = KMeans(n_clusters=n_clusters, n_init=10, random_state=0).fit_predict(x.cpu().numpy())
    return torch.as_tensor(clusters)


@pytest.mark.skipif(not HAS_PML, reason="pytorch-metric-learning is an optional peer")
@pytest.mark.parametrize("average", ["micro", "macro"])
@pytest.mark.parametrize("cross", [False, True])
def test_equals_pytorch_metric_learning(rng, average, cross):
    pytest.importorskip("faiss", reason="AccuracyCalculator searches with faiss")
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    centres = rng.normal(size=(6, 8)) * 0.7
    y = rng.integers(0, 6, 300)
    X = (centres[y] + rng.normal(size=(300, 8))).astype(np.float32)
    calc = AccuracyCalculator(
        include=tuple(PML_NAMES),
        avg_of_avgs=average == "macro",
        k=None,  # the whole reference set is ranked: full mAP and MRR
        device=torch.device("cpu"),
        kmeans_func=_sklearn_kmeans,
    )
    if cross:  # queries of class 5 have no reference item: both skip them
        g_keep = y[100:] != 5
        G, g_labels = X[100:][g_keep], y[100:][g_keep]
        theirs = calc.get_accuracy(X[:100], y[:100], G, g_labels)
        ours = retrieval_report(
            G, g_labels, 1, X[:100], y[:100], average=average, kmeans="sklearn", n_init=10
        )
    else:
        theirs = calc.get_accuracy(X, y)
        ours = retrieval_report(X, y, 1, average=average, kmeans="sklearn", n_init=10)
    theirs = {PML_NAMES[name]: value for name, value in theirs.items()}
    assert {name: ours[name] for name in theirs} == pytest.approx(theirs, abs=1e-6)
    assert 0.1 < ours["map"] < 0.9 and 0.05 < ours["ami"] < 0.9  # not a degenerate case


@pytest.mark.skipif(not HAS_PML, reason="pytorch-metric-learning is an optional peer")
def test_clustering_equals_pml_default_faiss_kmeans_on_separated_classes(rng):
    pytest.importorskip("faiss", reason="AccuracyCalculator clusters with faiss")
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    y = rng.integers(0, 4, 200)
    y[:4] = np.arange(4)
    X = (np.eye(4, 6)[y] * 10 + rng.normal(size=(200, 6))).astype(np.float32)
    y_noisy = y.copy()
    y_noisy[:20] = rng.integers(0, 4, 20)  # labels the clusters cannot all follow
    calc = AccuracyCalculator(include=("NMI", "AMI"), device=torch.device("cpu"))
    theirs = calc.get_accuracy(X, y_noisy)
    ours = retrieval_report(X, y_noisy)
    assert ours["nmi"] == pytest.approx(theirs["NMI"], abs=1e-6)
    assert ours["ami"] == pytest.approx(theirs["AMI"], abs=1e-6)
    assert ours["ami"] < 1.0


MEMORY_CHILD = r"""
import json
import numpy as np, torch
torch.set_num_threads(1)
from rankmetric.evaluate import retrieval_report

def peak_mb():  # this process's own high-water mark
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024

rng = np.random.default_rng(0)
n, d, n_classes = 20_000, 32, 10
y = rng.integers(0, n_classes, n)
X = (rng.normal(size=(n, d)) + 0.3 * rng.normal(size=(n_classes, d))[y]).astype(np.float32)
out = {}
for step, n_queries in enumerate((1_500, 1_500, 4_500)):  # the first runs settle the allocator
    retrieval_report(X, y, ks=(1, 3), query_embeddings=X[:n_queries],
                     query_labels=y[:n_queries], clustering=False)
    out[step] = peak_mb()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_report_memory_does_not_grow_with_the_queries():
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    peaks = json.loads(done.stdout.strip().splitlines()[-1])
    # 3,000 more queries' scores against 20,000 items would need 240 MB (float32) if held
    assert peaks["2"] - peaks["1"] < 64, peaks


def test_include_computes_the_named_scores_the_same_way(rng):
    centres = rng.normal(size=(5, 6))
    y = rng.integers(0, 5, 400)
    X = (centres[y] + rng.normal(size=(400, 6))).astype(np.float32)
    full = retrieval_report(X, y, ks=(1, 4), clustering=False)
    shallow = retrieval_report(  # no full mAP: each ranking is followed max(R, K) deep only
        X, y, ks=(1, 4), clustering=False, include=("map@r", "mrr", "recall@k", "r_precision")
    )
    assert set(shallow) == {"map@r", "mrr", "recall@1", "recall@4", "r_precision"}
    assert shallow == {name: full[name] for name in shallow}
    with pytest.raises(ValueError, match="include must name"):
        retrieval_report(X, y, include=("nmi",))


@pytest.mark.parametrize("kmeans", ["torch", "sklearn", "faiss"])
def test_clustering_backends_find_separated_classes(rng, kmeans):
    if kmeans == "faiss":
        pytest.importorskip("faiss")
    y = np.repeat(np.arange(6), 40)
    X = (np.eye(6, 8)[y] * 12 + rng.normal(size=(240, 8))).astype(np.float32)
    n_init = 10 if kmeans == "faiss" else 1  # faiss seeds at random points, not k-means++
    report = retrieval_report(X, y, kmeans=kmeans, n_init=n_init)
    assert report["nmi"] == pytest.approx(1.0) and report["ami"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="kmeans must be one of"):
        retrieval_report(X, y, kmeans="lloyd")


def test_torch_kmeans_reaches_sklearns_inertia(rng):
    from sklearn.cluster import KMeans

    from rankmetric.evaluate import clustering_scores

    centres = rng.normal(size=(10, 5)) * 3
    y = rng.integers(0, 10, 1500)
    X = (centres[y] + rng.normal(size=(1500, 5))).astype(np.float32)
    ours = clustering_scores(X, y, n_init=3, random_state=1)
    theirs = KMeans(n_clusters=10, n_init=3, random_state=1).fit_predict(X)
    assert ours["nmi"] == pytest.approx(normalized_mutual_info_score(y, theirs), abs=0.03)
