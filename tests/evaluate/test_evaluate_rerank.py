"""k-reciprocal re-ranking against a dense reference written from the published algorithm."""

from __future__ import annotations

import numpy as np
import pytest

from rankmetric.evaluate import average_query_expansion, reid_scores, rerank_k_reciprocal


def dense_re_ranking(q_g_dist, q_q_dist, g_g_dist, k1=20, k2=6, lambda_value=0.3):
    """Zhong et al.'s re_ranking.py structure, dense (N × N), one item at a time; the argsort is
    stable (ties by the lower index, as everywhere in rankmetric)."""
    original = np.concatenate(
        [np.concatenate([q_q_dist, q_g_dist], axis=1), np.concatenate([q_g_dist.T, g_g_dist], 1)]
    )
    original = np.power(original, 2)
    original = np.transpose(original / np.max(original, axis=0))
    V = np.zeros_like(original)
    initial_rank = np.argsort(original, axis=1, kind="stable")
    query_num, all_num = q_g_dist.shape[0], original.shape[0]
    half = int(np.around(k1 / 2.0))
    for i in range(all_num):
        forward = initial_rank[i, : k1 + 1]
        backward = initial_rank[forward, : k1 + 1]
        k_reciprocal = forward[np.where(backward == i)[0]]
        expansion = k_reciprocal
        for candidate in k_reciprocal:
            c_forward = initial_rank[candidate, : half + 1]
            c_backward = initial_rank[c_forward, : half + 1]
            c_reciprocal = c_forward[np.where(c_backward == candidate)[0]]
            if len(np.intersect1d(c_reciprocal, k_reciprocal)) > 2.0 / 3 * len(c_reciprocal):
                expansion = np.append(expansion, c_reciprocal)
        expansion = np.unique(expansion)
        weight = np.exp(-original[i, expansion])
        V[i, expansion] = weight / np.sum(weight)
    original = original[:query_num]
    if k2 != 1:
        V = np.stack([V[initial_rank[i, :k2]].mean(axis=0) for i in range(all_num)])
    jaccard = np.zeros_like(original)
    for i in range(query_num):
        temp_min = np.minimum(V[i][None, :], V).sum(axis=1)
        jaccard[i] = 1 - temp_min / (2.0 - temp_min)
    final = jaccard * (1 - lambda_value) + original * lambda_value
    return final[:, query_num:]


def _dist(A, B, metric="euclidean"):
    if metric == "cosine":
        a = A / np.linalg.norm(A, axis=1, keepdims=True)
        b = B / np.linalg.norm(B, axis=1, keepdims=True)
        return 1 - a @ b.T
    d = np.sqrt(((A[:, None] - B[None]) ** 2).sum(-1))
    return d**2 if metric == "sqeuclidean" else d


def _problem(seed, n_ids=15, per_id=4, d=6):
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n_ids), per_id)
    X = rng.normal(size=(n_ids, d))[ids] + 0.7 * rng.normal(size=(len(ids), d))
    q = rng.random(len(ids)) < 0.3
    return X[q], ids[q], X[~q], ids[~q]


@pytest.mark.parametrize(
    ("k1", "k2", "lam"), [(20, 6, 0.3), (6, 3, 0.3), (5, 1, 0.0), (9, 2, 1.0), (4, 4, 0.5)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_dense_reference(seed, k1, k2, lam):
    Q, _, G, _ = _problem(seed)
    expected = dense_re_ranking(_dist(Q, G), _dist(Q, Q), _dist(G, G), k1, k2, lam)
    got = rerank_k_reciprocal(Q, G, k1=k1, k2=k2, lambda_value=lam, chunk_size=7, device="cpu")
    assert got.shape == expected.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, atol=1e-9)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine"])
def test_other_metrics_and_float32(metric):
    Q, _, G, _ = _problem(3)
    expected = dense_re_ranking(
        _dist(Q, G, metric), _dist(Q, Q, metric), _dist(G, G, metric), 8, 3, 0.3
    )
    got = rerank_k_reciprocal(Q, G, k1=8, k2=3, metric=metric)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    got32 = rerank_k_reciprocal(Q.astype(np.float32), G.astype(np.float32), k1=8, k2=3,
                                metric=metric)  # fmt: skip
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, expected, atol=1e-4)


def test_reranking_helps_on_clustered_identities():
    Q, qi, G, gi = _problem(4, n_ids=25, per_id=6, d=8)
    plain = reid_scores(Q, qi, None, G, gi, None, protocol="single-view", ranks=1)
    D = rerank_k_reciprocal(Q, G, k1=8, k2=3)
    rer = reid_scores(D, qi, None, None, gi, None, metric="precomputed", protocol="single-view",
                      ranks=1)  # fmt: skip
    assert rer["mAP"] > plain["mAP"]


def test_bad_arguments():
    Q, _, G, _ = _problem(0)
    for kwargs, match in [
        ({"k1": 0}, "k1 must be an integer >= 1"),
        ({"k2": 1.5}, "k2 must be an integer"),
        ({"lambda_value": 2}, "lambda_value must be a number in"),
        ({"k1": 500}, "must not exceed"),
        ({"metric": "l1"}, "metric must be one of"),
        ({"chunk_size": 0}, "chunk_size"),
    ]:
        with pytest.raises(ValueError, match=match):
            rerank_k_reciprocal(Q, G, **kwargs)
    with pytest.raises(ValueError, match="features"):
        rerank_k_reciprocal(Q, G[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        rerank_k_reciprocal(np.full_like(Q, np.nan), G)


def test_average_query_expansion_by_hand():
    G = np.array([[1.0, 0.0], [3.0, 0.0], [9.0, 9.0]])
    out = average_query_expansion(np.array([[0.0, 0.0], [9.0, 8.0]]), G, k=1)
    np.testing.assert_allclose(out, [[0.5, 0.0], [9.0, 8.5]])
    with pytest.raises(ValueError, match="k must be an integer"):
        average_query_expansion(G, G, k=0)
