"""Inference through NumPy's BLAS (``geometry._host_blas``): same numbers as the torch path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from pyriemann.geometry.distance import pairwise_distance
from pyriemann.geometry.mean import mean_riemann
from threadpoolctl import threadpool_info

import rankmetric.geometry.distances as distances
from rankmetric.geometry import log_map, pairwise_airm, riemannian_mean, spd_log
from rankmetric.geometry._host_blas import blas_threads, use_host_blas

SIZES = [8, 12]  # from MIN_HOST_SIZE on, the inference path goes through NumPy


def _with_grad(fn, *tensors):
    """``fn`` on copies of ``tensors`` that require gradients: the torch path."""
    return fn(*(t.clone().requires_grad_() for t in tensors)).detach()


def test_use_host_blas_only_for_untracked_cpu_floats_of_size_8_and_more():
    X = torch.eye(8, dtype=torch.float64).expand(3, 8, 8)
    assert use_host_blas(X)
    assert use_host_blas(X.float())
    assert not use_host_blas(X[..., :4, :4])  # below MIN_HOST_SIZE
    assert not use_host_blas(X.half())
    tracked = X.clone().requires_grad_()
    assert not use_host_blas(tracked)
    with torch.no_grad():
        assert use_host_blas(tracked)


@pytest.mark.parametrize("c", SIZES)
def test_pairwise_airm_inference_matches_pyriemann_and_the_autograd_path(c, rng, make_spd):
    A, B = torch.from_numpy(make_spd(rng, 11, c)), torch.from_numpy(make_spd(rng, 6, c, 2.0))
    one_set, two_sets = pairwise_airm(A), pairwise_airm(A, B)
    assert_allclose(one_set.numpy(), pairwise_distance(A.numpy()), rtol=1e-10, atol=1e-12)
    assert_allclose(two_sets.numpy(), pairwise_distance(A.numpy(), B.numpy()), rtol=1e-10)
    assert_allclose(one_set.numpy(), _with_grad(pairwise_airm, A).numpy(), rtol=1e-12, atol=1e-13)
    assert_allclose(two_sets.numpy(), _with_grad(pairwise_airm, A, B).numpy(), rtol=1e-12)
    assert torch.equal(one_set, one_set.T) and not bool(one_set.diagonal().any())


def test_pairwise_airm_blocks_cut_for_the_cache_give_the_same_matrix(rng, make_spd, monkeypatch):
    A, B = torch.from_numpy(make_spd(rng, 13, 8)), torch.from_numpy(make_spd(rng, 9, 8))
    expected_one, expected_two = pairwise_airm(A), pairwise_airm(A, B)
    monkeypatch.setattr(distances, "CACHE_BLOCK_ELEMENTS", 2 * 64)  # blocks of 2 matrices
    assert_allclose(pairwise_airm(A).numpy(), expected_one.numpy(), rtol=1e-13, atol=1e-14)
    assert_allclose(pairwise_airm(A, B).numpy(), expected_two.numpy(), rtol=1e-13)


def test_pairwise_airm_float32_inference_refines_the_pairs_it_cannot_resolve(rng, make_spd):
    A = make_spd(rng, 7, 8)
    A[3] = make_spd(rng, 1, 8, spread=6.0)[0]  # condition number far beyond 1e3
    expected = pairwise_distance(A)
    got = pairwise_airm(torch.from_numpy(A).float())
    assert got.dtype == torch.float32
    assert_allclose(got.numpy(), expected, rtol=2e-4, atol=1e-4)


def test_pairwise_airm_inference_names_the_matrix_that_is_not_spd(rng, make_spd):
    A, B = make_spd(rng, 5, 8), make_spd(rng, 4, 8)
    bad = B.copy()
    bad[2] -= 2 * np.linalg.eigvalsh(bad[2])[-1] * np.eye(8)  # negative definite
    with pytest.raises(ValueError, match=r"B\[\d+\] is not positive definite"):
        pairwise_airm(A, bad)
    with pytest.raises(ValueError, match=r"A\[2\] is not positive definite"):
        pairwise_airm(bad, A)


@pytest.mark.parametrize("c", SIZES)
def test_matrix_functions_maps_and_means_agree_with_the_autograd_path(c, rng, make_spd):
    X, M = torch.from_numpy(make_spd(rng, 9, c)), torch.from_numpy(make_spd(rng, 1, c)[0])
    assert_allclose(spd_log(X).numpy(), _with_grad(spd_log, X).numpy(), rtol=1e-12, atol=1e-13)
    logs = log_map(X, M)
    assert_allclose(logs.numpy(), _with_grad(log_map, X, M).numpy(), rtol=1e-12, atol=1e-13)
    mean = riemannian_mean(X)
    assert_allclose(mean.numpy(), mean_riemann(X.numpy(), tol=1e-8), rtol=1e-8, atol=1e-10)


def test_blas_threads_runs_numpy_blas_on_one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with blas_threads():
            counts = {  # NumPy's BLAS (other libraries, e.g. faiss's, may load later)
                i["num_threads"]
                for i in threadpool_info()
                if i["user_api"] == "blas" and "numpy" in i["filepath"]
            }
    finally:
        torch.set_num_threads(before)
    assert counts == {1}
