"""rankmetric.Index beside a kept faiss index, one run, one thread (issue #37's targets).

1. exact search: ``Index.search`` against a kept faiss ``IndexFlatL2`` holding the same
   vectors: single queries (median latency; target ≤ 1.2×) and a batch of 1,000 (≤ 1.1×);
2. approximate search: IVF-Flat and HNSW, their breadth (``nprobe`` / ``ef_search``) chosen on
   *validation* queries as the smallest reaching recall@10 ≥ 0.95, then measured on separate
   test queries: recall@10 and the speed-up over exact search (target ≥ 10×);
3. memory: a saved ``n_mmap × dim`` index loaded memory-mapped and searched in a fresh process,
   its peak resident memory beyond the interpreter's against the vectors' file size (≤ 1.2×);
4. ``--dask``: the cost of a Dask-sharded search (2 local worker processes) beside one process.

The catalogue stands in for transformed vectors: a mixture of 1,000 Gaussian clusters in
``dim`` dimensions (float32), as embeddings of a learned metric are clustered; uniform noise
would be the worst case of every approximate index and the best of none.

    python benchmarks/bench_index.py                      # 1M × 64, 5M × 64 memory check
    python benchmarks/bench_index.py --n 200000 --n-mmap 1000000 --dask
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from rankmetric import Index, threads


def catalogue(n: int, dim: int, seed: int, n_clusters: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim)).astype(np.float32) * 3
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 1 << 18):  # chunks: no float64 copy of the catalogue
        m = min(1 << 18, n - start)
        out[start : start + m] = centres[rng.integers(n_clusters, size=m)]
        out[start : start + m] += rng.normal(size=(m, dim)).astype(np.float32)
    return out


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def exact_vs_faiss(index: Index, E: np.ndarray, Q: np.ndarray, n_single: int) -> dict:
    import faiss

    flat = faiss.IndexFlatL2(E.shape[1])
    flat.add(E)
    ours, theirs = [], []
    for q in Q[:n_single]:  # interleaved, so that load changes hit both alike
        q = q[None]
        ours.append(median_time(lambda q=q: index.search(q, 10), 1))
        theirs.append(median_time(lambda q=q: flat.search(q, 10), 1))
    batch = Q[:1000]
    ours_b = median_time(lambda: index.search(batch, 10), 3)
    theirs_b = median_time(lambda: flat.search(batch, 10), 3)
    _, ids = index.search(Q[:50], 10)
    _, found = flat.search(Q[:50], 10)
    return {
        "single_ms": {
            "index": 1e3 * statistics.median(ours),
            "faiss_flat": 1e3 * statistics.median(theirs),
        },
        "single_ratio": statistics.median(ours) / statistics.median(theirs),
        "batch_s": {"index": ours_b, "faiss_flat": theirs_b, "queries": len(batch)},
        "batch_ratio": ours_b / theirs_b,
        "same_neighbours": float(np.mean(ids == found)),
    }


def tuned(index: Index, exact_ids, Q_val, Q_test, exact_test, knob: str, values) -> dict:
    """The smallest breadth with validation recall@10 ≥ 0.95, then measured on test queries."""
    for value in values:
        index.set_search(**{knob: value})
        _, ids = index.search(Q_val, 10)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact_ids, strict=True)])
        if recall >= 0.95:
            break
    seconds = median_time(lambda: index.search(Q_test, 10), 3)
    _, ids = index.search(Q_test, 10)
    test_recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact_test, strict=True)])
    return {
        knob: value,
        "validation_recall@10": float(recall),
        "test_recall@10": float(test_recall),
        "seconds_per_query": seconds / len(Q_test),
    }


def approximate(E, Q_val, Q_test, exact_index, hnsw_n: int) -> dict:
    out = {}
    _, exact_val = exact_index.search(Q_val, 10)
    _, exact_test = exact_index.search(Q_test, 10)
    exact_s = median_time(lambda: exact_index.search(Q_test, 10), 3) / len(Q_test)
    start = time.perf_counter()
    ivf = Index.from_embeddings(E, backend="ivf")
    build = time.perf_counter() - start
    out["ivf"] = tuned(
        ivf, exact_val, Q_val, Q_test, exact_test, "nprobe", [8, 16, 32, 64, 128, 256]
    )
    out["ivf"] |= {"build_s": build, "speedup": exact_s / out["ivf"]["seconds_per_query"]}
    del ivf
    sub = E[:hnsw_n]
    sub_exact = Index.from_embeddings(sub, backend="exact")
    _, ev = sub_exact.search(Q_val, 10)
    _, et = sub_exact.search(Q_test, 10)
    sub_s = median_time(lambda: sub_exact.search(Q_test, 10), 3) / len(Q_test)
    start = time.perf_counter()
    hnsw = Index.from_embeddings(sub, backend="hnsw")
    build = time.perf_counter() - start
    out["hnsw"] = tuned(hnsw, ev, Q_val, Q_test, et, "ef_search", [16, 32, 64, 128, 256])
    out["hnsw"] |= {"n_items": len(sub), "build_s": build,
                    "speedup": sub_s / out["hnsw"]["seconds_per_query"]}  # fmt: skip
    out["exact_seconds_per_query"] = exact_s
    return out


CHILD = """
import json, sys, time
from pathlib import Path
def rss(field):
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith(field + ':'):
            return int(line.split()[1]) / 1024
import numpy as np, torch
torch.set_num_threads(1)
from rankmetric import Index
import rankmetric.index
before = rss('VmRSS')
Path('/proc/self/clear_refs').write_text('5')
index = Index.load(sys.argv[1], verify=False)
q = np.random.default_rng(0).normal(size=(10, index.dim)).astype(np.float32)
start = time.perf_counter()
index.search(q, 10)
took = time.perf_counter() - start
print(json.dumps({"baseline_mb": before, "peak_mb": rss('VmHWM'), "search_s": took}))
"""


def mmap_memory(n: int, dim: int, folder: Path) -> dict:
    E = catalogue(n, dim, seed=3)
    Index.from_embeddings(E, backend="exact").save(folder / "big")
    del E
    size_mb = (folder / "big" / "vectors.npy").stat().st_size / 2**20
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder / "big")], capture_output=True,
                          text=True, check=True)  # fmt: skip
    child = json.loads(done.stdout.strip().splitlines()[-1])
    extra = child["peak_mb"] - child["baseline_mb"]
    return {"n_items": n, "file_mb": size_mb, "extra_peak_mb": extra, "ratio": extra / size_mb,
            "search_s": child["search_s"]}  # fmt: skip


def dask_cost(index: Index, Q: np.ndarray) -> dict:
    from dask.distributed import Client, LocalCluster

    from rankmetric.index import ShardedIndex

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cl:
        with Client(cl) as client:
            start = time.perf_counter()
            sharded = ShardedIndex(client, index)
            setup = time.perf_counter() - start
            single = median_time(lambda: sharded.search(Q[:1], 10), 5)
            batch = median_time(lambda: sharded.search(Q, 10), 3)
            same = bool(np.array_equal(sharded.search(Q, 10)[1], index.search(Q, 10)[1]))
    return {
        "setup_s": setup,
        "single_s": single,
        "batch_s": batch,
        "queries": len(Q),
        "local_single_s": median_time(lambda: index.search(Q[:1], 10), 5),
        "local_batch_s": median_time(lambda: index.search(Q, 10), 3),
        "identical": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--single", type=int, default=30, help="single queries timed")
    parser.add_argument("--hnsw-n", type=int, default=200_000, help="HNSW catalogue (build cost)")
    parser.add_argument("--n-mmap", type=int, default=5_000_000)
    parser.add_argument("--skip-approximate", action="store_true")
    parser.add_argument("--dask", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    E = catalogue(args.n, args.dim, seed=0)
    queries = catalogue(3000, args.dim, seed=1)
    report = {"n": args.n, "dim": args.dim, "threads": 1}
    with threads(1):
        index = Index.from_embeddings(E, backend="exact")
        report["exact"] = exact_vs_faiss(index, E, queries, args.single)
        print(json.dumps(report, indent=1), flush=True)
        if not args.skip_approximate:
            report["approximate"] = approximate(
                E, queries[1000:2000], queries[2000:], index, args.hnsw_n
            )
            print(json.dumps(report["approximate"], indent=1), flush=True)
        if args.dask:
            report["dask"] = dask_cost(index, queries[:1000])
            print(json.dumps(report["dask"], indent=1), flush=True)
    del index, E
    if args.n_mmap:
        with tempfile.TemporaryDirectory() as tmp:
            report["mmap"] = mmap_memory(args.n_mmap, args.dim, Path(tmp))
        print(json.dumps(report["mmap"], indent=1), flush=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
