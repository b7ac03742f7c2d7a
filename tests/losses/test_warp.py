"""WARP loss: brute-force eq. 5/7 references and rank estimators."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rankmetric.losses.warp import (
    WARPLoss,
    batched_rank_estimate,
    exact_rank,
    first_violation,
    harmonic_number,
    sampled_warp_loss,
    sequential_rank_estimate,
    warp_loss_from_violations,
)
from rankmetric.sampling import LabelIndex

MARGIN = 1.0


def harmonic(r: int) -> float:
    return sum(1.0 / t for t in range(1, r + 1))


def brute_force_terms(E: torch.Tensor, labels: np.ndarray, margin: float = MARGIN):
    """Eq. 5 term of every ordered positive pair, by explicit loops (differentiable)."""
    terms = []
    n = len(labels)
    for i in range(n):
        for j in range(n):
            if i == j or labels[i] != labels[j]:
                continue
            d_ij = torch.linalg.vector_norm(E[i] - E[j])
            hinges = [
                torch.relu(margin + d_ij - torch.linalg.vector_norm(E[i] - E[k]))
                for k in range(n)
                if labels[k] != labels[i]
            ]
            rank = sum(int(h > 0) for h in hinges)
            weight = harmonic(rank) / rank if rank else 0.0
            terms.append(weight * torch.stack(hinges).sum())
    return torch.stack(terms)


def toy_batch(n_per_class=4, n_classes=3, dim=3, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    labels = np.repeat(np.arange(n_classes), n_per_class)
    E = torch.randn(len(labels), dim, generator=gen, dtype=dtype)
    E = E + 0.8 * torch.as_tensor(labels, dtype=dtype)[:, None]  # some structure: ranks vary
    return E, labels


def test_harmonic_number_matches_partial_sums_and_is_zero_at_zero():
    ranks = torch.arange(0, 30, dtype=torch.float64)
    expected = torch.tensor([harmonic(int(r)) for r in ranks], dtype=torch.float64)
    torch.testing.assert_close(harmonic_number(ranks), expected)
    real = torch.linspace(0, 5, 51, dtype=torch.float64)
    assert torch.all(torch.diff(harmonic_number(real)) > 0)


def test_warp_loss_matches_brute_force_eq5_value_and_gradient():
    E, labels = toy_batch()
    E1 = E.clone().requires_grad_(True)
    E2 = E.clone().requires_grad_(True)
    ours = WARPLoss(margin=MARGIN)(E1, torch.as_tensor(labels))
    reference = brute_force_terms(E2, labels).mean()
    torch.testing.assert_close(ours, reference)
    ours.backward()
    reference.backward()
    torch.testing.assert_close(E1.grad, E2.grad)


def test_warp_loss_terms_and_reductions():
    E, labels = toy_batch(seed=3)
    t = torch.as_tensor(labels)
    terms = WARPLoss(reduction="none")(E, t)
    torch.testing.assert_close(terms, brute_force_terms(E, labels))
    torch.testing.assert_close(WARPLoss(reduction="sum")(E, t), terms.sum())


def test_warp_loss_rescales_ranks_to_the_data_set():
    E, labels = toy_batch(seed=1)
    t = torch.as_tensor(labels)
    n_other_batch = 8  # 3 classes of 4: 8 negatives per anchor in the batch
    same = WARPLoss()(E, t, n_other=torch.full((12,), float(n_other_batch)))
    torch.testing.assert_close(same, WARPLoss()(E, t))
    # ten times more negatives in the data set: r̂ = 10 v, so each term is L(10v)/v · Σ hinge
    scaled = WARPLoss(reduction="none")(E, t, n_other=torch.full((12,), 80.0))
    plain = WARPLoss(reduction="none")(E, t)
    positive = (t[:, None] == t[None, :]) & ~torch.eye(12, dtype=torch.bool)
    a_idx, p_idx = positive.nonzero(as_tuple=True)
    dist = torch.cdist(E, E)
    v = torch.stack(
        [
            ((MARGIN + dist[a, p] - dist[a][t != t[a]]) > 0).sum()
            for a, p in zip(a_idx, p_idx, strict=True)
        ]
    )
    ratio = torch.where(v > 0, harmonic_number(10.0 * v) / harmonic_number(v.double()), 1.0)
    torch.testing.assert_close(scaled, plain * ratio)


def test_warp_loss_without_positive_pairs_is_a_zero_with_a_graph():
    E = torch.randn(4, 3, requires_grad=True)
    loss = WARPLoss()(E, torch.arange(4))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.all(E.grad == 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"margin": -1.0}, "margin"),
        ({"reduction": "avg"}, "reduction"),
        ({"distance": "l1"}, "distance"),
    ],
)
def test_warp_loss_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WARPLoss(**kwargs)


def test_warp_loss_rejects_mismatched_labels():
    with pytest.raises(ValueError, match="labels"):
        WARPLoss()(torch.randn(5, 2), torch.arange(4))


def test_warp_loss_from_violations_is_eq5_when_every_negative_is_seen():
    hinge_sum = torch.tensor([3.0, 0.0, 2.5])
    v = torch.tensor([3, 0, 1])
    got = warp_loss_from_violations(hinge_sum, v, v.double())
    torch.testing.assert_close(got, torch.tensor([harmonic(3) / 3 * 3.0, 0.0, 2.5]))


def test_first_violation_and_rank_estimates():
    violates = torch.tensor([[False, False, True, True], [False] * 4, [True, False, False, False]])
    found, position = first_violation(violates)
    assert found.tolist() == [True, False, True]
    assert position[found].tolist() == [2, 0]
    n_other = torch.tensor([100, 100, 7])
    assert sequential_rank_estimate(position + 1, n_other)[found].tolist() == [33.0, 7.0]
    assert batched_rank_estimate(torch.tensor([2, 0, 1]), 4, n_other).tolist() == [50.0, 0.0, 1.75]


class _SmallData:
    """Labels and a fixed random embedding of 24 points (4 classes of 6)."""

    def __init__(self, seed=0):
        self.labels = np.repeat(np.arange(4), 6)
        gen = torch.Generator().manual_seed(seed)
        self.E = torch.randn(24, 2, generator=gen, dtype=torch.float64) * 1.5
        self.E += torch.as_tensor(self.labels)[:, None] * 0.7
        self.index = LabelIndex.from_codes(self.labels)


def test_batched_rank_estimate_is_unbiased_against_exact_eq7():
    data = _SmallData()
    rng = np.random.default_rng(0)
    first, second = data.index.positive_pairs(40, rng)
    d = torch.cdist(data.E, data.E)
    other = np.array([np.flatnonzero(data.labels != data.labels[i]) for i in first])
    exact = exact_rank(
        d[first, second], torch.stack([d[i, o] for i, o in zip(first, other, strict=True)]), MARGIN
    )
    repeats, S = 3000, 5
    negatives = data.index.negatives(np.repeat(first, repeats), S, rng).reshape(40, repeats, S)
    d_neg = d[torch.as_tensor(first)[:, None, None], torch.as_tensor(negatives)]
    v = (MARGIN + d[first, second][:, None, None] - d_neg > 0).sum(-1)
    estimate = batched_rank_estimate(v, S, torch.full_like(v, 18))  # |other| = 18
    mean, sem = estimate.mean(1), estimate.std(1) / math.sqrt(repeats)
    assert torch.all((mean - exact).abs() <= 4.0 * sem + 1e-9), (mean, exact)
    assert exact.min() < exact.max()  # the check covers different ranks


class _ExhaustiveIndex(LabelIndex):
    """Test double: every ordered positive pair, and every negative of each anchor, in order."""

    def positive_pairs(self, n_pairs, rng):
        same = self.codes[:, None] == self.codes[None, :]
        np.fill_diagonal(same, False)
        return np.nonzero(same)

    def negatives(self, anchors, n_per_anchor, rng):
        other = np.array([np.flatnonzero(self.codes != self.codes[a]) for a in anchors])
        assert n_per_anchor <= other.shape[1]
        return other[:, :n_per_anchor]


@pytest.mark.parametrize("sampling", ["batched", "exact"])
def test_sampled_loss_is_eq5_when_it_sees_every_negative(sampling):
    data = _SmallData(seed=2)
    index = _ExhaustiveIndex.from_codes(data.labels)
    W = torch.tensor([[1.0, 0.3], [-0.2, 0.8]], dtype=torch.float64, requires_grad=True)

    def embed(idx):
        return (data.E if idx is None else data.E[idx]) @ W.T

    ours = sampled_warp_loss(
        embed,
        index,
        np.random.default_rng(0),
        n_pairs=0,
        max_sampling=18,
        margin=MARGIN,
        max_violators=None,
        sampling=sampling,
    )
    (grad_ours,) = torch.autograd.grad(ours, W)
    reference = brute_force_terms(data.E @ W.T, data.labels).mean()
    (grad_ref,) = torch.autograd.grad(reference, W)
    torch.testing.assert_close(ours, reference)
    torch.testing.assert_close(grad_ours, grad_ref)


def test_sampled_sequential_loss_takes_the_first_violator_of_either_end():
    data = _SmallData(seed=4)
    index = _ExhaustiveIndex.from_codes(data.labels)
    E = data.E.clone().requires_grad_(True)
    ours = sampled_warp_loss(
        lambda idx: E if idx is None else E[idx],
        index,
        np.random.default_rng(0),
        n_pairs=0,
        max_sampling=18,
        sampling="sequential",
    )
    first, second = index.positive_pairs(0, None)
    d = torch.cdist(E, E)
    expected = []
    for i, j in zip(first, second, strict=True):
        other = np.flatnonzero(data.labels != data.labels[i])
        h_i = torch.relu(MARGIN + d[i, j] - d[i, other])
        h_j = torch.relu(MARGIN + d[i, j] - d[j, other])
        hits = np.flatnonzero(((h_i > 0) | (h_j > 0)).numpy())
        if hits.size == 0:
            expected.append(torch.zeros((), dtype=E.dtype))
            continue
        k = hits[0]
        weight = harmonic(len(other) // (k + 1))
        expected.append(weight * (h_i[k] + h_j[k]))
    reference = torch.stack(expected).sum() / (2 * len(first))
    torch.testing.assert_close(ours, reference)
    g1, g2 = torch.autograd.grad(ours, E), torch.autograd.grad(reference, E)
    torch.testing.assert_close(g1, g2)


def test_sampled_loss_estimates_eq5_with_random_draws():
    data = _SmallData(seed=5)
    W = torch.tensor([[0.9, 0.1], [0.2, 1.1]], dtype=torch.float64, requires_grad=True)

    def embed(idx):
        return (data.E if idx is None else data.E[idx]) @ W.T

    rng = np.random.default_rng(1)
    losses = [
        sampled_warp_loss(embed, data.index, rng, n_pairs=256, max_sampling=256) for _ in range(20)
    ]
    estimate = torch.stack(losses).mean()
    reference = brute_force_terms(embed(None), data.labels).mean()
    assert abs(estimate.item() - reference.item()) < 0.05 * reference.item()


def test_sampled_loss_rejects_unknown_sampling():
    data = _SmallData()
    with pytest.raises(ValueError, match="sampling"):
        sampled_warp_loss(
            lambda i: data.E,
            data.index,
            np.random.default_rng(0),
            n_pairs=4,
            max_sampling=4,
            sampling="greedy",
        )


def test_warp_loss_trains_a_small_network():
    gen = torch.Generator().manual_seed(0)
    labels = torch.arange(4).repeat_interleave(16)
    x = torch.randn(64, 6, generator=gen) + 2.0 * torch.nn.functional.one_hot(labels, 6)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    loss_fn = WARPLoss()
    first = loss_fn(net(x), labels).item()
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(net(x), labels)
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_warp_loss_on_cuda_matches_cpu():
    E, labels = toy_batch(dtype=torch.float32)
    cpu = WARPLoss()(E, torch.as_tensor(labels))
    gpu = WARPLoss()(E.cuda(), torch.as_tensor(labels).cuda())
    torch.testing.assert_close(gpu.cpu(), cpu)
