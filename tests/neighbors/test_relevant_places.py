"""``relevant_places`` against the definition: a full stable sort of each row, on tied scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.neighbors import _places, relevant_places


def _brute_force(scores: np.ndarray, relevant: np.ndarray) -> list[list[int]]:
    """Places of the relevant entries: a stable sort (ties: the lower column), +inf left out."""
    out = []
    for row, rel in zip(scores, relevant, strict=True):
        order = np.argsort(row, kind="stable")
        order = order[np.isfinite(row[order])]
        out.append([i + 1 for i, c in enumerate(order) if rel[c]])
    return out


def _columns(relevant: np.ndarray):
    """Relevant columns per row, ascending, padded with column 0 (not counted)."""
    width = max(int(relevant.sum(1).max()), 1)
    cols = np.zeros((relevant.shape[0], width), dtype=np.int64)
    counted = np.zeros((relevant.shape[0], width), dtype=bool)
    for i, rel in enumerate(relevant):
        idx = np.flatnonzero(rel)
        cols[i, : idx.size], counted[i, : idx.size] = idx, True
    return torch.as_tensor(cols), torch.as_tensor(counted)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_values", [3, 40, 10_000])  # heavy ties, a few, almost none
@pytest.mark.parametrize("depth", [None, 5])
@pytest.mark.parametrize("block_rows", [None, 7])  # one block of rows; blocks of 7 (4 last)
def test_places_equal_a_stable_sort_of_each_row(dtype, n_values, depth, block_rows):
    rng = np.random.default_rng(n_values)
    n, m = 60, 700
    scores = rng.integers(0, n_values, (n, m)).astype(dtype) / 7
    scores[rng.random((n, m)) < 0.05] = np.inf  # removed from the ranking
    scores[:, 3] = -0.0  # negative zero ties with positive zero
    scores[:, 4] = 0.0
    relevant = (rng.random((n, m)) < rng.uniform(0.0, 0.3, (n, 1))) & np.isfinite(scores)
    relevant[0] = False  # a row without relevant entries
    relevant[1, 3:5] = True
    cols, counted = _columns(relevant)
    S, before = torch.as_tensor(scores), scores.copy()  # S shares the array's memory
    workspace = None if block_rows is None else torch.empty((block_rows, m), dtype=S.dtype)
    places, R = relevant_places(S, cols, counted, depth=depth, tie_rows=7, workspace=workspace)
    np.testing.assert_array_equal(scores, before)  # the scores are left as they were
    expected = _brute_force(scores, relevant)
    assert R.tolist() == [len(e) for e in expected]
    for row, want in enumerate(expected):
        got = places[row, : len(want)].tolist()
        if depth is None:
            assert got == want
        else:  # deeper places are reported as depth + 1; the first one is always exact
            assert got[:1] == want[:1]
            assert got[1:] == [p if p <= depth else depth + 1 for p in want[1:]]


def test_the_first_relevant_entry_wins_ties_by_its_lower_column():
    scores = torch.tensor([[0.5, 0.5, 0.5, 0.1]])
    places, _ = relevant_places(scores, torch.tensor([[1, 2]]), torch.tensor([[True, True]]))
    assert places.tolist() == [[3, 4]]  # column 3 (0.1), column 0 (tie, lower), then 1 and 2


@pytest.mark.parametrize("n_values", [3, 40, 10_000])
@pytest.mark.parametrize("depth", [None, 5])
def test_the_torch_path_gives_the_numpy_paths_places(monkeypatch, n_values, depth):
    """The path of non-CPU tensors (torch sort / topk of whole chunks), run here on the CPU."""
    rng = np.random.default_rng(n_values + 1)
    scores = rng.integers(0, n_values, (50, 300)).astype(np.float32) / 7
    scores[rng.random((50, 300)) < 0.05] = np.inf
    relevant = (rng.random((50, 300)) < 0.2) & np.isfinite(scores)
    cols, counted = _columns(relevant)
    S = torch.as_tensor(scores)
    on_numpy, R = relevant_places(S, cols, counted, depth=depth)
    monkeypatch.setattr(_places, "_on_numpy", lambda t: False)
    on_torch, R_torch = relevant_places(S, cols, counted, depth=depth)
    assert torch.equal(R, R_torch)
    for row, r in enumerate(R.tolist()):
        assert on_torch[row, :r].tolist() == on_numpy[row, :r].tolist()
