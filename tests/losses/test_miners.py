"""Miners, index tuples and reference sets: against pytorch-metric-learning and our own defaults.

pytorch-metric-learning (PML) is a test dependency, imported at module level on purpose (a
missing install fails loudly). Where the definitions coincide, the same index tuple must give
the same loss value and gradient; our miners must select what PML's select.
"""

from __future__ import annotations

import pytest
import torch
from pytorch_metric_learning import distances, losses, miners
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu

from rankmetric.losses import (
    BatchHardMiner,
    LiftedStructureLoss,
    MultiSimilarityLoss,
    MultiSimilarityMiner,
    NPairLoss,
    ProxyNCALoss,
    SimilarityRegressionLoss,
    TripletLoss,
    TripletMiner,
    WARPLoss,
    all_pairs,
    all_triplets,
    to_triplets,
)

EUCLIDEAN = distances.LpDistance(normalize_embeddings=False)


def _batch(seed, n=24, d=6, n_classes=5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    y = torch.randint(0, n_classes, (n,), generator=gen)
    return x, y


def _value_and_grad(fn, x, *args, **kwargs):
    x = x.clone().requires_grad_()
    refs = {k: v.clone().requires_grad_() for k, v in kwargs.items() if k == "ref_emb"}
    value = fn(x, *args, **{**kwargs, **refs})
    value.backward()
    grads = [x.grad] + [r.grad for r in refs.values()]
    return value.detach(), grads


def _assert_same(ours, theirs):
    (v1, g1), (v2, g2) = ours, theirs
    assert v1.item() == pytest.approx(v2.item(), rel=1e-9, abs=1e-12)
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-10)


def _rows(indices):
    return sorted(zip(*(t.tolist() for t in indices), strict=True))


# --- index tuples -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("with_ref", [False, True])
def test_all_pairs_and_triplets_are_pmls_in_pmls_order(seed, with_ref):
    x, y = _batch(seed)
    ref_y = _batch(seed + 10, n=17)[1] if with_ref else None
    for ours, theirs in (
        (all_pairs(y, ref_y), lmu.get_all_pairs_indices(y, ref_y)),
        (all_triplets(y, ref_y), lmu.get_all_triplets_indices(y, ref_y)),
    ):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert torch.equal(a, b)


def test_pairs_to_triplets_is_pmls_conversion():
    x, y = _batch(3)
    pairs = miners.MultiSimilarityMiner(0.3)(x, y)
    ours, theirs = to_triplets(pairs), lmu.convert_to_triplets(pairs, y)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)


# --- miners -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_hard_miner_selects_pmls_triplets(seed):
    x, y = _batch(seed)
    ours = BatchHardMiner()(x, y)
    theirs = miners.BatchHardMiner(distance=EUCLIDEAN)(x, y)
    assert _rows(ours) == _rows(theirs)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("with_ref", [False, True])
@pytest.mark.parametrize("type_of_triplets", ["semihard", "all", "hard", "easy"])
def test_triplet_margin_miner_selects_pmls_triplets(seed, with_ref, type_of_triplets):
    """PML's ``TripletMarginMiner`` names, PML's triplets: every negative in the margin band."""
    x, y = _batch(seed, n=48)
    ref = _batch(seed + 10, n=31) if with_ref else ()
    ours = TripletMiner(type_of_triplets=type_of_triplets, margin=0.5)(x, y, *ref)
    theirs = miners.TripletMarginMiner(0.5, type_of_triplets=type_of_triplets, distance=EUCLIDEAN)(
        x, y, *ref
    )
    assert _rows(ours) == _rows(theirs)
    assert len(ours[0]) > 0
    if type_of_triplets == "semihard":  # the same rule under our own name
        assert _rows(TripletMiner("semihard", margin=0.5)(x, y, *ref)) == _rows(theirs)


def test_semihard_keeps_every_semihard_negative_facenet_one_per_pair():
    """The reproduction of issue 35: PML's semihard count, FaceNet's under its own name."""
    x, y = _batch(7, n=128, d=8, n_classes=8)
    band = TripletMiner("semihard", margin=0.2)(x, y)
    facenet = TripletMiner("facenet-semihard")(x, y)
    theirs = miners.TripletMarginMiner(0.2, type_of_triplets="semihard", distance=EUCLIDEAN)(x, y)
    assert len(band[0]) == len(theirs[0])
    n_positive_pairs = int(sum((y == c).sum() * ((y == c).sum() - 1) for c in y.unique()))
    assert len(facenet[0]) == n_positive_pairs  # one negative per positive pair
    with pytest.raises(ValueError, match="not both"):
        TripletMiner("semihard", type_of_triplets="semihard")
    with pytest.raises(ValueError, match="type_of_triplets must be one of"):
        TripletMiner(type_of_triplets="facenet")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("with_ref", [False, True])
def test_multi_similarity_miner_selects_pmls_pairs(seed, with_ref):
    x, y = _batch(seed)
    ref = _batch(seed + 10, n=15) if with_ref else ()
    ours = MultiSimilarityMiner(0.1)(x, y, *ref)
    theirs = miners.MultiSimilarityMiner(0.1)(x, y, *ref)
    assert _rows(ours[:2]) == _rows(theirs[:2])
    assert _rows(ours[2:]) == _rows(theirs[2:])
    assert len(ours[0]) > 0 and len(ours[2]) > 0


@pytest.mark.parametrize("strategy", ["all", "hard", "semihard", "random"])
@pytest.mark.parametrize("seed", [0, 1])
def test_triplet_loss_default_equals_its_miner_tuple(strategy, seed):
    """Today's behaviour (mining inside the loss) is what the shared miner gives."""
    x, y = _batch(seed)
    gen = {"generator": torch.Generator().manual_seed(5)} if strategy == "random" else {}
    inside = TripletLoss(0.3, strategy, **gen)
    gen = {"generator": torch.Generator().manual_seed(5)} if strategy == "random" else {}
    same_rule = "facenet-semihard" if strategy == "semihard" else strategy  # the loss's semihard
    triplets = TripletMiner(same_rule, **gen)(x, y)
    outside = TripletLoss(0.3)
    _assert_same(_value_and_grad(inside, x, y), _value_and_grad(outside, x, y, triplets))


def test_semihard_miner_picks_the_closest_farther_negative():
    x, y = _batch(4)
    a, p, n = TripletMiner("facenet-semihard")(x, y)
    dist = torch.cdist(x, x)
    for i, j, k in zip(a.tolist(), p.tolist(), n.tolist(), strict=True):
        negatives = dist[i][y != y[i]]
        farther = negatives[negatives > dist[i, j]]
        expected = farther.min() if farther.numel() else negatives.max()
        assert dist[i, k] == expected


@pytest.mark.parametrize("seed", [0, 1])
def test_pair_losses_default_equals_the_all_pairs_or_mined_tuple(seed):
    x, y = _batch(seed)
    ms = MultiSimilarityLoss()
    _assert_same(_value_and_grad(ms, x, y), _value_and_grad(ms, x, y, MultiSimilarityMiner()(x, y)))
    for loss in (
        LiftedStructureLoss(),
        LiftedStructureLoss(form="generalized"),
        NPairLoss(),
        MultiSimilarityLoss(mining=False),
        SimilarityRegressionLoss(),
    ):
        _assert_same(_value_and_grad(loss, x, y), _value_and_grad(loss, x, y, all_pairs(y)))
    warp = WARPLoss()
    _assert_same(
        _value_and_grad(warp, x, y), _value_and_grad(warp, x, y, indices_tuple=all_pairs(y))
    )


# --- losses on PML's tuples -------------------------------------------------------------------


def _tuples(x, y):
    return {
        "triplet-margin": miners.TripletMarginMiner(0.5, type_of_triplets="all")(x, y),
        "multi-similarity": miners.MultiSimilarityMiner(0.1)(x, y),
        "batch-hard": miners.BatchHardMiner(distance=EUCLIDEAN)(x, y),
    }


CASES = {
    "triplet": (
        TripletLoss(0.3, average_nonzero=True),
        losses.TripletMarginLoss(0.3, distance=EUCLIDEAN),
    ),
    "multi-similarity": (MultiSimilarityLoss(), losses.MultiSimilarityLoss(2, 50, 0.5)),
    "lifted": (
        LiftedStructureLoss(1.0),
        losses.LiftedStructureLoss(neg_margin=1, pos_margin=0, distance=EUCLIDEAN),
    ),
    "npair": (
        NPairLoss(0.0),
        losses.NPairsLoss(distance=distances.DotProductSimilarity(normalize_embeddings=False)),
    ),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tuple_name", ["triplet-margin", "multi-similarity", "batch-hard"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_on_a_pml_tuple_matches_pml(name, tuple_name, seed):
    x, y = _batch(seed)
    indices = _tuples(x, y)[tuple_name]
    ours, theirs = CASES[name]
    _assert_same(_value_and_grad(ours, x, y, indices), _value_and_grad(theirs, x, y, indices))


@pytest.mark.parametrize("tuple_name", ["triplet-margin", "multi-similarity"])
def test_proxy_nca_weights_a_tuple_as_pml(tuple_name):
    x, y = _batch(0)
    indices = _tuples(x, y)[tuple_name]
    ours = ProxyNCALoss(5, 6, exclude_positive=False).double()
    theirs = losses.ProxyNCALoss(5, 6).double()
    with torch.no_grad():
        theirs.proxies.copy_(ours.proxies)
    _assert_same(_value_and_grad(ours, x, y, indices), _value_and_grad(theirs, x, y, indices))


# --- reference sets ---------------------------------------------------------------------------

REF_CASES = {
    "triplet-all": (
        TripletLoss(0.3, average_nonzero=True),
        losses.TripletMarginLoss(0.3, distance=EUCLIDEAN),
    ),
    "multi-similarity-unmined": (
        MultiSimilarityLoss(mining=False),
        losses.MultiSimilarityLoss(2, 50, 0.5),
    ),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(REF_CASES))
def test_reference_set_matches_pml(name, seed):
    x, y = _batch(seed)
    ref, ref_y = _batch(seed + 10, n=19)
    ours, theirs = REF_CASES[name]
    kw = {"ref_emb": ref, "ref_labels": ref_y}
    _assert_same(_value_and_grad(ours, x, y, **kw), _value_and_grad(theirs, x, y, **kw))


@pytest.mark.parametrize("seed", [0, 1])
def test_mined_pairs_against_a_reference_set_match_pml(seed):
    x, y = _batch(seed)
    ref, ref_y = _batch(seed + 10, n=19)
    pairs = MultiSimilarityMiner(0.1)(x, y, ref, ref_y)
    kw = {"ref_emb": ref, "ref_labels": ref_y}
    _assert_same(
        _value_and_grad(MultiSimilarityLoss(), x, y, pairs, **kw),
        _value_and_grad(losses.MultiSimilarityLoss(2, 50, 0.5), x, y, pairs, **kw),
    )
    triplets = BatchHardMiner()(x, y, ref, ref_y)
    _assert_same(
        _value_and_grad(TripletLoss(0.3, average_nonzero=True), x, y, triplets, **kw),
        _value_and_grad(losses.TripletMarginLoss(0.3, distance=EUCLIDEAN), x, y, triplets, **kw),
    )


def test_triplet_mining_against_a_reference_is_brute_force():
    """``"hard"`` and ``"semihard"`` against a reference set equal the mined tuples' loss."""
    x, y = _batch(2)
    ref, ref_y = _batch(12, n=19)
    for strategy in ("hard", "semihard", "all"):
        inside = TripletLoss(0.3, strategy)(x, y, ref_emb=ref, ref_labels=ref_y)
        rule = "facenet-semihard" if strategy == "semihard" else strategy
        mined = TripletMiner(rule)(x, y, ref, ref_y)
        outside = TripletLoss(0.3)(x, y, mined, ref_emb=ref, ref_labels=ref_y)
        assert inside.item() == pytest.approx(outside.item(), rel=1e-12)


def test_reference_set_equal_to_the_batch_minus_self_pairs():
    """A reference set that is a copy of the batch, with the self pairs taken out of the tuple,
    gives the loss of the batch (the lifted loss then uses the anchor's negatives only)."""
    x, y = _batch(1)
    for loss in (MultiSimilarityLoss(mining=False), WARPLoss(), SimilarityRegressionLoss()):
        a1, p, a2, n = all_pairs(y)
        kw = {"ref_emb": x.clone(), "ref_labels": y.clone()}
        tuple_kw = {"indices_tuple": (a1, p, a2, n)}
        expected = loss(x, y)
        got = loss(x, y, **tuple_kw, **kw)
        assert got.item() == pytest.approx(expected.item(), rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x, y: TripletLoss()(x, y, (y[:3], y[:2], y[:3])), "mismatched lengths"),
        (lambda x, y: TripletLoss()(x, y, (y, y)), "tuple"),
        (lambda x, y: TripletLoss()(x, y, (y * 0 + 99, y, y)), "outside"),
        (lambda x, y: TripletLoss()(x, y, (x[:, 0], y, y)), "integer"),
        (lambda x, y: MultiSimilarityLoss()(x, y, ref_labels=y), "without ref_emb"),
        (lambda x, y: MultiSimilarityLoss()(x, y, ref_emb=x), "ref_labels"),
        (lambda x, y: MultiSimilarityLoss()(x, y, ref_emb=x[:, :3], ref_labels=y), "shape"),
        (lambda x, y: WARPLoss()(x, y, all_pairs(y)), "indices_tuple="),
        (lambda x, y: TripletMiner("best"), "strategy"),
        (lambda x, y: MultiSimilarityMiner(-1.0), "epsilon"),
    ],
)
def test_bad_tuples_and_references_raise(call, match):
    x, y = _batch(0)
    with pytest.raises(ValueError, match=match):
        call(x, y)
