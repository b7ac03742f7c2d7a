"""mLMNN: objective, gradient, search and k-NN rule against their definitions; sklearn contract."""

import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

import rankmetric
import rankmetric.estimators.lmnn.search as search_module
from rankmetric.estimators.lmnn import (
    LMNN,
    ActiveSet,
    MultiMetricLMNN,
    find_impostors,
    find_target_neighbors,
    lmnn_loss_and_grad,
    mlmnn_loss_and_grad,
)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(
    [MultiMetricLMNN(max_iter=20, device="cpu")],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- helpers


def _tiny_problem(rng, n=14, d=3, k=2, n_groups=None):
    """Random points, 3 classes, target neighbours; groups = classes or arbitrary clusters."""
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 3
    groups = y.copy() if n_groups is None else rng.integers(0, n_groups, size=n)
    if n_groups is not None:
        groups[:n_groups] = np.arange(n_groups)  # no empty group
    Xt, codes = torch.as_tensor(X), torch.as_tensor(y)
    targets, mask = find_target_neighbors(Xt, codes, k)
    return X, y, groups, Xt, codes, targets, mask


def _all_impostor_pairs(y):
    a, l = np.nonzero(y[:, None] != y[None, :])
    return torch.as_tensor(a), torch.as_tensor(l)


def _brute_objective(Ls, X, y, groups, neighbours, mu):
    """mLMNN ε by a triple loop over (i, j ⇝ i, l); works on NumPy arrays or torch tensors."""

    def dist(i, j):  # from x_i to the reference x_j, in x_j's metric
        v = Ls[groups[j]] @ (X[i] - X[j])
        return (v * v).sum()

    pull = push = 0.0
    for i, targets in enumerate(neighbours):
        for j in targets:
            d_ij = dist(i, j)
            pull = pull + d_ij
            for l in range(len(X)):
                if y[l] != y[i]:
                    h = 1.0 + d_ij - dist(i, l)
                    push = push + (h if h > 0 else 0.0)
    return (1 - mu) * pull + mu * push


def _brute_nearest(model, Xq):
    """Per query, the training points ordered by per-reference distance (Python loops)."""
    M = model.get_mahalanobis_matrices().astype(np.float64)
    Xtr = model.X_train_.astype(np.float64)
    out = []
    for q in Xq:
        d = [(q - x) @ M[c] @ (q - x) for x, c in zip(Xtr, model.clusters_, strict=True)]
        out.append(sorted(range(len(d)), key=lambda j: (d[j], j))[: model.n_neighbors])
    return out


def _brute_predict(model, Xq):
    preds = []
    for nearest in _brute_nearest(model, Xq):
        votes = np.bincount(model.y_train_[nearest], minlength=len(model.classes_))
        preds.append(model.classes_[np.argmax(votes)])  # ties: smallest label
    return np.array(preds)


def _crossing_strips(rng, n=40):
    """Four classes in strips: 0/1 are told apart along y only, 2/3 along x only.

    Classes 0 and 1 are horizontal strips (long in x, 0.3 apart in y), classes 2 and 3 vertical
    strips (long in y, 0.3 apart in x) far above them: no single metric serves both pairs.
    """
    u, s = rng.uniform, lambda: 0.03 * rng.normal(size=n)
    x0 = np.column_stack([u(-3, 3, n), rng.choice([-0.3, 0.3], n) + s()])
    x1 = np.column_stack([u(-3, 3, n), s()])
    x2 = np.column_stack([rng.choice([-0.3, 0.3], n) + s(), u(5, 11, n)])
    x3 = np.column_stack([s(), u(5, 11, n)])
    return np.vstack([x0, x1, x2, x3]), np.repeat([0, 1, 2, 3], n)


# ----------------------------------------------------------------------------- objective


@pytest.mark.parametrize("n_groups", [None, 2, 4])
@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0])
def test_loss_matches_triple_loop(rng, n_groups, mu):
    X, y, groups, Xt, codes, targets, mask = _tiny_problem(rng, n_groups=n_groups)
    G = int(groups.max()) + 1
    Ls = rng.normal(size=(G, 2, 3))
    active = ActiveSet(targets, mask, *_all_impostor_pairs(y))
    loss, _ = mlmnn_loss_and_grad(torch.as_tensor(Ls), Xt, torch.as_tensor(groups), active, mu)
    expected = _brute_objective(Ls, X, y, groups, targets.tolist(), mu)
    assert loss.item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n_groups", [None, 3])
def test_gradient_matches_autograd_of_the_triple_loop(rng, n_groups):
    X, y, groups, Xt, codes, targets, mask = _tiny_problem(rng, n=10, n_groups=n_groups)
    G = int(groups.max()) + 1
    Ls = torch.tensor(rng.normal(size=(G, 3, 3)), requires_grad=True)
    active = ActiveSet(targets, mask, *_all_impostor_pairs(y))
    loss, grad = mlmnn_loss_and_grad(Ls.detach(), Xt, torch.as_tensor(groups), active, 0.4)
    reference = _brute_objective(Ls, Xt, y, groups, targets.tolist(), 0.4)
    reference.backward()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-12)
    torch.testing.assert_close(grad, Ls.grad)


def test_one_cluster_is_lmnn(rng):
    X, y, _, Xt, codes, targets, mask = _tiny_problem(rng, n=20)
    L = torch.as_tensor(rng.normal(size=(2, 3)))
    active = ActiveSet(targets, mask, *_all_impostor_pairs(y))
    groups = torch.zeros(len(y), dtype=torch.int64)
    loss_m, grad_m = mlmnn_loss_and_grad(L[None], Xt, groups, active, 0.5)
    loss_l, grad_l = lmnn_loss_and_grad(L, Xt, active, 0.5)
    assert loss_m.item() == pytest.approx(loss_l.item(), rel=1e-12)
    torch.testing.assert_close(grad_m[0], grad_l)


def test_one_cluster_fit_stays_at_the_lmnn_optimum(rng):
    X, y = _crossing_strips(rng, n=15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        lmnn = LMNN(device="cpu").fit(X, y)
        model = MultiMetricLMNN(n_clusters=1, device="cpu").fit(X, y)
    assert model.n_clusters_ == 1 and np.all(model.clusters_ == 0)
    np.testing.assert_array_equal(model.global_components_, lmnn.components_)
    assert model.objective_ == pytest.approx(lmnn.objective_, rel=1e-3)
    np.testing.assert_allclose(
        model.get_mahalanobis_matrices()[0], lmnn.get_mahalanobis_matrix(), rtol=1e-2, atol=1e-2
    )


def test_grouped_impostor_search_is_complete_and_chunk_invariant(rng, monkeypatch):
    X, y, groups, Xt, codes, targets, mask = _tiny_problem(rng, n=25, n_groups=3)
    Ls = rng.normal(size=(3, 2, 3))
    Z = Xt @ torch.as_tensor(Ls).transpose(1, 2)
    g = torch.as_tensor(groups)
    whole = set(
        zip(*(t.tolist() for t in find_impostors(Z, codes, targets, mask, groups=g)), strict=True)
    )
    monkeypatch.setattr(search_module, "_BLOCK_ELEMENTS", 10)  # one row per chunk
    chunked = set(
        zip(*(t.tolist() for t in find_impostors(Z, codes, targets, mask, groups=g)), strict=True)
    )
    assert whole == chunked

    def dist(i, j):
        v = Ls[groups[j]] @ (X[i] - X[j])
        return v @ v

    violating = {
        (i, l)
        for i, l in itertools.product(range(len(y)), repeat=2)
        if y[i] != y[l] and any(dist(i, j) + 1 > dist(i, l) for j in targets[i].tolist())
    }
    assert violating <= whole
    assert len(whole) < len(y) ** 2 * 2 / 3  # a real restriction


def test_converged_fit_reports_the_full_objective(rng):
    X, y = _crossing_strips(rng, n=12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = MultiMetricLMNN(push_weight=0.3, device="cpu").fit(X, y)
    Ls = model.components_.astype(np.float64)
    targets = find_target_neighbors(torch.as_tensor(X), torch.as_tensor(y), 3)[0].tolist()
    expected = _brute_objective(Ls, X, y, model.clusters_, targets, 0.3)
    start = np.tile(model.global_components_.astype(np.float64), (4, 1, 1))
    initial = _brute_objective(start, X, y, model.clusters_, targets, 0.3)
    assert model.objective_ == pytest.approx(expected, rel=1e-4)
    assert expected < initial


# ----------------------------------------------------------------------------- the k-NN rule


@pytest.mark.parametrize("n_clusters", [None, 3])
def test_predict_matches_brute_force_per_reference_knn(rng, monkeypatch, n_clusters):
    X, y = _crossing_strips(rng, n=15)
    Xq = X + 0.2 * rng.normal(size=X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MultiMetricLMNN(
            n_neighbors=5, n_clusters=n_clusters, init="identity", max_iter=30, random_state=0,
            device="cpu",
        ).fit(X, y)  # fmt: skip
    np.testing.assert_array_equal(model.predict(Xq), _brute_predict(model, Xq))
    monkeypatch.setattr(search_module, "_BLOCK_ELEMENTS", 70)  # one query per chunk
    np.testing.assert_array_equal(model._nearest(Xq), np.array(_brute_nearest(model, Xq)))
    proba = model.predict_proba(Xq)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(1)], model.predict(Xq))


def test_identity_metrics_give_euclidean_knn(rng):
    X, y = _crossing_strips(rng, n=15)
    Xq = X + 0.2 * rng.normal(size=X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MultiMetricLMNN(init="identity", max_iter=1, device="cpu").fit(X, y)
    model.components_[:] = np.eye(2, dtype=np.float32)
    knn = KNeighborsClassifier(3).fit(X, y)
    np.testing.assert_array_equal(model.predict(Xq), knn.predict(Xq))


def test_beats_global_lmnn_where_classes_need_different_metrics(rng):
    X, y = _crossing_strips(rng)
    Xt, yt = _crossing_strips(rng, n=100)
    euclidean = KNeighborsClassifier(3).fit(X, y).score(Xt, yt)
    lmnn = LMNN(device="cpu").fit(X, y)
    global_acc = KNeighborsClassifier(3).fit(lmnn.transform(X), y).score(lmnn.transform(Xt), yt)
    local_acc = MultiMetricLMNN(device="cpu").fit(X, y).score(Xt, yt)
    assert euclidean < 0.85 and global_acc < 0.85
    assert local_acc > 0.95


# ----------------------------------------------------------------------------- API


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_top_level_export_and_pair_distances(rng):
    assert rankmetric.MultiMetricLMNN is MultiMetricLMNN
    X, y = _crossing_strips(rng, n=10)
    model = MultiMetricLMNN(max_iter=30, device="cpu").fit(X, y)
    M = model.get_mahalanobis_matrices()
    L = model.components_.astype(np.float64)
    np.testing.assert_allclose(M, L.transpose(0, 2, 1) @ L)
    j = rng.integers(0, len(y), size=7)
    Xq = rng.normal(size=(7, 2))
    got = model.pair_distances(Xq, model.X_train_[j], model.clusters_[j])
    diff = Xq - model.X_train_[j]
    expected = [np.sqrt(v @ M[c] @ v) for v, c in zip(diff, model.clusters_[j], strict=True)]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    with pytest.raises(ValueError, match="clusters must be"):
        model.pair_distances(Xq, Xq, np.full(7, 9))
    # the one pair convention: stacked pairs without X2; clusters by keyword
    stacked = np.stack([Xq, model.X_train_[j]], axis=1)
    np.testing.assert_array_equal(model.pair_distances(stacked, clusters=model.clusters_[j]), got)
    with pytest.raises(ValueError, match="pass clusters="):
        model.pair_distances(stacked)


def test_save_and_load_round_trip(rng, tmp_path):
    X, y = _crossing_strips(rng, n=10)
    labels = np.array(["p", "q", "r", "s"])[y]
    model = MultiMetricLMNN(n_clusters=3, random_state=0, device="cpu").fit(X, labels)
    model.save(tmp_path / "mlmnn.npz")
    loaded = MultiMetricLMNN.load(tmp_path / "mlmnn.npz")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.components_, model.components_)
    assert loaded.get_params() == model.get_params()
    assert loaded.predict(X).dtype == labels.dtype


# 8 held-out samples of the crossing strips: the held-out check's verdict is not what is tested
@pytest.mark.filterwarnings("ignore:MultiMetricLMNN held-out check")
def test_kmeans_clusters_and_same_seed_same_result(rng):
    X, y = _crossing_strips(rng, n=12)
    fits = [MultiMetricLMNN(n_clusters=5, random_state=1, device="cpu").fit(X, y) for _ in "ab"]
    assert fits[0].components_.shape == (5, 2, 2)
    assert set(fits[0].clusters_) == set(range(5))
    np.testing.assert_array_equal(fits[0].components_, fits[1].components_)
    np.testing.assert_array_equal(fits[0].clusters_, fits[1].clusters_)


# 8 held-out samples of the crossing strips: the held-out check's verdict is not what is tested
@pytest.mark.filterwarnings("ignore:MultiMetricLMNN held-out check")
def test_convergence_warning_at_max_iter(rng):
    X, y = _crossing_strips(rng, n=12)
    with pytest.warns(ConvergenceWarning, match="MultiMetricLMNN stopped at max_iter=2"):
        model = MultiMetricLMNN(init="identity", max_iter=2, device="cpu").fit(X, y)
    assert model.n_iter_ == 2


@pytest.mark.parametrize(
    ("params", "y", "message"),
    [
        ({}, np.zeros(12), "1 class"),
        ({"n_neighbors": 13}, np.arange(12) % 2, "n_neighbors"),
        ({"n_neighbors": 0}, np.arange(12) % 2, "n_neighbors"),
        ({"n_clusters": 0}, np.arange(12) % 2, "n_clusters"),
        ({"n_clusters": 2.5}, np.arange(12) % 2, "n_clusters"),
        ({"n_target_neighbors": 0}, np.arange(12) % 2, "n_target_neighbors must be"),
        ({"push_weight": -0.1}, np.arange(12) % 2, "push_weight"),
        ({"init": "pca"}, np.arange(12) % 2, "init must be"),
        ({"init": np.eye(2)}, np.arange(12) % 2, "init has shape"),
        ({"solver": "adam"}, np.arange(12) % 2, "solver"),
    ],
)
def test_bad_input_raises(rng, params, y, message):
    X = rng.normal(size=(12, 3))
    with pytest.raises(ValueError, match=message):
        MultiMetricLMNN(device="cpu", **params).fit(X, y)


def test_nan_input_raises(rng):
    X = rng.normal(size=(12, 3))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultiMetricLMNN(device="cpu").fit(X, np.arange(12) % 2)
    model = MultiMetricLMNN(max_iter=5, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(np.nan_to_num(X), np.arange(12) % 2)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.nan_to_num(X)[:, :2])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(rng):
    X, y = _crossing_strips(rng, n=15)
    cpu = MultiMetricLMNN(device="cpu", max_iter=40).fit(X, y)
    gpu = MultiMetricLMNN(device="cuda", max_iter=40).fit(X, y)
    assert np.mean(cpu.predict(X) == gpu.predict(X)) > 0.95


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    ("k", "y", "message"),
    [
        (3, np.array([0] * 8 + [1] * 3 + [2]), "class 2 has 1 sample"),
        (2, np.array([0] * 8 + [1] * 2 + [2] * 2), "class 1 has 2 sample"),
    ],
)
def test_small_class_falls_back_with_one_warning(rng, k, y, message):
    """As LMNN: fewer target neighbours for a small class, said once (not again by the init)."""
    X = rng.normal(size=(12, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = MultiMetricLMNN(n_target_neighbors=k, max_iter=10, device="cpu").fit(X, y)
    said = [
        w for w in caught if issubclass(w.category, UserWarning) and "sample(s)" in str(w.message)
    ]
    assert len(said) == 1 and message in str(said[0].message)
    assert model.predict(X).shape == (12,)
