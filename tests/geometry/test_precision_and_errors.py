"""float32 AIRM distances and means on ill-conditioned SPD input agree with pyRiemann; geometry
functions raise ValueError on batch shapes that do not broadcast and on a bad ``t`` or metric
(issue #15, findings 11 and 14)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from rankmetric.geometry import (
    airm_distance,
    geodesic,
    log_euclidean_distance,
    pairwise_airm,
    riemannian_mean,
)

pyriemann = pytest.importorskip("pyriemann")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:  # pyRiemann >= 0.9 moved it; the old path warns
        from pyriemann.geometry.distance import distance_riemann
    except ImportError:
        from pyriemann.utils.distance import distance_riemann
    try:  # pyRiemann >= 0.9 moved it; the old path warns
        from pyriemann.geometry.mean import mean_riemann
    except ImportError:
        from pyriemann.utils.mean import mean_riemann


def _spd(rng, c: int, condition: float, n: int) -> np.ndarray:
    """``n`` float32 SPD matrices with eigenvalues log-spaced from 1 to ``condition``."""
    eigenvalues = np.logspace(0, np.log10(condition), c)
    out = []
    for _ in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(c, c)))
        out.append((Q * eigenvalues) @ Q.T)
    return np.asarray(out, dtype=np.float32)


def _reference(A, B) -> np.ndarray:
    return np.array(
        [
            distance_riemann(a.astype(np.float64), b.astype(np.float64))
            for a, b in zip(A, B, strict=True)
        ]
    )


@pytest.mark.parametrize("condition", [1e3, 1e5, 1e6])
def test_float32_airm_distance_matches_pyriemann_on_ill_conditioned_pairs(condition):
    rng = np.random.default_rng(0)
    A, B = _spd(rng, 2, condition, 200), _spd(rng, 2, condition, 200)
    ours = airm_distance(torch.from_numpy(A), torch.from_numpy(B))
    assert ours.dtype == torch.float32
    np.testing.assert_allclose(ours.numpy(), _reference(A, B), rtol=1e-5)


def test_the_two_matrices_of_the_issue_give_pyriemanns_distance():
    rotation = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    A = np.diag([1.0, 1e6]).astype(np.float32)
    B = (rotation @ np.diag([1.0, 1e6]) @ rotation.T).astype(np.float32)
    ours = airm_distance(torch.from_numpy(A), torch.from_numpy(B))
    np.testing.assert_allclose(float(ours), _reference(A[None], B[None])[0], rtol=1e-5)


@pytest.mark.parametrize("condition", [1e5, 1e6])
def test_float32_pairwise_airm_matches_pyriemann(condition):
    rng = np.random.default_rng(1)
    A, B = _spd(rng, 3, condition, 12), _spd(rng, 3, condition, 9)
    ours = pairwise_airm(torch.from_numpy(A), torch.from_numpy(B)).numpy()
    reference = np.array(
        [[distance_riemann(a.astype(np.float64), b.astype(np.float64)) for b in B] for a in A]
    )
    np.testing.assert_allclose(ours, reference, rtol=1e-5)
    same = pairwise_airm(torch.from_numpy(A)).numpy()
    assert np.isfinite(same).all() and np.all(np.diag(same) == 0)


def test_float32_airm_gradient_matches_float64_on_ill_conditioned_input():
    rng = np.random.default_rng(2)
    A, B = _spd(rng, 3, 1e5, 4), _spd(rng, 3, 1e5, 4)
    grads = {}
    for dtype in (torch.float32, torch.float64):
        a = torch.tensor(A, dtype=dtype, requires_grad=True)
        b = torch.tensor(B, dtype=dtype, requires_grad=True)
        airm_distance(a, b).sum().backward()
        assert a.grad.dtype == dtype and torch.isfinite(a.grad).all()
        grads[dtype] = (a.grad.double(), b.grad.double())
    for g32, g64 in zip(grads[torch.float32], grads[torch.float64], strict=True):
        torch.testing.assert_close(g32, g64, rtol=1e-3, atol=1e-3 * float(g64.abs().max()))


@pytest.mark.parametrize("condition", [1e5, 1e6])
def test_float32_riemannian_mean_converges_and_matches_pyriemann(condition):
    rng = np.random.default_rng(3)
    base = _spd(rng, 4, condition, 1)[0].astype(np.float64)
    w, U = np.linalg.eigh(base)
    half = (U * np.sqrt(w)) @ U.T
    S = rng.normal(size=(30, 4, 4)) * 0.3
    w, U = np.linalg.eigh((S + S.transpose(0, 2, 1)) / 2)
    X = (half @ ((U * np.exp(w)[:, None, :]) @ U.transpose(0, 2, 1)) @ half).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test
        ours = riemannian_mean(torch.from_numpy(X))
    assert ours.dtype == torch.float32
    reference = mean_riemann(X.astype(np.float64))
    assert np.linalg.norm(ours.numpy() - reference) / np.linalg.norm(reference) < 1e-5


def _stack(n, c=3, dtype=torch.float64):
    return torch.eye(c, dtype=dtype).expand(n, c, c) * 2.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: airm_distance(_stack(2), _stack(4)),
        lambda: log_euclidean_distance(_stack(2), _stack(4)),
        lambda: geodesic(_stack(2), _stack(4), 0.5),
        lambda: geodesic(_stack(2), _stack(4), 0.5, metric="log_euclidean"),
    ],
    ids=["airm_distance", "log_euclidean_distance", "geodesic airm", "geodesic log_euclidean"],
)
def test_batch_shapes_that_do_not_broadcast_raise_value_error(call):
    with pytest.raises(ValueError, match="do not broadcast"):
        call()


@pytest.mark.parametrize(
    "t, metric, message",
    [
        ("abc", "airm", "t must be a number"),
        (None, "airm", "t must be a number"),
        (torch.ones(3), "airm", "does not broadcast"),
        (float("nan"), "airm", "t must be finite"),
        (0.5, "abc", "metric must be one of"),
        (0.5, None, "metric must be one of"),
    ],
)
def test_geodesic_names_a_bad_position_or_metric(t, metric, message):
    with pytest.raises(ValueError, match=message):
        geodesic(_stack(2), _stack(2), t, metric)


def test_float32_refines_only_the_pairs_it_cannot_resolve(make_spd, spd_with_spectrum):
    """A mixed float32 batch: the ill-conditioned pair is recomputed in float64, the others keep
    their float32 values, and an error still names the original index."""
    rng = np.random.default_rng(7)
    A = torch.as_tensor(make_spd(rng, 5, 4)).float()
    B = torch.as_tensor(make_spd(rng, 5, 4)).float()
    B[3] = spd_with_spectrum(rng, [1.0, 1e-2, 1e2, 1e5]).float()  # whitened condition > 1e3
    mixed = airm_distance(A, B)
    alone = airm_distance(A[[0, 1, 2, 4]], B[[0, 1, 2, 4]])
    torch.testing.assert_close(mixed[[0, 1, 2, 4]], alone, rtol=0, atol=0)
    exact = airm_distance(A[3].double(), B[3].double())
    torch.testing.assert_close(mixed[3].double(), exact, rtol=1e-6, atol=0)
    pairwise = pairwise_airm(A, B)
    torch.testing.assert_close(pairwise[3, 3].double(), exact, rtol=1e-6, atol=0)
    B[2] = -B[2]
    with pytest.raises(ValueError, match=r"B\[2\] is not positive definite"):
        airm_distance(A, B)
