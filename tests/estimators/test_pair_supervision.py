"""The pair / triplet convention: both forms, every learner, degenerate supervision."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rankmetric import ITML, KISSME, LMNN, SSNE, WARCA
from rankmetric.estimators._supervision import (
    MIN_PAIRS,
    check_pair_supervision,
    split_pairs,
    triplets_from_pairs,
)
from rankmetric.sampling import PairIndex


def _blobs(rng, n_per=15, n_classes=4, d=3):
    centres = 4.0 * rng.normal(size=(n_classes, d))
    y = np.repeat(np.arange(n_classes), n_per)
    return centres[y] + rng.normal(size=(len(y), d)), y


def _pairs(rng, y, n_pairs=300):
    p = rng.integers(0, len(y), size=(n_pairs, 2))
    p = p[p[:, 0] != p[:, 1]]
    return p, np.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)


def _learners():
    return [
        ITML(max_iter=50, random_state=0),
        KISSME(),
        LMNN(max_iter=50, random_state=0),
        WARCA(max_iter=60, random_state=0, device="cpu"),
        SSNE(max_iter=60, random_state=0, device="cpu"),
    ]


def _ids():
    return [type(e).__name__ for e in _learners()]


@pytest.mark.parametrize(
    "make",
    [
        lambda: ITML(max_iter=50, bounds=(1.0, 20.0)),
        lambda: KISSME(),
        lambda: LMNN(max_iter=50, init="identity"),
    ],
    ids=["ITML", "KISSME", "LMNN"],
)
def test_index_and_stacked_forms_fit_the_same_model(make):
    rng = np.random.default_rng(0)
    X, y = _blobs(rng)
    pairs, labels = _pairs(rng, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the short runs
        a = make().fit_pairs(X, pairs, labels)
        b = make().fit_pairs(X[pairs], labels)
    assert a.n_features_in_ == b.n_features_in_ == 3
    Q = rng.normal(size=(6, 3))
    np.testing.assert_allclose(
        a.pair_distances(Q[:3], Q[3:]), b.pair_distances(Q[:3], Q[3:]), rtol=1e-4
    )


@pytest.mark.filterwarnings("ignore:only")
def test_stacked_points_are_deduplicated_in_order_of_appearance():
    X = np.array([[5.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    stacked = X[np.array([[2, 0], [0, 1], [1, 2]])]
    s = check_pair_supervision(KISSME(), stacked, [1, -1, 1])
    np.testing.assert_array_equal(s.X, X[[2, 0, 1]])
    np.testing.assert_array_equal(np.c_[s.a, s.b], [[0, 1], [1, 2], [2, 0]])


@pytest.mark.parametrize("k", range(5), ids=_ids())
def test_pairs_learn_a_better_than_euclidean_metric(k):
    rng = np.random.default_rng(1)
    # class information lives in the first feature only; the others are loud noise
    y = np.repeat(np.arange(4), 20)
    X = np.c_[2.0 * y + 0.1 * rng.normal(size=80), 5.0 * rng.normal(size=(80, 2))]
    pairs, labels = _pairs(rng, y, 600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _learners()[k].fit_pairs(X, pairs, labels)
    test, test_labels = _pairs(np.random.default_rng(2), y, 2000)
    from rankmetric.evaluate import verification_scores

    d_learned = est.pair_distances(X[test[:, 0]], X[test[:, 1]])
    d_euclid = np.linalg.norm(X[test[:, 0]] - X[test[:, 1]], axis=1)
    auc = verification_scores(d_learned, test_labels)["roc_auc"]
    assert auc > verification_scores(d_euclid, test_labels)["roc_auc"] + 0.1


def _triplets(rng, y, n=400):
    a, p, q = rng.integers(0, len(y), size=(3, n))
    ok = (y[a] == y[p]) & (y[a] != y[q]) & (a != p)
    return np.stack([a, p, q], axis=1)[ok]


def test_lmnn_triplets_in_both_forms():
    rng = np.random.default_rng(3)
    X, y = _blobs(rng)
    T = _triplets(rng, y)
    one = LMNN(max_iter=50, init="identity").fit_triplets(X, T)
    two = LMNN(max_iter=50, init="identity").fit_triplets(X[T])
    Q = rng.normal(size=(6, 3))
    np.testing.assert_allclose(
        one.pair_distances(Q[:3], Q[3:]), two.pair_distances(Q[:3], Q[3:]), rtol=1e-4
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "est", [LMNN(max_iter=50), WARCA(max_iter=60, random_state=0, device="cpu")], ids=str
)
def test_triplets_pull_positives_and_push_negatives(est):
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(4), 20)
    X = np.c_[2.0 * y + 0.1 * rng.normal(size=80), 5.0 * rng.normal(size=(80, 2))]
    T = _triplets(rng, y, 1500)
    est.fit_triplets(X[T])
    ap = est.pair_distances(X[T[:, 0]], X[T[:, 1]])
    an = est.pair_distances(X[T[:, 0]], X[T[:, 2]])
    euclid = np.linalg.norm(X[T[:, 0]] - X[T[:, 1]], axis=1) < np.linalg.norm(
        X[T[:, 0]] - X[T[:, 2]], axis=1
    )
    assert np.mean(ap < an) > max(0.95, euclid.mean() + 0.1)


@pytest.mark.parametrize("k", range(5), ids=_ids())
def test_all_pairs_of_one_kind_is_an_error(k):
    rng = np.random.default_rng(0)
    X, y = _blobs(rng)
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    target = np.ones(3)
    match = "same target similarity" if k == 4 else "all 3 usable pairs are similar"
    with pytest.raises(ValueError, match=match):
        _learners()[k].fit_pairs(X, pairs, target)
    if k != 4:
        with pytest.raises(ValueError, match="are dissimilar"):
            _learners()[k].fit_pairs(X, pairs, -target)


@pytest.mark.parametrize("k", range(5), ids=_ids())
def test_only_self_pairs_is_an_error(k):
    X, _ = _blobs(np.random.default_rng(0))
    pairs = np.array([[0, 0], [1, 1], [2, 2], [3, 3]])
    with pytest.raises(ValueError, match=f"at least {MIN_PAIRS} pairs of distinct items"):
        _learners()[k].fit_pairs(X, pairs, np.ones(4))
    # identical rows count as the same item in the stacked form too
    with pytest.raises(ValueError, match="distinct items"):
        _learners()[k].fit_pairs(X[pairs], np.ones(4))


@pytest.mark.parametrize("k", range(5), ids=_ids())
def test_a_single_pair_is_an_error(k):
    X, _ = _blobs(np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 2 pairs"):
        _learners()[k].fit_pairs(X, [[0, 1]], [1])


@pytest.mark.filterwarnings("ignore:only")
def test_few_pairs_warn_and_dissimilar_self_pairs_are_dropped_with_a_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 5))
    with pytest.warns(UserWarning, match="only 1 similar and 1 dissimilar pairs for 5 features"):
        check_pair_supervision(KISSME(), X, [[0, 1], [2, 3]], [1, -1])
    pairs = np.array([[0, 1], [2, 3], [4, 4]] + [[i, i + 1] for i in range(5, 9)] * 2)
    y = np.r_[1, -1, -1, np.ones(4), -np.ones(4)]
    with pytest.warns(UserWarning, match="1 pair\\(s\\) join an item to itself"):
        s = check_pair_supervision(ITML(), X, pairs, y)
    assert len(s.a) == len(pairs) - 1
    # a similar self-pair is dropped silently (it is true and says nothing)
    y[2] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_pair_supervision(ITML(), X, pairs, y)


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.zeros((4, 2)), [[0, 1, 2]], [1]), r"shape \(n_pairs, 2\)"),
        ((np.zeros((4, 2)), [[0, 9]], [1]), r"lie in \[0, 4\)"),
        ((np.zeros((4, 2)), [[0, 1]], [2]), r"\+1 \(similar\) or -1"),
        ((np.zeros((4, 2)), [[0, 1]], [1, 1]), "one label per pair"),
        ((np.zeros((4, 2)), None, None), "pairs missing"),
        ((np.zeros((3, 2, 2)), [1, 1, 1], [1, 1, 1]), "come without X"),
        ((np.zeros((3, 3, 2)), [1, 1, 1], None), r"shape \(n_pairs, 2, n_features\)"),
    ],
)
def test_bad_pair_input(args, match):
    with pytest.raises(ValueError, match=match):
        check_pair_supervision(KISSME(), *args)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_triplet_degeneracies():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="no usable triplet"), pytest.warns(UserWarning):
        LMNN().fit_triplets(X, [[0, 1, 0], [2, 3, 3]])
    with pytest.warns(UserWarning, match="1 triplet\\(s\\) have a negative equal"):
        with pytest.warns(UserWarning, match="only 1 triplets for 2 features"):
            LMNN(max_iter=5).fit_triplets(X, [[0, 1, 0], [2, 3, 4]])


@pytest.mark.filterwarnings("ignore:only")
def test_lmnn_and_warca_need_pairs_that_share_items():
    X = np.random.default_rng(0).normal(size=(8, 2))
    pairs, y = [[0, 1], [2, 3], [4, 5], [6, 7]], [1, 1, -1, -1]
    for est in (LMNN(), WARCA(device="cpu")):
        with pytest.raises(ValueError, match="no similar pair"):
            est.fit_pairs(X, pairs, y)
    with pytest.raises(ValueError, match="exact"):
        WARCA(sampling="exact").fit_pairs(X, [[0, 1], [0, 2]], [1, -1])


@pytest.mark.filterwarnings("ignore:only")
def test_triplets_from_pairs_enumerates_every_combination():
    X = np.arange(12.0).reshape(6, 2)
    pairs, y = np.array([[0, 1], [0, 2], [1, 3], [4, 0], [5, 5]]), np.array([1, -1, -1, -1, 1])
    s = check_pair_supervision(KISSME(), X, pairs, y)
    t = triplets_from_pairs(s, 100, np.random.default_rng(0))
    got = sorted(zip(t.anchor.tolist(), t.positive.tolist(), t.negative.tolist(), strict=True))
    assert got == [(0, 1, 2), (0, 1, 4), (1, 0, 3)]
    few = triplets_from_pairs(s, 2, np.random.default_rng(0))
    assert len(few.anchor) == 2 and set(
        zip(few.anchor, few.positive, few.negative, strict=True)
    ) <= set(got)


def test_pair_index_draws_only_real_partners():
    idx = PairIndex.from_pairs(
        np.array([0, 0, 1, 5]), np.array([1, 2, 3, 6]), np.array([True, False, False, True]), 7
    )
    rng = np.random.default_rng(0)
    first, second = idx.positive_pairs(200, rng)
    assert set(zip(first.tolist(), second.tolist(), strict=True)) == {(0, 1), (1, 0)}
    neg = idx.negatives(np.array([0, 1]), 50, rng)
    assert set(neg[0]) == {2} and set(neg[1]) == {3}
    np.testing.assert_array_equal(idx.n_negatives(np.array([0, 1, 5])), [1, 1, 0])


def test_ssne_old_call_and_keyword_still_work():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    pairs = rng.integers(0, 30, size=(100, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sims = np.tanh(rng.normal(size=len(pairs)))
    a = SSNE(max_iter=5, random_state=0, device="cpu").fit_pairs(X, pairs, sims)
    b = SSNE(max_iter=5, random_state=0, device="cpu").fit_pairs(X, pairs, similarities=sims)
    np.testing.assert_array_equal(a.weight_, b.weight_)


def test_a_failed_fit_pairs_leaves_the_estimator_unfitted():
    from sklearn.exceptions import NotFittedError

    X, y = _blobs(np.random.default_rng(0))
    est = KISSME().fit(X, y)
    with pytest.raises(ValueError, match="all 3 usable pairs are similar"):
        est.fit_pairs(X, [[0, 1], [2, 3], [4, 5]], [1, 1, 1])
    with pytest.raises(NotFittedError):
        est.transform(X)


# ------------------------------------------------ the one pair-distance convention (docs/pairs.md)


def test_split_pairs_takes_matching_points_or_stacked_pairs():
    X = np.arange(24.0).reshape(4, 2, 3)
    A, B = split_pairs(X)
    np.testing.assert_array_equal(A, X[:, 0])
    np.testing.assert_array_equal(B, X[:, 1])
    A2, B2 = split_pairs(X[:, 0], X[:, 1])
    np.testing.assert_array_equal(A2, A)
    np.testing.assert_array_equal(B2, B)
    spd = np.broadcast_to(np.eye(2), (3, 2, 2, 2))
    assert split_pairs(spd, point_ndim=2)[0].shape == (3, 2, 2)
    with pytest.raises(ValueError, match="stacked pairs of shape"):
        split_pairs(X[:, 0])
    with pytest.raises(ValueError, match="as many rows"):
        split_pairs(X[:, 0], X[:3, 1])


def test_pair_classifier_pair_distances_accept_both_forms():
    from rankmetric import PairClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    pairs = rng.integers(0, 40, size=(60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    y = np.where(rng.random(len(pairs)) < 0.5, 1, -1)
    stacked = np.stack([X[pairs[:, 0]], X[pairs[:, 1]]], axis=1)
    clf = PairClassifier(KISSME()).fit(stacked, y)
    np.testing.assert_array_equal(
        clf.pair_distances(stacked[:, 0], stacked[:, 1]), clf.pair_distances(stacked)
    )
