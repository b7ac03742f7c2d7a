"""The baseline losses against pytorch-metric-learning where the definitions coincide.

pytorch-metric-learning is a test dependency (the ``test`` extra), never a library one: it is
imported here at module level on purpose, so that a missing install fails loudly instead of
skipping these comparisons. Conventions that differ (documented in docs/losses.md):

* pml's distances normalise the embeddings by default; we pass ``normalize_embeddings=False``
  (or compare with our cosine variants);
* pml's ``ProxyNCALoss`` keeps the positive proxy in the softmax denominator
  (our ``exclude_positive=False``);
* pml's ``TripletMarginLoss`` averages over the non-zero hinges (our ``average_nonzero=True``);
* pml's semi-hard miner keeps *every* semi-hard triplet, FaceNet's (ours) one negative per pair,
  so "semihard" is not compared.
"""

import pytest
import torch
from pytorch_metric_learning import distances, losses, miners

from rankmetric.losses.lifted import LiftedStructureLoss
from rankmetric.losses.multi_similarity import MultiSimilarityLoss
from rankmetric.losses.npair import NPairLoss
from rankmetric.losses.proxy_nca import ProxyNCALoss
from rankmetric.losses.triplet import TripletLoss

EUCLIDEAN = distances.LpDistance(normalize_embeddings=False)


def _batch(seed, n=32, d=8, n_classes=5, *, singletons=True):
    """Random labels (a class may have one sample), or every class with at least two samples."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    if singletons:
        y = torch.randint(0, n_classes, (n,), generator=gen)
    else:
        y = (torch.arange(n) % n_classes)[torch.randperm(n, generator=gen)]
    return x, y


def _value_and_grad(fn, x, y):
    x = x.clone().requires_grad_()
    value = fn(x, y)
    value.backward()
    return value.detach(), x.grad


def _pml_batch_hard(x, y):
    triplets = miners.BatchHardMiner(distance=EUCLIDEAN)(x, y)
    return losses.TripletMarginLoss(0.3, distance=EUCLIDEAN)(x, y, triplets)


def _pml_multi_similarity(x, y):
    pairs = miners.MultiSimilarityMiner(0.1)(x, y)
    return losses.MultiSimilarityLoss(2, 50, 0.5)(x, y, pairs)


CASES = {
    "triplet-all": (
        TripletLoss(0.3, "all", average_nonzero=True),
        losses.TripletMarginLoss(0.3, distance=EUCLIDEAN),
    ),
    "triplet-hard": (TripletLoss(0.3, "hard", average_nonzero=True), _pml_batch_hard),
    "lifted": (
        LiftedStructureLoss(1.0),
        losses.LiftedStructureLoss(neg_margin=1, pos_margin=0, distance=EUCLIDEAN),
    ),
    "lifted-generalized": (
        LiftedStructureLoss(1.0, form="generalized"),
        losses.GeneralizedLiftedStructureLoss(neg_margin=1, pos_margin=0, distance=EUCLIDEAN),
    ),
    "npair-dot": (
        NPairLoss(0.0),
        losses.NPairsLoss(distance=distances.DotProductSimilarity(normalize_embeddings=False)),
    ),
    "npair-cosine": (NPairLoss(0.0, similarity="cosine"), losses.NPairsLoss()),
    "multi-similarity": (MultiSimilarityLoss(), _pml_multi_similarity),
    "multi-similarity-unmined": (
        MultiSimilarityLoss(mining=False),
        losses.MultiSimilarityLoss(2, 50, 0.5),
    ),
}


def test_seed_1_draws_a_class_with_a_single_sample():
    _, y = _batch(1)
    assert (torch.bincount(y) == 1).any()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", list(CASES))
def test_value_and_gradient_match_pml(name, seed):
    ours, theirs = CASES[name]
    # pml's generalised lifted loss counts an anchor without positives (its positive term as 0);
    # ours averages over the anchors that have both a positive and a negative.
    x, y = _batch(seed, singletons=name != "lifted-generalized")
    value, grad = _value_and_grad(ours, x, y)
    expected_value, expected_grad = _value_and_grad(theirs, x, y)
    assert value.item() == pytest.approx(expected_value.item(), rel=1e-9, abs=1e-12)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_proxy_nca_matches_pml_with_the_positive_proxy_in_the_denominator(seed):
    x, y = _batch(seed)
    ours = ProxyNCALoss(5, 8, exclude_positive=False, softmax_scale=2.0).double()
    theirs = losses.ProxyNCALoss(5, 8, softmax_scale=2.0).double()
    with torch.no_grad():
        theirs.proxies.copy_(ours.proxies)
    value, grad = _value_and_grad(ours, x, y)
    expected_value, expected_grad = _value_and_grad(theirs, x, y)
    assert value.item() == pytest.approx(expected_value.item(), rel=1e-9)
    torch.testing.assert_close(grad, expected_grad)
    torch.testing.assert_close(ours.proxies.grad, theirs.proxies.grad)
