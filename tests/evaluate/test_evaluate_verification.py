"""Verification metrics against scikit-learn and brute-force computations from the definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score, roc_curve

from rankmetric.evaluate import (
    labelled_pairs,
    labelled_verification_scores,
    roc_curve_from_distances,
    verification_scores,
)


def _cases():
    rng = np.random.default_rng(0)
    n = 400
    same = rng.random(n) < 0.3
    continuous = rng.normal(size=n) - 1.2 * same
    tied = np.round(continuous, 1)  # many ties, some mixing same and different pairs
    coarse = rng.integers(0, 4, size=n).astype(float)  # a handful of distinct values
    return [(continuous, same), (tied, same), (coarse, same)]


def _brute_rates(d, same):
    """FAR and TAR of "accept when d ≤ t" for t = −inf and every distinct distance."""
    ts = np.concatenate([[-np.inf], np.unique(d)])
    far = np.array([np.mean(d[~same] <= t) for t in ts])
    tar = np.array([np.mean(d[same] <= t) for t in ts])
    return ts, far, tar


def _brute_eer(far, tar):
    """Walk the piecewise-linear ROC and solve FAR = 1 − TAR on the crossing segment."""
    for k in range(1, len(far)):
        g0, g1 = far[k - 1] - (1 - tar[k - 1]), far[k] - (1 - tar[k])
        if g0 <= 0 <= g1 and g1 != g0:
            w = -g0 / (g1 - g0)
            return far[k - 1] + w * (far[k] - far[k - 1])
        if g0 == 0:
            return far[k - 1]
    raise AssertionError("no crossing")


@pytest.mark.parametrize("case", range(3))
def test_roc_auc_equals_scikit_learn(case):
    d, same = _cases()[case]
    s = verification_scores(d, same)
    assert abs(s["roc_auc"] - roc_auc_score(same, -d)) < 1e-12


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("drop", [True, False])
def test_roc_curve_equals_scikit_learn(case, drop):
    d, same = _cases()[case]
    far, tar, thr = roc_curve_from_distances(d, same, drop_intermediate=drop)
    fpr, tpr, sk_thr = roc_curve(same, -d, drop_intermediate=drop)
    np.testing.assert_allclose(far, fpr, atol=1e-15)
    np.testing.assert_allclose(tar, tpr, atol=1e-15)
    np.testing.assert_array_equal(thr[1:], -sk_thr[1:])
    assert thr[0] == -np.inf


@pytest.mark.parametrize("case", range(3))
def test_eer_and_tar_at_far_equal_brute_force(case):
    d, same = _cases()[case]
    fars = (0.5, 0.1, 0.05, 1e-2, 1e-4)
    s = verification_scores(d, same, far=fars)
    ts, far, tar = _brute_rates(d, same)
    assert abs(s["eer"] - _brute_eer(far, tar)) < 1e-12
    for f in fars:
        ok = far <= f + 1e-15
        best = np.max(tar[ok])
        got_tar, got_t = s["tar_at_far"][f]
        assert got_tar == pytest.approx(best, abs=1e-15)
        # the threshold achieves that operating point
        assert np.mean(d[~same] <= got_t) <= f
        assert np.mean(d[same] <= got_t) == pytest.approx(best, abs=1e-15)


def test_hand_computed_example():
    d = np.array([0.1, 0.2, 0.3, 0.4])
    same = np.array([True, False, True, False])
    s = verification_scores(d, same, far=(0.5, 1e-3))
    # TAR/FAR: t=0.1 → (0.5, 0), t=0.2 → (0.5, 0.5), t=0.3 → (1, 0.5): EER = 0.5 crossing at...
    # the segment (0, 0.5) → (0.5, 0.5): gap goes −0.5 → 0, so the EER is the point (0.5, 0.5)
    assert s["eer"] == pytest.approx(0.5)
    assert s["roc_auc"] == pytest.approx(0.75)
    assert s["tar_at_far"][0.5] == (1.0, 0.3)
    assert s["tar_at_far"][1e-3] == (0.5, 0.1)
    assert (s["n_same"], s["n_different"]) == (2, 2)


def test_diagonal_ties_keep_every_operating_point():
    # a tie group of (same, different) pairs moves the curve diagonally; collinear diagonal
    # points are dropped from the returned curve, never from TAR@FAR
    d = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    same = np.array([True, False, True, False, True, False])
    s = verification_scores(d, same, far=(1 / 3,))
    assert s["tar_at_far"][1 / 3] == (pytest.approx(1 / 3), 1.0)
    assert len(s["roc"]["far"]) == 2


def test_accepts_tensors_and_signed_flags():
    d = torch.tensor([0.1, 0.9, 0.2, 0.8])
    s = verification_scores(d, np.array([1, -1, 1, -1]))
    assert s["roc_auc"] == 1.0 and s["eer"] == 0.0


@pytest.mark.parametrize(
    "d, same, match",
    [
        ([0.1, 0.2], [True, True], "both same and different"),
        ([0.1, np.nan], [True, False], "NaN|finite"),
        ([[0.1, 0.2]], [[True, False]], "shape"),
        ([0.1, 0.2], [True], "one flag per pair"),
        ([0.1, 0.2], [2, 3], "flags"),
    ],
)
def test_bad_input(d, same, match):
    with pytest.raises(ValueError, match=match):
        verification_scores(d, same)


@pytest.mark.parametrize("far", [0.0, 1.5, (0.1, -1)])
def test_bad_far(far):
    with pytest.raises(ValueError, match="far"):
        verification_scores([0.1, 0.2], [True, False], far=far)


def test_labelled_pairs_all_and_sampled():
    rng = np.random.default_rng(1)
    E = rng.normal(size=(30, 3))
    y = rng.integers(0, 4, size=30)
    i, j, d, same = labelled_pairs(E, y)
    assert len(i) == 30 * 29 // 2 and np.all(i < j)
    np.testing.assert_allclose(d, np.linalg.norm(E[i] - E[j], axis=1))
    np.testing.assert_array_equal(same, y[i] == y[j])
    si, sj, sd, ssame = labelled_pairs(E, y, max_pairs=100, random_state=0)
    assert len(si) == 100 and np.all(si < sj)
    keys = si * 30 + sj
    assert len(np.unique(keys)) == 100  # distinct pairs
    assert set(keys) <= set(i * 30 + j)
    np.testing.assert_allclose(sd, np.linalg.norm(E[si] - E[sj], axis=1))
    again = labelled_pairs(E, y, max_pairs=100, random_state=0)
    np.testing.assert_array_equal(again[0], si)
    full = labelled_verification_scores(E, y)
    assert full["roc_auc"] == pytest.approx(roc_auc_score(same, -d), abs=1e-12)


def test_triangle_index_inversion_is_exact():
    from rankmetric.evaluate.verification import _triangle_rows

    for n in (2, 3, 7, 1000, 100_003):
        total = n * (n - 1) // 2
        k = np.unique(np.r_[0, total - 1, np.linspace(0, total - 1, 500).astype(np.int64)])
        i, j = _triangle_rows(k, n)
        assert np.all((0 <= i) & (i < j) & (j < n))
        np.testing.assert_array_equal(i * n - i * (i + 1) // 2 + (j - i - 1), k)


def test_peak_memory_is_bounded_per_pair():
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 1_000_000
    same = rng.random(n) < 0.05
    d = rng.normal(size=n) - same  # every distance distinct: the worst case
    tracemalloc.start()
    verification_scores(d, same)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak / n < 48  # documented: about 40 bytes per distinct distance
