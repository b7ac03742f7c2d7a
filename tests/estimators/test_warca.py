"""Linear WARCA: scikit-learn conformance, learning, standardisation folding, I/O, validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric.estimators.warca import WARCA, auto_draws, auto_schedule, column_stats
from rankmetric.io import load_model

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

FAST = {"max_iter": 15, "batch_size": 32, "max_sampling": 16}


@parametrize_with_checks([WARCA(**FAST), WARCA(sampling="sequential", **FAST)])
def test_sklearn_conformance(estimator, check):
    check(estimator)


def noisy_blobs(n_per_class=60, n_informative=2, n_noise=8, seed=0):
    """Classes separated in 2 dimensions, drowned in 8 high-variance noise dimensions.

    The class centres are the same for every ``seed`` (seeds draw new samples of one problem).
    """
    centres = np.random.default_rng(100).normal(scale=3.0, size=(4, n_informative))
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), n_per_class)
    informative = centres[y] + rng.normal(scale=0.6, size=(len(y), n_informative))
    noise = rng.normal(scale=4.0, size=(len(y), n_noise))
    return np.hstack([informative, noise]), y


def knn_score(Z_train, y_train, Z_test, y_test):
    return KNeighborsClassifier(3).fit(Z_train, y_train).score(Z_test, y_test)


@pytest.mark.parametrize("sampling", ["batched", "sequential", "exact"])
def test_learns_to_ignore_noise_dimensions(sampling):
    X, y = noisy_blobs()
    Xt, yt = noisy_blobs(seed=1)
    model = WARCA(
        n_components=4,
        max_iter=100,
        batch_size=64,
        max_sampling=32,
        sampling=sampling,
        random_state=0,
    )
    Z, Zt = model.fit_transform(X, y), model.transform(Xt)
    baseline = knn_score(X, y, Xt, yt)
    learned = knn_score(Z, y, Zt, yt)
    assert learned > baseline + 0.1, (learned, baseline)
    informative = np.linalg.norm(model.components_[:, :2], axis=0).mean()
    noise = np.linalg.norm(model.components_[:, 2:], axis=0).mean()
    assert informative > 3 * noise


def test_standardisation_is_folded_into_components():
    X, y = noisy_blobs()
    X = X * np.array([1000.0] * 2 + [0.001] * 8) + 50.0  # wildly different units
    model = WARCA(max_iter=20, batch_size=64, random_state=0).fit(X, y)
    np.testing.assert_allclose(model.mean_, X.mean(0))
    np.testing.assert_allclose(model.scale_, X.std(0))
    L = model.components_
    np.testing.assert_allclose(model.transform(X), X @ L.T, rtol=1e-6)
    M = model.get_mahalanobis_matrix()
    diff = X[0] - X[1]
    assert model.get_metric()(X[0], X[1]) == pytest.approx(np.sqrt(diff @ M @ diff), rel=1e-5)


def test_column_stats_in_chunks_and_constant_columns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1001, 3)).astype(np.float32)
    X[:, 2] = 7.0
    mean, scale = column_stats(X, chunk_rows=100)
    np.testing.assert_allclose(mean, X.astype(np.float64).mean(0), rtol=1e-6)
    np.testing.assert_allclose(scale[:2], X[:, :2].astype(np.float64).std(0), rtol=1e-5)
    assert scale[2] == 1.0


def test_same_seed_same_map_and_float32_input_kept():
    X, y = noisy_blobs()
    a = WARCA(max_iter=10, batch_size=32, random_state=3).fit(X.astype(np.float32), y)
    b = WARCA(max_iter=10, batch_size=32, random_state=3).fit(X.astype(np.float32), y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.transform(X.astype(np.float32)).dtype == np.float32
    assert a.n_iter_ == 10 and len(a.loss_curve_) == 10


def test_pca_init_starts_from_orthonormal_principal_axes():
    X, y = noisy_blobs()
    model = WARCA(n_components=3, init="pca", max_iter=0, random_state=0).fit(X, y)
    W = model.components_ * model.scale_  # undo the folded standardisation
    np.testing.assert_allclose(W @ W.T, np.eye(3), atol=1e-5)


def test_random_init_follows_the_reference_scale():
    X, y = noisy_blobs(n_noise=200)
    model = WARCA(n_components=50, max_iter=0, random_state=0).fit(X, y)
    W = model.components_ * model.scale_
    assert W.std() == pytest.approx(1 / np.sqrt(X.shape[1]), rel=0.05)


@pytest.mark.parametrize("standardize", [True, False])
def test_array_init_is_the_starting_map_on_raw_inputs(standardize):
    X, y = noisy_blobs()
    start = np.random.default_rng(1).normal(size=(3, X.shape[1]))
    model = WARCA(init=start, max_iter=0, standardize=standardize, random_state=0).fit(X, y)
    assert model.components_.shape == (3, X.shape[1])  # n_components from the array's rows
    np.testing.assert_allclose(model.components_, start, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.transform(X) - model.transform(X).mean(0),
                               (X - X.mean(0)) @ start.T, rtol=1e-4, atol=1e-4)  # fmt: skip


def test_warm_start_from_a_good_map_begins_where_it_left_off():
    X, y = noisy_blobs()
    first = WARCA(max_iter=150, batch_size=32, max_sampling=128, tol=None, random_state=0).fit(X, y)
    cold = WARCA(max_iter=5, batch_size=32, max_sampling=128, tol=None, random_state=1).fit(X, y)
    warm = WARCA(
        init=first.components_,
        max_iter=5,
        batch_size=32,
        max_sampling=128,
        tol=None,
        random_state=1,
    )
    warm.fit(X, y)
    settled = np.mean(first.loss_curve_[-10:])  # where the first fit ended
    assert np.mean(warm.loss_curve_) < 1.25 * settled < 0.75 * np.mean(cold.loss_curve_)
    Xt, yt = noisy_blobs(seed=2)
    warm_score, first_score, cold_score = (
        knn_score(m.transform(X), y, m.transform(Xt), yt) for m in (warm, first, cold)
    )
    assert warm_score >= first_score - 0.02 and warm_score > cold_score + 0.05


@pytest.mark.parametrize(
    ("init", "params", "match"),
    [
        (np.ones((3, 4)), {}, "init has shape"),
        (np.ones((3, 10)), {"n_components": 2}, "init has shape"),
        (np.full((2, 10), np.nan), {}, "init contains NaN"),
    ],
)
def test_bad_array_init_raises_value_error(init, params, match):
    X, y = noisy_blobs()
    with pytest.raises(ValueError, match=match):
        WARCA(init=init, max_iter=1, **params).fit(X, y)


def test_array_init_survives_save_and_load(tmp_path):
    X, y = noisy_blobs()
    start = np.random.default_rng(1).normal(size=(2, X.shape[1]))
    model = WARCA(init=start, max_iter=3, batch_size=32, random_state=0).fit(X, y)
    model.save(tmp_path / "warca.npz")
    loaded = load_model(tmp_path / "warca.npz")
    np.testing.assert_array_equal(loaded.init, start)
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_validation_set_enables_early_stopping_and_keeps_the_best():
    X, y = noisy_blobs()
    Xv, yv = noisy_blobs(seed=2)
    with pytest.warns(FutureWarning, match=r"WARCA.fit\(X, y, X_val, y_val\) will stop"):
        model = WARCA(
            max_iter=200,
            batch_size=32,
            max_sampling=16,
            validation_every=10,
            n_iter_no_change=3,
            validation_metric="knn",
            random_state=0,
        ).fit(X, y, X_val=Xv, y_val=yv)
    assert len(model.validation_scores_) >= 1
    assert model.best_iter_ is not None
    best = max(model.validation_scores_)
    assert knn_score(model.transform(X), y, model.transform(Xv), yv) == pytest.approx(best)


@pytest.mark.filterwarnings("ignore:WARCA.fit.X, y, X_val, y_val.:FutureWarning")
def test_validation_set_errors():
    X, y = noisy_blobs()
    with pytest.raises(ValueError, match="X_val and y_val"):
        WARCA(max_iter=1).fit(X, y, X_val=X)
    with pytest.raises(ValueError, match="not seen"):
        WARCA(max_iter=1, validation_metric="knn").fit(X, y, X_val=X[:5], y_val=np.full(5, 9))
    with pytest.raises(ValueError, match="no label with two items"):
        WARCA(max_iter=1).fit(X, y, X_val=X[:5], y_val=np.arange(5))
    with pytest.raises(ValueError, match="not both"):
        WARCA(max_iter=1, validation_fraction=0.2).fit(X, y, X_val=X[:5], y_val=y[:5])
    with pytest.raises(ValueError, match="features"):
        WARCA(max_iter=1).fit(X, y, X_val=X[:, :3], y_val=y)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 11}, "n_features"),
        ({"margin": 0.0}, "margin"),
        ({"reg_lambda": -1.0}, "reg_lambda"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_sampling": 2.5}, "max_sampling"),
        ({"learning_rate": 0}, "learning_rate"),
        ({"sampling": "greedy"}, "sampling"),
        ({"init": "zeros"}, "init"),
        ({"max_iter": -1}, "max_iter"),
        ({"n_iter_no_change": 0}, "n_iter_no_change"),
        ({"tol": -1.0}, "tol"),
        ({"tol_window": 0}, "tol_window"),
        ({"batch_size": 2.0}, "batch_size"),
        ({"n_threads": 0}, "n_threads"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(params, match):
    X, y = noisy_blobs()
    with pytest.raises(ValueError, match=match):
        WARCA(**params).fit(X, y)


def test_bad_labels():
    X, y = noisy_blobs()
    with pytest.raises(ValueError, match="class"):
        WARCA().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="positive pairs"):
        WARCA().fit(X[:4], np.arange(4))


def test_save_load_round_trip(tmp_path):
    X, y = noisy_blobs()
    model = WARCA(max_iter=5, batch_size=32, random_state=0).fit(X, y)
    path = tmp_path / "warca.npz"
    model.save(path)
    loaded = load_model(path)
    assert isinstance(loaded, WARCA)
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    assert loaded.get_params() == model.get_params()


def test_pipeline_and_grid_search():
    X, y = noisy_blobs()
    pipe = make_pipeline(WARCA(max_iter=20, batch_size=64, random_state=0), KNeighborsClassifier(3))
    search = GridSearchCV(pipe, {"warca__n_components": [2, 4]}, cv=2).fit(X, y)
    assert search.best_params_["warca__n_components"] in (2, 4)


def test_large_class_count_and_string_labels():
    X, y = noisy_blobs(n_per_class=3)
    labels = np.array(["a", "b", "c", "d"])[y]
    Z = WARCA(max_iter=5, batch_size=16, random_state=0).fit_transform(X, labels)
    assert Z.shape == (12, 10)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_fit_matches_cpu_quality():
    X, y = noisy_blobs()
    Xt, yt = noisy_blobs(seed=1)
    model = WARCA(n_components=4, max_iter=150, batch_size=128, random_state=0, device="cuda")
    Z = model.fit_transform(X, y)
    assert isinstance(model.components_, np.ndarray)
    assert knn_score(Z, y, model.transform(Xt), yt) > knn_score(X, y, Xt, yt) + 0.1


@pytest.mark.parametrize(
    ("n_samples", "expected"),
    [(100, (64, 10)), (284, (71, 10)), (898, (224, 10)), (1500, (375, 27)), (10**6, (512, 50))],
)
def test_default_schedule_scales_with_the_data(n_samples, expected):
    assert auto_schedule(n_samples, None, None)[:2] == expected
    assert auto_schedule(n_samples, 40, None)[:2] == (40, 10)
    assert auto_schedule(n_samples, None, 7)[1] == 7
    lr = auto_schedule(n_samples, None, None, None)[2]
    assert lr == pytest.approx(0.01 * np.sqrt(512 / expected[0]))
    assert auto_schedule(n_samples, None, None, 0.5)[2] == 0.5


@pytest.mark.parametrize(
    ("n_samples", "expected"),
    [(100, 16), (284, 16), (898, 24), (1500, 68), (2047, 127), (2048, 128), (10**6, 128)],
)
def test_default_draws_scale_with_the_data(n_samples, expected):
    assert auto_draws(n_samples, None) == expected
    assert auto_draws(n_samples, 40) == 40
    assert auto_draws(n_samples, None, "sequential") == 128  # the reference's cap


def test_large_fits_keep_the_fixed_schedule():
    # from 2,048 samples on the scaled defaults are the 0.1 ones: such fits are unchanged
    assert auto_schedule(2048, None, None) == (512, 50, 0.01)
    assert auto_draws(2048, None) == 128


def test_fit_records_the_schedule_it_used():
    X, y = noisy_blobs()  # 240 samples
    model = WARCA(max_iter=3, random_state=0).fit(X, y)
    assert (model.batch_size_, model.tol_window_, model.max_sampling_) == (64, 10, 16)
    assert model.learning_rate_ == pytest.approx(0.01 * np.sqrt(8))
    model = WARCA(max_iter=3, batch_size=16, tol_window=5, random_state=0).fit(X, y)
    assert (model.batch_size_, model.tol_window_) == (16, 5)
