"""Tests of RPLEmbedding: the scikit-learn contract, outputs, learning, persistence."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg
import torch
from pyriemann.estimation import Covariances
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from rankmetric.estimators.spd import RPLEmbedding, default_hidden_sizes
from rankmetric.io import load_model, save_model
from rankmetric.training import split_validation

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

FAST = {"max_iter": 5, "random_state": 0, "device": "cpu"}
#: version 0.1's network: one Stiefel BiMap, random start, absolute ReEig floor, SPD output
V01 = {"head": "spd", "bimap": "stiefel", "init": "random", "eps": 1e-4, "relative_eps": False,
       "potato": "pairwise"}  # fmt: skip


# ---------------------------------------------------------------- data


def _spd_classes(n_per_class=12, c=6, n_classes=3, sep=1.5, noise=0.4, seed=0):
    """SPD matrices around one random SPD mean per class: M_k^{1/2} exp(noise · S) M_k^{1/2}."""
    rng = np.random.default_rng(seed)

    def expm_sym(S):
        w, U = np.linalg.eigh(S)
        return (U * np.exp(w)[..., None, :]) @ np.swapaxes(U, -1, -2)

    def random_sym(*shape):
        A = rng.normal(size=(*shape, c, c))
        return (A + np.swapaxes(A, -1, -2)) / 2

    means = expm_sym(sep * random_sym(n_classes) / np.sqrt(c))
    roots = np.stack([scipy.linalg.sqrtm(m).real for m in means])
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = roots[y] @ expm_sym(noise * random_sym(len(y)) / np.sqrt(c)) @ roots[y]
    return (X + np.swapaxes(X, -1, -2)) / 2, y


def _knn_accuracy(Z_train, y_train, Z_test, y_test):
    return KNeighborsClassifier(1).fit(Z_train, y_train).score(Z_test, y_test)


# The scikit-learn contract of RPLEmbedding is checked beside SPDNetEmbedding's, with the same
# expected failures, in tests/estimators/test_spdnet.py.


# ---------------------------------------------------------------- outputs


@pytest.fixture(scope="module")
def data():
    return _spd_classes()


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return RPLEmbedding(**V01, hidden_sizes=3, max_iter=40, random_state=0, device="cpu").fit(X, y)


def test_fitted_attributes(fitted, data):
    X, y = data
    assert fitted.n_features_in_ == 6
    np.testing.assert_array_equal(fitted.classes_, [0, 1, 2])
    assert [w.shape for w in fitted.weights_] == [(6, 3)]
    for w in fitted.weights_:
        assert isinstance(w, np.ndarray)
        np.testing.assert_allclose(w.T.astype(float) @ w, np.eye(w.shape[1]), atol=1e-6)
    assert fitted.potato_log_mu_.shape == fitted.potato_log_sigma_.shape == (3,)
    assert np.all(fitted.potato_log_sigma_ > 0)
    assert 1 <= fitted.n_iter_ <= 40 and fitted.loss_curve_.shape == (fitted.n_iter_,)
    assert fitted.best_iter_ is not None and fitted.best_iter_ <= fitted.n_iter_
    assert 0 < fitted.validation_score_ <= 1


def test_whitening_centres_the_training_data(data):
    X, y = data
    est = RPLEmbedding(max_iter=1, validation_fraction=0, random_state=0, device="cpu").fit(X, y)
    W = est.whitening_
    Xw = W @ X @ W
    # The Riemannian mean of whitened data is I: the mean of the logarithms at I vanishes.
    w, U = np.linalg.eigh(Xw)
    logs = (U * np.log(w)[:, None, :]) @ np.swapaxes(U, 1, 2)
    np.testing.assert_allclose(logs.mean(axis=0), 0, atol=1e-5)
    plain = RPLEmbedding(max_iter=1, whiten=False, validation_fraction=0, device="cpu").fit(X, y)
    np.testing.assert_array_equal(plain.whitening_, np.eye(6))


def test_outputs_agree_with_each_other(fitted, data):
    X, _ = data
    spd = clone(fitted).set_params(output="spd")
    spd.__dict__.update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    log = clone(spd).set_params(output="log")
    log.__dict__.update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    Y, L, V = spd.transform(X), log.transform(X), fitted.transform(X)
    assert Y.shape == L.shape == (len(X), 3, 3) and V.shape == (len(X), 6)
    assert np.all(np.linalg.eigvalsh(Y) >= fitted.eps * (1 - 1e-3))
    np.testing.assert_allclose(Y, np.swapaxes(Y, 1, 2))
    np.testing.assert_allclose(np.stack([scipy.linalg.expm(l) for l in L]), Y, rtol=1e-4, atol=1e-5)
    # Euclidean distances between vectors = log-Euclidean distances between SPD outputs.
    dv = np.linalg.norm(V[:, None] - V[None], axis=-1)
    dl = np.linalg.norm(L[:, None] - L[None], axis=(-2, -1))
    np.testing.assert_allclose(dv, dl, atol=1e-4)


def test_pair_distances_are_airm_between_outputs(fitted, data):
    X, _ = data
    spd = clone(fitted).set_params(output="spd")
    spd.__dict__.update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    Y = spd.transform(X).astype(np.float64)
    got = fitted.pair_distances(X[:5], X[5:10])
    expected = [
        np.sqrt((np.log(scipy.linalg.eigh(b, a, eigvals_only=True)) ** 2).sum())
        for a, b in zip(Y[:5], Y[5:10], strict=True)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    metric = fitted.get_metric()
    assert metric(X[0], X[5]) == pytest.approx(got[0], rel=1e-6)
    with pytest.raises(ValueError, match="as many rows"):
        fitted.pair_distances(X[:2], X[:3])


def test_transform_preserves_float32_and_is_chunk_independent(fitted, data):
    X, _ = data
    Z64 = fitted.transform(X)
    Z32 = fitted.transform(X.astype(np.float32))
    assert Z64.dtype == np.float64 and Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, Z64, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(fitted.transform(X[:7]), Z64[:7], rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- learning


def _nuisance_data(n_per_class=30, c=8, n_informative=2, n_classes=3, seed=1):
    """Class information in the log-variance of 2 hidden sources, large nuisance variance in 6."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    log_s = rng.normal(size=(len(y), c))
    centres = rng.normal(scale=0.6, size=(n_classes, n_informative))
    log_s[:, :n_informative] = centres[y] + 0.15 * rng.normal(size=(len(y), n_informative))
    Q, _ = np.linalg.qr(rng.normal(size=(c, c)))
    X = (Q * np.exp(log_s)[:, None, :]) @ Q.T
    return (X + np.swapaxes(X, 1, 2)) / 2, y


@pytest.mark.parametrize("params", [{}, {**V01, "hidden_sizes": 2}], ids=["default", "v0.1"])
def test_training_finds_the_informative_subspace(params):
    X, y = _nuisance_data()
    train = np.arange(len(y)) % 3 != 0
    untrained = RPLEmbedding(**params, max_iter=1, validation_fraction=0, random_state=0)
    trained = clone(untrained).set_params(max_iter=150, validation_fraction=0.2)
    scores = []
    for est in (untrained, trained):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.set_params(device="cpu").fit(X[train], y[train])
        Z_train, Z_test = est.transform(X[train]), est.transform(X[~train])
        scores.append(_knn_accuracy(Z_train, y[train], Z_test, y[~train]))
    assert scores[1] >= scores[0] + 0.2, scores
    # a fit that leaves its start says nothing about untrained networks
    assert trained.best_iter_ > 0
    assert not [w for w in caught if "untrained network" in str(w.message)]


def test_same_seed_same_model_other_seed_other_model(data):
    X, y = data
    a = RPLEmbedding(init="random", **FAST).fit(X, y).transform(X)
    b = RPLEmbedding(init="random", **FAST).fit(X, y).transform(X)
    c = RPLEmbedding(init="random", **{**FAST, "random_state": 1}).fit(X, y).transform(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize("distance", ["airm", "log_euclidean"])
def test_distances_and_batch_options_train(data, distance):
    X, y = data
    est = RPLEmbedding(
        hidden_sizes="4,2",
        head="spd",
        distance=distance,
        n_classes_per_batch=2,
        n_per_class=20,  # more than a class holds: drawn with repetition (identical matrices)
        temperature=1.0,
        **FAST,
    ).fit(X, y)
    assert [w.shape for w in est.weights_] == [(6, 4), (4, 2)]
    assert np.all(np.isfinite(est.loss_curve_))
    assert est.transform(X).shape == (len(X), 3)


def test_log_euclidean_model_distance_is_euclidean_on_transform(data):
    X, y = data
    est = RPLEmbedding(distance="logeuclid", head="spd", **FAST).fit(X, y)
    V = est.transform(X)
    np.testing.assert_allclose(
        est.pair_distances(X[:6], X[6:12]), np.linalg.norm(V[:6] - V[6:12], axis=1), atol=1e-4
    )


def test_without_validation_runs_all_steps(data):
    X, y = data
    est = RPLEmbedding(validation_fraction=0, **FAST).fit(X, y)
    assert est.n_iter_ == 5 and est.best_iter_ is None and est.validation_score_ is None


def test_early_stopping_stops_before_max_iter(data):
    X, y = data
    est = RPLEmbedding(
        max_iter=400,
        validation_every=1,
        n_iter_no_change=2,
        learning_rate=1e-5,
        random_state=0,
        device="cpu",
    ).fit(X, y)
    assert est.n_iter_ < 400


def test_pipeline_with_pyriemann_covariances():
    rng = np.random.default_rng(0)
    n, channels, times = 40, 5, 64
    y = np.repeat([0, 1], n // 2)
    mixing = np.stack(
        [np.eye(channels), np.eye(channels) + 0.8 * rng.normal(size=(channels, channels))]
    )
    signals = mixing[y] @ rng.normal(size=(n, channels, times))
    pipe = make_pipeline(
        Covariances("oas"),
        RPLEmbedding(max_iter=20, random_state=0, device="cpu"),
        KNeighborsClassifier(3),
    )
    pipe.fit(signals[::2], y[::2])
    assert pipe.score(signals[1::2], y[1::2]) >= 0.8


# ---------------------------------------------------------------- persistence


def test_save_load_and_pickle_round_trips(fitted, data, tmp_path):
    X, _ = data
    path = tmp_path / "rpl.npz"
    save_model(fitted, path)
    loaded = load_model(path)
    assert isinstance(loaded, RPLEmbedding)
    np.testing.assert_array_equal(loaded.transform(X), fitted.transform(X))
    fitted.save(tmp_path / "again.npz")
    np.testing.assert_array_equal(
        RPLEmbedding.load(tmp_path / "again.npz").transform(X), fitted.transform(X)
    )
    unpickled = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(unpickled.transform(X), fitted.transform(X))


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "params, message",
    [
        ({"distance": "euclidean"}, "distance"),
        ({"output": "matrix"}, "output"),
        ({"margin": -1.0}, "margin"),
        ({"momentum": 0.0}, "momentum"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"n_per_class": 1}, "n_per_class"),
        ({"max_iter": -1}, "max_iter"),
        ({"n_iter_no_change": 0}, "n_iter_no_change"),
        ({"n_classes_per_batch": 1}, "n_classes_per_batch"),
        ({"hidden_sizes": [7]}, "hidden_sizes"),
        ({"hidden_sizes": [3, 4]}, "hidden_sizes"),
        ({"hidden_sizes": "a,b"}, "hidden_sizes"),
        ({"whiten": "yes"}, "whiten"),
        ({"eps": 0.0}, "eps"),
    ],
)
def test_bad_parameters_raise(data, params, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        RPLEmbedding(**{**FAST, **params}).fit(X, y)


def test_bad_inputs_raise(data, fitted):
    X, y = data
    with pytest.raises(ValueError, match=r"shape \(n_matrices, c, c\)"):
        RPLEmbedding(**FAST).fit(X.reshape(len(X), -1), y)
    not_spd = X.copy()
    not_spd[0] = -np.eye(6)
    with pytest.raises(ValueError, match="not positive definite"):
        RPLEmbedding(**FAST).fit(not_spd, y)
    with pytest.raises(ValueError, match="6 features"):
        fitted.transform(X[:, :5, :5])
    with pytest.raises(ValueError, match="fewer than 2 samples"):
        RPLEmbedding(**FAST).fit(X[[0, 12, 24]], y[[0, 12, 24]])


@pytest.mark.skipif(torch.cuda.is_available(), reason="asks for CUDA where there is none")
def test_cuda_without_cuda_raises(data):
    X, y = data
    with pytest.raises(ValueError, match="CUDA"):
        RPLEmbedding(**{**FAST, "device": "cuda"}).fit(X, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(data):
    X, y = data
    cpu = RPLEmbedding(**FAST).fit(X, y)
    gpu = RPLEmbedding(**{**FAST, "device": "cuda"}).fit(X, y)
    assert gpu.n_iter_ == cpu.n_iter_
    np.testing.assert_allclose(gpu.transform(X), cpu.transform(X), rtol=1e-2, atol=1e-3)


def test_one_channel_input_works():
    rng = np.random.default_rng(0)
    X = np.exp(rng.normal(size=(20, 1, 1)))
    y = np.repeat([0, 1], 10)
    Z = RPLEmbedding(**FAST).fit(X, y).transform(X)
    assert Z.shape == (20, 1) and np.all(np.isfinite(Z))


# ---------------------------------------------------------------- helpers


def test_default_hidden_sizes():
    assert default_hidden_sizes(1) == (1,)
    assert default_hidden_sizes(6) == (3,)
    assert default_hidden_sizes(7) == (4,)
    assert default_hidden_sizes(93) == (47,)


def test_stratified_split_keeps_two_training_samples_per_class():
    codes = np.array([0] * 10 + [1] * 3 + [2] * 2)
    train, val = split_validation(codes, 0.5, "stratified", np.random.default_rng(0))
    assert np.intersect1d(train, val).size == 0 and len(train) + len(val) == len(codes)
    np.testing.assert_array_equal(np.bincount(codes[val], minlength=3), [5, 1, 0])
    assert np.bincount(codes[train]).min() >= 2
    train, val = split_validation(
        np.array([0, 0, 1, 1]), 0.5, "stratified", np.random.default_rng(0)
    )
    assert val.size == 0 and train.size == 4
