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
import time

import numpy as np
import torch

from _memory import reset_peak_mb, status_mb
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-query", type=int, default=10_000)
    parser.add_argument("--n-gallery", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--identities", type=int, default=5_000)
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--peer-queries", type=int, default=500)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    Q, qi, qc, G, gi, gc = make_data(
        args.n_query, args.n_gallery, args.dim, args.identities, args.cameras
    )
    print(
        f"{args.n_query} queries × {args.n_gallery} gallery × {args.dim} dims, "
        f"{args.identities} identities, {args.cameras} cameras, {args.threads} thread(s)"
    )
    base = reset_peak_mb()
    start = time.perf_counter()
    ours = reid_scores(Q, qi, qc, G, gi, gc, device="cpu")
    seconds = time.perf_counter() - start
    peak = status_mb("VmHWM") - base
    print(f"ours  full: {seconds:8.1f} s  peak {peak:7.0f} MiB above inputs  "
          f"rank1 {ours['cmc'][1]:.4f} mAP {ours['mAP']:.4f} mINP {ours['mINP']:.4f} "
          f"valid {ours['n_valid']} skipped {ours['n_skipped']}")  # fmt: skip

    n = min(args.peer_queries, args.n_query)
    sub = slice(0, n)
    base = reset_peak_mb()
    start = time.perf_counter()
    small = reid_scores(Q[sub], qi[sub], qc[sub], G, gi, gc, device="cpu")
    ours_small = time.perf_counter() - start
    ours_small_peak = status_mb("VmHWM") - base
    base = reset_peak_mb()
    start = time.perf_counter()
    cmc, mAP, mINP = peer_market1501(Q[sub], qi[sub], qc[sub], G, gi, gc)
    peer_small = time.perf_counter() - start
    peer_peak = status_mb("VmHWM") - base
    diff = max(abs(small["mAP"] - mAP), abs(small["mINP"] - mINP),
               *(abs(small["cmc"][r] - cmc[r]) for r in cmc))  # fmt: skip
    full_gb = 12 * args.n_query * args.n_gallery / 2**30
    print(
        f"subset of {n} queries: ours {ours_small:.1f} s, peak {ours_small_peak:.0f} MiB; "
        f"peer (dense torchreid) {peer_small:.1f} s, peak {peer_peak:.0f} MiB; "
        f"peer/ours time {peer_small / ours_small:.2f}; largest score difference {diff:.2e}"
    )
    print(f"peer at full size would hold ≥ {full_gb:.1f} GiB (distances + argsort order)")


if __name__ == "__main__":
    main()
