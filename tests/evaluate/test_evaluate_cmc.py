"""CMC curves against a brute-force loop over probes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.evaluate import cmc_curve, recall_at_k


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
def test_multi_shot_gallery_matches_brute_force_with_ties(ref, rng, metric):
    data = ref.axis_data if metric == "cosine" else ref.integer_data
    G, P = data(rng, 40), data(rng, 25)
    gid = rng.integers(0, 8, 40)
    pid = rng.choice(np.unique(gid), 25)
    scores, curve = cmc_curve(P, pid, G, gid, ranks=(1, 2, 5, 40), metric=metric, return_curve=True)
    expected = ref.cmc(P, pid, G, gid, metric)
    np.testing.assert_allclose(curve, expected, atol=1e-12)
    assert scores == {r: pytest.approx(expected[r - 1]) for r in (1, 2, 5, 40)}
    assert curve[-1] == 1.0 and np.all(np.diff(curve) >= 0)


def test_single_shot_gallery(ref, rng):
    G = rng.normal(size=(30, 5))
    gid = rng.permutation(30)
    pid = rng.integers(0, 30, 50)
    P = G[np.argsort(gid)][pid] + 0.8 * rng.normal(size=(50, 5))
    curve = cmc_curve(P, pid, G, gid, ranks=1, return_curve=True)[1]
    np.testing.assert_allclose(curve, ref.cmc(P, pid, G, gid), atol=1e-12)


def test_hand_computed_example():
    G = np.array([[0.0], [1.0], [2.0], [3.0]])
    gid = np.array(["x", "y", "y", "z"])
    P = np.array([[0.9], [2.9], [0.0]])
    pid = np.array(["y", "y", "z"])
    # probe 0: order 1,2,0,3 -> rank 1; probe 1: order 3,2,... -> rank 2; probe 2: 0,1,2,3 -> rank 4
    assert cmc_curve(P, pid, G, gid, ranks=(1, 2, 3, 4)) == {1: 1 / 3, 2: 2 / 3, 3: 2 / 3, 4: 1.0}


def test_equals_recall_at_k_with_separate_queries(rng):
    G, P = rng.normal(size=(60, 4)), rng.normal(size=(30, 4))
    gid = rng.integers(0, 6, 60)
    pid = rng.integers(0, 6, 30)
    ranks = (1, 3, 10)
    assert cmc_curve(P, pid, G, gid, ranks) == recall_at_k(
        G, gid, ranks, query_embeddings=P, query_labels=pid
    )


@pytest.mark.parametrize("chunk_size", [1, 6])
def test_chunked_and_torch_inputs(ref, rng, chunk_size):
    G, P = ref.integer_data(rng, 35), ref.integer_data(rng, 20)
    gid, pid = rng.integers(0, 5, 35), rng.integers(0, 5, 20)
    full = cmc_curve(P, pid, G, gid, ranks=(1, 5), return_curve=True)[1]
    chunked = cmc_curve(
        torch.from_numpy(P),
        torch.from_numpy(pid),
        G,
        gid,
        ranks=(1, 5),
        chunk_size=chunk_size,
        device="cpu",
        return_curve=True,
    )[1]
    np.testing.assert_array_equal(full, chunked)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"probe_ids": np.array([0, 1, 9])}, "absent from the gallery"),
        ({"gallery_ids": np.zeros(6)}, "single identity"),
        ({"ranks": (1, 7)}, "larger than the 6"),
        ({"ranks": (0,)}, "positive"),
        ({"probe_ids": np.array([0, 1])}, "2 labels"),
        ({"probe": np.full((3, 2), np.nan)}, "NaN"),
    ],
)
def test_bad_input_raises(rng, kwargs, message):
    args = {
        "probe": rng.normal(size=(3, 2)),
        "probe_ids": np.array([0, 1, 2]),
        "gallery": rng.normal(size=(6, 2)),
        "gallery_ids": np.array([0, 1, 2, 0, 1, 2]),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        cmc_curve(**args)
