"""Kernels against scikit-learn's pairwise kernels; chunking, validation, Nyström."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import (
    chi2_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

from rankmetric.kernels import (
    NystroemMap,
    check_kernel,
    chi2_distances,
    default_gamma,
    pairwise_kernel,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(23, 5)), rng.normal(size=(11, 5))


@pytest.fixture
def histograms():
    rng = np.random.default_rng(1)
    X = rng.random((19, 6))
    X[:, 0] = 0.0  # a bin empty in every histogram: 0/0 terms must count as 0
    return X, rng.random((7, 6))


@pytest.mark.parametrize(
    ("kernel", "kwargs", "reference"),
    [
        ("linear", {}, lambda X, Y: linear_kernel(X, Y)),
        ("rbf", {"gamma": 0.3}, lambda X, Y: rbf_kernel(X, Y, gamma=0.3)),
        (
            "poly",
            {"gamma": 0.5, "degree": 2, "coef0": 0.7},
            lambda X, Y: polynomial_kernel(X, Y, degree=2, gamma=0.5, coef0=0.7),
        ),
    ],
)
def test_signed_kernels_match_sklearn(data, kernel, kwargs, reference):
    X, Y = data
    K = pairwise_kernel(X, Y, kernel, **kwargs)
    assert K.dtype == torch.float32 and K.shape == (23, 11)
    np.testing.assert_allclose(K.numpy(), reference(X, Y), rtol=1e-4, atol=1e-5)


def test_chi2_rbf_matches_sklearn_in_any_chunking(histograms):
    X, Y = histograms
    expected = chi2_kernel(X, Y, gamma=0.8)
    for chunk in (6, 50, 1 << 20):  # one row at a time, a few rows, everything
        K = pairwise_kernel(X, Y, "chi2_rbf", gamma=0.8, chunk_elements=chunk)
        np.testing.assert_allclose(K.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_chi2_distances_brute_force(histograms):
    X, _ = histograms
    got = chi2_distances(torch.as_tensor(X), torch.as_tensor(X)).numpy()
    for i in range(3):
        for j in range(3):
            num, den = (X[i] - X[j]) ** 2, X[i] + X[j]
            expected = np.sum(np.divide(num, den, out=np.zeros_like(num), where=den > 0))
            assert got[i, j] == pytest.approx(expected)


def test_chi2_rejects_negative_features(histograms):
    X, _ = histograms
    with pytest.raises(ValueError, match="non-negative"):
        pairwise_kernel(X - 0.5, kernel="chi2_rbf", gamma=1.0)


def test_float64_and_symmetric_default(data):
    X, _ = data
    K = pairwise_kernel(X, kernel="rbf", gamma=0.1, dtype=torch.float64)
    assert K.dtype == torch.float64
    torch.testing.assert_close(K, K.T)
    torch.testing.assert_close(torch.diagonal(K), torch.ones(23, dtype=torch.float64))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("sigmoid",), "kernel"),
        (("rbf", -1.0), "gamma"),
        (("poly", None, 0), "degree"),
        (("poly", None, 2, float("nan")), "coef0"),
    ],
)
def test_check_kernel_names_the_problem(args, match):
    with pytest.raises(ValueError, match=match):
        check_kernel(*args)


def test_pairwise_kernel_rejects_mismatch_and_precomputed(data):
    X, Y = data
    with pytest.raises(ValueError, match="features"):
        pairwise_kernel(X, Y[:, :3], "linear")
    with pytest.raises(ValueError, match="precomputed"):
        pairwise_kernel(X, kernel="precomputed")


def test_default_gamma(data, histograms):
    X, _ = data
    assert default_gamma(X, "rbf") == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-5)
    assert default_gamma(X, "poly") == pytest.approx(1.0 / X.shape[1])
    H, _ = histograms
    gamma = default_gamma(H, "chi2_rbf", np.random.default_rng(0), n_pairs=20000)
    mean_chi2 = chi2_distances(torch.as_tensor(H), torch.as_tensor(H)).mean().item()
    assert gamma == pytest.approx(1.0 / mean_chi2, rel=0.05)


def test_nystroem_with_every_point_as_landmark_is_exact(data):
    X, Y = data
    X_t = torch.as_tensor(X, dtype=torch.float64)
    feature_map = NystroemMap.fit(X_t, "rbf", gamma=0.2)
    Phi = feature_map.transform(X_t)
    torch.testing.assert_close(
        Phi @ Phi.T, pairwise_kernel(X_t, kernel="rbf", gamma=0.2, dtype=torch.float64)
    )
    Phi_y = feature_map.transform(torch.as_tensor(Y, dtype=torch.float64))
    np.testing.assert_allclose((Phi_y @ Phi.T).numpy(), rbf_kernel(Y, X, gamma=0.2), atol=1e-6)


def test_nystroem_approximation_improves_with_landmarks():
    rng = np.random.default_rng(2)
    X = torch.as_tensor(rng.normal(size=(300, 3)))
    K = pairwise_kernel(X, kernel="rbf", gamma=0.5, dtype=torch.float64)
    errors = []
    for m in (10, 40, 160):
        landmarks = X[torch.as_tensor(rng.choice(300, m, replace=False))]
        Phi = NystroemMap.fit(landmarks, "rbf", 0.5).transform(X)
        errors.append(torch.linalg.matrix_norm(Phi @ Phi.T - K).item())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05 * torch.linalg.matrix_norm(K).item()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_kernels_on_cuda_match_cpu(histograms):
    X, Y = histograms
    for kernel in ("rbf", "chi2_rbf", "poly"):
        cpu = pairwise_kernel(X, Y, kernel, gamma=0.5)
        gpu = pairwise_kernel(X, Y, kernel, gamma=0.5, device="cuda")
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-4, atol=1e-5)
