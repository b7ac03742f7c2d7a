"""The deep metric-learning baseline losses against brute-force definitions (triple loops)."""

import itertools
import math

import numpy as np
import pytest
import scipy.linalg
import scipy.spatial.distance
import torch

from rankmetric.losses.lifted import LiftedStructureLoss
from rankmetric.losses.miners import BatchHardMiner, TripletMiner
from rankmetric.losses.multi_similarity import MultiSimilarityLoss
from rankmetric.losses.npair import NPairLoss, first_pair_per_class
from rankmetric.losses.pair_distances import (
    check_batch,
    label_masks,
    masked_logsumexp,
    paired_distance,
    pairwise_distance,
    pairwise_similarity,
)
from rankmetric.losses.proxy_nca import ProxyNCALoss
from rankmetric.losses.triplet import TripletLoss, random_partners

LABELS = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 3, 2])


def _batch(seed=0, n=10, d=4, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=gen, dtype=dtype), LABELS[:n].clone()


def _np(t):
    return t.detach().numpy()


# ----------------------------------------------------------------------------- brute force
def _dist(x, metric="euclidean"):
    x = _np(x)
    n = len(x)
    out = np.zeros((n, n))
    for i, j in itertools.product(range(n), repeat=2):
        diff = x[i] - x[j]
        if metric == "euclidean":
            out[i, j] = math.sqrt(diff @ diff)
        elif metric == "sqeuclidean":
            out[i, j] = diff @ diff
        else:
            out[i, j] = 1 - x[i] @ x[j] / (np.linalg.norm(x[i]) * np.linalg.norm(x[j]))
    return out


def _triplets(y):
    n = len(y)
    for a, p, q in itertools.product(range(n), repeat=3):
        if a != p and y[a] == y[p] and y[a] != y[q]:
            yield a, p, q


def _brute_triplet_all(D, y, m, nonzero=False):
    losses = [max(D[a, p] - D[a, q] + m, 0.0) for a, p, q in _triplets(y)]
    kept = [v for v in losses if v > 0] if nonzero else losses
    return sum(kept) / len(kept) if kept else 0.0


def _brute_triplet_hard(D, y, m):
    n, losses = len(y), []
    for a in range(n):
        pos = [D[a, p] for p in range(n) if p != a and y[p] == y[a]]
        neg = [D[a, q] for q in range(n) if y[q] != y[a]]
        if pos and neg:
            losses.append(max(max(pos) - min(neg) + m, 0.0))
    return sum(losses) / len(losses)


def _brute_triplet_semihard(D, y, m):
    n, losses = len(y), []
    for a, p in itertools.product(range(n), repeat=2):
        if a == p or y[a] != y[p]:
            continue
        neg = [D[a, q] for q in range(n) if y[q] != y[a]]
        if not neg:
            continue
        farther = [v for v in neg if v > D[a, p]]
        d_an = min(farther) if farther else max(neg)
        losses.append(max(D[a, p] - d_an + m, 0.0))
    return sum(losses) / len(losses)


def _brute_lifted(D, y, m):
    n, total, n_pos = len(y), 0.0, 0
    for i, j in itertools.product(range(n), repeat=2):
        if i == j or y[i] != y[j]:
            continue
        s = sum(math.exp(m - D[i, k]) for k in range(n) if y[k] != y[i])
        s += sum(math.exp(m - D[j, k]) for k in range(n) if y[k] != y[j])
        total += max(math.log(s) + D[i, j], 0.0) ** 2
        n_pos += 1
    return total / (2 * n_pos)


def _brute_lifted_generalized(D, y, m):
    n, losses = len(y), []
    for a in range(n):
        pos = [D[a, p] for p in range(n) if p != a and y[p] == y[a]]
        neg = [D[a, q] for q in range(n) if y[q] != y[a]]
        if pos and neg:
            value = math.log(sum(map(math.exp, pos))) + math.log(sum(math.exp(m - v) for v in neg))
            losses.append(max(value, 0.0))
    return sum(losses) / len(losses)


def _brute_npair(x, y, l2_weight):
    x, y = _np(x), list(_np(y))
    pairs = {}
    for i, label in enumerate(y):  # first two samples of each class, in batch order
        pairs.setdefault(label, [])
        if len(pairs[label]) < 2:
            pairs[label].append(i)
    pairs = [v for v in pairs.values() if len(v) == 2]
    total = 0.0
    for a, p in pairs:
        s = sum(math.exp(x[a] @ x[q] - x[a] @ x[p]) for b, q in pairs if b != a)
        total += math.log(1 + s)
    norms = [x[i] @ x[i] for pair in pairs for i in pair]
    return total / len(pairs) + 0.5 * l2_weight * sum(norms) / len(norms)


def _brute_proxy_nca(x, y, proxies, scale, exclude_positive):
    x, proxies = _np(x), _np(proxies)
    total = 0.0
    for i, label in enumerate(_np(y)):
        xi = x[i] / np.linalg.norm(x[i])
        d = [np.sum((xi - p / np.linalg.norm(p)) ** 2) for p in proxies]
        denom = sum(
            math.exp(-scale * d[z]) for z in range(len(d)) if z != label or not exclude_positive
        )
        total += -math.log(math.exp(-scale * d[label]) / denom)
    return total / len(x)


def _brute_multi_similarity(x, y, alpha, beta, base, eps, mining=True):
    S = 1 - _dist(x, "cosine")
    y, n, total = _np(y), len(x), 0.0
    for i in range(n):
        pos = [S[i, j] for j in range(n) if j != i and y[j] == y[i]]
        neg = [S[i, k] for k in range(n) if y[k] != y[i]]
        if mining:
            pos_kept = [s for s in pos if neg and s - eps < max(neg)]
            neg_kept = [s for s in neg if pos and s + eps > min(pos)]
        else:
            pos_kept, neg_kept = pos, neg
        total += math.log(1 + sum(math.exp(-alpha * (s - base)) for s in pos_kept)) / alpha
        total += math.log(1 + sum(math.exp(beta * (s - base)) for s in neg_kept)) / beta
    return total / n


# ----------------------------------------------------------------------------- distances
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
def test_pairwise_distance_matches_brute_force(metric):
    x, _ = _batch()
    D = pairwise_distance(x, metric)
    np.testing.assert_allclose(_np(D), _dist(x, metric), atol=1e-12)
    assert torch.all(D.diagonal() == 0) or metric == "cosine"


def test_pairwise_distance_between_two_sets():
    x, _ = _batch(0, n=5)
    y, _ = _batch(1, n=7)
    expected = scipy.spatial.distance.cdist(_np(x), _np(y))
    np.testing.assert_allclose(_np(pairwise_distance(x, "euclidean", y)), expected, atol=1e-12)
    sims = _np(pairwise_similarity(x, "dot", y))
    np.testing.assert_allclose(sims, _np(x) @ _np(y).T, atol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"])
def test_paired_distance_is_the_diagonal_of_the_pairwise_one(metric):
    if metric in ("airm", "log_euclidean"):
        x, y = _random_spd(6, 3, 0), _random_spd(6, 3, 1)
    else:
        (x, _), (y, _) = _batch(0, n=6), _batch(1, n=6)
    expected = pairwise_distance(x, metric, y).diagonal()
    torch.testing.assert_close(paired_distance(x, y, metric), expected)
    manhattan = lambda a, b: (a[:, None] - b[None]).abs().flatten(2).sum(-1)  # noqa: E731
    torch.testing.assert_close(paired_distance(x, y, manhattan), (x - y).abs().flatten(1).sum(1))


def test_euclidean_gradient_is_finite_at_duplicate_points():
    x, _ = _batch(n=4)
    x = torch.cat([x, x[:1]]).requires_grad_()
    pairwise_distance(x, "euclidean").sum().backward()
    assert torch.isfinite(x.grad).all()


def test_injected_distance_is_called_and_checked():
    x, y = _batch()
    manhattan = lambda a, b: (a[:, None] - b[None]).abs().sum(-1)  # noqa: E731
    D = pairwise_distance(x, manhattan)
    np.testing.assert_allclose(_np(D), scipy.spatial.distance.cdist(_np(x), _np(x), "cityblock"))
    loss = TripletLoss(0.5, "all", metric=manhattan)(x, y)
    expected = _brute_triplet_all(_np(D), _np(y), 0.5)
    assert loss.item() == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="shape"):
        pairwise_distance(x, lambda a, b: a.sum())


def _random_spd(n, c, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, c, c))
    return torch.as_tensor(A @ A.transpose(0, 2, 1) + c * np.eye(c))


def test_spd_metrics_match_their_definitions():
    X = _random_spd(5, 3, 0)
    airm = pairwise_distance(X, "airm")
    log_euc = pairwise_distance(X, "log_euclidean")
    w, V = np.linalg.eigh(_np(X))
    logs = V @ (np.log(w)[:, :, None] * V.transpose(0, 2, 1))  # matrix logarithms
    for i, j in itertools.product(range(5), repeat=2):
        lam = scipy.linalg.eigh(_np(X[i]), _np(X[j]), eigvals_only=True)
        assert airm[i, j].item() == pytest.approx(np.sqrt(np.sum(np.log(lam) ** 2)), abs=1e-6)
        diff = logs[i] - logs[j]
        assert log_euc[i, j].item() == pytest.approx(np.linalg.norm(diff), abs=1e-6)


def test_triplet_and_lifted_accept_spd_embeddings():
    X = _random_spd(8, 3, 1)
    y = LABELS[:8]
    D = _np(pairwise_distance(X, "airm"))
    assert TripletLoss(0.5, "hard", "airm")(X, y).item() == pytest.approx(
        _brute_triplet_hard(D, _np(y), 0.5), abs=1e-6
    )
    assert LiftedStructureLoss(1.0, "airm")(X, y).item() == pytest.approx(
        _brute_lifted(D, _np(y), 1.0), abs=1e-6
    )


@pytest.mark.parametrize(
    ("x", "metric", "match"),
    [
        (torch.zeros(4, 3), "airm", "SPD matrices"),
        (torch.zeros(4, 3, 3), "euclidean", "vectors"),
        (torch.zeros(4, 3), "manhattan", "distance must be one of"),
    ],
)
def test_pairwise_distance_rejects_mismatched_metric(x, metric, match):
    with pytest.raises(ValueError, match=match):
        pairwise_distance(x, metric)


def test_masked_logsumexp_empty_row_has_zero_gradient():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    values, nonempty = masked_logsumexp(x, mask)
    torch.where(nonempty, values, 0.0).sum().backward()
    assert values[0].item() == pytest.approx(torch.logsumexp(x[0, [0, 2]], 0).item())
    assert nonempty.tolist() == [True, False, True]
    assert torch.all(x.grad[1] == 0) and torch.isfinite(x.grad).all()


# ----------------------------------------------------------------------------- triplet
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
@pytest.mark.parametrize("nonzero", [False, True])
def test_triplet_all_matches_brute_force(metric, nonzero):
    x, y = _batch()
    loss = TripletLoss(0.3, "all", metric, average_nonzero=nonzero)(x, y)
    expected = _brute_triplet_all(_dist(x, metric), _np(y), 0.3, nonzero)
    assert loss.item() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize(
    ("mining", "brute"), [("hard", _brute_triplet_hard), ("semihard", _brute_triplet_semihard)]
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_mining_matches_brute_force(mining, brute, seed):
    x, y = _batch(seed)
    loss = TripletLoss(0.5, mining)(x, y)
    assert loss.item() == pytest.approx(brute(_dist(x), _np(y), 0.5), rel=1e-10)


@pytest.mark.parametrize(
    ("mining", "brute"),
    [
        ("all", _brute_triplet_all),
        ("hard", _brute_triplet_hard),
        ("semihard", _brute_triplet_semihard),
    ],
)
def test_triplet_ties_follow_the_strict_definitions(mining, brute):
    """Integer points, squared distances and margin 1 give exact ties D_an = D_ap (+ m)."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randint(0, 3, (12, 2), generator=gen).double()
    y = torch.arange(12) % 3
    loss = TripletLoss(1.0, mining, "sqeuclidean")(x, y)
    assert loss.item() == pytest.approx(brute(_dist(x, "sqeuclidean"), _np(y), 1.0), rel=1e-12)


def test_triplet_random_is_unbiased_for_the_all_pairs_mean():
    """E[loss] = mean over anchors of the mean hinge over that anchor's (p, n)."""
    x, y = _batch(n=8)
    D, labels = _dist(x), _np(y)
    per_anchor = {}
    for a, p, q in _triplets(labels):
        per_anchor.setdefault(a, []).append(max(D[a, p] - D[a, q] + 0.5, 0.0))
    expected = np.mean([np.mean(v) for v in per_anchor.values()])
    loss = TripletLoss(0.5, "random", generator=torch.Generator().manual_seed(0))
    draws = np.array([loss(x, y).item() for _ in range(1000)])
    assert abs(draws.mean() - expected) < 4 * draws.std() / np.sqrt(len(draws))


def test_triplet_random_is_reproducible_with_a_seeded_generator():
    x, y = _batch()
    first = TripletLoss(0.5, "random", generator=torch.Generator().manual_seed(7))(x, y)
    second = TripletLoss(0.5, "random", generator=torch.Generator().manual_seed(7))(x, y)
    assert first.item() == second.item()


def test_random_partners_are_valid_and_uniform():
    labels = torch.tensor([2, 0, 2, 1, 2, 0, 2, 7])  # class 7 has no positive
    gen = torch.Generator().manual_seed(0)
    draws = [random_partners(labels, gen) for _ in range(2000)]
    positives = torch.stack([d[0] for d in draws])
    negatives = torch.stack([d[1] for d in draws])
    valid = draws[0][2]
    assert valid.tolist() == [True, True, True, False, True, True, True, False]
    n = len(labels)
    for i in range(n):
        same = [j for j in range(n) if j != i and labels[j] == labels[i]]
        other = [j for j in range(n) if labels[j] != labels[i]]
        assert set(negatives[:, i].tolist()) == set(other)
        counts = np.bincount(_np(negatives[:, i]), minlength=n)[other] / 2000
        assert np.all(np.abs(counts - 1 / len(other)) < 0.045)  # about 4 standard deviations
        if valid[i]:
            assert set(positives[:, i].tolist()) == set(same)
            counts = np.bincount(_np(positives[:, i]), minlength=n)[same] / 2000
            assert np.all(np.abs(counts - 1 / len(same)) < 0.045)


# ----------------------------------------------------------------------------- lifted
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
@pytest.mark.parametrize("seed", [0, 1])
def test_lifted_matches_brute_force(metric, seed):
    x, y = _batch(seed)
    D = _dist(x, metric)
    original = LiftedStructureLoss(1.0, metric)(x, y)
    generalized = LiftedStructureLoss(0.7, metric, form="generalized")(x, y)
    assert original.item() == pytest.approx(_brute_lifted(D, _np(y), 1.0), rel=1e-10)
    expected = _brute_lifted_generalized(D, _np(y), 0.7)
    assert generalized.item() == pytest.approx(expected, rel=1e-10)


def test_lifted_is_stable_for_far_apart_points():
    x, y = _batch()
    loss = LiftedStructureLoss(1.0)(x * 1e3, y)
    assert torch.isfinite(loss)


# ----------------------------------------------------------------------------- n-pair
@pytest.mark.parametrize("l2_weight", [0.0, 0.002, 0.5])
def test_npair_matches_brute_force(l2_weight):
    x, y = _batch()
    loss = NPairLoss(l2_weight)(x, y)
    assert loss.item() == pytest.approx(_brute_npair(x, y, l2_weight), rel=1e-10)


def test_first_pair_per_class_takes_first_two_in_batch_order():
    y = torch.tensor([5, 3, 5, 9, 3, 5, 7])
    anchors, positives = first_pair_per_class(y)
    assert anchors.tolist() == [1, 0] and positives.tolist() == [4, 2]


# ----------------------------------------------------------------------------- proxy nca
@pytest.mark.parametrize("exclude_positive", [True, False])
def test_proxy_nca_matches_brute_force(exclude_positive):
    x, y = _batch()
    loss = ProxyNCALoss(4, 4, softmax_scale=3.0, exclude_positive=exclude_positive).double()
    expected = _brute_proxy_nca(x, y, loss.proxies, 3.0, exclude_positive)
    assert loss(x, y).item() == pytest.approx(expected, rel=1e-10)


def test_proxy_nca_trains_its_proxies():
    x, y = _batch(dtype=torch.float32)
    loss = ProxyNCALoss(4, 4, generator=torch.Generator().manual_seed(0))
    assert isinstance(loss.proxies, torch.nn.Parameter) and loss.proxies.dtype == torch.float32
    loss(x, y).backward()
    assert loss.proxies.grad is not None and loss.proxies.grad.abs().sum() > 0
    again = ProxyNCALoss(4, 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(loss.proxies, again.proxies)


# ----------------------------------------------------------------------------- multi-similarity
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mining", [True, False])
def test_multi_similarity_matches_brute_force(seed, mining):
    x, y = _batch(seed)
    loss = MultiSimilarityLoss(2.0, 10.0, 0.5, 0.1, mining=mining)(x, y)
    expected = _brute_multi_similarity(x, y, 2.0, 10.0, 0.5, 0.1, mining)
    assert loss.item() == pytest.approx(expected, rel=1e-10)


def test_multi_similarity_default_beta_is_stable():
    x, y = _batch()
    loss = MultiSimilarityLoss()(x, y)
    assert loss.item() == pytest.approx(_brute_multi_similarity(x, y, 2, 50, 0.5, 0.1), rel=1e-9)


# ----------------------------------------------------------------------------- all losses
def _losses():
    gen = torch.Generator().manual_seed(0)
    return {
        "triplet-all": TripletLoss(0.5, "all"),
        "triplet-hard": TripletLoss(0.5, "hard"),
        "triplet-semihard": TripletLoss(0.5, "semihard"),
        "triplet-random": TripletLoss(0.5, "random", generator=gen),
        "lifted": LiftedStructureLoss(1.0),
        "lifted-generalized": LiftedStructureLoss(1.0, form="generalized"),
        "npair": NPairLoss(0.01),
        "proxy-nca": ProxyNCALoss(4, 4, generator=gen),
        "multi-similarity": MultiSimilarityLoss(beta=10.0),
    }


@pytest.mark.parametrize("name", list(_losses()))
def test_gradcheck(name):
    loss = _losses()[name].double()
    x, y = _batch(n=9)
    x.requires_grad_()
    if name == "triplet-random":
        fn = lambda e: TripletLoss(0.5, "random", generator=torch.Generator().manual_seed(1))(e, y)  # noqa: E731
    else:
        fn = lambda e: loss(e, y)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    if name == "proxy-nca":
        proxies = loss.proxies.detach().clone().requires_grad_()
        call = torch.func.functional_call
        through_proxies = lambda p: call(loss, {"proxies": p}, (x.detach(), y))  # noqa: E731
        assert torch.autograd.gradcheck(through_proxies, (proxies,))


@pytest.mark.parametrize("name", list(_losses()))
def test_float32_in_float32_out(name):
    x, y = _batch(dtype=torch.float32)
    out = _losses()[name](x, y)
    assert out.dtype == torch.float32 and out.ndim == 0 and torch.isfinite(out)


def _separated(scale):
    """Four classes of three points, along ± the first two axes, tightly grouped."""
    centres = torch.tensor([[1.0, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    noise = 1e-3 * torch.randn(12, 3, generator=gen, dtype=torch.float64)
    return scale * centres.repeat_interleave(3, 0) + noise, torch.arange(4).repeat_interleave(3)


@pytest.mark.parametrize(
    "loss",
    [
        TripletLoss(0.5, "all"),
        TripletLoss(0.5, "hard"),
        TripletLoss(0.5, "semihard"),
        TripletLoss(0.5, "random"),
        LiftedStructureLoss(1.0),
        LiftedStructureLoss(1.0, form="generalized"),
    ],
    ids=repr,
)
def test_zero_loss_when_classes_are_separated_beyond_the_margin(loss):
    x, y = _separated(scale=20.0)
    assert loss(x, y).item() == 0.0


def test_similarity_losses_vanish_when_classes_are_separated():
    x, y = _separated(scale=1.0)
    assert MultiSimilarityLoss()(x, y).item() == 0.0  # nothing mined: log(1) + log(1)
    far, labels = _separated(scale=30.0)
    assert NPairLoss(0.0)(far, labels).item() < 1e-12
    proxies = ProxyNCALoss(4, 3, softmax_scale=30.0, exclude_positive=False).double()
    with torch.no_grad():
        proxies.proxies.copy_(far[::3])
    assert proxies(far, labels).item() < 1e-12


@pytest.mark.parametrize("name", [n for n in _losses() if n != "proxy-nca"])
@pytest.mark.parametrize("labels", [[0, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5]], ids=["one", "unique"])
def test_no_valid_tuple_gives_zero_loss_with_a_graph(name, labels):
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    out = _losses()[name].double()(x, torch.tensor(labels))
    out.backward()
    assert out.item() == 0.0 and torch.all(x.grad == 0)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", list(_losses()))
@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (torch.zeros(6, 4), torch.zeros(5, dtype=torch.long), "labels must have shape"),
        (torch.zeros(6, 4), torch.zeros(6), "labels must be integers"),
        (torch.zeros(6, 4, 2), torch.zeros(6, dtype=torch.long), "embeddings must have shape"),
        (torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), "empty"),
        (torch.zeros(6, 4, dtype=torch.long), torch.zeros(6, dtype=torch.long), "floating"),
        (torch.full((6, 4), torch.nan), torch.zeros(6, dtype=torch.long), "NaN"),
        (np.zeros((6, 4)), torch.zeros(6, dtype=torch.long), "torch.Tensor"),
    ],
)
def test_bad_input_raises(name, x, y, match):
    with pytest.raises(ValueError, match=match):
        _losses()[name](x, y)


def test_check_batch_returns_int64_labels_on_the_embeddings_device():
    labels = check_batch(torch.zeros(3, 2), np.array([1, 2, 1], dtype=np.int32))
    assert labels.dtype == torch.int64 and labels.tolist() == [1, 2, 1]
    positive, negative = label_masks(labels)
    assert positive.tolist() == [[False, False, True], [False, False, False], [True, False, False]]
    assert negative.tolist() == [[False, True, False], [True, False, True], [False, True, False]]


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: TripletLoss(-1.0), "margin"),
        (lambda: TripletLoss(mining="hardest"), "mining"),
        (lambda: TripletLoss(metric="manhattan"), "metric"),
        (lambda: LiftedStructureLoss(form="song"), "form"),
        (lambda: NPairLoss(-1.0), "l2_weight"),
        (lambda: NPairLoss(similarity="euclidean"), "similarity"),
        (lambda: ProxyNCALoss(1, 4), "n_classes"),
        (lambda: ProxyNCALoss(3, 0), "embedding_dim"),
        (lambda: ProxyNCALoss(3, 4, softmax_scale=0.0), "softmax_scale"),
        (lambda: MultiSimilarityLoss(alpha=0.0), "alpha"),
        (lambda: MultiSimilarityLoss(epsilon=-0.1), "epsilon"),
    ],
)
def test_bad_parameters_raise(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


def test_proxy_nca_rejects_foreign_labels_dims_and_dtypes():
    loss = ProxyNCALoss(3, 4)
    with pytest.raises(ValueError, match="class codes in 0..2"):
        loss(torch.zeros(2, 4), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="dimension"):
        loss(torch.zeros(2, 5), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="float64"):
        loss(torch.zeros(2, 4, dtype=torch.float64), torch.tensor([0, 1]))


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: TripletLoss(**kw),
        lambda **kw: LiftedStructureLoss(**kw),
        lambda **kw: TripletMiner(**kw),
        lambda **kw: BatchHardMiner(**kw),
    ],
)
def test_old_distance_keyword_warns_and_means_metric(make):
    """``distance=`` (before 0.2) is ``metric=`` this release, with a FutureWarning naming it."""
    with pytest.warns(FutureWarning, match="'distance' was renamed 'metric'.*0.3"):
        old = make(distance="cosine")
    assert old.metric == "cosine" and old.distance == "cosine"
    assert repr(old) == repr(make(metric="cosine"))
    with pytest.raises(TypeError, match="both 'distance' and its new name 'metric'"):
        make(distance="cosine", metric="cosine")
