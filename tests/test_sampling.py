import numpy as np
import pytest

from rankmetric.sampling import ClassBalancedBatchSampler, LabelIndex


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
    for a, b in zip(i.tolist(), j.tolist(), strict=True):
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


# --- ClassBalancedBatchSampler ----------------------------------------------------------------


def _check_batches(sampler, labels):
    batches = list(sampler)
    assert len(batches) == len(sampler)
    for batch in batches:
        assert len(batch) == sampler.n_classes * sampler.n_per_class
        classes, counts = np.unique(labels[batch], return_counts=True)
        assert len(classes) == sampler.n_classes
        assert np.all(counts == sampler.n_per_class)
    return batches


def test_balanced_sampler_sees_every_item_once_per_epoch():
    labels = np.repeat(np.arange(10), 8)[np.random.default_rng(0).permutation(80)]
    sampler = ClassBalancedBatchSampler(labels, n_classes=4, n_per_class=2, random_state=3)
    assert len(sampler) == 10
    for epoch in range(3):
        sampler.set_epoch(epoch)
        seen = np.concatenate(_check_batches(sampler, labels))
        assert np.array_equal(np.sort(seen), np.arange(80))


def test_balanced_sampler_covers_uneven_classes():
    counts = np.array([3, 9, 5, 12, 1, 7, 6, 4])
    labels = np.repeat(np.arange(8), counts)
    sampler = ClassBalancedBatchSampler(labels, n_classes=3, n_per_class=2, random_state=0)
    n_chunks = int(np.sum(-(-counts // 2)))
    assert len(sampler) == -(-n_chunks // 3)
    seen = np.concatenate(_check_batches(sampler, labels))
    assert set(seen.tolist()) == set(range(labels.shape[0]))


def test_balanced_sampler_takes_string_labels():
    labels = np.array(["cat", "dog", "owl"] * 4)
    batches = _check_batches(ClassBalancedBatchSampler(labels, 3, 2), labels)
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(12))


def test_balanced_sampler_is_seeded():
    labels = np.repeat(np.arange(6), 5)
    first = list(ClassBalancedBatchSampler(labels, 3, 2, random_state=1))
    assert first == list(ClassBalancedBatchSampler(labels, 3, 2, random_state=1))
    assert first != list(ClassBalancedBatchSampler(labels, 3, 2, random_state=2))
    sampler = ClassBalancedBatchSampler(labels, 3, 2, random_state=1)
    sampler.set_epoch(1)
    assert list(sampler) != first


def test_balanced_sampler_feeds_a_dataloader():
    import torch

    labels = torch.arange(12) % 4
    data = torch.utils.data.TensorDataset(torch.randn(12, 3), labels)
    sampler = ClassBalancedBatchSampler(labels, n_classes=2, n_per_class=3)
    assert isinstance(sampler, torch.utils.data.BatchSampler)
    batches = list(torch.utils.data.DataLoader(data, batch_sampler=sampler))
    assert len(batches) == len(sampler) == 2  # 4 chunks of 3, two per batch
    assert all(x.shape == (6, 3) and len(torch.unique(y)) == 2 for x, y in batches)


@pytest.mark.parametrize("world", [2, 3])
def test_distributed_ranks_get_disjoint_batches_of_one_global_sequence(world):
    labels = np.repeat(np.arange(7), 6)
    ranks = [
        ClassBalancedBatchSampler(labels, 3, 2, random_state=4, num_replicas=world, rank=r)
        for r in range(world)
    ]
    everything = ranks[0].global_batches()
    per_rank = [list(s) for s in ranks]
    assert len(everything) == world * -(-7 // world)  # 21 chunks, 3 per batch, padded
    assert all(len(b) == len(everything) // world for b in per_rank)
    for r, batches in enumerate(per_rank):
        assert batches == everything[r::world].tolist()
    # distinct ranks never get the same global batch: their slots are disjoint
    slots = [set(range(r, len(everything), world)) for r in range(world)]
    assert all(not (slots[a] & slots[b]) for a in range(world) for b in range(a + 1, world))
    seen = np.concatenate([np.concatenate(b) for b in per_rank])
    assert set(seen.tolist()) == set(range(labels.shape[0]))  # every item, on some rank


def test_distributed_defaults_come_from_torch_distributed(monkeypatch):
    import torch

    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 4)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 3)
    sampler = ClassBalancedBatchSampler(np.repeat(np.arange(8), 4), 2, 2)
    assert (sampler.num_replicas, sampler.rank) == (4, 3)
    assert len(sampler) == 16 // 2 // 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_classes": 5, "n_per_class": 2}, "only 4 distinct"),
        ({"n_classes": 0, "n_per_class": 2}, "n_classes"),
        ({"n_classes": 2, "n_per_class": 1.5}, "n_per_class"),
        ({"n_classes": 2, "n_per_class": 2, "num_replicas": 2, "rank": 2}, "rank"),
    ],
)
def test_bad_sampler_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ClassBalancedBatchSampler(np.repeat(np.arange(4), 3), **kwargs)


def test_each_pass_of_the_class_balanced_sampler_starts_the_next_epoch():
    """A plain loop gets new shuffles every epoch without set_epoch; set_epoch still decides."""
    from rankmetric.sampling import ClassBalancedBatchSampler

    labels = np.repeat(np.arange(10), 6)
    sampler = ClassBalancedBatchSampler(labels, 4, 3, random_state=0)
    first, second = list(sampler), list(sampler)
    assert first != second and sampler.epoch == 1
    again = ClassBalancedBatchSampler(labels, 4, 3, random_state=0)
    assert [list(again), list(again)] == [first, second]  # seeded: the same sequence
    sampler.set_epoch(0)
    assert list(sampler) == first
    sampler.set_epoch(0)
    assert list(sampler) == first  # an explicit epoch is never advanced past


def test_the_sampler_takes_random_state_as_the_estimators_do():
    """An int, a Generator or a RandomState, validated by the estimators' rule."""
    labels = np.repeat(np.arange(6), 5)
    by_int = ClassBalancedBatchSampler(labels, 3, 2, random_state=5)
    assert by_int.random_state == 5 and by_int.seed == 5
    generators = [np.random.default_rng(11), np.random.default_rng(11)]
    first, second = (ClassBalancedBatchSampler(labels, 3, 2, random_state=g) for g in generators)
    assert list(first) == list(second)  # the same generator state: the same batches
    legacy = ClassBalancedBatchSampler(labels, 3, 2, random_state=np.random.RandomState(0))
    _check_batches(legacy, labels)
    fresh = [ClassBalancedBatchSampler(labels, 3, 2, random_state=None).seed for _ in range(2)]
    assert fresh[0] != fresh[1]  # None: fresh entropy on each construction
    for bad in (-1, 1.5, "0"):
        with pytest.raises(ValueError, match="random_state must be"):
            ClassBalancedBatchSampler(labels, 3, 2, random_state=bad)


def test_random_state_none_is_refused_with_several_replicas():
    with pytest.raises(ValueError, match="random_state=None.*2 replicas"):
        ClassBalancedBatchSampler(
            np.repeat(np.arange(4), 3), 2, 2, random_state=None, num_replicas=2, rank=0
        )


def test_seed_is_the_deprecated_name_of_random_state():
    labels = np.repeat(np.arange(6), 5)
    with pytest.warns(FutureWarning, match="'seed' was renamed 'random_state'.*random_state=3"):
        old = ClassBalancedBatchSampler(labels, 3, 2, seed=3)
    new = ClassBalancedBatchSampler(labels, 3, 2, random_state=3)
    assert [list(old), list(old)] == [list(new), list(new)]
    assert old.random_state == old.seed == 3
    with pytest.raises(TypeError, match="both 'seed' and its new name 'random_state'"):
        ClassBalancedBatchSampler(labels, 3, 2, seed=3, random_state=3)
