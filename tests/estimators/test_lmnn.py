"""LMNN: objective and gradient against their definitions, searches, fitting, sklearn contract."""

import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

import rankmetric.estimators.lmnn.search as search_module
from rankmetric.estimators.lmnn import (
    LMNN,
    ActiveSet,
    find_impostors,
    find_target_neighbors,
    lmnn_loss_and_grad,
)
from rankmetric.estimators.lmnn._objective import ActivePairs, PairLaplacian

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([LMNN(max_iter=30, device="cpu")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _noisy_classes(rng, n_per_class=40, n_noise=6, noise_scale=4.0):
    """Three well separated classes in two features, buried under large-variance noise features."""
    angles = np.repeat([0.0, 2.1, 4.2], n_per_class)
    informative = 2.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    informative += 0.3 * rng.normal(size=informative.shape)
    noise = noise_scale * rng.normal(size=(angles.size, n_noise))
    return np.hstack([informative, noise]), np.repeat([0, 1, 2], n_per_class)


def _tiny_problem(rng, n=13, d=3, k=2):
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 3
    Xt = torch.as_tensor(X)
    codes = torch.as_tensor(y)
    targets, mask = find_target_neighbors(Xt, codes, k)
    return X, y, Xt, codes, targets, mask


def _all_impostor_pairs(y):
    a, l = np.nonzero(y[:, None] != y[None, :])
    return torch.as_tensor(a), torch.as_tensor(l)


def _brute_target_neighbors(X, y, k):
    """Per sample, the k nearest other samples of its class (Python loops)."""
    out = []
    for i in range(len(X)):
        same = [j for j in range(len(X)) if j != i and y[j] == y[i]]
        same.sort(key=lambda j: np.sum((X[i] - X[j]) ** 2))
        out.append(same[:k])
    return out


def _brute_objective(L, X, y, neighbours, mu):
    """ε(L) of Weinberger & Saul (2009) by a triple loop over (i, j ⇝ i, l)."""
    Z = X @ L.T
    pull = push = 0.0
    for i, targets in enumerate(neighbours):
        for j in targets:
            d_ij = np.sum((Z[i] - Z[j]) ** 2)
            pull += d_ij
            for l in range(len(X)):
                if y[l] != y[i]:
                    push += max(0.0, 1.0 + d_ij - np.sum((Z[i] - Z[l]) ** 2))
    return (1 - mu) * pull + mu * push


def _autograd_objective(L, X, targets, mask, y, mu):
    """ε(L) over every triplet, vectorised, for torch autograd."""
    Z = X @ L.T
    d = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    d_target = torch.gather(d, 1, targets)  # (n, k)
    other = torch.as_tensor(y[:, None] != y[None, :])
    hinge = (1 + d_target[:, :, None] - d[:, None, :]).clamp_min(0)  # (n, k, n)
    hinge = hinge * mask[:, :, None] * other[:, None, :]
    return (1 - mu) * (d_target * mask).sum() + mu * hinge.sum()


def test_target_neighbours_match_brute_force(rng):
    X, y, Xt, codes, targets, mask = _tiny_problem(rng, k=3)
    brute = _brute_target_neighbors(X, y, 3)
    assert mask.all()
    assert [t.tolist() for t in targets] == brute


def test_small_class_gets_fewer_target_neighbours(rng):
    X = rng.normal(size=(7, 2))
    y = np.array([0, 0, 0, 0, 1, 1, 2])
    targets, mask = find_target_neighbors(torch.as_tensor(X), torch.as_tensor(y), 2)
    assert mask.sum(1).tolist() == [2, 2, 2, 2, 1, 1, 0]
    assert targets[4, 0] == 5 and targets[5, 0] == 4
    assert targets[6].tolist() == [6, 6]  # padding points at the sample itself


@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0])
def test_loss_matches_triple_loop(rng, mu):
    X, y, Xt, codes, targets, mask = _tiny_problem(rng)
    L = rng.normal(size=(2, 3))
    anchors, impostors = _all_impostor_pairs(y)
    loss, _ = lmnn_loss_and_grad(
        torch.as_tensor(L), Xt, ActiveSet(targets, mask, anchors, impostors), mu
    )
    expected = _brute_objective(L, X, y, _brute_target_neighbors(X, y, 2), mu)
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def test_active_set_search_keeps_the_objective_exact(rng):
    """Restricting the push term to the searched impostor pairs changes nothing."""
    X, y, Xt, codes, targets, mask = _tiny_problem(rng, n=30)
    L = torch.as_tensor(0.7 * rng.normal(size=(3, 3)))
    anchors, impostors = find_impostors(Xt @ L.T, codes, targets, mask)
    assert anchors.numel() < len(y) ** 2 * 2 / 3  # a real restriction
    searched, grad_s = lmnn_loss_and_grad(L, Xt, ActiveSet(targets, mask, anchors, impostors), 0.5)
    full, grad_f = lmnn_loss_and_grad(L, Xt, ActiveSet(targets, mask, *_all_impostor_pairs(y)), 0.5)
    assert searched.item() == pytest.approx(full.item(), rel=1e-12)
    torch.testing.assert_close(grad_s, grad_f)


def test_gradient_matches_autograd(rng):
    X, y, Xt, codes, targets, mask = _tiny_problem(rng)
    L = torch.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    active = ActiveSet(targets, mask, *_all_impostor_pairs(y))
    loss, grad = lmnn_loss_and_grad(L.detach(), Xt, active, 0.4)
    reference = _autograd_objective(L, Xt, targets, mask.double(), y, 0.4)
    reference.backward()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-12)
    torch.testing.assert_close(grad, L.grad)


class _ManualGradient(torch.autograd.Function):
    """Exposes lmnn_loss_and_grad's hand-written gradient to gradcheck."""

    @staticmethod
    def forward(ctx, L, X, active, mu):
        loss, grad = lmnn_loss_and_grad(L, X, active, mu)
        ctx.save_for_backward(grad)
        return loss

    @staticmethod
    def backward(ctx, upstream):
        (grad,) = ctx.saved_tensors
        return upstream * grad, None, None, None


def test_gradient_passes_gradcheck(rng):
    X, y, Xt, codes, targets, mask = _tiny_problem(rng)
    active = ActiveSet(targets, mask, *_all_impostor_pairs(y))
    L = torch.tensor(rng.normal(size=(3, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda L: _ManualGradient.apply(L, Xt, active, 0.5), (L,), eps=1e-6, atol=1e-5
    )


def _dense_laplacian(a, b, w, n):
    C = torch.zeros(n, n, dtype=torch.float64)
    for p in range(len(a)):  # the definition, one pair at a time
        e = torch.zeros(n, dtype=torch.float64)
        e[a[p]] += 1.0
        e[b[p]] -= 1.0  # a pair (i, i) adds nothing
        C += w[p] * torch.outer(e, e)
    return C


def test_pair_laplacian_product_matches_dense(rng):
    X = torch.as_tensor(rng.normal(size=(6, 3)))
    a = torch.as_tensor([0, 1, 2, 0, 5, 3])  # unsorted, a repeated pair, a row without pairs
    b = torch.as_tensor([1, 2, 0, 1, 4, 0])
    w = torch.as_tensor(rng.normal(size=6))
    product = PairLaplacian(a, b, 6).times(w, X)
    torch.testing.assert_close(product, _dense_laplacian(a, b, w, 6) @ X)


def test_pair_laplacian_reuses_its_pairs_for_new_weights(rng):
    """Built once (one sort), then exact for any weights; sorted and unsorted pairs alike."""
    n, m = 9, 40
    a = torch.as_tensor(rng.integers(0, n, m))
    b = torch.as_tensor(rng.integers(0, n, m))
    Z = torch.as_tensor(rng.normal(size=(n, 4)))
    for order in (torch.arange(m), torch.argsort(a, stable=True)):
        laplacian = PairLaplacian(a[order], b[order], n)
        assert (laplacian.order is None) == bool((a[order].diff() >= 0).all())
        for _ in range(2):
            w = torch.as_tensor(rng.normal(size=m))
            expected = _dense_laplacian(a[order], b[order], w, n) @ Z
            torch.testing.assert_close(laplacian.times(w, Z), expected)
    empty = PairLaplacian(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), n)
    assert torch.equal(empty.times(torch.zeros(0, dtype=Z.dtype), Z), torch.zeros_like(Z))


def test_pair_laplacian_merges_repeated_pairs_as_cuda_needs(rng):
    """More pairs than n² entries (cuSPARSE refuses them): merged, the product is the same."""
    n, m = 4, 60  # 60 pairs > 16 entries, so many repeats
    a, b = torch.as_tensor(rng.integers(0, n, m)), torch.as_tensor(rng.integers(0, n, m))
    Z, w = torch.as_tensor(rng.normal(size=(n, 3))), torch.as_tensor(rng.normal(size=m))
    merged = PairLaplacian(a, b, n, merge=True)
    assert merged.col.numel() <= n * n and merged.order is None
    torch.testing.assert_close(merged.times(w, Z), _dense_laplacian(a, b, w, n) @ Z)
    torch.testing.assert_close(merged.times(w, Z), PairLaplacian(a, b, n).times(w, Z))


def test_objective_does_not_depend_on_the_order_of_the_pairs(rng):
    """Prebuilt index structures (as the fit reuses them) and any order of the impostor pairs
    give the same objective and gradient."""
    X, y, Xt, codes, targets, mask = _tiny_problem(rng, n=20)
    L = torch.as_tensor(rng.normal(size=(2, 3)))
    anchors, impostors = _all_impostor_pairs(y)
    active = ActiveSet(targets, mask, anchors, impostors)
    loss, grad = lmnn_loss_and_grad(L, Xt, active, 0.5)
    prebuilt = lmnn_loss_and_grad(L, Xt, active, 0.5, pairs=ActivePairs(active))
    assert prebuilt[0].item() == loss.item()
    assert torch.equal(prebuilt[1], grad)
    shuffled = torch.as_tensor(rng.permutation(anchors.numel()))
    mixed = ActiveSet(targets, mask, anchors[shuffled], impostors[shuffled])
    loss_m, grad_m = lmnn_loss_and_grad(L, Xt, mixed, 0.5)
    assert loss_m.item() == pytest.approx(loss.item(), rel=1e-12)
    torch.testing.assert_close(grad_m, grad)


@pytest.mark.parametrize("with_groups", [False, True])
def test_chunked_pair_distances_are_the_difference_form_bit_for_bit(rng, monkeypatch, with_groups):
    n = 30
    Z = torch.as_tensor(rng.normal(size=(2, n, 4)) if with_groups else rng.normal(size=(n, 4)))
    groups = torch.as_tensor(rng.integers(0, 2, n)) if with_groups else None
    a, b = (torch.as_tensor(rng.integers(0, n, 50)) for _ in range(2))
    whole = search_module.pair_sq_distances(Z, a, b, groups)  # 50 pairs: one plain gather
    monkeypatch.setattr(search_module, "_GATHER_ELEMENTS", 28)  # chunks of 7 pairs
    chunked = search_module.pair_sq_distances(Z, a, b, groups)
    assert torch.equal(chunked, whole)
    za, zb = (Z[groups[b], a], Z[groups[b], b]) if with_groups else (Z[a], Z[b])
    assert torch.equal(whole, ((za - zb) ** 2).sum(-1))


def test_impostor_search_is_chunk_invariant_and_complete(rng, monkeypatch):
    X, y, Xt, codes, targets, mask = _tiny_problem(rng, n=25)
    Z = Xt @ torch.as_tensor(rng.normal(size=(2, 3))).T
    whole = set(zip(*(t.tolist() for t in find_impostors(Z, codes, targets, mask)), strict=True))
    monkeypatch.setattr(search_module, "_BLOCK_ELEMENTS", 30)  # one row per chunk
    chunked = set(zip(*(t.tolist() for t in find_impostors(Z, codes, targets, mask)), strict=True))
    assert whole == chunked
    Zn, tn = Z.numpy(), targets.numpy()
    violating = {
        (i, l)
        for i, l in itertools.product(range(len(y)), repeat=2)
        if y[i] != y[l]
        and any(np.sum((Zn[i] - Zn[j]) ** 2) + 1 > np.sum((Zn[i] - Zn[l]) ** 2) for j in tn[i])
    }
    assert violating <= whole


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["lbfgs", "gd"])
def test_fit_improves_knn_where_euclidean_fails(rng, solver):
    X, y = _noisy_classes(rng)
    Xtest, ytest = _noisy_classes(rng)
    euclidean = KNeighborsClassifier(3).fit(X, y).score(Xtest, ytest)
    model = LMNN(solver=solver, max_iter=300, learning_rate=1e-3, device="cpu").fit(X, y)
    learned = (
        KNeighborsClassifier(3).fit(model.transform(X), y).score(model.transform(Xtest), ytest)
    )
    assert euclidean < 0.8
    assert learned > 0.95


def test_converged_fit_reports_the_full_objective(rng):
    """At convergence the last active set holds every violator, so ε is exact."""
    X, y = _noisy_classes(rng, n_per_class=15, n_noise=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = LMNN(push_weight=0.3, device="cpu").fit(X, y)
    neighbours = _brute_target_neighbors(X, y, 3)
    L = model.components_.astype(np.float64)
    expected = _brute_objective(L, X, y, neighbours, 0.3)
    initial = _brute_objective(np.eye(X.shape[1]), X, y, neighbours, 0.3)
    assert model.objective_ == pytest.approx(expected, rel=1e-4)
    assert expected < 0.5 * initial


def test_convergence_warning_at_max_iter(rng):
    X, y = _noisy_classes(rng, n_per_class=15)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        model = LMNN(max_iter=2, device="cpu").fit(X, y)
    assert model.n_iter_ == 2


def test_n_components_and_inits(rng):
    X, y = _noisy_classes(rng, n_per_class=15)
    for init in ("pca", "identity", "random", rng.normal(size=(2, X.shape[1]))):
        model = LMNN(n_components=2, init=init, max_iter=50, random_state=0, device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z = model.fit(X, y).transform(X)
        assert Z.shape == (X.shape[0], 2)
        assert model.components_.dtype == np.float32
        np.testing.assert_allclose(
            model.get_mahalanobis_matrix(), (L := model.components_.astype(np.float64)).T @ L
        )


def test_same_seed_same_result(rng):
    X, y = _noisy_classes(rng, n_per_class=15)
    fits = [LMNN(init="random", random_state=3, device="cpu").fit(X, y) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].components_, fits[1].components_)


def test_save_and_load_round_trip(rng, tmp_path):
    X, y = _noisy_classes(rng, n_per_class=15)
    model = LMNN(device="cpu").fit(X, y)
    model.save(tmp_path / "lmnn.npz")
    loaded = LMNN.load(tmp_path / "lmnn.npz")
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    assert loaded.get_params() == model.get_params()


def test_small_class_falls_back_with_a_warning(rng):
    X = rng.normal(size=(12, 3))
    y = np.array([0] * 6 + [1] * 5 + [2])
    with pytest.warns(UserWarning, match="fewer than n_target_neighbors"):
        model = LMNN(n_target_neighbors=5, max_iter=20, device="cpu").fit(X, y)
    assert np.all(np.isfinite(model.components_))


@pytest.mark.parametrize(
    ("params", "y", "message"),
    [
        ({}, np.zeros(10), "1 class"),
        ({}, np.arange(10), "fewer than 2 samples"),
        ({"n_components": 5}, np.arange(10) % 2, "n_components"),
        ({"n_target_neighbors": 0}, np.arange(10) % 2, "n_target_neighbors must be"),
        ({"push_weight": 1.5}, np.arange(10) % 2, "push_weight"),
        ({"init": "lda"}, np.arange(10) % 2, "init must be"),
        ({"init": np.eye(2)}, np.arange(10) % 2, "init has shape"),
        ({"solver": "sgd"}, np.arange(10) % 2, "solver"),
        ({"max_iter": 0}, np.arange(10) % 2, "max_iter"),
        ({"tol": -1.0}, np.arange(10) % 2, "tol"),
    ],
)
def test_bad_input_raises(rng, params, y, message):
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match=message):
        LMNN(device="cpu", **params).fit(X, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(rng):
    X, y = _noisy_classes(rng, n_per_class=15)
    cpu = LMNN(device="cpu", max_iter=40).fit(X, y)
    gpu = LMNN(device="cuda", max_iter=40).fit(X, y)
    np.testing.assert_allclose(gpu.transform(X), cpu.transform(X), rtol=1e-2, atol=1e-2)


def test_an_active_set_beyond_the_memory_limit_raises(rng, monkeypatch):
    """A too large impostor set stops the fit with a ValueError instead of exhausting memory."""
    X = rng.standard_normal((200, 5))
    y = np.arange(200) % 4  # random labels: most pairs are impostors
    monkeypatch.setattr(search_module, "MAX_ACTIVE_SET_BYTES", 10_000)
    with pytest.raises(ValueError, match="impostor pairs on 200 samples"):
        LMNN(random_state=0).fit(X, y)
    monkeypatch.setattr(search_module, "MAX_ACTIVE_SET_BYTES", 4 << 30)
    LMNN(random_state=0, max_iter=5).fit(X, y)


def test_the_lmnn_family_is_one_package():
    import rankmetric
    import rankmetric.estimators as estimators
    from rankmetric.estimators import lmnn as package

    assert rankmetric.LMNN is estimators.LMNN is package.LMNN is package.lmnn.LMNN
    assert rankmetric.MultiMetricLMNN is package.MultiMetricLMNN is package.mlmnn.MultiMetricLMNN
    for name in package.__all__:
        assert hasattr(package, name), name
    # the memory ceiling is read where the search runs
    assert "MAX_ACTIVE_SET_BYTES" in package.search.__all__


def test_one_objective_for_one_and_many_metrics(rng):
    from rankmetric.estimators.lmnn import mlmnn_loss_and_grad

    X = torch.as_tensor(rng.normal(size=(30, 4)), dtype=torch.float64)
    codes = torch.as_tensor(np.arange(30) % 3)
    targets, mask = find_target_neighbors(X, codes, 2)
    a, i = find_impostors(X, codes, targets, mask)
    active = ActiveSet(targets, mask, a, i)
    L = torch.as_tensor(rng.normal(size=(3, 4)), dtype=torch.float64)
    one = lmnn_loss_and_grad(L, X, active, 0.5)
    # one group holding every sample is the single metric
    many = mlmnn_loss_and_grad(L[None], X, torch.zeros(30, dtype=torch.long), active, 0.5)
    torch.testing.assert_close(one[0], many[0])
    torch.testing.assert_close(one[1], many[1][0])
