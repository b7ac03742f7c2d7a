"""SSNE estimator: scikit-learn contract, supervision from labels and from pairs, pruning."""

import numpy as np
import pytest
import torch
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric._utils import make_rng, torch_generator
from rankmetric.estimators.ssne import SSNE, _ProximalStepper, default_n_components
from rankmetric.models.sphere import SphereTanhEmbedding

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore:.*join an item to itself:UserWarning"),
]


@parametrize_with_checks([SSNE(max_iter=20, batch_size=32, random_state=0, device="cpu")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _separable_data(rng, n_per_class=60, n_informative=2, n_noise=6):
    """Three classes on a circle in two informative features, buried under large noise features."""
    angles = np.repeat([0.0, 2.1, 4.2], n_per_class)
    informative = np.column_stack([np.cos(angles), np.sin(angles)])[:, :n_informative]
    informative = informative + 0.1 * rng.normal(size=informative.shape)
    noise = 3.0 * rng.normal(size=(angles.size, n_noise))
    return np.hstack([informative, noise]), np.repeat([0, 1, 2], n_per_class)


def _knn_accuracy(model, X_train, y_train, X_test, y_test):
    knn = KNeighborsClassifier(3).fit(model.transform(X_train), y_train)
    return knn.score(model.transform(X_test), y_test)


def test_transform_rows_have_unit_norm_and_keep_dtype(rng):
    X, y = _separable_data(rng, 20)
    model = SSNE(max_iter=50, random_state=0, device="cpu").fit(X, y)
    for dtype in (np.float64, np.float32):
        Z = model.transform(X.astype(dtype))
        assert Z.dtype == dtype
        np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    assert Z.shape == (X.shape[0], model.active_components_.size)


def test_separable_data_reaches_near_perfect_knn(rng):
    X, y = _separable_data(rng)
    X_test, y_test = _separable_data(np.random.default_rng(1))
    euclidean = KNeighborsClassifier(3).fit(X, y).score(X_test, y_test)
    model = SSNE(max_iter=600, reg_lambda=1e-2, random_state=0, device="cpu").fit(X, y)
    assert _knn_accuracy(model, X, y, X_test, y_test) >= 0.97
    assert euclidean < 0.9  # the noise features do hide the classes from the raw distance


def _ground_truth(rng, n_samples=400, n_features=5, n_units=3):
    """Points and a known similarity S*(x, z) = H*(x)ᵀ H*(z) from a random sphere embedding."""
    X = rng.normal(size=(n_samples, n_features))
    truth = SphereTanhEmbedding(n_features, n_units).to(torch.float64)
    with torch.no_grad():
        truth.weight.copy_(torch.as_tensor(2.0 * rng.normal(size=(n_features + 1, n_units))))
        H = truth(torch.as_tensor(X)).numpy()
    return X, H


def test_partial_real_valued_supervision_recovers_known_similarity(rng):
    X, H = _ground_truth(rng)
    # supervise only pairs among the first 250 points; the last 150 appear in no pair
    pairs = rng.integers(0, 250, size=(3000, 2))
    targets = np.einsum("ij,ij->i", H[pairs[:, 0]], H[pairs[:, 1]])
    model = SSNE(n_components=12, max_iter=1500, random_state=0, device="cpu")
    model.fit_pairs(X, pairs, targets)
    unseen = rng.integers(250, 400, size=(2000, 2))
    truth = np.einsum("ij,ij->i", H[unseen[:, 0]], H[unseen[:, 1]])
    predicted = model.score_pairs(X[unseen[:, 0]], X[unseen[:, 1]])
    assert np.corrcoef(truth, predicted)[0, 1] > 0.95
    assert np.mean((truth - predicted) ** 2) < 0.1 * np.var(truth)


def test_multilabel_jaccard_supervision(rng):
    """similarity="jaccard": Ŝ on unseen points follows the Jaccard index of their label sets."""
    n, n_labels = 600, 3
    Y = rng.integers(0, 2, size=(n, n_labels))
    X = 2.0 * Y + 0.3 * rng.normal(size=(n, n_labels))  # each label moves one coordinate
    X = np.hstack([X, rng.normal(size=(n, 2))])
    model = SSNE(similarity="jaccard", neg_target=0.0, max_iter=800, random_state=0, device="cpu")
    model.fit(X[:400], Y[:400])
    a, b = rng.integers(400, n, size=(2, 3000))
    inter = (Y[a] & Y[b]).sum(1)
    union = (Y[a] | Y[b]).sum(1)
    jaccard = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    learned = np.corrcoef(model.score_pairs(X[a], X[b]), jaccard)[0, 1]
    Z = (X - X[:400].mean(0)) / X[:400].std(0)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    cosine = np.corrcoef(np.einsum("ij,ij->i", Z[a], Z[b]), jaccard)[0, 1]
    assert learned > 0.85
    assert learned > cosine + 0.15  # the input-space cosine follows the label sets far less
    with pytest.raises(ValueError, match="label-indicator"):
        SSNE(similarity="jaccard", max_iter=2, device="cpu").fit(X, Y[:, 0] + 2)


def test_fit_pairs_objective_decreases(rng):
    X, H = _ground_truth(rng, n_samples=100)
    pairs = rng.integers(0, 100, size=(500, 2))
    targets = np.einsum("ij,ij->i", H[pairs[:, 0]], H[pairs[:, 1]])
    start = SSNE(max_iter=1, random_state=0, device="cpu").fit_pairs(X, pairs, targets)
    end = SSNE(max_iter=300, random_state=0, device="cpu").fit_pairs(X, pairs, targets)
    assert end.objective(X, pairs, targets) < 0.5 * start.objective(X, pairs, targets)


def test_same_seed_same_model_other_seed_other_model(rng):
    X, y = _separable_data(rng, 15)

    def fitted_weight(seed):
        return SSNE(max_iter=40, random_state=seed, device="cpu").fit(X, y).weight_

    np.testing.assert_array_equal(fitted_weight(3), fitted_weight(3))
    assert not np.array_equal(fitted_weight(3), fitted_weight(4))


def test_group_norm_prunes_whole_columns(rng):
    X, y = _separable_data(rng, 30)
    model = SSNE(n_components=24, reg_lambda=0.05, max_iter=400, random_state=0, device="cpu")
    model.fit(X, y)
    dead = np.setdiff1d(np.arange(24), model.active_components_)
    assert 0 < dead.size < 24
    assert np.all(model.weight_[:, dead] == 0)
    assert np.all(np.any(model.weight_[:, model.active_components_] != 0, axis=0))
    assert model.transform(X).shape[1] == model.active_components_.size


def test_pruning_every_unit_is_an_error(rng):
    X, y = _separable_data(rng, 10)
    with pytest.raises(ValueError, match="pruned every embedding unit"):
        SSNE(reg_lambda=1e4, max_iter=5, random_state=0, device="cpu").fit(X, y)


def test_block_coordinate_step_moves_only_its_block(rng):
    X, y = _separable_data(rng, 10)
    n_components, block_size = 10, 3
    # the estimator's first draw from its generator is the initial W
    initial = SphereTanhEmbedding(X.shape[1], n_components)
    initial.reset_parameters(torch_generator(make_rng(0)))
    model = SSNE(
        n_components=n_components,
        solver="bcd",
        block_size=block_size,
        reg_lambda=0.0,
        max_iter=1,
        random_state=0,
        device="cpu",
    ).fit(X, y)
    moved = np.any(model.weight_ != initial.weight.detach().numpy(), axis=0)
    assert moved.sum() == block_size


def _prox_descent(target, reg_lambda, momentum, block_size, steps=1000):
    """Minimise ``½||W − A||² + reg_lambda · Σ_m ||w_m||`` with the estimator's stepper."""
    module = SphereTanhEmbedding(target.shape[0] - 1, target.shape[1]).to(torch.float64)
    stepper = _ProximalStepper(
        module, learning_rate=0.3, reg_lambda=reg_lambda, max_iter=steps,
        block_size=block_size, momentum=momentum,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    for step in range(steps):
        stepper.begin(step, rng)
        stepper.optimizer.zero_grad()
        (0.5 * ((module.weight - target) ** 2).sum()).backward()
        stepper.optimizer.step()
        with torch.no_grad():
            stepper.proximal_step()
    return module.weight.detach()


@pytest.mark.parametrize("block_size", [None, 3])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_proximal_step_minimises_the_stated_objective(rng, momentum, block_size):
    """Closed form: the minimiser of ½||W − A||² + λ Σ ||w_m|| is the group soft-threshold of A
    by λ. Plain proximal SGD (momentum 0), heavy-ball momentum and block-coordinate steps must
    all reach it; a threshold of step·λ under momentum 0.9 would reach the one of λ/10."""
    target = torch.as_tensor(rng.normal(size=(4, 8)))
    norms = torch.linalg.vector_norm(target, dim=0)
    reg_lambda = float(norms.sort().values[3:5].mean())  # half the columns are pruned
    expected = target * (1 - reg_lambda / norms).clamp_min(0)
    found = _prox_descent(target, reg_lambda, momentum, block_size)
    torch.testing.assert_close(found, expected, atol=1e-6, rtol=0)
    assert torch.equal(found.eq(0).all(dim=0), norms <= reg_lambda)


def test_bcd_solver_learns_too(rng):
    X, y = _separable_data(rng)
    X_test, y_test = _separable_data(np.random.default_rng(1))
    model = SSNE(solver="bcd", block_size=8, max_iter=800, random_state=0, device="cpu").fit(X, y)
    assert _knn_accuracy(model, X, y, X_test, y_test) >= 0.95


def test_neg_target_sets_between_class_similarity(rng):
    X, y = _separable_data(rng, 40, n_noise=0)
    model = SSNE(neg_target=0.0, max_iter=600, random_state=0, device="cpu").fit(X, y)
    Z = model.transform(X)
    S = Z @ Z.T
    between = S[y[:, None] != y[None, :]]
    within = S[y[:, None] == y[None, :]]
    assert abs(between.mean()) < 0.15
    assert within.mean() > 0.8


def test_score_pairs_and_distances_agree_with_transform(rng):
    X, y = _separable_data(rng, 10)
    model = SSNE(max_iter=30, random_state=0, device="cpu").fit(X, y)
    a, b = X[:12], X[12:24]
    Za, Zb = model.transform(a), model.transform(b)
    s = model.score_pairs(a, b)
    np.testing.assert_allclose(s, np.einsum("ij,ij->i", Za, Zb), rtol=1e-6)
    np.testing.assert_allclose(model.score_pairs(np.stack([a, b], axis=1)), s)
    np.testing.assert_allclose(model.pair_distances(a, b) ** 2, 2 - 2 * s, atol=1e-6)
    assert model.get_metric()(a[0], b[0]) == pytest.approx(np.sqrt(2 - 2 * s[0]), abs=1e-6)
    with pytest.raises(ValueError, match="n_pairs, 2, n_features"):
        model.score_pairs(a)


def test_save_load_round_trip(rng, tmp_path):
    X, y = _separable_data(rng, 10)
    model = SSNE(max_iter=30, random_state=0, device="cpu").fit(X, y)
    model.save(tmp_path / "ssne.npz")
    loaded = SSNE.load(tmp_path / "ssne.npz")
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    np.testing.assert_array_equal(loaded.active_components_, model.active_components_)


def test_default_n_components_is_twice_d_clipped():
    assert default_n_components(3) == 16
    assert default_n_components(30) == 60
    assert default_n_components(1000) == 256


@pytest.mark.parametrize(
    ("pairs", "similarities", "match"),
    [
        (np.array([[0, 1, 2]]), [0.5], r"shape \(n_pairs, 2\)"),
        (np.zeros((0, 2), int), [], "pairs is empty"),
        (np.array([[0, 10]]), [0.5], r"lie in \[0, 10\)"),
        (np.array([[-1, 3]]), [0.5], r"lie in \[0, 10\)"),
        (np.array([[0.5, 3.0]]), [0.5], "integer row indices"),
        (np.array([[0, 1]]), [0.5, 0.2], "one per pair"),
        (np.array([[0, 1]]), [np.nan], "NaN"),
        (np.array([[0, 1]]), [1.5], r"\[-1, 1\]"),
    ],
)
def test_fit_pairs_rejects_bad_supervision(rng, pairs, similarities, match):
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match=match):
        SSNE(max_iter=2, device="cpu").fit_pairs(X, pairs, similarities)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"reg_lambda": -1.0}, "reg_lambda"),
        ({"neg_target": 1.0}, "neg_target"),
        ({"solver": "lbfgs"}, "solver"),
        ({"similarity": "cosine"}, "similarity"),
        ({"block_size": 0}, "block_size"),
        ({"n_components": 2.5}, "n_components"),
        ({"positive_fraction": 1.5}, "positive_fraction"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"positive_sampling": "uniform"}, "positive_sampling"),
    ],
)
def test_bad_parameters_raise_in_fit(rng, params, match):
    X, y = _separable_data(rng, 5)
    with pytest.raises(ValueError, match=match):
        SSNE(max_iter=2, device="cpu", **params).fit(X, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(rng):
    X, y = _separable_data(rng, 20)
    cpu = SSNE(max_iter=100, random_state=0, device="cpu").fit(X, y)
    gpu = SSNE(max_iter=100, random_state=0, device="cuda").fit(X, y)
    np.testing.assert_allclose(gpu.weight_, cpu.weight_, atol=1e-3)
    np.testing.assert_allclose(gpu.transform(X), cpu.transform(X), atol=1e-3)
