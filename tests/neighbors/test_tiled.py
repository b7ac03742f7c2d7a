"""The tiled running top-k search: exact order (ties by lower index) across gallery blocks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.neighbors import Gallery, nearest_chunks, tiled, to_distance


def _reference(Q: np.ndarray, G: np.ndarray, k: int, metric: str, exclude_self: bool):
    """Indices by (exact distance, index), from a float64 brute force."""
    if metric == "cosine":
        unit = lambda A: A / np.where((n := np.linalg.norm(A, axis=1, keepdims=True)) > 0, n, 1)  # noqa: E731
        D = 1.0 - unit(Q) @ unit(G).T
    else:
        D = ((Q[:, None, :] - G[None, :, :]) ** 2).sum(-1)
    if exclude_self:
        D[np.arange(Q.shape[0]), np.arange(Q.shape[0])] = np.inf
    cols = np.broadcast_to(np.arange(G.shape[0]), D.shape)
    return np.lexsort((cols, D), axis=1)[:, :k]


def _search(Q, G, k, metric="sqeuclidean", exclude_self=False, chunk_size=None):
    space = Gallery.build(torch.from_numpy(G), metric)
    n = Q.shape[0]
    width = int(k.max()) if isinstance(k, torch.Tensor) else k
    idx = np.full((n, width), -1)
    dist = np.zeros((n, width), dtype=np.float32)
    chunks = nearest_chunks(
        torch.from_numpy(Q), space, k, exclude_self=exclude_self, chunk_size=chunk_size
    )
    for rows, values, nearest, const in chunks:
        idx[rows.numpy(), : nearest.shape[1]] = nearest.numpy()
        dist[rows.numpy(), : nearest.shape[1]] = to_distance(values, const, metric).numpy()
    return dist, idx


@pytest.fixture
def small_tiles(monkeypatch):
    """Blocks of 16 items and chunks of 7 queries, so small data crosses many tiles."""
    monkeypatch.setattr(tiled, "TILE_ITEMS", 16)
    monkeypatch.setattr(tiled, "TILE_QUERIES", 7)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine"])
@pytest.mark.parametrize("k", [1, 3, 15, 40])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_tiles_keep_exact_tie_order(rng, small_tiles, metric, k, exclude_self):
    # small integers: float32 scores are exact, so distinct items tie exactly and often
    G = rng.integers(-2, 3, size=(203, 3)).astype(np.float32)
    Q = G[:50].copy() if exclude_self else rng.integers(-2, 3, size=(50, 3)).astype(np.float32)
    dist, idx = _search(Q, G, k, metric, exclude_self)
    expected = _reference(Q.astype(np.float64), G.astype(np.float64), k, metric, exclude_self)
    if metric == "cosine":  # unit vectors are rounded: compare distances, and indices of exact ties
        ref_d = np.take_along_axis(
            1.0
            - (Q / np.linalg.norm(Q, axis=1, keepdims=True).clip(1e-30))
            @ (G / np.linalg.norm(G, axis=1, keepdims=True).clip(1e-30)).T,
            expected,
            axis=1,
        )
        np.testing.assert_allclose(dist, ref_d, atol=1e-5)
    else:
        np.testing.assert_array_equal(idx, expected)
    assert tiled.uses_tiles(torch.from_numpy(Q), k)


def test_tiles_equal_the_full_width_path(rng, small_tiles, monkeypatch):
    G = rng.normal(size=(500, 8)).astype(np.float32)
    Q = rng.normal(size=(60, 8)).astype(np.float32)
    d_tiled, i_tiled = _search(Q, G, 9, "sqeuclidean")
    monkeypatch.setattr(tiled, "MAX_TILED_K", 0)  # force full-width scoring + smallest_k
    d_full, i_full = _search(Q, G, 9, "sqeuclidean")
    np.testing.assert_array_equal(i_tiled, i_full)
    np.testing.assert_allclose(d_tiled, d_full, rtol=1e-5, atol=1e-5)


def test_per_query_k_gives_each_chunk_its_largest_k(rng, small_tiles):
    G = rng.integers(-2, 3, size=(120, 3)).astype(np.float32)
    Q = rng.integers(-2, 3, size=(20, 3)).astype(np.float32)
    k = torch.tensor([2] * 7 + [30] * 7 + [5] * 6)
    _, idx = _search(Q, G, k)
    expected = _reference(Q.astype(np.float64), G.astype(np.float64), 30, "sqeuclidean", False)
    for rows, width in [(slice(0, 7), 2), (slice(7, 14), 30), (slice(14, 20), 5)]:
        np.testing.assert_array_equal(idx[rows, :width], expected[rows, :width])
        assert np.all(idx[rows, width:] == -1)


def test_float64_and_large_k_take_the_full_width_path(rng):
    Q = torch.zeros(3, 2)
    assert tiled.uses_tiles(Q, tiled.MAX_TILED_K)
    assert not tiled.uses_tiles(Q, tiled.MAX_TILED_K + 1)
    assert not tiled.uses_tiles(Q.double(), 1)


def test_tiled_path_never_scores_full_width(rng, small_tiles, monkeypatch):
    original = Gallery.scores

    def blocks_only(self, Qc, out=None, items=slice(None)):
        if len(range(len(self))[items]) > tiled.TILE_ITEMS:
            raise AssertionError("the tiled path must not build a chunk × n_gallery score block")
        return original(self, Qc, out, items)

    monkeypatch.setattr(Gallery, "scores", blocks_only)
    G = rng.normal(size=(300, 4)).astype(np.float32)
    _, idx = _search(G[:10], G, 5, exclude_self=True)
    np.testing.assert_array_equal(idx, _reference(G[:10], G, 5, "sqeuclidean", True))


@pytest.mark.parametrize("chunk_size", [0, -1, 2.5, True])
def test_bad_chunk_size_raises(chunk_size):
    G = Gallery.build(torch.zeros(4, 2), "euclidean")
    with pytest.raises(ValueError, match="chunk_size"):
        next(nearest_chunks(torch.zeros(2, 2), G, 1, chunk_size=chunk_size))
