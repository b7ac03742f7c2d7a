import numpy as np
import pytest

from rankmetric.sampling import LabelIndex


@pytest.fixture
def index():
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])  # class 3 has one sample
    return LabelIndex.from_codes(codes)


def test_positive_pairs_are_same_class_and_distinct(index, rng):
    i, j = index.positive_pairs(5000, rng)
    assert np.all(index.codes[i] == index.codes[j])
    assert np.all(i != j)


def test_positive_pairs_are_uniform_over_all_same_class_pairs(index, rng):
    i, j = index.positive_pairs(60000, rng)
    codes = index.codes
    expected = {(a, b) for a in range(10) for b in range(10) if a != b and codes[a] == codes[b]}
    counts = {}
    for a, b in zip(i.tolist(), j.tolist()):
        counts[(a, b)] = counts.get((a, b), 0) + 1
    assert set(counts) == expected
    freq = np.array(list(counts.values())) / len(i)
    np.testing.assert_allclose(freq, 1 / len(expected), rtol=0.15)


def test_class_uniform_positive_pairs_give_every_class_the_same_share(index, rng):
    """Classes 0, 1, 2 have 6, 2 and 12 ordered pairs; class 3 (one sample) has none."""
    i, j = index.positive_pairs(60000, rng, class_uniform=True)
    assert np.all(index.codes[i] == index.codes[j]) and np.all(i != j)
    share = np.bincount(index.codes[i], minlength=4) / len(i)
    np.testing.assert_allclose(share, [1 / 3, 1 / 3, 1 / 3, 0.0], atol=0.01)
    inside = index.codes[i] == 2  # uniform over the pairs inside a class
    pair_id = i[inside] * 10 + j[inside]
    counts = np.unique(pair_id, return_counts=True)[1]
    assert counts.size == 12
    np.testing.assert_allclose(counts / counts.sum(), 1 / 12, rtol=0.1)
    _, _, same = index.balanced_pairs(100, rng, 0.5, class_uniform=True)
    assert same.sum() == 50


def test_negatives_are_other_class_and_uniform(index, rng):
    anchors = np.zeros(20000, dtype=int)  # class 0: seven negatives
    neg = index.negatives(anchors, 3, rng)
    assert neg.shape == (20000, 3)
    assert np.all(index.codes[neg] != 0)
    counts = np.bincount(neg.ravel(), minlength=10)[3:]
    np.testing.assert_allclose(counts / counts.sum(), 1 / 7, rtol=0.05)
    np.testing.assert_array_equal(index.n_negatives(np.array([0, 5, 9])), [7, 6, 9])


def test_balanced_pairs_share_and_labels(index, rng):
    i, j, same = index.balanced_pairs(1000, rng, positive_fraction=0.3)
    assert same.sum() == 300
    np.testing.assert_array_equal(index.codes[i] == index.codes[j], same)


def test_class_balanced_batch(index, rng):
    batch = index.class_balanced_batch(3, 4, rng)
    assert batch.shape == (12,)
    per_class = index.codes[batch].reshape(3, 4)
    assert np.all(per_class == per_class[:, :1])
    assert len(np.unique(per_class[:, 0])) == 3
    # classes with at least n_per_class samples are drawn without repetition
    for row in batch.reshape(3, 4):
        if index.counts[index.codes[row[0]]] >= 4:
            assert len(np.unique(row)) == 4


def test_no_positive_pairs_raises(rng):
    with pytest.raises(ValueError, match="no class has two samples"):
        LabelIndex.from_codes(np.array([0, 1, 2])).positive_pairs(4, rng)


def test_same_seed_same_draws():
    idx = LabelIndex.from_codes(np.repeat(np.arange(5), 7))
    a = idx.positive_pairs(50, np.random.default_rng(3))
    b = idx.positive_pairs(50, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
