"""reid_scores against a brute-force loop written from the Market-1501 / torchreid evaluation."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from rankmetric.evaluate import cmc_curve, map_at_r, reid_scores
from rankmetric.evaluate import reid_scores as reid


def _distances(Q, G, metric):
    Q, G = np.asarray(Q, np.float64), np.asarray(G, np.float64)
    if metric == "cosine":
        nq = np.linalg.norm(Q, axis=1, keepdims=True)
        ng = np.linalg.norm(G, axis=1, keepdims=True)
        Qn, Gn = Q / np.where(nq > 0, nq, 1), G / np.where(ng > 0, ng, 1)
        return 1 - Qn @ Gn.T
    return ((Q[:, None, :] - G[None, :, :]) ** 2).sum(-1)  # the order of every Euclidean metric


def reference(D, q_ids, q_cams, g_ids, g_cams, *, protocol="market1501", junk=(-1,),
              n_draws=10, seed=0):  # fmt: skip
    """eval_market1501 / eval_cuhk03 (torchreid), one query at a time; stable sort (ties by
    lower gallery index); cuhk03 draws as documented in reid_scores."""
    n_q, n_g = D.shape
    u = np.random.default_rng(seed).random((n_draws, n_g))
    all_cmc, all_ap, all_inp, skipped = [], [], [], 0
    for i in range(n_q):
        order = np.argsort(D[i], kind="stable")
        remove = np.isin(g_ids[order], junk)
        if protocol in ("market1501", "cuhk03"):
            remove |= (g_ids[order] == q_ids[i]) & (g_cams[order] == q_cams[i])
        keep = order[~remove]
        raw = (g_ids[keep] == q_ids[i]).astype(int)
        if not raw.any():
            skipped += 1
            continue
        if protocol == "cuhk03":
            cmc = np.zeros(n_g)
            for d in range(n_draws):
                chosen = []
                for pid in np.unique(g_ids[keep]):
                    members = keep[g_ids[keep] == pid]
                    chosen.append(members[np.argmax(u[d, members])])
                sampled = [g for g in keep if g in chosen]  # in ranking order
                hit = np.cumsum([g_ids[g] == q_ids[i] for g in sampled]).clip(max=1)
                cmc[: len(hit)] += hit
                cmc[len(hit) :] += hit[-1]
            all_cmc.append(cmc / n_draws)
        else:
            cmc = raw.cumsum().clip(max=1)
            all_cmc.append(np.r_[cmc, np.ones(n_g - len(cmc))])
        hits = raw.cumsum()
        precision = [hits[k] / (k + 1) for k in range(len(raw))]
        all_ap.append(np.sum(np.asarray(precision) * raw) / raw.sum())
        last = np.flatnonzero(raw).max()
        all_inp.append(hits[last] / (last + 1))
    curve = np.mean(all_cmc, axis=0)
    return curve, np.mean(all_ap), np.mean(all_inp), n_q - skipped, skipped


def _axis_data(rng, n, d=3):
    X = np.zeros((n, d), dtype=np.float32)
    X[np.arange(n), rng.integers(0, d, n)] = rng.choice([-2.0, -1.0, 1.0, 3.0], n)
    X[rng.random(n) < 0.1] = 0.0
    return X


def _problem(rng, n_cams, n_q=30, n_g=70, d=3, junk=True, absent=True):
    """Small-integer features (many exact ties), 1..8 cameras, junk and absent identities."""
    G = rng.integers(-2, 3, size=(n_g, d)).astype(np.float32)
    Q = rng.integers(-2, 3, size=(n_q, d)).astype(np.float32)
    g_ids = rng.integers(0, 10, n_g)
    if junk:
        g_ids[rng.random(n_g) < 0.15] = -1
    q_ids = rng.integers(0, 12 if absent else 10, n_q)  # 10, 11 never in the gallery
    return Q, q_ids, rng.integers(0, n_cams, n_q), G, g_ids, rng.integers(0, n_cams, n_g)


@pytest.mark.parametrize("n_cams", [1, 2, 3, 8])  # gallery cameras (one-camera gallery too)
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine"])
def test_market1501_matches_brute_force(n_cams, metric):
    rng = np.random.default_rng(10 * n_cams + len(metric))
    Q, qi, qc, G, gi, gc = _problem(rng, n_cams)
    if metric == "cosine":  # multiples of axis vectors and zeros: cosine scores exact, tied
        Q, G = _axis_data(rng, len(Q)), _axis_data(rng, len(G))
    D = _distances(Q, G, metric)
    qc = rng.integers(0, n_cams + 1, len(qi))  # with one gallery camera: some queries share it
    curve, mAP, mINP, n_valid, n_skipped = reference(D, qi, qc, gi, gc)
    got, got_curve = reid_scores(Q, qi, qc, G, gi, gc, ranks=(1, 2, 5, 10), metric=metric,
                                 chunk_size=7, return_curve=True)  # fmt: skip
    np.testing.assert_allclose(got_curve, curve, atol=1e-6)
    assert got["mAP"] == pytest.approx(mAP, abs=1e-6)
    assert got["mINP"] == pytest.approx(mINP, abs=1e-6)
    assert (got["n_valid"], got["n_skipped"]) == (n_valid, n_skipped)
    assert got["cmc"] == {r: pytest.approx(curve[r - 1], abs=1e-6) for r in (1, 2, 5, 10)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_market1501_random_problems_with_ties(seed, dtype):
    rng = np.random.default_rng(100 + seed)
    n_cams = int(rng.integers(2, 9))
    Q, qi, qc, G, gi, gc = _problem(rng, n_cams, n_q=40, n_g=120, d=2)
    D = _distances(Q, G, "sqeuclidean")
    curve, mAP, mINP, n_valid, n_skipped = reference(D, qi, qc, gi, gc)
    chunk = int(rng.integers(1, 50))
    got, got_curve = reid_scores(Q.astype(dtype), qi, qc, G.astype(dtype), gi, gc,
                                 return_curve=True, chunk_size=chunk)  # fmt: skip
    assert n_skipped > 0  # absent identities are skipped and counted
    np.testing.assert_allclose(got_curve, curve, atol=1e-6)
    assert got["mAP"] == pytest.approx(mAP, abs=1e-6)
    assert got["mINP"] == pytest.approx(mINP, abs=1e-6)
    assert (got["n_valid"], got["n_skipped"]) == (n_valid, n_skipped)


@pytest.mark.parametrize("n_cams", [2, 4])
def test_cuhk03_single_gallery_shot_matches_brute_force(n_cams):
    rng = np.random.default_rng(7 + n_cams)
    Q, qi, qc, G, gi, gc = _problem(rng, n_cams, n_q=20, n_g=50)
    D = _distances(Q, G, "euclidean")
    curve, mAP, mINP, n_valid, n_skipped = reference(
        D, qi, qc, gi, gc, protocol="cuhk03", n_draws=5, seed=3
    )
    got, got_curve = reid_scores(Q, qi, qc, G, gi, gc, ranks=(1, 3), protocol="cuhk03",
                                 n_draws=5, random_state=3, chunk_size=6,
                                 return_curve=True)  # fmt: skip
    n_ids = np.unique(gi[gi >= 0]).shape[0]
    np.testing.assert_allclose(got_curve, curve[:n_ids], atol=1e-6)
    assert got["mAP"] == pytest.approx(mAP, abs=1e-6)
    assert got["mINP"] == pytest.approx(mINP, abs=1e-6)
    assert (got["n_valid"], got["n_skipped"]) == (n_valid, n_skipped)
    # seeded: same seed, same curve; the draws differ from the multi-shot ranking
    again = reid_scores(Q, qi, qc, G, gi, gc, ranks=(1, 3), protocol="cuhk03", n_draws=5,
                        random_state=3)  # fmt: skip
    assert again == got


@pytest.mark.parametrize("protocol", ["single-view", "closed-set"])
def test_single_view_equals_cmc_curve_and_ignores_cameras(protocol):
    rng = np.random.default_rng(5)
    Q, qi, _, G, gi, _ = _problem(rng, 1, junk=False, absent=False)
    qi = rng.choice(np.unique(gi), len(qi))
    got, got_curve = reid_scores(Q, qi, None, G, gi, None, protocol=protocol, return_curve=True)
    _, expected = cmc_curve(Q, qi, G, gi, ranks=1, return_curve=True)
    np.testing.assert_allclose(got_curve, expected, atol=1e-12)
    curve, mAP, mINP, _, _ = reference(
        _distances(Q, G, "sqeuclidean"), qi, None, gi, None, protocol=protocol
    )
    assert got["mAP"] == pytest.approx(mAP, abs=1e-6)
    assert got["mINP"] == pytest.approx(mINP, abs=1e-6)
    assert got["n_skipped"] == 0


def test_camera_removal_changes_the_score_and_mAP_is_full_not_at_r():
    # query 0 (camera 0) has an identical same-camera twin in the gallery: it is removed
    G = np.array([[0.0], [5.0], [1.0], [3.0]])
    gi, gc = np.array([7, 7, 8, 7]), np.array([0, 1, 1, 1])
    Q, qi, qc = np.array([[0.0]]), np.array([7]), np.array([0])
    market = reid_scores(Q, qi, qc, G, gi, gc, ranks=(1, 2, 3))
    # kept ranking: 2 (id 8), 3 (id 7), 1 (id 7) → places of the relevant items 2 and 3
    assert market["cmc"] == {1: 0.0, 2: 1.0, 3: 1.0}
    assert market["mAP"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert market["mINP"] == pytest.approx(2 / 3)
    single = reid_scores(Q, qi, qc, G, gi, gc, ranks=1, protocol="single-view")
    assert single["cmc"][1] == 1.0
    # mAP@R (first R places only) is lower than the full mAP on the same ranking
    assert map_at_r(G, gi, query_embeddings=Q, query_labels=qi) < single["mAP"] + 1e-12


def test_precomputed_distances_equal_embeddings():
    rng = np.random.default_rng(1)
    Q, qi, qc, G, gi, gc = _problem(rng, 3)
    D = np.sqrt(_distances(Q, G, "euclidean"))
    a = reid_scores(Q.astype(np.float64), qi, qc, G.astype(np.float64), gi, gc)
    b = reid_scores(D, qi, qc, None, gi, gc, metric="precomputed", chunk_size=4)
    assert a == b


def test_string_ids_custom_junk_and_torch_inputs():
    rng = np.random.default_rng(2)
    Q, qi, qc, G, gi, gc = _problem(rng, 3, junk=False)
    names = np.array([f"person{i}" for i in range(12)])
    gi_s = names[gi]
    gi_s[:10] = "junk"
    a = reid_scores(Q, qi, qc, G, np.where(np.arange(len(gi)) < 10, -1, gi), gc)
    b = reid_scores(torch.as_tensor(Q), names[qi], qc, torch.as_tensor(G), gi_s, gc,
                    junk_ids=["junk"], device="cpu")  # fmt: skip
    assert a == b


def test_all_skipped_raises_and_partial_skips_are_counted():
    G, gi, gc = np.eye(3), np.array([0, 1, 2]), np.array([0, 0, 0])
    with pytest.raises(ValueError, match="no query has a relevant gallery item"):
        reid_scores(G, [0, 1, 2], [0, 0, 0], G, gi, gc, ranks=1)  # one camera: all matches removed
    out = reid_scores(G, [0, 1, 5], [1, 0, 1], G, gi, gc, ranks=(1,))
    assert (out["n_valid"], out["n_skipped"], out["cmc"][1]) == (1, 2, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"protocol": "duke"}, "protocol must be one of"),
        ({"metric": "manhattan"}, "metric must be one of"),
        ({"ranks": (0,)}, "ranks must hold positive integers"),
        ({"ranks": (99,)}, "larger than"),
        ({"ranks": (4,), "protocol": "cuhk03", "junk_ids": [3]}, "larger than the 3"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"n_draws": 0, "protocol": "cuhk03"}, "n_draws"),
    ],
)
def test_bad_arguments(kwargs, match):
    G = np.eye(4)
    with pytest.raises(ValueError, match=match):
        reid_scores(G, [0, 1, 2, 3], [0, 0, 0, 0], G, [0, 1, 2, 3], [1, 1, 1, 1],
                    **{"ranks": (1,), **kwargs})  # fmt: skip


def test_bad_inputs():
    G, ids, cams = np.eye(4), [0, 1, 2, 3], [0, 1, 0, 1]
    reid_scores = functools.partial(reid, ranks=1)
    with pytest.raises(ValueError, match="needs query_cams and gallery_cams"):
        reid_scores(G, ids, None, G, ids, None)
    with pytest.raises(ValueError, match="gallery_cams has 3 labels"):
        reid_scores(G, ids, cams, G, ids, cams[:3])
    with pytest.raises(ValueError, match="NaN"):
        reid_scores(np.full((4, 4), np.nan), ids, cams, G, ids, cams)
    with pytest.raises(ValueError, match="features"):
        reid_scores(G[:, :3], ids, cams, G, ids, cams)
    with pytest.raises(ValueError, match="junk identity"):
        reid_scores(G, ids, cams, G, [-1] * 4, cams)
    with pytest.raises(ValueError, match="gallery=None"):
        reid_scores(G, ids, cams, G, ids, cams, metric="precomputed")


def test_query_gallery_split_follows_the_protocols():
    from rankmetric.evaluate import query_gallery_split

    # two views, one image each: camera-A probes against the camera-B gallery
    q, g = query_gallery_split([5, 6, 5, 6], ["b", "b", "a", "a"])
    assert q.tolist() == [2, 3] and g.tolist() == [0, 1]
    # one image per track, three cameras (or none): every item against all items
    q, g = query_gallery_split([0, 0, 0], [0, 1, 2])
    assert q.tolist() == g.tolist() == [0, 1, 2]
    assert query_gallery_split([0, 0, 1])[0].tolist() == [0, 1, 2]
    # several images per track: one seeded query per track, the rest gallery
    ids, cams = np.repeat([0, 1], 6), np.tile([0, 0, 0, 1, 1, 1], 2)
    q, g = query_gallery_split(ids, cams, random_state=1)
    assert len(q) == 4 and sorted(set(zip(ids[q], cams[q], strict=True))) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert sorted([*q, *g]) == list(range(12))
    assert query_gallery_split(ids, cams, random_state=1)[0].tolist() == q.tolist()
    with pytest.raises(ValueError, match="cameras has 2 values"):
        query_gallery_split([0, 1, 2], [0, 1])


@pytest.mark.parametrize(
    "ids_type, junk_ids",
    [(str, (-1,)), (str, ("-1",)), (int, ("-1",)), (int, (-1,)), (object, (-1,))],
    ids=["string ids, default", "string ids, '-1'", "int ids, '-1'", "int ids", "objects"],
)
def test_junk_ids_compared_in_the_ids_own_type(ids_type, junk_ids):
    """String gallery ids holding "-1" are junk under the default junk_ids=(-1,), and a "-1"
    read from a command line is junk among integer ids: the same scores as integer ids."""
    rng = np.random.default_rng(3)
    Q, qi, qc, G, gi, gc = _problem(rng, 3, junk=False)
    gi = gi.copy()
    gi[:12] = -1
    expected = reid_scores(Q, qi, qc, G, gi, gc, device="cpu")
    as_ids = (lambda a: a.astype(str)) if ids_type is str else (lambda a: a)
    if ids_type is object:
        as_ids = lambda a: a.astype(str).astype(object)  # noqa: E731 - as pandas reads them
    found = reid_scores(Q, as_ids(qi), qc, G, as_ids(gi), gc, junk_ids=junk_ids, device="cpu")
    assert found["cmc"] == pytest.approx(expected["cmc"]) and found["mAP"] == expected["mAP"]
    ignored = reid_scores(Q, qi, qc, G, gi, gc, junk_ids=(), device="cpu")
    assert ignored["mAP"] != expected["mAP"]  # the junk rows do change the scores


def test_a_junk_id_that_cannot_be_a_number_is_refused_for_numeric_ids():
    rng = np.random.default_rng(3)
    Q, qi, qc, G, gi, gc = _problem(rng, 3, junk=False)
    with pytest.raises(ValueError, match="junk_ids: 'junk' is not a number"):
        reid_scores(Q, qi, qc, G, gi, gc, junk_ids=("junk",), device="cpu")
