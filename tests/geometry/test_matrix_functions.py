"""Matrix functions: values against pyRiemann, Daleckii–Krein gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from pyriemann.geometry.base import expm, invsqrtm, logm, powm, sqrtm
from torch.autograd import gradcheck

from rankmetric.geometry.eigen import eigh, eigvalsh
from rankmetric.geometry.matrix_functions import (
    divided_differences,
    spd_clamp,
    spd_exp,
    spd_inv_sqrt,
    spd_log,
    spd_power,
    spd_sqrt,
    sym_function,
    symmetrize,
)

#: Derivative of each scalar function, to size the Jacobian of ill-conditioned inputs.
DERIVATIVES = {
    "log": lambda lam: 1 / lam,
    "sqrt": lambda lam: 0.5 / np.sqrt(lam),
    "inv_sqrt": lambda lam: 0.5 * lam**-1.5,
    "power_0.37": lambda lam: 0.37 * lam**-0.63,
    "power_-1.5": lambda lam: 1.5 * lam**-2.5,
}
SPD_FUNCTIONS = {
    "log": (spd_log, logm),
    "sqrt": (spd_sqrt, sqrtm),
    "inv_sqrt": (spd_inv_sqrt, invsqrtm),
    "power_0.37": (lambda X: spd_power(X, 0.37), lambda X: powm(X, 0.37)),
    "power_-1.5": (lambda X: spd_power(X, -1.5), lambda X: powm(X, -1.5)),
}
ALL_FUNCTIONS = {
    **{name: ours for name, (ours, _) in SPD_FUNCTIONS.items()},
    "exp": spd_exp,
    "clamp": lambda X: spd_clamp(X, eps=0.8),
}


@pytest.mark.parametrize("name", SPD_FUNCTIONS)
def test_matches_pyriemann_float64(name, rng, make_spd):
    ours, theirs = SPD_FUNCTIONS[name]
    X = make_spd(rng, 6, 5)
    assert_allclose(ours(torch.from_numpy(X)).numpy(), theirs(X), rtol=1e-8, atol=1e-10)


def test_exp_matches_pyriemann_on_symmetric_input(rng):
    S = symmetrize(torch.from_numpy(rng.standard_normal((4, 5, 5))))
    assert_allclose(spd_exp(S).numpy(), expm(S.numpy()), rtol=1e-8, atol=1e-10)


def test_exp_inverts_log(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 3, 4))
    assert_allclose(spd_exp(spd_log(X)).numpy(), X.numpy(), rtol=1e-10, atol=1e-12)


def test_sym_function_matches_closed_form(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 3, 4))
    squared = sym_function(X, lambda lam: lam**2, lambda lam: 2 * lam)
    assert_allclose(squared.numpy(), (X @ X).numpy(), rtol=1e-10)


def test_clamp_floors_eigenvalues(rng, spd_with_spectrum):
    X = spd_with_spectrum(rng, [1e-6, 0.5, 2.0, 3.0])
    expected = np.linalg.eigvalsh(X.numpy()).clip(min=1.0)
    assert_allclose(np.linalg.eigvalsh(spd_clamp(X, eps=1.0).numpy()), expected, rtol=1e-10)


def test_keeps_dtype_and_leading_dimensions(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 6, 3)).reshape(2, 3, 3, 3)
    assert spd_log(X.float()).dtype == torch.float32
    out = spd_sqrt(X)
    assert out.shape == (2, 3, 3, 3) and out.dtype == torch.float64
    assert spd_sqrt(X[0, 0]).shape == (3, 3)


def test_accepts_numpy_input(rng, make_spd):
    X = make_spd(rng, 2, 3)
    assert_allclose(spd_log(X).numpy(), logm(X), rtol=1e-8)


def test_float32_ill_conditioned_log_is_finite_and_accurate(rng, spd_with_spectrum):
    X64 = spd_with_spectrum(rng, np.logspace(-8, 0, 6))
    log32 = spd_log(X64.float())
    reference = spd_log(X64.float().double())  # the same float32 matrix, decomposed in float64
    assert torch.isfinite(log32).all()
    assert_allclose(log32.double().numpy(), reference.numpy(), rtol=0, atol=1e-5 * 18.5)


def test_divided_differences_brute_force():
    values = [0.5, 0.5, 2.0, 2.0 + 1e-12, 3.0]
    lam = torch.tensor(values, dtype=torch.float64)
    L = divided_differences(lam, torch.log(lam), torch.reciprocal)
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            expected = (np.log(a) - np.log(b)) / (a - b) if abs(a - b) > 1e-9 else 1 / a
            assert L[i, j].item() == pytest.approx(expected, rel=1e-9)
    assert torch.equal(L, L.mT)


def _gradcheck(fn, X: torch.Tensor, **tolerances) -> bool:
    return gradcheck(fn, (X.clone().requires_grad_(),), **tolerances)


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
def test_gradcheck_at_identity(name):
    assert _gradcheck(ALL_FUNCTIONS[name], torch.eye(4, dtype=torch.float64))


def test_plain_autograd_of_eigh_is_nan_at_identity_ours_is_not():
    X = torch.eye(3, dtype=torch.float64, requires_grad=True)
    eigenvalues, U = torch.linalg.eigh(X)
    ((U * eigenvalues.log().unsqueeze(-2)) @ U.mT).sum().backward()
    assert torch.isnan(X.grad).all()
    X.grad = None
    spd_log(X).sum().backward()
    assert_allclose(X.grad.numpy(), np.ones((3, 3)))  # d/dX sum(log X) at I is the all-ones matrix


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
def test_gradcheck_repeated_eigenvalues(name, rng, spd_with_spectrum):
    X = spd_with_spectrum(rng, [0.6, 1.3, 1.3, 1.3, 2.5])
    assert _gradcheck(ALL_FUNCTIONS[name], X)


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
def test_gradcheck_batched_distinct_eigenvalues(name, rng, make_spd):
    assert _gradcheck(ALL_FUNCTIONS[name], torch.from_numpy(make_spd(rng, 2, 3, spread=0.5)))


@pytest.mark.parametrize("name", SPD_FUNCTIONS)
@pytest.mark.parametrize("spectrum", ["small", "wide"])
def test_gradcheck_condition_number_1e8(name, spectrum, rng, spd_with_spectrum):
    # cond = 1e8, with a tied pair among the small eigenvalues. Jacobian entries reach 1/λ_min, so
    # the finite-difference step and the absolute tolerance are scaled to the matrix and to that
    # size: both sides then agree to ~1e-5 of the Jacobian's scale (a NaN or an O(1) error fails).
    exponents = [-8, -8, -6, -3, 0] if spectrum == "small" else [-4, -4, -1, 2, 4]
    eigenvalues = 10.0 ** np.array(exponents, dtype=np.float64)
    X = spd_with_spectrum(rng, eigenvalues)
    jacobian_scale = DERIVATIVES[name](eigenvalues).max()
    assert _gradcheck(
        SPD_FUNCTIONS[name][0],
        X,
        eps=1e-10 * eigenvalues.max(),
        atol=1e-4 * jacobian_scale,
        rtol=1e-4,
    )


def test_gradient_matches_plain_autograd_on_distinct_eigenvalues(rng, make_spd):
    X = torch.from_numpy(make_spd(rng, 1, 4)[0]).requires_grad_()
    weights = torch.from_numpy(rng.standard_normal((4, 4)))
    (spd_log(X) * weights).sum().backward()
    ours = X.grad.clone()
    X.grad = None
    eigenvalues, U = torch.linalg.eigh(symmetrize(X))
    (((U * eigenvalues.log().unsqueeze(-2)) @ U.mT) * weights).sum().backward()
    assert_allclose(ours.numpy(), X.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_allclose(ours.numpy(), ours.numpy().T, atol=1e-14)


def test_clamp_gradient_is_zero_below_floor(rng, spd_with_spectrum):
    X = spd_with_spectrum(rng, [0.1, 0.2, 0.3]).requires_grad_()
    spd_clamp(X, eps=1.0).sum().backward()  # output is the constant I
    assert_allclose(X.grad.numpy(), 0.0, atol=1e-14)


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (torch.ones(3), r"shape \(\.\.\., c, c\)"),
        (torch.ones(2, 3, 4), r"shape \(\.\.\., c, c\)"),
        (torch.ones(0, 3, 3), "empty"),
        (torch.tensor([[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
        (torch.tensor([[1.0, float("nan")], [float("nan"), 1.0]]), "NaN"),
        (torch.tensor([[1.0, 0.0], [0.0, -1.0]]), "not positive definite"),
    ],
)
def test_bad_input_raises(X, match):
    with pytest.raises(ValueError, match=match):
        spd_log(X)


def test_exp_and_clamp_accept_indefinite_symmetric_input():
    X = torch.diag(torch.tensor([-1.0, 2.0]))
    assert torch.isfinite(spd_exp(X)).all()
    assert_allclose(torch.linalg.eigvalsh(spd_clamp(X)).numpy(), [1e-4, 2.0], rtol=1e-6)


@pytest.mark.parametrize("eps", [0, -1.0, float("nan")])
def test_clamp_rejects_bad_floor(eps):
    with pytest.raises(ValueError, match="eps"):
        spd_clamp(torch.eye(2), eps=eps)


@pytest.mark.parametrize("p", [float("nan"), float("inf"), "a"])
def test_power_rejects_bad_exponent(p):
    with pytest.raises(ValueError, match="p must"):
        spd_power(torch.eye(2), p)


def _decompositions(S: torch.Tensor):
    eigenvalues, eigenvectors = eigh(S)
    return eigenvalues, eigenvectors.abs(), eigvalsh(S)  # abs: eigenvector signs are arbitrary


def test_threaded_decomposition_matches_one_thread(rng, make_spd, two_threads):
    S = torch.from_numpy(make_spd(rng, 240, 12)).reshape(2, 120, 12, 12)
    threaded = _decompositions(S)
    torch.set_num_threads(1)
    for ours, reference in zip(threaded, _decompositions(S), strict=True):
        assert torch.equal(ours, reference)
    assert threaded[0].shape == (2, 120, 12) and threaded[1].shape == (2, 120, 12, 12)


def test_float32_refinement_keeps_well_conditioned_matrices(rng, spd_with_spectrum):
    wide = spd_with_spectrum(rng, np.logspace(-6, 0, 4)).float()  # refined: 1e-6 < 1.2e-5
    narrow = spd_with_spectrum(rng, [1.0, 2.0, 3.0, 4.0]).float()
    eigenvalues = eigvalsh(torch.stack([wide, narrow]))
    # float32 LAPACK alone is off by ~1e-3 (relative) on the smallest eigenvalue of this matrix
    reference = torch.linalg.eigvalsh(wide.double()).float()
    assert_allclose(eigenvalues[0].numpy(), reference.numpy(), rtol=1e-6)
    assert torch.equal(eigenvalues[1], torch.linalg.eigvalsh(narrow))
