"""Time and peak memory of ``rerank_k_reciprocal`` at 20,000 items, beside the dense original.

Ours: :func:`rankmetric.evaluate.rerank_k_reciprocal` (k1 = 20, k2 = 6, λ = 0.3): chunked
neighbour search, sparse encoding, inverted-index Jaccard; the output is the
``n_query × n_gallery`` distance matrix. The peer is the structure of the authors'
``re_ranking.py`` (Zhong et al., CVPR 2017; its code is not installed, so it is written here in
NumPy, float32 as the original): dense ``N × N`` distances, their full argsort and a dense ``V``.
It needs about ``16 N²`` bytes at its peak (6.0 GiB at N = 20,000), more than this shared machine
should give, so it runs at ``--peer-items`` items only; both run on that problem and must agree.

Synthetic data (float32): identities in ``--dim`` dimensions, 6 images each, ``--queries``
queries and the rest gallery. Peak memory: ``VmHWM`` reset after the data are built, minus the
resident memory then (the output matrix included).

    OMP_NUM_THREADS=1 python benchmarks/bench_rerank.py                 # 20k items
    OMP_NUM_THREADS=1 python benchmarks/bench_rerank.py --items 5000 --peer-items 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from _memory import reset_peak_mb, run_children, status_mb
from rankmetric.evaluate import reid_scores, rerank_k_reciprocal


def make_data(n_items, n_queries, dim, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.arange(n_items) // 6
    X = rng.normal(size=(ids.max() + 1, dim)).astype(np.float32)[ids]
    X += rng.normal(scale=1.6, size=X.shape).astype(np.float32)
    q = np.zeros(n_items, dtype=bool)
    q[rng.choice(n_items, n_queries, replace=False)] = True
    return X[q], ids[q], X[~q], ids[~q]


def dense_re_ranking(Q, G, k1=20, k2=6, lambda_value=0.3):
    """The authors' re_ranking.py structure (float32, dense N × N), on embeddings."""
    X = np.concatenate([Q, G])
    sq = (X**2).sum(1)
    original = np.maximum(sq[:, None] - 2 * X @ X.T + sq[None], 0).astype(np.float32)
    original = np.transpose(original / np.max(original, axis=0))
    V = np.zeros_like(original, dtype=np.float32)
    initial_rank = np.argsort(original, axis=1, kind="stable").astype(np.int32)
    query_num, all_num = Q.shape[0], X.shape[0]
    half = int(np.around(k1 / 2.0))
    for i in range(all_num):  # the original's loop over items
        forward = initial_rank[i, : k1 + 1]
        backward = initial_rank[forward, : k1 + 1]
        k_rec = forward[np.where(backward == i)[0]]
        expansion = k_rec
        for candidate in k_rec:
            c_forward = initial_rank[candidate, : half + 1]
            c_backward = initial_rank[c_forward, : half + 1]
            c_rec = c_forward[np.where(c_backward == candidate)[0]]
            if len(np.intersect1d(c_rec, k_rec)) > 2.0 / 3 * len(c_rec):
                expansion = np.append(expansion, c_rec)
        expansion = np.unique(expansion)
        weight = np.exp(-original[i, expansion])
        V[i, expansion] = weight / np.sum(weight)
    original = original[:query_num]
    if k2 != 1:
        V_qe = np.zeros_like(V, dtype=np.float32)
        for i in range(all_num):
            V_qe[i, :] = np.mean(V[initial_rank[i, :k2], :], axis=0)
        V = V_qe
    del initial_rank
    inv_index = [np.where(V[:, i] != 0)[0] for i in range(all_num)]
    jaccard = np.zeros_like(original, dtype=np.float32)
    for i in range(query_num):
        temp_min = np.zeros(all_num, dtype=np.float32)
        nonzero = np.where(V[i, :] != 0)[0]
        for j in nonzero:
            temp_min[inv_index[j]] += np.minimum(V[i, j], V[inv_index[j], j])
        jaccard[i] = 1 - temp_min / (2.0 - temp_min)
    return (jaccard * (1 - lambda_value) + original * lambda_value)[:, query_num:]


def measure(fn):
    base = reset_peak_mb()
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start, status_mb("VmHWM") - base


def child(args) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    q_count = max(1, round(args.items * args.queries / args.total))
    Q, qi, G, gi = make_data(args.items, q_count, args.dim, seed=args.seed)
    fn = {
        "ours": lambda: rerank_k_reciprocal(Q, G, device="cpu"),
        "dense": lambda: dense_re_ranking(Q, G),
    }[args.child]
    D, seconds, peak = measure(fn)
    result = {"seconds": seconds, "peak_mb": peak, "output_mb": D.nbytes / 2**20}
    if args.compare:
        result["max_diff"] = float(np.abs(D - dense_re_ranking(Q, G)).max())
    plain = reid_scores(Q, qi, None, G, gi, None, protocol="single-view", ranks=1)
    rer = reid_scores(D, qi, None, None, gi, None, metric="precomputed", protocol="single-view",
                      ranks=1)  # fmt: skip
    result.update(mAP=(plain["mAP"], rer["mAP"]), rank1=(plain["cmc"][1], rer["cmc"][1]))
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--peer-items", type=int, default=3_000)
    parser.add_argument("--child", choices=("ours", "dense"))
    parser.add_argument("--total", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        child(args)
        return
    common = [sys.executable, __file__, "--queries", str(args.queries), "--dim", str(args.dim),
              "--threads", str(args.threads), "--total", str(args.items)]  # fmt: skip
    print(f"{args.items} items ({args.queries} queries) × {args.dim} dims, {args.threads} "
          "thread(s), k1=20 k2=6 λ=0.3; each measurement in a fresh process")  # fmt: skip
    big = run_children([*common, "--child", "ours", "--items", str(args.items)], 1)
    if isinstance(big, dict):
        raise SystemExit(big["error"])
    r = big[0]
    print(f"ours at {args.items}: {r['seconds']:.1f} s, peak {r['peak_mb']:.0f} MiB above the "
          f"inputs (output matrix {r['output_mb']:.0f} MiB); mAP {r['mAP'][0]:.4f} -> "
          f"{r['mAP'][1]:.4f}, rank 1 {r['rank1'][0]:.4f} -> {r['rank1'][1]:.4f}")  # fmt: skip
    print(f"dense original at {args.items}: >= {16 * args.items**2 / 2**30:.1f} GiB (16 N² bytes)")
    n = str(args.peer_items)
    small = {
        w: run_children(
            [*common, "--child", w, "--items", n, "--seed", "1"]
            + (["--compare"] if w == "ours" else []),
            1,
        )  # fmt: skip
        for w in ("ours", "dense")
    }
    if any(isinstance(v, dict) for v in small.values()):
        raise SystemExit(str(small))
    o, d = small["ours"][0], small["dense"][0]
    print(f"at {n} items: ours {o['seconds']:.1f} s, {o['peak_mb']:.0f} MiB; dense "
          f"{d['seconds']:.1f} s, {d['peak_mb']:.0f} MiB; dense/ours time "
          f"{d['seconds'] / o['seconds']:.2f}, memory {d['peak_mb'] / max(o['peak_mb'], 1):.1f}; "
          f"largest difference {o['max_diff']:.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
