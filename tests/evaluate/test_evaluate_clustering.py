"""NMI, pairwise F1 and the k-means clustering scores against scikit-learn and pair counting."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from rankmetric.evaluate import clustering_scores, nmi_score, pairwise_f1


@pytest.mark.parametrize("seed", range(5))
def test_nmi_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    t, p = rng.integers(0, 4, 60), rng.integers(0, 6, 60)
    assert nmi_score(t, p) == pytest.approx(normalized_mutual_info_score(t, p))
    assert nmi_score(torch.from_numpy(t), p) == pytest.approx(normalized_mutual_info_score(t, p))


@pytest.mark.parametrize("seed", range(8))
def test_pairwise_f1_equals_explicit_pair_count(ref, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 50))
    t, p = rng.integers(0, 4, n), rng.integers(0, int(rng.integers(1, 8)), n)
    if len(np.unique(t)) == n:  # no same-class pair: F1 is undefined
        t[0] = t[1]
    assert pairwise_f1(t, p) == pytest.approx(ref.pairwise_f1(t, p), abs=1e-12)


def test_pairwise_f1_hand_example():
    t = ["a", "a", "a", "b", "b"]
    p = [0, 0, 1, 1, 1]
    # same-class pairs: 3 + 1 = 4; same-cluster pairs: 1 + 3 = 4; both: (0,1) and (3,4) = 2
    assert pairwise_f1(t, p) == pytest.approx(2 * 2 / (4 + 4))
    assert pairwise_f1(t, t) == 1.0
    assert pairwise_f1(t, [0, 1, 2, 3, 4]) == 0.0  # no two samples share a cluster


def test_clustering_scores_use_kmeans_with_one_cluster_per_class(rng):
    centres = 20 * rng.normal(size=(4, 3))
    y = np.repeat(["w", "x", "y", "z"], 15)
    X = centres[np.repeat(np.arange(4), 15)] + rng.normal(size=(60, 3))
    assert clustering_scores(X, y) == {"nmi": pytest.approx(1.0), "f1": pytest.approx(1.0)}
    noisy = rng.normal(size=(60, 3))
    clusters = KMeans(n_clusters=4, n_init=10, random_state=0).fit_predict(noisy)
    assert clustering_scores(noisy, y, kmeans="sklearn", n_init=10) == {
        "nmi": pytest.approx(normalized_mutual_info_score(y, clusters)),
        "f1": pytest.approx(pairwise_f1(y, clusters)),
    }
    clusters6 = KMeans(n_clusters=6, n_init=3, random_state=5).fit_predict(noisy)
    scores = clustering_scores(noisy, y, n_clusters=6, random_state=5, n_init=3, kmeans="sklearn")
    assert scores["nmi"] == pytest.approx(normalized_mutual_info_score(y, clusters6))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: nmi_score([0, 1, 1], [0, 1]), "different lengths"),
        (lambda: nmi_score([], []), "empty"),
        (lambda: nmi_score([[0, 1]], [[0, 1]]), "one-dimensional"),
        (lambda: pairwise_f1([0, 1, 2], [0, 0, 0]), "no two samples share a class"),
        (lambda: clustering_scores(np.zeros((5, 2)), np.zeros(5)), "single class"),
        (lambda: clustering_scores(np.zeros((5, 2)), [0, 1, 0, 1, 0], n_clusters=6), "n_clusters"),
        (lambda: clustering_scores(np.zeros((5, 2)), [0, 1, 0, 1, 0], n_clusters=1), "n_clusters"),
        (lambda: clustering_scores(np.full((5, 2), np.inf), [0, 1, 0, 1, 0]), "NaN or infinity"),
        (lambda: clustering_scores(np.zeros((5, 2)), [0, 1, 0, 1]), "4 labels"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_kmeans_assignment_of_moved_centres_equals_a_full_assignment(rng):
    import torch

    from rankmetric.evaluate._kmeans import _nearest, _reassign

    X = torch.from_numpy(rng.normal(size=(3000, 8)).astype(np.float32))
    C = X[:40].clone()
    labels, own = _nearest(X, C)
    new = C.clone()
    new[[3, 17, 30]] += torch.from_numpy(rng.normal(scale=0.5, size=(3, 8)).astype(np.float32))
    got_labels, got_own = _reassign(X, C, new, labels, own)
    want_labels, want_own = _nearest(X, new)
    assert torch.equal(got_labels, want_labels)
    torch.testing.assert_close(got_own, want_own)
    assert not torch.equal(labels, want_labels)  # some points did change centre
