"""``log_map`` / ``exp_map`` / ``spd_mean`` / ``vec_to_sym`` against pyRiemann and definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.geometry import (
    exp_map,
    log_euclidean_distance,
    log_map,
    riemannian_mean,
    spd_mean,
    sym_to_vec,
    vec_to_sym,
)

pyriemann = pytest.importorskip("pyriemann")
from pyriemann.geometry.mean import gmean  # noqa: E402
from pyriemann.geometry.tangentspace import exp_map as pr_exp_map  # noqa: E402
from pyriemann.geometry.tangentspace import log_map as pr_log_map  # noqa: E402

PAIRS = [("airm", "riemann"), ("log_euclidean", "logeuclid"), ("euclidean", "euclid")]


@pytest.mark.parametrize("ours,theirs", PAIRS)
def test_log_and_exp_maps_match_pyriemann(make_spd, ours, theirs):
    rng = np.random.default_rng(0)
    X, M = make_spd(rng, 7, 5), make_spd(rng, 1, 5)[0]
    T = log_map(torch.as_tensor(X), torch.as_tensor(M), ours).numpy()
    np.testing.assert_allclose(T, pr_log_map(X, M, metric=theirs), atol=1e-10)
    back = exp_map(torch.as_tensor(T), torch.as_tensor(M), theirs).numpy()
    np.testing.assert_allclose(back, pr_exp_map(T, M, metric=theirs), atol=1e-10)
    np.testing.assert_allclose(back, X, atol=1e-10)


@pytest.mark.parametrize("ours,theirs", PAIRS)
def test_spd_mean_matches_pyriemann(make_spd, ours, theirs):
    X = make_spd(np.random.default_rng(1), 9, 4)
    w = np.arange(1.0, 10.0)
    expected = gmean(X, metric=theirs, sample_weight=w)
    np.testing.assert_allclose(spd_mean(X, ours, w).numpy(), expected, atol=1e-9)


def test_mean_is_where_the_tangent_vectors_average_to_zero(make_spd):
    X = torch.as_tensor(make_spd(np.random.default_rng(2), 12, 4))
    for metric in ("airm", "log_euclidean", "euclidean"):
        M = spd_mean(X, metric)
        torch.testing.assert_close(
            log_map(X, M, metric).mean(0), torch.zeros(4, 4, dtype=torch.float64), atol=1e-7, rtol=0
        )
    torch.testing.assert_close(spd_mean(X, "riemann"), riemannian_mean(X))


def test_log_euclidean_map_at_identity_is_the_log(make_spd):
    X = torch.as_tensor(make_spd(np.random.default_rng(3), 3, 4))
    eye = torch.eye(4, dtype=torch.float64)
    T = log_map(X, eye, "logeuclid")
    torch.testing.assert_close(
        torch.linalg.matrix_norm(T), log_euclidean_distance(X, eye.expand_as(X))
    )


def test_vec_to_sym_inverts_sym_to_vec():
    S = torch.randn(3, 2, 6, 6, dtype=torch.float64)
    S = S + S.mT
    torch.testing.assert_close(vec_to_sym(sym_to_vec(S)), S, atol=1e-15, rtol=0)
    assert sym_to_vec(S).shape == (3, 2, 21)
    with pytest.raises(ValueError, match=r"c \(c \+ 1\) / 2"):
        vec_to_sym(torch.zeros(4, 5))


def test_airm_log_map_is_differentiable(make_spd):
    rng = np.random.default_rng(4)
    X = torch.as_tensor(make_spd(rng, 2, 3)).requires_grad_()
    M = torch.as_tensor(make_spd(rng, 1, 3)[0]).requires_grad_()
    torch.autograd.gradcheck(lambda a, b: log_map(a, b, "airm"), (X, M))


def test_bad_input_names_the_problem(make_spd):
    X = torch.as_tensor(make_spd(np.random.default_rng(5), 2, 3))
    with pytest.raises(ValueError, match="reference must be one"):
        log_map(X, X)
    with pytest.raises(ValueError, match="reference is 4 x 4"):
        log_map(X, torch.eye(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="reference is not positive definite"):
        exp_map(X, -torch.eye(3, dtype=torch.float64), "logeuclid")
    with pytest.raises(ValueError, match="metric must be one of"):
        log_map(X, torch.eye(3, dtype=torch.float64), "wasserstein")
    with pytest.raises(ValueError, match="metric must be one of"):
        spd_mean(X, "harmonic")
