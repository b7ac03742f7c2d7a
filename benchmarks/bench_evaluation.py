"""Time and peak memory of ``retrieval_scores`` vs pytorch-metric-learning's AccuracyCalculator.

Both compute precision@1 (= Recall@1 here: every class has several members) and mAP@R on the
same synthetic embeddings (Gaussian class centres plus noise, float32). Each measurement runs in
a fresh process, and its peak resident memory is its own: ``VmHWM`` reset after the imports,
data generation and a small warm-up, minus the resident memory at that point. The peer is
``AccuracyCalculator(include=("precision_at_1", "mean_average_precision_at_r"),
k="max_bin_count")`` with its default faiss k-NN; it keeps every query's top-R list at once
(about 54 bytes × n_queries × R by the count below), so cases where that exceeds
``--peer-memory-gb`` are skipped and the estimate is printed instead.

    python benchmarks/bench_evaluation.py                      # 70k x 128: 100 and 10 classes
    python benchmarks/bench_evaluation.py --repeats 3 --large  # + 10k queries vs 300k gallery
    python benchmarks/bench_evaluation.py --n 20000 --repeats 3  # a quicker run

Prints one table (median seconds over ``--repeats`` runs, largest peak memory above baseline,
scores) and the peer/ours ratios, and the largest score differences where both are defined.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from _memory import reset_peak_mb, run_children, status_mb

PEER_BYTES_PER_NEIGHBOUR = 54  # faiss ids+distances, float labels, masks, int64/float64 buffers


@dataclass(frozen=True)
class Case:
    name: str
    n_gallery: int
    n_queries: int  # 0: leave-one-out within the gallery
    dim: int
    n_classes: int

    @property
    def max_r(self) -> int:
        return round(self.n_gallery / self.n_classes)

    def peer_gb(self) -> float:
        n_queries = self.n_queries or self.n_gallery
        return n_queries * self.max_r * PEER_BYTES_PER_NEIGHBOUR / 2**30


def make_data(case: Case, seed: int = 0):
    """Embeddings and labels of the gallery (and separate queries), float32."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = 0.3 * rng.standard_normal((case.n_classes, case.dim), dtype=np.float32)
    n = case.n_gallery + case.n_queries
    y = rng.integers(0, case.n_classes, n)
    X = rng.standard_normal((n, case.dim), dtype=np.float32)
    X += centres[y]
    gallery = (X[: case.n_gallery], y[: case.n_gallery])
    queries = (X[case.n_gallery :], y[case.n_gallery :]) if case.n_queries else (None, None)
    return gallery, queries


def _ours(gallery, queries):
    from rankmetric.evaluate import retrieval_scores

    scores = retrieval_scores(
        gallery[0],
        gallery[1],
        ks=(1,),
        query_embeddings=queries[0],
        query_labels=queries[1],
        device="cpu",
    )
    return {"P@1": scores["precision@1"], "R@1": scores["recall@1"], "mAP@R": scores["map@r"]}


def _peer(gallery, queries):
    import logging

    import torch
    from pytorch_metric_learning.utils import common_functions
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    common_functions.LOGGER.setLevel(logging.ERROR)
    calc = AccuracyCalculator(
        include=("precision_at_1", "mean_average_precision_at_r"),
        k="max_bin_count",
        device=torch.device("cpu"),
    )
    if queries[0] is None:
        found = calc.get_accuracy(gallery[0], gallery[1])
    else:
        found = calc.get_accuracy(queries[0], queries[1], gallery[0], gallery[1])
    p1 = found["precision_at_1"]
    return {"P@1": p1, "R@1": p1, "mAP@R": found["mean_average_precision_at_r"]}


def child(tool: str, case: Case, threads: int) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import torch

    torch.set_num_threads(threads)
    if tool == "peer":
        import faiss

        faiss.omp_set_num_threads(threads)
    run = _ours if tool == "ours" else _peer
    gallery, queries = make_data(case)
    warm = Case("warm-up", 2000, 0, case.dim, case.n_classes)
    run(*make_data(warm, seed=1))
    base = reset_peak_mb()
    start = time.perf_counter()
    scores = run(gallery, queries)
    seconds = time.perf_counter() - start
    peak = status_mb("VmHWM")
    print(json.dumps({"seconds": seconds, "peak_mb": peak - base, "scores": scores}))


def measure(tool: str, case: Case, threads: int, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child", tool, "--case", json.dumps(asdict(case))]
    runs = run_children([*cmd, "--threads", str(threads)], repeats)
    if isinstance(runs, dict):
        return runs
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "scores": runs[0]["scores"],
        "repeats": repeats,
    }


def knn_backends(n: int, dim: int, k: int, threads: int, repeats: int) -> None:
    """Median time of a leave-one-out ``knn_search`` with the torch and the faiss backends."""
    import numpy as np
    import torch

    from rankmetric.evaluate import knn_search

    torch.set_num_threads(threads)
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
        backends = ("torch", "faiss")
    except ImportError:
        backends = ("torch",)
    X = np.random.default_rng(0).standard_normal((n, dim), dtype=np.float32)
    times, found = {}, {}
    for backend in backends:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            found[backend] = knn_search(X, k=k, backend=backend, device="cpu")[1]
            runs.append(time.perf_counter() - start)
        times[backend] = statistics.median(runs)
    line = f"knn_search, {n} x {dim} leave-one-out, k={k}: torch {times['torch']:.2f} s"
    if "faiss" in times:
        same = np.mean(found["faiss"] == found["torch"])
        line += (
            f", faiss {times['faiss']:.2f} s, faiss/torch = "
            f"{times['faiss'] / times['torch']:.2f}, identical indices {same:.4%}"
        )
    print(line)


def _row(case: Case, tool: str, m: dict) -> str:
    if "skipped" in m or "error" in m:
        return f"| {case.name} | {tool} | {m.get('skipped') or m['error']} | | | |"
    s = m["scores"]
    return (
        f"| {case.name} | {tool} | {m['seconds']:.1f} | {m['peak_mb']:.0f} | "
        f"{s['P@1']:.4f} | {s['mAP@R']:.6f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch and faiss threads")
    parser.add_argument("--repeats", type=int, default=1, help="runs per measurement (median)")
    parser.add_argument("--n", type=int, default=70_000, help="samples of the leave-one-out cases")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument(
        "--large",
        action="store_true",
        help="add 10,000 queries against a 300,000-item gallery (100 classes)",
    )
    parser.add_argument("--no-peer", action="store_true", help="measure rankmetric only")
    parser.add_argument(
        "--peer-memory-gb",
        type=float,
        default=6.0,
        help="skip the peer where its estimated memory exceeds this",
    )
    parser.add_argument("--child", choices=("ours", "peer"), help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Case(**json.loads(args.case)), args.threads)
        return

    cases = [
        Case(
            f"{args.n // 1000}k x {args.dim}, 100 classes (R~{args.n // 100})",
            args.n,
            0,
            args.dim,
            100,
        ),
        Case(
            f"{args.n // 1000}k x {args.dim}, 10 classes (R~{args.n // 10})",
            args.n,
            0,
            args.dim,
            10,
        ),
    ]
    if args.large:
        cases.append(
            Case("10k queries vs 300k x 128, 100 classes (R~3000)", 300_000, 10_000, 128, 100)
        )
    print(
        f"threads={args.threads}, repeats={args.repeats} (median seconds; peak = largest "
        "resident-memory growth over the runs)\n"
    )
    print("| case | tool | seconds | peak MB | P@1 = R@1 | mAP@R |")
    print("|---|---|---|---|---|---|")
    summary = []
    for case in cases:
        ours = measure("ours", case, args.threads, args.repeats)
        print(_row(case, "rankmetric", ours), flush=True)
        if args.no_peer:
            continue
        if case.peer_gb() > args.peer_memory_gb:
            peer = {"skipped": f"skipped: needs ~{case.peer_gb():.0f} GB by estimate"}
        else:
            peer = measure("peer", case, args.threads, args.repeats)
        print(_row(case, "pytorch-metric-learning", peer), flush=True)
        if "seconds" in peer and "seconds" in ours:
            diff = max(abs(ours["scores"][k] - peer["scores"][k]) for k in ("P@1", "R@1", "mAP@R"))
            summary.append(
                f"{case.name}: time peer/ours = {peer['seconds'] / ours['seconds']:.2f}, "
                f"peak memory peer/ours = {peer['peak_mb'] / max(ours['peak_mb'], 1):.1f}, "
                f"largest |score difference| = {diff:.2e}"
            )
    print("\n" + "\n".join(summary))
    print()
    knn_backends(min(args.n, 20_000), args.dim, 10, args.threads, args.repeats)


if __name__ == "__main__":
    main()
