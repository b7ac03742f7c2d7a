"""SphereTanhEmbedding against the paper's formula, written out the slow way."""

import numpy as np
import pytest
import torch

from rankmetric.models.sphere import SphereTanhEmbedding, sphere_similarity


def _brute_force_embedding(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """h_m = 2 / (1 + exp(w_mᵀ [x; 1])) − 1, then H = H̃ / ||H̃||, one sample and unit at a time."""
    out = np.zeros((x.shape[0], W.shape[1]))
    for i in range(x.shape[0]):
        phi = np.append(x[i], 1.0)
        for m in range(W.shape[1]):
            out[i, m] = 2.0 / (1.0 + np.exp(W[:, m] @ phi)) - 1.0
        out[i] /= np.linalg.norm(out[i])
    return out


def _module(n_features, n_components, seed=0, dtype=torch.float64):
    module = SphereTanhEmbedding(n_features, n_components)
    module.reset_parameters(torch.Generator().manual_seed(seed))
    return module.to(dtype)


def test_forward_matches_paper_formula(rng):
    x = rng.normal(size=(7, 4))
    module = _module(4, 6)
    expected = _brute_force_embedding(x, module.weight.detach().numpy())
    got = module(torch.as_tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_rows_have_unit_norm_float32(rng):
    module = SphereTanhEmbedding(5, 9)
    out = module(torch.as_tensor(rng.normal(size=(50, 5)), dtype=torch.float32))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.norm(dim=1).detach().numpy(), 1.0, rtol=1e-6)


def test_stable_for_huge_preactivations():
    module = _module(2, 3)
    with torch.no_grad():
        module.weight.fill_(1e4)
    x = torch.tensor([[1e3, -1e3], [1e3, 1e3]], dtype=torch.float64)
    out = module(x)
    assert torch.isfinite(out).all()
    np.testing.assert_allclose(out.norm(dim=1).detach().numpy(), 1.0)


def test_zero_column_contributes_exactly_zero(rng):
    x = torch.as_tensor(rng.normal(size=(10, 3)))
    module = _module(3, 5)
    with torch.no_grad():
        module.weight[:, [1, 3]] = 0.0
    out = module(x)
    assert torch.all(out[:, [1, 3]] == 0)
    assert module.active_components().tolist() == [True, False, True, False, True]
    # dropping the dead units changes neither the embedding nor the similarities
    reduced = SphereTanhEmbedding(3, 3).to(torch.float64)
    with torch.no_grad():
        reduced.weight.copy_(module.weight[:, [0, 2, 4]])
    torch.testing.assert_close(reduced(x), out[:, [0, 2, 4]])


def test_all_units_dead_gives_zero_not_nan(rng):
    module = _module(3, 4)
    with torch.no_grad():
        module.weight.zero_()
    x = torch.as_tensor(rng.normal(size=(5, 3)))
    out = module(x)
    assert torch.all(out == 0)
    out.sum().backward()
    assert torch.isfinite(module.weight.grad).all()


def test_gradcheck_float64(rng):
    module = _module(3, 4)
    x = torch.tensor(rng.normal(size=(6, 3)), dtype=torch.float64, requires_grad=True)
    weight = module.weight.detach().clone().requires_grad_(True)

    def embed(x, weight):
        return torch.func.functional_call(module, {"weight": weight}, (x,))

    assert torch.autograd.gradcheck(embed, (x, weight))


def test_without_bias_has_no_bias_row(rng):
    module = SphereTanhEmbedding(3, 4, bias=False).to(torch.float64)
    assert module.weight.shape == (3, 4)
    x = rng.normal(size=(5, 3))
    expected = -np.tanh(0.5 * x @ module.weight.detach().numpy())
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(module(torch.as_tensor(x)).detach().numpy(), expected)


def test_sphere_similarity_is_rowwise_dot(rng):
    a, b = torch.as_tensor(rng.normal(size=(4, 3))), torch.as_tensor(rng.normal(size=(4, 3)))
    torch.testing.assert_close(sphere_similarity(a, b), torch.einsum("ij,ij->i", a, b))
    with pytest.raises(ValueError, match="same shape"):
        sphere_similarity(a, b[:3])


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="positive"):
        SphereTanhEmbedding(0, 3)
    with pytest.raises(ValueError, match="expected input"):
        SphereTanhEmbedding(3, 2)(torch.zeros(4, 5))
