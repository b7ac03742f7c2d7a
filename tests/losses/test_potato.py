"""Tests of the Riemannian Potato-based Ranking Loss against brute force reading of docs/rpl.md."""

import os
import tempfile

import numpy as np
import pytest
import scipy.linalg
import torch
from pyriemann.datasets import make_matrices

from rankmetric.losses.potato import RiemannianPotatoLoss, embedding_distances

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# ---------------------------------------------------------------- brute-force reference


def _distance_matrix(E: np.ndarray, distance: str) -> np.ndarray:
    """Distances from their definitions, one pair at a time (SciPy, float64)."""
    n = E.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if E.ndim == 2:
                D[i, j] = np.sqrt(((E[i] - E[j]) ** 2).sum())
            elif distance == "airm":
                lam = scipy.linalg.eigh(E[j], E[i], eigvals_only=True)  # λ(E_i⁻¹ E_j)
                D[i, j] = np.sqrt((np.log(lam) ** 2).sum())
            else:
                D[i, j] = np.linalg.norm(_logm(E[i]) - _logm(E[j]))
    return D


def _logm(S: np.ndarray) -> np.ndarray:
    w, U = np.linalg.eigh(S)
    return (U * np.log(w)) @ U.T


def _weighted_mean(hinges: list[float], temperature: float) -> float:
    if not hinges:
        return 0.0
    h = np.asarray(hinges)
    w = np.exp(temperature * h) if temperature > 0 else np.ones_like(h)
    return float((w * h).sum() / w.sum())


def _brute_force(
    D, labels, state, *, z_th, m, lam, alpha, T=0.0, eps=1e-6, floor=0.05, update=True
):
    """Loss and updated potato state, with explicit loops over classes, anchors and pairs."""
    log_mu, log_sigma, seen = (np.array(s, dtype=float) for s in state)
    seen = seen.astype(bool)
    logd = np.log(np.maximum(D, eps))
    n = len(labels)
    if update:
        for c in np.unique(labels):
            vals = [
                logd[i, j] for i in range(n) for j in range(i + 1, n) if labels[i] == labels[j] == c
            ]
            if not vals:
                continue
            vals = np.asarray(vals)
            if seen[c]:
                mu = (1 - alpha) * log_mu[c] + alpha * vals.mean()
                var = (1 - alpha) * log_sigma[c] ** 2 + alpha * ((vals - mu) ** 2).mean()
            else:
                mu = vals.mean()
                var = ((vals - mu) ** 2).mean()
            log_mu[c], log_sigma[c], seen[c] = mu, np.sqrt(var), True
    total = 0.0
    for i in range(n):
        c = labels[i]
        if not seen[c]:
            continue
        positives, negatives = [], []
        for j in range(n):
            z = (logd[i, j] - log_mu[c]) / max(log_sigma[c], floor)
            if j != i and labels[j] == c and z > z_th:  # P̂_i
                positives.append(max(z - z_th, 0.0))
            if labels[j] != c and z < z_th + m:  # N̂_i
                negatives.append(max(z_th + m - z, 0.0))
        total += _weighted_mean(positives, T) + lam * _weighted_mean(negatives, T)
    return total / n, (log_mu, log_sigma, seen)


def _state(loss: RiemannianPotatoLoss):
    return (loss.log_mu.numpy().copy(), loss.log_sigma.numpy().copy(), loss.seen.numpy().copy())


def _spd(n, c, seed):
    return make_matrices(n, c, "spd", rs=np.random.RandomState(seed), evals_low=0.3, evals_high=3.0)


def _embeddings(kind, n, seed):
    if kind == "vector":
        return np.random.default_rng(seed).normal(size=(n, 3))
    return _spd(n, 3, seed)


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize(
    "kind, distance", [("vector", "airm"), ("spd", "airm"), ("spd", "log_euclidean")]
)
@pytest.mark.parametrize(
    "params",
    [
        {"z_th": 0.0, "m": 1.0, "lam": 1.0, "alpha": 0.1},
        {"z_th": -0.5, "m": 2.0, "lam": 0.5, "alpha": 0.5, "T": 2.0},
    ],
)
def test_loss_and_potato_match_brute_force_over_several_batches(kind, distance, params):
    loss_fn = RiemannianPotatoLoss(
        params["z_th"],
        params["m"],
        params["lam"],
        params["alpha"],
        distance,
        temperature=params.get("T", 0.0),
        n_classes=4,
    ).double()
    state = _state(loss_fn)
    batches = [  # class 3 appears only in the third batch; class 2 once with a single sample
        np.array([0, 0, 0, 1, 1, 2, 1]),
        np.array([1, 0, 1, 0, 1, 0]),
        np.array([3, 3, 0, 1, 3, 0, 1, 1]),
    ]
    for step, labels in enumerate(batches):
        E = _embeddings(kind, len(labels), seed=10 * step + len(kind))
        D = _distance_matrix(E, distance)
        expected, state = _brute_force(D, labels, state, **params)
        got = loss_fn(torch.as_tensor(E), torch.as_tensor(labels))
        assert float(got) == pytest.approx(expected, rel=1e-9, abs=1e-10)
        for ours, ref in zip(_state(loss_fn), state, strict=True):
            np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)
    assert _state(loss_fn)[2].tolist() == [True, True, False, True]


def test_first_batch_initialises_potato_with_batch_statistics():
    labels = np.array([0, 0, 0, 0, 1, 1, 1])
    E = _spd(7, 4, seed=3)
    D = _distance_matrix(E, "airm")
    loss_fn = RiemannianPotatoLoss(momentum=0.1).double()
    loss_fn(torch.as_tensor(E), torch.as_tensor(labels))
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        vals = np.log(D[np.ix_(idx, idx)][np.triu_indices(len(idx), 1)])
        assert loss_fn.log_mu[c].item() == pytest.approx(vals.mean(), rel=1e-9)
        assert loss_fn.log_sigma[c].item() == pytest.approx(vals.std(), rel=1e-9)


def test_poster_geometric_statistics_are_the_stored_log_statistics():
    # μ = exp(mean log d) and σ = exp(std log d) (poster); the buffers hold their logarithms.
    d = np.array([0.5, 1.5, 2.0, 4.0])
    loss_fn = RiemannianPotatoLoss(momentum=1.0).double()
    X = torch.as_tensor(d, dtype=torch.float64)
    # Vectors on a line from 0: the within-class distances of class 0 are |d_i − d_j| (6 pairs).
    E = torch.cat([torch.zeros(1), X]).unsqueeze(1)
    loss_fn(E, torch.zeros(5, dtype=torch.long).index_fill(0, torch.tensor([4]), 1))
    pts = np.concatenate([[0.0], d[:3]])
    pair = np.abs(pts[:, None] - pts[None])[np.triu_indices(4, 1)]
    mu = np.exp(np.log(pair).mean())
    sigma = np.exp(np.sqrt((np.log(pair / mu) ** 2).mean()))
    assert np.exp(loss_fn.log_mu[0].item()) == pytest.approx(mu, rel=1e-12)
    assert np.exp(loss_fn.log_sigma[0].item()) == pytest.approx(sigma, rel=1e-12)


def test_eval_mode_uses_stored_potato_without_updating():
    loss_fn = RiemannianPotatoLoss(n_classes=2).double()
    labels = torch.tensor([0, 0, 1, 1, 0])
    E1, E2 = (torch.as_tensor(_spd(5, 3, seed=s)) for s in (1, 2))
    loss_fn(E1, labels)
    before = _state(loss_fn)
    loss_fn.eval()
    got = loss_fn(E2, labels)
    for a, b in zip(before, _state(loss_fn), strict=True):
        np.testing.assert_array_equal(a, b)
    expected, _ = _brute_force(
        _distance_matrix(E2.numpy(), "airm"),
        labels.numpy(),
        before,
        z_th=0.0,
        m=1.0,
        lam=1.0,
        alpha=0.1,
        update=False,
    )
    assert float(got) == pytest.approx(expected, rel=1e-9)


def test_unseen_classes_contribute_nothing_in_eval():
    loss_fn = RiemannianPotatoLoss(n_classes=3).eval()
    assert float(loss_fn(torch.randn(6, 2), torch.tensor([0, 0, 1, 1, 2, 2]))) == 0.0


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize(
    "kind, distance", [("vector", "airm"), ("spd", "airm"), ("spd", "log_euclidean")]
)
def test_gradcheck_float64(kind, distance):
    labels = torch.tensor([0, 0, 1, 1, 1, 0, 2])  # ≥ 3 per class: no z exactly at a kink
    E = torch.as_tensor(_embeddings(kind, 7, seed=7))
    loss_fn = RiemannianPotatoLoss(metric=distance, margin=3.0).double()
    loss_fn(E, labels)  # initialise the potato, then freeze it
    loss_fn.eval()
    if kind == "vector":
        E = E.clone().requires_grad_(True)
        func = lambda e: loss_fn(e, labels)  # noqa: E731
    else:  # perturb through a symmetric parameter so that the input stays symmetric
        E = E.clone()
        func = lambda S: loss_fn(E + 0.5 * (S + S.transpose(-1, -2)), labels)  # noqa: E731
        E_param = torch.zeros_like(E, requires_grad=True)
    arg = E if kind == "vector" else E_param
    assert float(func(arg).detach()) > 0
    assert torch.autograd.gradcheck(func, (arg,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["vector", "spd"])
def test_duplicate_embeddings_give_finite_gradients(kind):
    E = torch.as_tensor(_embeddings(kind, 4, seed=5)).float()
    E = torch.cat([E, E[:2]]).requires_grad_(True)  # samples 4, 5 repeat samples 0, 1
    labels = torch.tensor([0, 1, 0, 1, 0, 1])
    loss = RiemannianPotatoLoss()(E, labels)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(E.grad).all()


def test_log_euclidean_on_matrices_equals_euclidean_on_vectorised_logs():
    # The route RPLEmbedding takes for distance="log_euclidean".
    from rankmetric.geometry import spd_log
    from rankmetric.models.spdnet import sym_to_vec

    S = torch.as_tensor(_spd(8, 3, seed=4))
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2])
    on_matrices = RiemannianPotatoLoss(metric="log_euclidean").double()
    on_vectors = RiemannianPotatoLoss().double()
    for _ in range(2):
        a = on_matrices(S, labels)
        b = on_vectors(sym_to_vec(spd_log(S)), labels)
        assert float(a) == pytest.approx(float(b), rel=1e-6)
    np.testing.assert_allclose(on_matrices.log_mu, on_vectors.log_mu, atol=1e-6)


def test_statistics_are_detached():
    E = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    loss_fn = RiemannianPotatoLoss().double()
    loss_fn(E, torch.tensor([0, 0, 0, 1, 1, 1])).backward()
    assert not loss_fn.log_mu.requires_grad and not loss_fn.log_sigma.requires_grad


def test_loss_pulls_positives_in_and_pushes_negatives_out():
    torch.manual_seed(0)
    E = torch.randn(12, 4, requires_grad=True)
    labels = torch.arange(12) % 3
    loss_fn = RiemannianPotatoLoss()
    opt = torch.optim.Adam([E], lr=0.1)
    for _ in range(100):
        opt.zero_grad()
        loss_fn(E, labels).backward()
        opt.step()
    D = torch.cdist(E, E).detach()
    same = labels[:, None] == labels[None]
    off = ~torch.eye(12, dtype=torch.bool)
    assert D[same & off].max() < D[~same].min()


# ---------------------------------------------------------------- buffers, devices, distributed


def test_buffers_grow_and_reload():
    loss_fn = RiemannianPotatoLoss()
    assert loss_fn.log_mu.shape == (0,)
    loss_fn(torch.randn(6, 2), torch.tensor([0, 0, 4, 4, 1, 1]))
    assert loss_fn.log_mu.shape == (5,)
    assert loss_fn.seen.tolist() == [True, True, False, False, True]
    fresh = RiemannianPotatoLoss()
    fresh.load_state_dict(loss_fn.state_dict())
    for a, b in zip(_state(fresh), _state(loss_fn), strict=True):
        np.testing.assert_array_equal(a, b)


def test_embedding_distances_dispatch():
    V = torch.randn(4, 3, dtype=torch.float64)
    np.testing.assert_allclose(
        embedding_distances(V).numpy(), _distance_matrix(V.numpy(), ""), atol=1e-10
    )
    S = torch.as_tensor(_spd(4, 3, seed=1))
    for distance in ("airm", "log_euclidean"):
        np.testing.assert_allclose(
            embedding_distances(S[:3], S, distance).numpy(),
            _distance_matrix(S.numpy(), distance)[:3],
            atol=1e-6,  # log-Euclidean Gram formula: sqrt of rounding at zero
        )


@pytest.mark.parametrize(
    "embeddings, labels, message",
    [
        (torch.randn(4), torch.tensor([0, 0, 1, 1]), "shape"),
        (torch.randn(4, 2), torch.tensor([0, 0, 1]), "labels must have shape"),
        (torch.randn(4, 2), torch.tensor([0.0, 0.0, 1.0, 1.0]), "integer"),
        (torch.randn(4, 2), torch.tensor([0, -1, 1, 1]), "non-negative"),
        (torch.randn(1, 2), torch.tensor([0]), "at least 2"),
        (torch.randn(4, 2, 3), torch.tensor([0, 0, 1, 1]), "shape"),
        (torch.full((4, 2), torch.nan), torch.tensor([0, 0, 1, 1]), "NaN"),
    ],
)
def test_bad_inputs_raise(embeddings, labels, message):
    with pytest.raises(ValueError, match=message):
        RiemannianPotatoLoss()(embeddings, labels)


def test_label_beyond_fixed_n_classes_raises():
    with pytest.raises(ValueError, match="n_classes=2"):
        RiemannianPotatoLoss(n_classes=2)(torch.randn(4, 2), torch.tensor([0, 0, 2, 2]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"margin": -1.0}, "margin"),
        ({"neg_weight": -1.0}, "neg_weight"),
        ({"momentum": 0.0}, "momentum"),
        ({"momentum": 1.5}, "momentum"),
        ({"metric": "euclid"}, "metric"),
        ({"temperature": -1.0}, "temperature"),
        ({"n_classes": 0}, "n_classes"),
        ({"eps": 0.0}, "eps"),
        ({"min_log_sigma": 0.0}, "min_log_sigma"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RiemannianPotatoLoss(**kwargs)


def _distributed_worker(rank, world, init_file, E, labels, out_file):
    torch.distributed.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world
    )
    try:
        loss_fn = RiemannianPotatoLoss().double()  # n_classes grows to the max over ranks
        half = slice(rank * 4, rank * 4 + 4)
        loss_fn(E[half], labels[half])
        if rank == 0:
            torch.save(loss_fn.state_dict(), out_file)
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed not built")
def test_statistics_are_all_reduced_across_ranks():
    E = torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 0, 1, 0, 1, 1, 2, 2])  # class 2 only on rank 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "state.pt")
        torch.multiprocessing.start_processes(  # fork: no re-import, a second instead of tens
            _distributed_worker,
            args=(2, os.path.join(tmp, "init"), E, labels, out),
            nprocs=2,
            start_method="fork",
        )
        state = torch.load(out)
    # Reference: the pooled within-class pairs of both ranks' batches.
    for c in range(3):
        vals = []
        for half in (slice(0, 4), slice(4, 8)):
            idx = torch.nonzero(labels[half] == c).flatten()
            D = torch.cdist(E[half][idx], E[half][idx])
            vals.append(D[torch.triu(torch.ones_like(D, dtype=torch.bool), 1)].log())
        vals = torch.cat(vals)
        assert state["log_mu"][c].item() == pytest.approx(vals.mean().item(), rel=1e-9)
        assert state["log_sigma"][c].item() == pytest.approx(
            vals.std(unbiased=False).item(), rel=1e-9
        )


# ---------------------------------------------------------------- class-centred potato


def _class_mean(E: np.ndarray, distance: str) -> np.ndarray:
    """Mean of one class's embeddings from its definition (pyRiemann for SPD matrices)."""
    try:  # pyRiemann >= 0.9 moved it; the old path warns
        from pyriemann.geometry.mean import mean_logeuclid, mean_riemann
    except ImportError:
        from pyriemann.utils.mean import mean_logeuclid, mean_riemann

    if E.ndim == 2:
        return E.mean(axis=0)
    return mean_riemann(E, tol=1e-12, maxiter=200) if distance == "airm" else mean_logeuclid(E)


def _brute_force_class(E, labels, state, *, z_th, m, lam, alpha, distance, floor=0.05):
    """The class-centred loss with loops over samples and classes."""
    log_mu, log_sigma, seen = (np.array(s, dtype=float) for s in state)
    seen = seen.astype(bool)
    classes = np.unique(labels)
    means = [_class_mean(E[labels == c], distance) for c in classes]
    D = _distance_matrix(np.concatenate([E, np.stack(means)]), distance)
    logd = np.log(D[: len(E), len(E) :])  # (n, K): sample to class mean
    for k, c in enumerate(classes):
        vals = logd[labels == c, k]
        if seen[c]:
            mu = (1 - alpha) * log_mu[c] + alpha * vals.mean()
            var = (1 - alpha) * log_sigma[c] ** 2 + alpha * ((vals - mu) ** 2).mean()
        else:
            mu, var = vals.mean(), ((vals - vals.mean()) ** 2).mean()
        log_mu[c], log_sigma[c], seen[c] = mu, np.sqrt(var), True
    total = 0.0
    for i in range(len(E)):
        positive, negatives = 0.0, []
        for k, c in enumerate(classes):
            z = (logd[i, k] - log_mu[c]) / max(log_sigma[c], floor)
            if c == labels[i] and z > z_th:
                positive = z - z_th
            if c != labels[i] and z < z_th + m:
                negatives.append(z_th + m - z)
        total += positive + lam * _weighted_mean(negatives, 0.0)
    return total / len(E), (log_mu, log_sigma, seen)


@pytest.mark.parametrize(
    "kind, distance", [("vector", "airm"), ("spd", "airm"), ("spd", "log_euclidean")]
)
def test_class_centred_potato_matches_brute_force_over_batches(kind, distance):
    loss_fn = RiemannianPotatoLoss(
        margin=1.5, momentum=0.3, distance=distance, center="class", n_classes=3
    )
    loss_fn = loss_fn.double()
    state = _state(loss_fn)
    for batch in range(3):
        E = _embeddings(kind, 9, seed=20 + batch)
        labels = (
            np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
            if batch != 1
            else np.array([0, 0, 0, 1, 1, 1, 1, 0, 1])
        )
        expected, state = _brute_force_class(
            E, labels, state, z_th=0.0, m=1.5, lam=1.0, alpha=0.3, distance=distance
        )
        got = loss_fn(torch.as_tensor(E), torch.as_tensor(labels))
        assert float(got) == pytest.approx(expected, rel=1e-6, abs=1e-9)
        for ours, theirs in zip(_state(loss_fn), state, strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    "kind, distance", [("vector", "airm"), ("spd", "log_euclidean"), ("spd", "airm")]
)
def test_class_centred_gradcheck_float64(kind, distance):
    """The gradient flows through the class means too (arithmetic, log-Euclidean, and the
    iterative Karcher mean by the implicit function theorem).

    Every class has 3 members: the two members of a class of two are equally far from their
    mean, so a potato built from them puts both z-scores at the hinge (a kink, where no
    gradient check can pass; the loss takes the subgradient 0 there on every CPU)."""
    labels = torch.tensor([0, 0, 1, 1, 1, 0, 2, 2, 2])
    E = torch.as_tensor(_embeddings(kind, 9, seed=9))
    loss_fn = RiemannianPotatoLoss(metric=distance, margin=3.0, center="class").double()
    loss_fn(E, labels)
    loss_fn.eval()
    if kind == "vector":
        arg = E.clone().requires_grad_(True)
        func = lambda e: loss_fn(e, labels)  # noqa: E731
    else:
        arg = torch.zeros_like(E, requires_grad=True)
        func = lambda S: loss_fn(E + 0.5 * (S + S.transpose(-1, -2)), labels)  # noqa: E731
    assert float(func(arg).detach()) > 0
    assert torch.autograd.gradcheck(func, (arg,), eps=1e-6, atol=1e-6)


def test_pyriemann_metric_names_are_accepted():
    E = torch.as_tensor(_spd(5, 3, seed=1))
    for alias, name in [("riemann", "airm"), ("logeuclid", "log_euclidean")]:
        assert RiemannianPotatoLoss(metric=alias).metric == name
        assert torch.equal(
            embedding_distances(E, metric=alias), embedding_distances(E, metric=name)
        )
    with pytest.raises(ValueError, match="aliases"):
        RiemannianPotatoLoss(metric="wasserstein")
    with pytest.raises(ValueError, match="center"):
        RiemannianPotatoLoss(center="median")


def test_british_centre_keyword_still_works_with_a_future_warning():
    with pytest.warns(FutureWarning, match="center"):
        loss_fn = RiemannianPotatoLoss(centre="class")
    assert loss_fn.center == "class" and loss_fn.centre == "class"


def test_distance_keyword_renamed_metric_still_works_with_a_future_warning():
    with pytest.warns(FutureWarning, match="metric"):
        loss_fn = RiemannianPotatoLoss(distance="logeuclid")
    assert loss_fn.metric == "log_euclidean" and loss_fn.distance == "log_euclidean"
    E = torch.randn(4, 3, dtype=torch.float64)
    with pytest.warns(FutureWarning, match="metric"):
        embedding_distances(E, distance="airm")


@pytest.mark.parametrize("center", ["pairwise", "class"])
def test_a_potato_of_one_pair_puts_its_z_scores_exactly_at_the_hinge(center):
    """One pair per class (pairwise), two members per class (class-centred): the potato is
    built from the very distances it scores, so their z-scores are 0 up to rounding. They are
    exactly 0 (not ±1 ulp, a CPU-dependent side of the hinge), so no positive term is hard."""
    from rankmetric.losses.potato import _class_means

    E = torch.as_tensor(_embeddings("spd", 4, seed=3))
    labels = torch.tensor([0, 1, 0, 1])
    loss_fn = RiemannianPotatoLoss(center=center).double()
    loss_fn(E, labels)  # initialises both potatoes from this batch
    if center == "pairwise":
        log_d = embedding_distances(E).log()
        z = loss_fn.z_scores(log_d, labels)
        own = (labels[:, None] == labels[None, :]) & ~torch.eye(4, dtype=torch.bool)
    else:
        classes = torch.unique(labels)
        log_d = embedding_distances(E, _class_means(E, labels, classes, "airm")).log()
        z = loss_fn.z_scores(log_d, classes[None, :])
        own = labels[:, None] == classes[None, :]
    assert torch.equal(z[own], torch.zeros_like(z[own]))
