"""CrossBatchMemory against pytorch-metric-learning's on the same sequence of batches."""

from __future__ import annotations

import pytest
import torch
from pytorch_metric_learning import distances, losses, miners

from rankmetric.losses import (
    BatchHardMiner,
    CrossBatchMemory,
    LiftedStructureLoss,
    MultiSimilarityLoss,
    MultiSimilarityMiner,
    NPairLoss,
    SimilarityRegressionLoss,
    TripletLoss,
    TripletMiner,
    WARPLoss,
)

EUCLIDEAN = distances.LpDistance(normalize_embeddings=False)
DIM = 5

CASES = {
    "triplet": (
        lambda: TripletLoss(0.3, average_nonzero=True),
        lambda: losses.TripletMarginLoss(0.3, distance=EUCLIDEAN),
        None,
        None,
    ),
    "multi-similarity": (
        lambda: MultiSimilarityLoss(mining=False),
        lambda: losses.MultiSimilarityLoss(2, 50, 0.5),
        None,
        None,
    ),
    "multi-similarity-mined": (
        lambda: MultiSimilarityLoss(),
        lambda: losses.MultiSimilarityLoss(2, 50, 0.5),
        lambda: MultiSimilarityMiner(0.1),
        lambda: miners.MultiSimilarityMiner(0.1),
    ),
    "triplet-batch-hard": (
        lambda: TripletLoss(0.3, average_nonzero=True),
        lambda: losses.TripletMarginLoss(0.3, distance=EUCLIDEAN),
        lambda: BatchHardMiner(),
        lambda: miners.BatchHardMiner(distance=EUCLIDEAN),
    ),
}


def _batches(n_batches=6, size=8, n_classes=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        yield (
            torch.randn(size, DIM, generator=gen, dtype=torch.float64),
            torch.randint(0, n_classes, (size,), generator=gen),
        )


@pytest.mark.parametrize("name", sorted(CASES))
def test_memory_matches_pml_batch_after_batch(name):
    make_ours, make_theirs, our_miner, their_miner = CASES[name]
    ours = CrossBatchMemory(make_ours(), 20, miner=our_miner and our_miner())
    theirs = losses.CrossBatchMemory(
        make_theirs(), DIM, memory_size=20, miner=their_miner and their_miner()
    )
    for x, y in _batches():  # 6 batches of 8 in a memory of 20: it wraps twice
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        value, expected = ours(x1, y), theirs(x2, y)
        value.backward()
        expected.backward()
        assert value.item() == pytest.approx(expected.item(), rel=1e-9, abs=1e-12)
        torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-7, atol=1e-10)
    assert ours.n_filled == 20
    torch.testing.assert_close(ours.embedding_memory, theirs.embedding_memory)
    assert torch.equal(ours.label_memory, theirs.label_memory)


def test_first_batch_without_memory_is_the_plain_loss():
    x, y = next(_batches())
    loss = MultiSimilarityLoss(mining=False)
    assert CrossBatchMemory(loss, 32)(x, y).item() == pytest.approx(loss(x, y).item(), rel=1e-12)


def test_memory_is_detached_fifo_and_resettable():
    memory = CrossBatchMemory(TripletLoss(), 10)
    batches = list(_batches(3, size=4))
    for x, y in batches:
        memory(x.requires_grad_(), y)
    assert not memory.embedding_memory.requires_grad
    # 12 embeddings through 10 slots: batch 2 fills slots 8, 9, then overwrites 0, 1
    torch.testing.assert_close(memory.embedding_memory[8:], batches[2][0][:2].detach())
    torch.testing.assert_close(memory.embedding_memory[:2], batches[2][0][2:].detach())
    torch.testing.assert_close(memory.embedding_memory[2:4], batches[0][0][2:].detach())
    assert memory.label_memory[4:8].tolist() == batches[1][1].tolist()
    assert memory.n_filled == 10 and memory.position == 2
    memory.reset()
    assert memory.n_filled == 0 and memory.embedding_memory is None


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: CrossBatchMemory(torch.nn.MSELoss(), 8), "indices_tuple"),
        (lambda: CrossBatchMemory(TripletLoss(), 0), "size"),
    ],
)
def test_bad_memory_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_batch_larger_than_the_memory_raises():
    x, y = next(_batches(size=8))
    with pytest.raises(ValueError, match="does not fit"):
        CrossBatchMemory(TripletLoss(), 4)(x, y)


@pytest.mark.parametrize(
    "make",
    [
        LiftedStructureLoss,
        lambda: LiftedStructureLoss(form="generalized"),
        NPairLoss,
        WARPLoss,
        SimilarityRegressionLoss,
        lambda: TripletLoss(mining="semihard"),
    ],
)
def test_memory_wraps_every_pair_and_triplet_loss(make):
    memory = CrossBatchMemory(make(), 16, miner=TripletMiner("all"))
    for x, y in _batches(3, size=8):
        x = x.requires_grad_()
        value = memory(x, y)
        value.backward()
        assert torch.isfinite(value) and torch.isfinite(x.grad).all()
        assert x.grad.abs().sum() > 0
