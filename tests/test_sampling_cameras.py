"""``sampling.CrossCameraLabelIndex`` and ``check_cameras``: cross-camera positives (issue 22)."""

import numpy as np
import pytest

from rankmetric.sampling import CrossCameraLabelIndex, check_cameras


def _labels(seed=0, n=120):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 12, n)
    cams = rng.integers(0, 4, n)
    cams[y == 5] = 2  # identity 5 is seen by one camera only
    return y, cams


def _brute_pairs(y, cams):
    same = (y[:, None] == y[None, :]) & (cams[:, None] != cams[None, :])
    return set(zip(*np.nonzero(same), strict=True))


@pytest.mark.parametrize("class_uniform", [False, True])
def test_sampler_draws_only_and_every_cross_camera_pair(class_uniform):
    y, cams = _labels()
    index = CrossCameraLabelIndex.from_cameras(y, cams)
    reference = _brute_pairs(y, cams)
    assert index.n_positive_pairs == len(reference)
    i, j = index.positive_pairs(100_000, np.random.default_rng(1), class_uniform)
    drawn = set(zip(i.tolist(), j.tolist(), strict=True))
    assert drawn == reference  # only cross-camera same-identity pairs, and all of them
    assert not np.any(y[i] == 5)  # one-camera identity contributes no positive


def test_sampler_is_uniform_over_pairs():
    y, cams = _labels(3, 60)
    index = CrossCameraLabelIndex.from_cameras(y, cams)
    i, j = index.positive_pairs(200_000, np.random.default_rng(0))
    freq = np.bincount(i * 60 + j, minlength=3600)[np.bincount(i * 60 + j, minlength=3600) > 0]
    expected = 200_000 / len(_brute_pairs(y, cams))
    assert abs(freq.mean() - expected) < 1e-9 and freq.min() > 0.7 * expected
    assert freq.max() < 1.3 * expected


def test_sampler_class_uniform_balances_identities():
    y = np.array([0] * 20 + [1] * 2)
    cams = np.array([0, 1] * 10 + [0, 1])
    index = CrossCameraLabelIndex.from_cameras(y, cams)
    i, _ = index.positive_pairs(20_000, np.random.default_rng(0), class_uniform=True)
    assert abs(np.mean(y[i] == 1) - 0.5) < 0.02


def test_negatives_unchanged_by_cameras():
    y, cams = _labels()
    index = CrossCameraLabelIndex.from_cameras(y, cams)
    anchors = np.arange(len(y))
    neg = index.negatives(anchors, 20, np.random.default_rng(0))
    assert np.all(y[neg] != y[anchors][:, None])
    assert np.array_equal(index.n_negatives(anchors), len(y) - np.bincount(y)[y])


def test_check_cameras_errors():
    assert check_cameras(["b", "a", "b"], 3).tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="one camera id per sample"):
        check_cameras([0, 1], 3)
    with pytest.raises(ValueError, match="NaN"):
        check_cameras([0.0, np.nan, 1.0], 3)
