"""Property tests (hypothesis): ranges, monotonicity and invariances of the evaluation metrics."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmetric.evaluate import cmc_curve, knn_search, pairwise_f1, retrieval_scores

SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def labelled_points(draw, min_n=4, max_n=40):
    """Continuous points (ties have probability 0); two classes have at least two members."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 5))
    n_classes = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.r_[0, 0, 1, 1, rng.integers(0, n_classes, n - 4)]
    X = rng.normal(size=(n, d)) + 2 * rng.normal(size=(n_classes, d))[y]
    return X, y, rng


@SETTINGS
@given(labelled_points(), st.sampled_from(["euclidean", "sqeuclidean", "cosine"]))
def test_scores_are_in_unit_interval_and_recall_grows_with_k(data, metric):
    X, y, _ = data
    ks = tuple(range(1, len(X)))
    scores = retrieval_scores(X, y, ks=ks, metric=metric)
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    recalls = [scores[f"recall@{k}"] for k in ks]
    assert all(a <= b for a, b in zip(recalls[:-1], recalls[1:], strict=True))
    if np.bincount(y).min() >= 2:  # every query has a relevant item
        assert recalls[-1] == 1.0
        assert scores["recall@1"] == scores["precision@1"]


@SETTINGS
@given(labelled_points())
def test_invariant_to_permuting_samples_and_renaming_labels(data):
    X, y, rng = data
    perm = rng.permutation(len(X))
    names = np.array(["q", "r", "s", "t", "u"])[rng.permutation(5)]
    before = retrieval_scores(X, y, ks=(1, 3 if len(X) > 3 else 1))
    after = retrieval_scores(X[perm], names[y[perm]], ks=(1, 3 if len(X) > 3 else 1))
    assert set(before) == set(after)
    for key in before:
        assert abs(before[key] - after[key]) < 1e-12


@SETTINGS
@given(labelled_points(), st.integers(1, 6))
def test_search_is_sorted_and_excludes_self(data, k):
    X, _, _ = data
    k = min(k, len(X) - 1)
    dist, idx = knn_search(X, k=k)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert not np.any(idx == np.arange(len(X))[:, None])
    assert np.all([len(set(row)) == k for row in idx])


@SETTINGS
@given(labelled_points(min_n=6))
def test_cmc_is_a_nondecreasing_curve_ending_at_one(data):
    X, y, _ = data
    half = len(X) // 2
    G, gid = np.r_[X[:half], X[:2]], np.r_[y[:half], y[:2]]
    gid[-2:] = [0, 1]
    P, pid = X[half:], np.where(np.isin(y[half:], gid), y[half:], 0)
    curve = cmc_curve(P, pid, G, gid, ranks=1, return_curve=True)[1]
    assert np.all(np.diff(curve) >= 0) and curve[-1] == 1.0 and curve[0] >= 0


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=3, max_size=40), st.integers(0, 2**32 - 1))
def test_pairwise_f1_is_symmetric_and_one_only_for_equal_partitions(labels, seed):
    rng = np.random.default_rng(seed)
    t = np.asarray(labels)
    t[1] = t[0]  # at least one same-class pair
    p = rng.integers(0, 4, len(t))
    p[1] = p[0]
    f = pairwise_f1(t, p)
    assert 0.0 <= f <= 1.0
    assert abs(f - pairwise_f1(p, t)) < 1e-12
    assert pairwise_f1(t, rng.permutation(5)[t]) == 1.0
