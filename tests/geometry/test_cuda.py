"""The geometry functions run on the device of their input (skipped without CUDA)."""

from __future__ import annotations

import pytest
import torch
from numpy.testing import assert_allclose

from rankmetric.geometry import (
    airm_distance,
    geodesic,
    pairwise_airm,
    pairwise_log_euclidean,
    riemannian_mean,
    spd_clamp,
    spd_log,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

FUNCTIONS = {
    "spd_log": spd_log,
    "spd_clamp": lambda X: spd_clamp(X, eps=0.5),
    "pairwise_airm": pairwise_airm,
    "pairwise_log_euclidean": pairwise_log_euclidean,
    "airm_distance": lambda X: airm_distance(X, X.flip(0)),
    "riemannian_mean": riemannian_mean,
    "geodesic": lambda X: geodesic(X, X.flip(0), 0.3),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_cuda_matches_cpu_values_and_gradients(name, dtype, rng, make_spd):
    X_cpu = torch.from_numpy(make_spd(rng, 6, 5)).to(dtype).requires_grad_()
    X_gpu = X_cpu.detach().cuda().requires_grad_()
    out_cpu, out_gpu = FUNCTIONS[name](X_cpu), FUNCTIONS[name](X_gpu)
    assert out_gpu.device.type == "cuda" and out_gpu.dtype == dtype
    out_cpu.sum().backward()
    out_gpu.sum().backward()
    tol = 1e-4 if dtype == torch.float32 else 1e-9
    assert_allclose(out_gpu.detach().cpu().numpy(), out_cpu.detach().numpy(), rtol=tol, atol=tol)
    assert_allclose(X_gpu.grad.cpu().numpy(), X_cpu.grad.numpy(), rtol=tol, atol=tol)
