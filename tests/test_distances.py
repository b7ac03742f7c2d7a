"""The one squared-Euclidean kernel (rankmetric._distances) against the definition."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric._distances import (
    paired_squared_euclidean,
    partial_squared_euclidean,
    squared_euclidean,
)


def _brute(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cross_distances_match_the_definition(dtype):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(7, 4)), rng.normal(size=(5, 4))
    got = squared_euclidean(torch.tensor(A, dtype=dtype), torch.tensor(B, dtype=dtype))
    assert got.dtype == dtype and got.shape == (7, 5)
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), _brute(A, B), rtol=rtol, atol=rtol)


def test_self_distances_have_an_exact_zero_diagonal_and_are_never_negative():
    rng = np.random.default_rng(1)
    X = torch.tensor(1e3 + rng.normal(size=(50, 8)), dtype=torch.float32)  # far from 0
    D = squared_euclidean(X)
    assert torch.all(torch.diagonal(D) == 0)
    assert torch.all(D >= 0)  # the Gram form's rounding residues are clamped
    dup = torch.cat([X[:3], X[:3]])
    assert torch.all(squared_euclidean(dup, dup) >= 0)


def test_buffers_and_given_norms_give_the_same_values():
    rng = np.random.default_rng(2)
    A = torch.tensor(rng.normal(size=(6, 3)))
    B = torch.tensor(rng.normal(size=(9, 3)))
    out = torch.empty(6, 9, dtype=A.dtype)
    got = squared_euclidean(A, B, X_sq=(A * A).sum(1), Y_sq=(B * B).sum(1), out=out)
    assert got.data_ptr() == out.data_ptr()
    torch.testing.assert_close(got, squared_euclidean(A, B), rtol=0, atol=0)


def test_gradient_in_float64():
    rng = np.random.default_rng(3)
    A = torch.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    B = torch.tensor(rng.normal(size=(5, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(squared_euclidean, (A, B))
    assert torch.autograd.gradcheck(paired_squared_euclidean, (A, B[:4]))


def test_paired_form_broadcasts_and_matches_the_definition():
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(3, 1, 2)), rng.normal(size=(3, 4, 2))
    got = paired_squared_euclidean(torch.tensor(A), torch.tensor(B))
    np.testing.assert_allclose(got.numpy(), ((A - B) ** 2).sum(-1), rtol=1e-12)


def test_paired_form_takes_numpy_arrays_too():
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    got = paired_squared_euclidean(A, B)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, np.einsum("pd,pd->p", A - B, A - B), rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_partial_form_is_the_distance_without_the_query_norm(dtype):
    rng = np.random.default_rng(6)
    A, B = rng.normal(size=(7, 4)), rng.normal(size=(5, 4))
    got = partial_squared_euclidean(torch.tensor(A, dtype=dtype), torch.tensor(B, dtype=dtype))
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    expected = _brute(A, B) - (A * A).sum(1)[:, None]
    np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=rtol)
    batched = partial_squared_euclidean(
        torch.tensor(np.stack([A, 2 * A]), dtype=dtype), torch.tensor(np.stack([B, B]), dtype=dtype)
    )
    np.testing.assert_allclose(batched[0].numpy(), expected, rtol=rtol, atol=rtol)


def test_partial_form_writes_into_a_buffer_with_given_norms():
    """A chunked search's call: the gallery's norms kept, every chunk scored into one buffer."""
    rng = np.random.default_rng(7)
    A, B = torch.tensor(rng.normal(size=(6, 3))), torch.tensor(rng.normal(size=(9, 3)))
    reference = partial_squared_euclidean(A, B)
    buffer = torch.full((8, 9), torch.nan, dtype=A.dtype)
    got = partial_squared_euclidean(A, B, sq_b=(B * B).sum(1), out=buffer[:6])
    assert got.data_ptr() == buffer.data_ptr()
    torch.testing.assert_close(got, reference, rtol=0, atol=0)
    assert torch.isnan(buffer[6:]).all()  # nothing written past the chunk
    batched = partial_squared_euclidean(A[None], B[None], out=torch.empty(1, 6, 9, dtype=A.dtype))
    # a batched product is another BLAS call: equal up to the last bits on some CPUs
    torch.testing.assert_close(batched[0], reference, rtol=1e-13, atol=1e-13)


def test_partial_form_ranks_filtered_items_last():
    A, B = torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, 0.0], [5.0, 0.0]])
    got = partial_squared_euclidean(A, B, sq_b=torch.tensor([torch.inf, 25.0]))
    assert got.tolist() == [[torch.inf, 25.0]]


def test_partial_form_takes_numpy_queries_and_buffers():
    rng = np.random.default_rng(8)
    A = rng.normal(size=(4, 3)).astype(np.float32)
    B = rng.normal(size=(9, 3)).astype(np.float32)
    expected = _brute(A, B) - (A * A).sum(1)[:, None]
    np.testing.assert_allclose(partial_squared_euclidean(A, B), expected, rtol=1e-5, atol=1e-5)
    buffer = np.full(12, np.nan, dtype=np.float32)
    got = partial_squared_euclidean(A[2], B, sq_b=(B * B).sum(1), out=buffer[:9])
    assert got.dtype == np.float32 and np.shares_memory(got, buffer)
    np.testing.assert_allclose(got, expected[2], rtol=1e-5, atol=1e-5)
    assert np.isnan(buffer[9:]).all()
    torch_scores = partial_squared_euclidean(torch.from_numpy(A), torch.from_numpy(B))
    np.testing.assert_allclose(got, torch_scores[2].numpy(), rtol=1e-5, atol=1e-5)
