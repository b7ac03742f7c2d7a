"""``reduction=`` of every loss in rankmetric.losses, against its ``"mean"`` and brute force."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil

import pytest
import torch

import rankmetric.losses as losses_pkg
from rankmetric.losses import (
    LiftedStructureLoss,
    MultiSimilarityLoss,
    NPairLoss,
    ProxyNCALoss,
    RiemannianPotatoLoss,
    SimilarityRegressionLoss,
    TripletLoss,
    WARPLoss,
)
from rankmetric.losses.base import MetricLoss
from rankmetric.losses.memory import CrossBatchMemory
from rankmetric.losses.miners import Miner

N_CLASSES, PER_CLASS, DIM = 3, 4, 5


def _proxy_nca(**kw):
    gen = torch.Generator().manual_seed(0)
    return ProxyNCALoss(N_CLASSES, DIM, generator=gen, dtype=torch.float64, **kw)


def _random_triplet(**kw):
    return TripletLoss(mining="random", generator=torch.Generator().manual_seed(0), **kw)


#: One or more configurations of every loss; each is built afresh per reduction (the potato and
#: the random triplet loss carry state). ``divides_by_terms``: "mean" is the mean of "none".
CONFIGS = {
    "warp": (WARPLoss, True),
    "lifted-original": (LiftedStructureLoss, True),
    "lifted-generalized": (lambda **kw: LiftedStructureLoss(form="generalized", **kw), True),
    "multi-similarity": (MultiSimilarityLoss, True),
    "npair": (NPairLoss, True),
    "proxy-nca": (_proxy_nca, True),
    "potato": (RiemannianPotatoLoss, True),
    "potato-class": (lambda **kw: RiemannianPotatoLoss(center="class", **kw), True),
    "similarity": (SimilarityRegressionLoss, True),
    "triplet-all": (TripletLoss, False),
    "triplet-hard": (lambda **kw: TripletLoss(mining="hard", **kw), False),
    "triplet-semihard": (lambda **kw: TripletLoss(mining="semihard", **kw), False),
    "triplet-random": (_random_triplet, False),
    "triplet-nonzero": (lambda **kw: TripletLoss(average_nonzero=True, **kw), False),
}
COVERED = {WARPLoss, LiftedStructureLoss, MultiSimilarityLoss, NPairLoss, ProxyNCALoss,
           RiemannianPotatoLoss, SimilarityRegressionLoss, TripletLoss}  # fmt: skip


def _loss_classes() -> set[type]:
    """Every public torch module class of rankmetric.losses but the miners and the memory."""
    found = set()
    for info in pkgutil.iter_modules(losses_pkg.__path__):
        module = importlib.import_module(f"rankmetric.losses.{info.name}")
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, torch.nn.Module)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
                and obj is not MetricLoss
                and not inspect.isabstract(obj)  # the bases (BatchMetricLoss)
                and not issubclass(obj, (Miner, CrossBatchMemory))
            ):
                found.add(obj)
    return found


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(N_CLASSES).repeat(PER_CLASS)
    emb = torch.randn(N_CLASSES * PER_CLASS, DIM, generator=gen, dtype=torch.float64)
    emb = emb + 0.8 * torch.nn.functional.one_hot(labels, DIM)
    return torch.nn.functional.normalize(emb, dim=1).requires_grad_(True), labels


def test_every_loss_derives_from_metric_loss_and_is_covered():
    classes = _loss_classes()
    assert classes == COVERED, "add the new loss to CONFIGS and COVERED"
    for cls in classes:
        assert issubclass(cls, MetricLoss)
        assert inspect.signature(cls).parameters["reduction"].default == "mean"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_three_reductions_agree_with_the_mean(name):
    make, divides_by_terms = CONFIGS[name]
    emb, labels = _batch()
    values = {r: make(reduction=r)(emb, labels) for r in ("mean", "sum", "none")}
    none = values["none"]
    assert none.ndim == 1 and none.numel() > 0
    assert values["mean"].ndim == 0 and values["sum"].ndim == 0
    torch.testing.assert_close(values["sum"], none.sum())
    if divides_by_terms:
        torch.testing.assert_close(values["mean"], none.mean())
    else:  # the triplet loss divides per-anchor sums by a count of triplets
        assert none.shape == (labels.shape[0],)
        count = (values["sum"] / values["mean"]).detach()
        assert float(count) == pytest.approx(round(float(count)))
    for value in values.values():  # every reduction is differentiable
        (grad,) = torch.autograd.grad(value.sum(), emb)
        assert torch.isfinite(grad).all()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_bad_reduction_is_a_value_error(name):
    make, _ = CONFIGS[name]
    with pytest.raises(ValueError, match="reduction"):
        make(reduction="average")


def _hinge(emb, a, p, n, margin):
    return torch.relu((emb[a] - emb[p]).norm() - (emb[a] - emb[n]).norm() + margin)


def test_triplet_none_is_the_brute_force_per_anchor_sum():
    emb, labels = _batch(1)
    margin = 0.3
    expected = torch.zeros(labels.shape[0], dtype=emb.dtype)
    n_triplets = 0
    for a, p, n in itertools.product(range(labels.shape[0]), repeat=3):
        if a != p and labels[a] == labels[p] and labels[n] != labels[a]:
            expected[a] += _hinge(emb, a, p, n, margin).detach()
            n_triplets += 1
    got = TripletLoss(margin, reduction="none")(emb, labels)
    torch.testing.assert_close(got, expected)
    mean = TripletLoss(margin)(emb, labels)
    torch.testing.assert_close(mean, expected.sum() / n_triplets)


def test_lifted_none_is_the_brute_force_term_of_each_positive_pair():
    emb, labels = _batch(2)
    dist = torch.cdist(emb, emb).detach()
    terms = []
    for i, j in itertools.product(range(labels.shape[0]), repeat=2):
        if i != j and labels[i] == labels[j]:
            neg = [
                dist[i, k].neg().add(1.0).exp()
                for k in range(len(labels))
                if labels[k] != labels[i]
            ]
            neg += [
                dist[j, k].neg().add(1.0).exp()
                for k in range(len(labels))
                if labels[k] != labels[j]
            ]
            terms.append(0.5 * torch.relu(torch.stack(neg).sum().log() + dist[i, j]) ** 2)
    got = LiftedStructureLoss(reduction="none")(emb, labels)
    torch.testing.assert_close(got, torch.stack(terms), rtol=1e-6, atol=1e-8)


def test_weighted_pairs_reductions():
    gen = torch.Generator().manual_seed(3)
    a = torch.nn.functional.normalize(torch.randn(6, 4, generator=gen, dtype=torch.float64), dim=1)
    b = torch.nn.functional.normalize(torch.randn(6, 4, generator=gen, dtype=torch.float64), dim=1)
    s = torch.rand(6, generator=gen, dtype=torch.float64) * 2 - 1
    w = torch.rand(6, generator=gen, dtype=torch.float64)
    errors = (s - (a * b).sum(1)) ** 2
    pairs = {
        r: SimilarityRegressionLoss(reduction=r).pairs(a, b, s, w) for r in ("mean", "sum", "none")
    }
    torch.testing.assert_close(pairs["none"], w * errors)
    torch.testing.assert_close(pairs["sum"], (w * errors).sum())
    torch.testing.assert_close(pairs["mean"], (w * errors).sum() / w.sum())


@pytest.mark.parametrize(
    "make", [WARPLoss, LiftedStructureLoss, NPairLoss, TripletLoss], ids=lambda m: m.__name__
)
def test_batch_without_terms_gives_an_attached_zero(make):
    emb = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    labels = torch.arange(4)  # no positive pair
    for reduction in ("mean", "sum"):
        value = make(reduction=reduction)(emb, labels)
        assert float(value.detach()) == 0.0
        value.backward()
    none = make(reduction="none")(emb, labels)
    assert float(none.detach().abs().sum()) == 0.0


def test_reduction_shows_in_repr():
    assert "reduction='sum'" in repr(TripletLoss(reduction="sum"))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_none_terms_gradcheck(name):
    """Every term of ``reduction="none"`` has the gradient of its formula (float64)."""
    make, _ = CONFIGS[name]
    emb, labels = _batch(4)
    emb = emb.detach()[:9].clone().requires_grad_(True)  # 3 per class: a small Jacobian
    labels = labels[:9]
    if name.startswith("potato"):  # its statistics move in training mode: freeze them first
        loss = make(reduction="none")
        loss(emb, labels)
        loss.eval()
    else:
        loss = None

    def terms(e):  # a fresh loss per call for the random triplet draws
        return (loss or make(reduction="none"))(e, labels)

    assert torch.autograd.gradcheck(terms, (emb,), atol=1e-6)
