"""The selection engine behind every ranking metric: k smallest per row, ties by lower index.

The accelerator path (``torch.topk`` / ``torch.sort``) is exercised on the CPU by switching off
the NumPy path, so that it is tested on machines without a GPU too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.neighbors import _places, auto_chunk_size, smallest_k


def _reference(S: np.ndarray, k: int) -> np.ndarray:
    columns = np.broadcast_to(np.arange(S.shape[1]), S.shape)
    return np.lexsort((columns, S), axis=1)[:, :k]


@pytest.fixture(params=["numpy", "torch"])
def engine(request, monkeypatch):
    if request.param == "torch":
        monkeypatch.setattr(_places, "_on_numpy", lambda t: False)
    return request.param


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("k", [1, 2, 7, 20])
def test_smallest_k_breaks_ties_by_lower_index(rng, engine, dtype, k):
    S = rng.integers(-3, 4, size=(50, 40)).astype(np.float64)
    S[3] = 0.0  # a row of equal values
    S[5, ::2] = np.inf  # excluded entries (20 finite remain)
    T = torch.from_numpy(S).to(dtype)
    kk = min(k, 20)  # row 5 has 20 finite entries
    values, idx = smallest_k(T, kk)
    np.testing.assert_array_equal(idx.numpy(), _reference(S, kk))
    assert torch.equal(values, T.gather(1, idx))
    assert idx.dtype == torch.int64 and values.dtype == dtype


def test_negative_zero_ties_with_zero(engine):
    S = torch.tensor([[0.0, -0.0, 1.0, -0.0, 0.0]])
    values, idx = smallest_k(S, 4)
    assert idx.tolist() == [[0, 1, 3, 4]]
    assert torch.all(values == 0)


def test_float32_sort_key_keeps_extreme_values(engine):
    S = torch.tensor([[3.0e38, -3.0e38, 1e-45, -1e-45, 0.0, 7.5, -7.5]])
    values, idx = smallest_k(S, 7)
    assert idx.tolist() == [[1, 6, 3, 4, 2, 5, 0]]
    assert torch.equal(values, S[:, idx[0]])


def test_auto_chunk_size_respects_the_budget():
    assert auto_chunk_size(10, n_gallery=100, itemsize=4) == 10
    rows = auto_chunk_size(10**6, n_gallery=70_000, itemsize=4, n_selected=7_000)
    assert 100 < rows < 300
    assert auto_chunk_size(10**6, n_gallery=10**9, itemsize=8) == 1
