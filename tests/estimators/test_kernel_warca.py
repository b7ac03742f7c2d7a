"""Kernel WARCA: conformance, exact vs precomputed, Nyström, regulariser, non-linear learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import chi2_kernel, rbf_kernel
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

import rankmetric.estimators.warca.kernel as kernel_warca_module
from rankmetric.estimators.warca import WARCA, KernelWARCA
from rankmetric.io import load_model

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning"),
]

FAST = {"max_iter": 10, "batch_size": 32, "max_sampling": 16, "n_components": 2}


@parametrize_with_checks(
    [
        KernelWARCA(**FAST),
        KernelWARCA(kernel="rbf", **FAST),
        KernelWARCA(kernel="poly", n_landmarks=8, **FAST),
        KernelWARCA(kernel="precomputed", **FAST),
    ]
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


def rings(n_per_class=60, n_noise=2, seed=0):
    """Three concentric rings (radius = class) plus small noise dimensions: not linear."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n_per_class)
    angle = rng.uniform(0, 2 * np.pi, len(y))
    radius = 1.0 + y + rng.normal(scale=0.1, size=len(y))
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    return np.hstack([X, rng.normal(scale=0.3, size=(len(y), n_noise))]), y


def knn_score(Z, y, Zt, yt):
    return KNeighborsClassifier(1).fit(Z, y).score(Zt, yt)


def test_kernel_warca_separates_rings_that_linear_warca_cannot():
    X, y = rings()
    Xt, yt = rings(seed=1)
    # one dimension: the radius is a kernel feature, no linear projection orders the rings
    params = {"n_components": 1, "max_iter": 100, "batch_size": 64, "max_sampling": 32}
    params["random_state"] = 0
    kernel = KernelWARCA(kernel="rbf", gamma=0.5, **params).fit(X, y)
    linear = WARCA(**params).fit(X, y)
    kernel_score = knn_score(kernel.transform(X), y, kernel.transform(Xt), yt)
    linear_score = knn_score(linear.transform(X), y, linear.transform(Xt), yt)
    assert kernel.approximation_ == "exact"
    assert kernel_score > 0.9 and kernel_score > linear_score + 0.2, (kernel_score, linear_score)


def test_nystroem_mode_learns_too_and_transforms_through_landmarks():
    X, y = rings()
    Xt, yt = rings(seed=1)
    model = KernelWARCA(
        kernel="rbf",
        gamma=0.5,
        n_landmarks=40,
        n_components=2,
        max_iter=100,
        batch_size=64,
        max_sampling=32,
        random_state=0,
    ).fit(X, y)
    assert model.approximation_ == "nystroem"
    assert model.support_vectors_.shape == (40, 4) and model.components_.shape == (2, 40)
    expected = rbf_kernel(Xt, model.support_vectors_, gamma=0.5) @ model.components_.T
    np.testing.assert_allclose(model.transform(Xt), expected, rtol=1e-4, atol=1e-5)
    assert knn_score(model.transform(X), y, model.transform(Xt), yt) > 0.9


def test_precomputed_kernel_gives_the_same_model_as_features():
    X, y = rings(n_per_class=20)
    Xt, _ = rings(n_per_class=5, seed=1)
    params = {"n_components": 2, "max_iter": 30, "batch_size": 32, "random_state": 0}
    from_features = KernelWARCA(kernel="rbf", gamma=0.5, **params).fit(X, y)
    K = rbf_kernel(X, X, gamma=0.5)
    from_kernel = KernelWARCA(kernel="precomputed", **params).fit(K, y)
    np.testing.assert_allclose(from_kernel.components_, from_features.components_, atol=1e-4)
    np.testing.assert_allclose(
        from_kernel.transform(rbf_kernel(Xt, X, gamma=0.5)), from_features.transform(Xt), atol=1e-4
    )
    assert from_kernel.support_vectors_ is None


def test_chi2_default_transform_matches_sklearn_kernel():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 15)
    H = rng.dirichlet(np.ones(6), size=45) + 0.05 * np.eye(6)[y * 2]
    model = KernelWARCA(n_components=3, max_iter=20, batch_size=32, random_state=0).fit(H, y)
    expected = chi2_kernel(H[:7], H, gamma=model.gamma_) @ model.components_.T
    np.testing.assert_allclose(model.transform(H[:7]), expected, rtol=1e-4, atol=1e-5)


def test_strong_regulariser_drives_A_K_At_to_identity():
    X, y = rings(n_per_class=20)
    model = KernelWARCA(
        kernel="rbf",
        gamma=0.5,
        n_components=3,
        reg_lambda=100.0,
        max_iter=300,
        batch_size=8,
        max_sampling=4,
        learning_rate=0.01,
        random_state=0,
    ).fit(X, y)
    A, K = model.components_, rbf_kernel(X, X, gamma=0.5)
    np.testing.assert_allclose(A @ K @ A.T, np.eye(3), atol=0.05)


def test_large_data_switches_to_nystroem(monkeypatch):
    monkeypatch.setattr(kernel_warca_module, "EXACT_MAX_SAMPLES", 50)
    monkeypatch.setattr(kernel_warca_module, "DEFAULT_LANDMARKS", 30)
    X, y = rings()
    model = KernelWARCA(kernel="rbf", max_iter=5, batch_size=16, random_state=0).fit(X, y)
    assert model.approximation_ == "nystroem" and model.components_.shape == (30, 30)


@pytest.mark.parametrize(
    ("params", "fit_X", "match"),
    [
        ({"kernel": "sigmoid"}, None, "kernel"),
        ({"gamma": 0.0}, None, "gamma"),
        ({"n_landmarks": 0}, None, "n_landmarks"),
        ({"kernel": "precomputed", "n_landmarks": 5}, None, "precomputed"),
        ({"kernel": "precomputed"}, "rect", "square"),
        ({"n_components": 500, "kernel": "rbf"}, None, "n_components"),
        ({}, "negative", "non-negative"),
    ],
)
def test_bad_input_raises_value_error_naming_it(params, fit_X, match):
    X, y = rings(n_per_class=10)
    if fit_X == "rect":
        X = X[:, :3]
    elif fit_X is None and params.get("kernel") != "rbf":
        X = np.abs(X)
    with pytest.raises(ValueError, match=match):
        KernelWARCA(max_iter=1, **params).fit(X, y)


def test_save_load_round_trip(tmp_path):
    X, y = rings(n_per_class=10)
    model = KernelWARCA(kernel="rbf", n_components=2, max_iter=5, random_state=0).fit(X, y)
    path = tmp_path / "kwarca.npz"
    model.save(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_validation_early_stopping_in_both_modes():
    X, y = rings()
    Xv, yv = rings(seed=2)
    for landmarks in (None, 30):
        with pytest.warns(FutureWarning, match="validation_fraction"):
            model = KernelWARCA(
                kernel="rbf",
                gamma=0.5,
                n_landmarks=landmarks,
                n_components=2,
                max_iter=60,
                batch_size=32,
                max_sampling=16,
                validation_every=20,
                random_state=0,
            ).fit(X, y, X_val=Xv, y_val=yv)
        assert len(model.validation_scores_) == 3 and model.best_iter_ is not None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_exact_and_nystroem():
    X, y = rings()
    Xt, yt = rings(seed=1)
    for landmarks in (None, 40):
        model = KernelWARCA(
            kernel="rbf",
            gamma=0.5,
            n_landmarks=landmarks,
            n_components=2,
            max_iter=200,
            batch_size=128,
            random_state=0,
            device="cuda",
        ).fit(X, y)
        assert knn_score(model.transform(X), y, model.transform(Xt), yt) > 0.9
