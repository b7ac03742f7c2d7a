"""The penalties of losses/regularizers.py against brute force, and their old import paths."""

import numpy as np
import pytest
import torch

from rankmetric.losses import regularizers, similarity, warp
from rankmetric.losses.regularizers import (
    aon_penalty,
    group_norm_penalty,
    group_soft_threshold_,
    kernel_aon_penalty,
)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (warp, "aon_penalty"),
        (warp, "kernel_aon_penalty"),
        (similarity, "group_norm_penalty"),
        (similarity, "group_soft_threshold_"),
    ],
)
def test_old_import_paths_give_the_same_functions(module, name):
    assert getattr(module, name) is getattr(regularizers, name)
    assert name in module.__all__


def test_package_exports_every_penalty():
    import rankmetric.losses as losses

    for name in regularizers.__all__:
        assert getattr(losses, name) is getattr(regularizers, name)


def test_group_norm_penalty_gradcheck(rng):
    W = torch.as_tensor(rng.normal(size=(4, 3))).requires_grad_(True)
    assert torch.autograd.gradcheck(group_norm_penalty, (W,))


def test_aon_penalty_value_and_gradcheck():
    W = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    expected = 0.5 * torch.linalg.matrix_norm(W @ W.T - torch.eye(3, dtype=torch.float64)) ** 2
    torch.testing.assert_close(aon_penalty(W), expected)
    assert torch.autograd.gradcheck(aon_penalty, (W,))
    Q = torch.linalg.qr(torch.randn(5, 3, dtype=torch.float64)).Q.T
    assert aon_penalty(Q).item() < 1e-20


def test_kernel_aon_penalty_value_and_exact_gradient():
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(7, 3, generator=gen, dtype=torch.float64)
    K = torch.exp(-(torch.cdist(X, X) ** 2) / 3)
    A = torch.randn(2, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    R = A @ K @ A.T - torch.eye(2, dtype=torch.float64)
    torch.testing.assert_close(kernel_aon_penalty(A, K), 0.5 * (R**2).sum())
    assert torch.autograd.gradcheck(lambda a: kernel_aon_penalty(a, K), (A,))
    with torch.no_grad():
        KA = K @ A.T
    torch.testing.assert_close(kernel_aon_penalty(A, KA=KA), kernel_aon_penalty(A, K))
    with pytest.raises(ValueError, match="K"):
        kernel_aon_penalty(A)


def test_group_norm_penalty_sums_column_norms(rng):
    W = torch.as_tensor(rng.normal(size=(4, 6)))
    expected = sum(np.linalg.norm(W.numpy()[:, m]) for m in range(6))
    assert float(group_norm_penalty(W)) == pytest.approx(expected)


def test_soft_threshold_zeroes_exactly_the_small_columns(rng):
    W = torch.as_tensor(rng.normal(size=(5, 6)))
    norms = W.norm(dim=0).numpy()
    tau = float(np.median(norms))
    before = W.clone()
    active = group_soft_threshold_(W, tau)
    expected_active = norms > tau
    assert active.tolist() == expected_active.tolist()
    assert torch.all(W[:, ~torch.as_tensor(expected_active)] == 0)
    kept = np.flatnonzero(expected_active)
    # surviving columns keep their direction and lose exactly tau in norm
    np.testing.assert_allclose(W.norm(dim=0).numpy()[kept], norms[kept] - tau)
    cos = (W[:, kept] * before[:, kept]).sum(0) / (
        W[:, kept].norm(dim=0) * before[:, kept].norm(dim=0)
    )
    np.testing.assert_allclose(cos.numpy(), 1.0)


def test_soft_threshold_is_the_proximal_operator(rng):
    """prox_{τR}(V) = argmin_W ½||W − V||² + τ Σ||w_m||: no perturbation does better."""
    V = torch.as_tensor(rng.normal(size=(3, 4)))
    tau = 0.8
    W = V.clone()
    group_soft_threshold_(W, tau)

    def prox_objective(Z):
        return 0.5 * ((Z - V) ** 2).sum() + tau * group_norm_penalty(Z)

    best = prox_objective(W)
    for _ in range(200):
        trial = W + 0.05 * torch.as_tensor(rng.normal(size=W.shape))
        assert prox_objective(trial) >= best - 1e-12


def test_soft_threshold_restricted_to_a_block(rng):
    W = torch.as_tensor(rng.normal(size=(4, 5)))
    before = W.clone()
    group_soft_threshold_(W, 1e6, columns=torch.tensor([1, 3]))
    assert torch.all(W[:, [1, 3]] == 0)
    torch.testing.assert_close(W[:, [0, 2, 4]], before[:, [0, 2, 4]])


def test_soft_threshold_leaves_zero_columns_zero_and_rejects_negative():
    W = torch.zeros(3, 2, dtype=torch.float64)
    assert not group_soft_threshold_(W, 0.1).any()
    assert torch.all(W == 0)
    with pytest.raises(ValueError, match="non-negative"):
        group_soft_threshold_(W, -1.0)
