"""Tests of the Stiefel-manifold tools: projection, retraction, initialisation and optimisers."""

import copy

import numpy as np
import pytest
import torch

from rankmetric.models.stiefel import (
    StiefelAdam,
    StiefelSGD,
    orthonormality_error,
    qr_retraction,
    random_stiefel,
    stiefel_tangent_projection,
    sym,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_random_stiefel_is_orthonormal_and_seeded():
    W = random_stiefel(12, 5, generator=_gen(1))
    assert W.shape == (12, 5) and W.dtype == torch.float32
    assert orthonormality_error(W) < 1e-6
    assert torch.equal(W, random_stiefel(12, 5, generator=_gen(1)))
    assert not torch.equal(W, random_stiefel(12, 5, generator=_gen(2)))


@pytest.mark.parametrize("shape", [(3, 4), (0, 0), (4, 0)])
def test_random_stiefel_rejects_wide_or_empty(shape):
    with pytest.raises(ValueError, match="n >= p >= 1"):
        random_stiefel(*shape)


def test_tangent_projection_is_tangent_and_idempotent():
    W = random_stiefel(7, 3, generator=_gen(), dtype=torch.float64)
    G = torch.randn(7, 3, generator=_gen(5), dtype=torch.float64)
    xi = stiefel_tangent_projection(W, G)
    # Tangent space at W: Wᵀξ is skew-symmetric.
    assert torch.allclose(sym(W.T @ xi), torch.zeros(3, 3, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(stiefel_tangent_projection(W, xi), xi, atol=1e-12)
    # It is the orthogonal projection: G − ξ is orthogonal to every tangent vector.
    other = stiefel_tangent_projection(W, torch.randn(7, 3, generator=_gen(6), dtype=torch.float64))
    assert abs(float(((G - xi) * other).sum())) < 1e-10


def test_qr_retraction_fixes_signs_and_keeps_points():
    W = random_stiefel(6, 4, generator=_gen(), dtype=torch.float64)
    assert torch.allclose(qr_retraction(W), W, atol=1e-12)  # a point retracts to itself
    A = torch.randn(6, 4, generator=_gen(3), dtype=torch.float64)
    Q = qr_retraction(A)
    R = Q.T @ A
    assert torch.allclose(torch.triu(R), R, atol=1e-10)
    assert bool((torch.diagonal(R) > 0).all())
    assert orthonormality_error(Q) < 1e-12


def _brockett_problem(n=8, p=3):
    """min −tr(Wᵀ A W) over St(n, p): the optimum is the span of A's top-p eigenvectors."""
    g = _gen(11)
    M = torch.randn(n, n, generator=g, dtype=torch.float64)
    A = (M @ M.T).float()
    top = torch.linalg.eigvalsh(A.double())[-p:].sum()
    return A, float(top)


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda groups: StiefelSGD(groups, lr=0.01, momentum=0.9),
        lambda groups: StiefelAdam(groups, lr=0.05),
    ],
    ids=["sgd-momentum", "adam"],
)
def test_optimisers_stay_orthonormal_and_solve_brockett(make_opt):
    A, optimum = _brockett_problem()
    W = torch.nn.Parameter(random_stiefel(8, 3, generator=_gen(4)))
    bias = torch.nn.Parameter(torch.ones(3))
    opt = make_opt([{"params": [W], "stiefel": True}, {"params": [bias]}])
    for _ in range(300):
        opt.zero_grad()
        loss = -torch.trace(W.T @ A @ W) / A.norm() + (bias**2).sum()
        loss.backward()
        opt.step()
        assert orthonormality_error(W) < 1e-6
    value = float(torch.trace(W.T.double() @ A.double() @ W.double()).detach())
    assert value > 0.99 * optimum
    assert float(bias.detach().abs().max()) < 0.1  # the Euclidean group is optimised too


def test_euclidean_groups_match_torch_optimisers():
    torch.manual_seed(0)
    for ours, theirs, kwargs in [
        (StiefelSGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.01}),
        (StiefelAdam, torch.optim.Adam, {"lr": 0.1, "weight_decay": 0.01}),
    ]:
        a = torch.nn.Parameter(torch.randn(4, 3))
        b = torch.nn.Parameter(a.detach().clone())
        opt_a, opt_b = ours([a], **kwargs), theirs([b], **kwargs)
        for _ in range(5):
            for p, opt in ((a, opt_a), (b, opt_b)):
                opt.zero_grad()
                ((p**3).sum() + p.sum()).backward()
                opt.step()
        assert torch.allclose(a, b, atol=1e-6)


def test_stiefel_step_is_a_descent_step_along_the_riemannian_gradient():
    A, _ = _brockett_problem()
    W0 = random_stiefel(8, 3, generator=_gen(4), dtype=torch.float64)
    W = torch.nn.Parameter(W0.clone())
    opt = StiefelSGD([{"params": [W], "stiefel": True}], lr=1e-3)
    loss = -torch.trace(W.T @ A.double() @ W)
    loss.backward()
    xi = stiefel_tangent_projection(W0, W.grad)
    opt.step()
    assert torch.allclose(W.detach(), qr_retraction(W0 - 1e-3 * xi), atol=1e-12)
    assert float(-torch.trace(W.T @ A.double() @ W).detach()) < float(loss.detach())


def test_state_dict_round_trip_continues_identically():
    A, _ = _brockett_problem()

    def run(opt, W, n):
        for _ in range(n):
            opt.zero_grad()
            (-torch.trace(W.T @ A @ W) / A.norm()).backward()
            opt.step()

    W1 = torch.nn.Parameter(random_stiefel(8, 3, generator=_gen(4)))
    opt1 = StiefelAdam([{"params": [W1], "stiefel": True}], lr=0.05)
    run(opt1, W1, 3)
    W2 = torch.nn.Parameter(W1.detach().clone())
    opt2 = StiefelAdam([{"params": [W2], "stiefel": True}], lr=0.05)
    opt2.load_state_dict(copy.deepcopy(opt1.state_dict()))  # as a checkpoint would
    run(opt1, W1, 3)
    run(opt2, W2, 3)
    assert torch.equal(W1, W2)


@pytest.mark.parametrize(
    "factory, kwargs, message",
    [
        (StiefelSGD, {"lr": 0.0}, "lr"),
        (StiefelSGD, {"momentum": 1.0}, "momentum"),
        (StiefelAdam, {"betas": (1.0, 0.9)}, "betas"),
        (StiefelAdam, {"eps": 0.0}, "eps"),
    ],
)
def test_bad_hyper_parameters_raise(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory([torch.nn.Parameter(torch.zeros(2))], **kwargs)


@pytest.mark.parametrize("factory", [StiefelSGD, StiefelAdam])
def test_wide_stiefel_parameter_is_refused(factory):
    wide = torch.nn.Parameter(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="tall matrix"):
        factory([{"params": [wide], "stiefel": True}])


def test_float64_parameters_stay_float64():
    W = torch.nn.Parameter(random_stiefel(5, 2, generator=_gen(), dtype=torch.float64))
    opt = StiefelAdam([{"params": [W], "stiefel": True}], lr=0.1)
    (W**2).sum().backward()
    opt.step()
    assert W.dtype == torch.float64
    assert orthonormality_error(W) < 1e-12
    assert np.isfinite(W.detach().numpy()).all()
