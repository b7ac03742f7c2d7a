"""Exact k-NN search: ``knn_search`` (torch path) against faiss ``IndexFlatL2``, side by side.

One process builds the data once; for each thread count the two searches alternate
``--repeats`` times and the medians and their ratio are printed (alternation spreads a shared
machine's load over both). The load average is printed with the table.

    python benchmarks/bench_search.py                                   # 1,000 × 1,000,000 × 128
    python benchmarks/bench_search.py --n-gallery 200000 --repeats 3    # a quicker run

Data: i.i.d. standard normal float32 (seed 0), k = 10, Euclidean distance. Both searches are
exact; the fraction of identical neighbour lists is printed (ties between distinct items are
the only possible difference).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch


def _time(fn) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def measure(Q: np.ndarray, G: np.ndarray, k: int, threads: int, repeats: int) -> dict:
    import faiss

    from rankmetric.evaluate import knn_search

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    index = faiss.IndexFlatL2(G.shape[1])
    index.add(G)
    ours = lambda: knn_search(Q, G, k=k, device="cpu", backend="torch")[1]  # noqa: E731
    peer = lambda: index.search(Q, k)[1]  # noqa: E731
    ours(), peer()  # warm-up: thread pools, page faults
    times = {"ours": [], "faiss": []}
    for _ in range(repeats):  # alternate, so both see the same load
        t, idx_ours = _time(ours)
        times["ours"].append(t)
        t, idx_faiss = _time(peer)
        times["faiss"].append(t)
        pair = f"ours {times['ours'][-1]:.2f} s, faiss {t:.2f} s"
        print(f"  {threads} thread(s): {pair}", file=sys.stderr, flush=True)
    result = {name: statistics.median(ts) for name, ts in times.items()}
    result["ratios"] = [o / f for o, f in zip(times["ours"], times["faiss"], strict=True)]
    result["same"] = float(np.mean(np.all(idx_ours == idx_faiss, axis=1)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-gallery", type=int, default=1_000_000)
    parser.add_argument("--n-queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block-items", type=int, help="gallery items per tile (default 1024)")
    args = parser.parse_args()
    if args.block_items:
        from rankmetric.neighbors import tiled

        tiled.TILE_ITEMS = args.block_items
    rng = np.random.default_rng(0)
    G = rng.standard_normal((args.n_gallery, args.dim), dtype=np.float32)
    Q = rng.standard_normal((args.n_queries, args.dim), dtype=np.float32)
    flops = 2.0 * args.n_queries * args.n_gallery * args.dim
    print(f"{args.n_queries} × {args.n_gallery} × {args.dim}, k={args.k}, {args.repeats} repeats")
    print(
        "| threads | knn_search (s) | faiss IndexFlatL2 (s) | ratio (median of pairs) | "
        "faiss GFLOP/s | same lists |"
    )
    print("|---|---|---|---|---|---|")
    for threads in args.threads:
        m = measure(Q, G, args.k, threads, args.repeats)
        print(
            f"| {threads} | {m['ours']:.2f} | {m['faiss']:.2f} | "
            f"{statistics.median(m['ratios']):.2f} | {flops / m['faiss'] / 1e9:.0f} | "
            f"{m['same']:.3f} |",
            flush=True,
        )
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
