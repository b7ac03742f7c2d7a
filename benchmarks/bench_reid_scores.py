"""Time and peak memory of ``reid_scores`` (Market-1501 protocol) at 10k queries × 100k gallery.

Ours: :func:`rankmetric.evaluate.reid_scores`, chunked over queries, default chunk size (about
256 MB of temporaries: ``48 × n_gallery`` bytes a query). The peer is the field's usual
evaluation, torchreid's ``eval_market1501`` structure written here in NumPy (its code is not
installed): the dense ``n_query × n_gallery`` distance matrix, a full ``argsort`` of it, then a
loop over queries. The peer holds ``12 × n_query × n_gallery`` bytes (float32 distances and
int64 order) — 12 GB at 10k × 100k — so it runs on the first ``--peer-queries`` queries only and
its full-size memory is that formula; both are scored on that subset and must agree.

Synthetic data (float32): ``--identities`` identity centres in ``--dim`` dimensions, each item a
centre plus noise, cameras drawn uniformly from ``--cameras``, 2 % of the gallery junk (id -1).
Peak memory: ``VmHWM`` reset after the data are built, minus the resident memory at that point.

    OMP_NUM_THREADS=1 python benchmarks/bench_reid_scores.py               # 10k × 100k × 256
    OMP_NUM_THREADS=1 python benchmarks/bench_reid_scores.py --n-query 1000 --n-gallery 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from _memory import reset_peak_mb, run_children, status_mb
from rankmetric.evaluate import reid_scores


def make_data(n_query, n_gallery, dim, n_ids, n_cams, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_ids, dim)).astype(np.float32)

    def items(n):
        ids = rng.integers(0, n_ids, n)
        X = centres[ids]
        X += rng.normal(scale=2.5, size=X.shape).astype(np.float32)
        return X, ids, rng.integers(0, n_cams, n)

    Q, qi, qc = items(n_query)
    G, gi, gc = items(n_gallery)
    gi[rng.random(n_gallery) < 0.02] = -1
    return Q, qi, qc, G, gi, gc


def peer_market1501(Q, qi, qc, G, gi, gc, max_rank=20):
    """torchreid's eval_market1501 on a dense distance matrix (argsort, loop over queries)."""
    distmat = ((Q**2).sum(1)[:, None] - 2 * Q @ G.T + (G**2).sum(1)[None]).astype(np.float32)
    indices = np.argsort(distmat, axis=1, kind="stable")
    all_cmc, all_ap, all_inp = [], [], []
    for i in range(Q.shape[0]):  # the peer's loop over queries
        order = indices[i]
        g_ids_sorted = gi[order]
        remove = (g_ids_sorted == -1) | ((g_ids_sorted == qi[i]) & (gc[order] == qc[i]))
        matches = (g_ids_sorted[~remove] == qi[i]).astype(np.int32)
        if not matches.any():
            continue
        cmc = matches.cumsum()
        pos = np.flatnonzero(matches)
        all_inp.append(cmc[pos[-1]] / (pos[-1] + 1))
        all_cmc.append(np.minimum(cmc, 1)[:max_rank])
        all_ap.append(np.mean(cmc[pos] / (pos + 1)))
    curve = np.mean(all_cmc, axis=0)
    return (
        {1: curve[0], 5: curve[4], 10: curve[9], 20: curve[19]},
        np.mean(all_ap),
        np.mean(all_inp),
    )


def child(args) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    Q, qi, qc, G, gi, gc = make_data(
        args.n_query, args.n_gallery, args.dim, args.identities, args.cameras
    )
    n = args.n_query if args.child == "ours" else min(args.peer_queries, args.n_query)
    mode = "peer" if args.child == "peer" else "ours"
    sub = slice(0, n)
    base = reset_peak_mb()
    start = time.perf_counter()
    if mode == "peer":
        cmc, mAP, mINP = peer_market1501(Q[sub], qi[sub], qc[sub], G, gi, gc)
        found = {"cmc": {str(r): float(v) for r, v in cmc.items()}, "mAP": mAP, "mINP": mINP}
    else:
        s = reid_scores(Q[sub], qi[sub], qc[sub], G, gi, gc, device="cpu")
        found = {**s, "cmc": {str(r): v for r, v in s["cmc"].items()}}
    seconds = time.perf_counter() - start
    peak = status_mb("VmHWM") - base
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "n": n, **found}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-query", type=int, default=10_000)
    parser.add_argument("--n-gallery", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--identities", type=int, default=5_000)
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--peer-queries", type=int, default=500)
    parser.add_argument("--child", choices=("ours", "ours-subset", "peer"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        child(args)
        return
    common = [sys.executable, __file__] + [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k != "child"
    ]
    print(f"{args.n_query} queries × {args.n_gallery} gallery × {args.dim} dims, "
          f"{args.identities} identities, {args.cameras} cameras, {args.threads} thread(s); "
          "each measurement in a fresh process")  # fmt: skip
    runs = {w: run_children([*common, f"--child={w}"], 1) for w in ("ours", "ours-subset", "peer")}
    for name, r in runs.items():
        if isinstance(r, dict):
            raise SystemExit(f"{name}: {r['error']}")
        r = r[0]
        runs[name] = r
        print(f"{name:12s} {r['n']:6d} queries: {r['seconds']:8.1f} s, peak {r['peak_mb']:7.0f} "
              f"MiB above the inputs; rank1 {r['cmc']['1']:.4f} mAP {r['mAP']:.4f} "
              f"mINP {r['mINP']:.4f}")  # fmt: skip
    o, p = runs["ours-subset"], runs["peer"]
    diff = max(abs(o["mAP"] - p["mAP"]), abs(o["mINP"] - p["mINP"]),
               *(abs(o["cmc"][r] - p["cmc"][r]) for r in p["cmc"]))  # fmt: skip
    print(
        f"peer/ours time on {p['n']} queries: {p['seconds'] / o['seconds']:.2f}; largest score "
        f"difference {diff:.1e}; the peer at full size holds >= "
        f"{12 * args.n_query * args.n_gallery / 2**30:.1f} GiB (distances + argsort order)"
    )


if __name__ == "__main__":
    main()
