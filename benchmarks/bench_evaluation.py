"""Time and peak memory of ``retrieval_scores`` / ``retrieval_report`` vs pytorch-metric-learning.

Two pairings on the same synthetic embeddings (Gaussian class centres plus noise, float32):

* ``scores``: ``retrieval_scores`` against ``AccuracyCalculator(include=("precision_at_1",
  "mean_average_precision_at_r"), k="max_bin_count")``: P@1 (= Recall@1 here: every class has
  several members) and mAP@R;
* ``report``: ``retrieval_report`` (every score, NMI/AMI by the project's torch k-means, one
  restart) against ``AccuracyCalculator(k="max_bin_count")`` (every score, faiss k-means). PML
  truncates its ranking at the largest class size, so its full mAP and MRR are approximations
  where ours are exact; P@1, mAP@R, R-precision agree. Also ``report-same``:
  ``retrieval_report(include=("precision@1", "map@r"), clustering=False)``, the report on the
  quantities of ``retrieval_scores``; and ``report-pml``: ``retrieval_report(include=("map@r",
  "precision@1", "r_precision", "mrr"))`` with clustering against PML's full report, the scores
  PML's ``k="max_bin_count"`` computes exactly (without our exact full mAP).

Each measurement runs in a fresh process, the tools alternating run by run; wall seconds and
the process's CPU seconds are both reported (medians), and its peak resident memory: ``VmHWM``
reset after the imports, data generation and a small warm-up, minus the resident memory at
that point. PML keeps every query's top-R list at once (about 54 bytes × n_queries × R by the
count below), so cases where that exceeds ``--peer-memory-gb`` are skipped and the estimate is
printed instead. ``--threads 0`` leaves torch's and faiss's default thread counts.

    python benchmarks/bench_evaluation.py                      # 70k x 128: 100 and 10 classes
    python benchmarks/bench_evaluation.py --repeats 3 --large  # + 10k queries vs 300k gallery
    python benchmarks/bench_evaluation.py --n 20000 --dim 64 --repeats 3 --threads 1,0 \
        --ten-classes 0 --pairings scores,report,report-pml --no-knn

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


def _ours_report(gallery, queries, **kw):
    from rankmetric.evaluate import retrieval_report

    scores = retrieval_report(
        gallery[0],
        gallery[1],
        ks=(1,),
        query_embeddings=queries[0],
        query_labels=queries[1],
        device="cpu",
        **kw,
    )
    names = {"precision@1": "P@1", "recall@1": "R@1", "map@r": "mAP@R", "map": "mAP"}
    names.update({"mrr": "MRR", "r_precision": "RP", "nmi": "NMI", "ami": "AMI"})
    return {names[k]: v for k, v in scores.items()}


def _ours_report_same(gallery, queries):
    return _ours_report(gallery, queries, include=("precision@1", "map@r"), clustering=False)


def _ours_report_pml(gallery, queries):
    """The report on what PML's k="max_bin_count" computes exactly (its mAP is truncated)."""
    return _ours_report(gallery, queries, include=("map@r", "precision@1", "r_precision", "mrr"))


def _peer_report(gallery, queries):
    import logging

    import torch
    from pytorch_metric_learning.utils import common_functions
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    common_functions.LOGGER.setLevel(logging.ERROR)
    calc = AccuracyCalculator(k="max_bin_count", device=torch.device("cpu"))
    if queries[0] is None:
        found = calc.get_accuracy(gallery[0], gallery[1])
    else:
        found = calc.get_accuracy(queries[0], queries[1], gallery[0], gallery[1])
    names = {
        "precision_at_1": "P@1",
        "mean_average_precision_at_r": "mAP@R",
        "mean_average_precision": "mAP",
        "mean_reciprocal_rank": "MRR",
        "r_precision": "RP",
        "NMI": "NMI",
        "AMI": "AMI",
    }
    return {names[k]: v for k, v in found.items() if k in names}


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


TOOLS = {
    "ours": "_ours",
    "peer": "_peer",
    "ours-report": "_ours_report",
    "ours-report-same": "_ours_report_same",
    "ours-report-pml": "_ours_report_pml",
    "peer-report": "_peer_report",
}
PAIRINGS = {
    "scores": ("ours", "peer"),
    "report": ("ours-report", "peer-report"),
    "report-same": ("ours-report-same", "ours"),
    "report-pml": ("ours-report-pml", "peer-report"),
}


def child(tool: str, case: Case, threads: int) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)
        try:
            import faiss

            faiss.omp_set_num_threads(threads)
        except ImportError:
            pass
    run = globals()[TOOLS[tool]]
    gallery, queries = make_data(case)
    warm = Case("warm-up", 2000, 0, case.dim, case.n_classes)
    run(*make_data(warm, seed=1))
    base = reset_peak_mb()
    start, cpu = time.perf_counter(), time.process_time()
    scores = run(gallery, queries)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = status_mb("VmHWM")
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak - base, "scores": scores}))


def measure(tools: tuple[str, ...], case: Case, threads: int, repeats: int) -> dict:
    """Median wall and CPU seconds of each tool, the tools alternating run by run."""
    runs = {tool: [] for tool in tools}
    for _ in range(repeats):
        for tool in tools:
            if isinstance(runs[tool], dict):
                continue
            cmd = [sys.executable, __file__, "--child", tool, "--case", json.dumps(asdict(case))]
            found = run_children([*cmd, "--threads", str(threads)], 1)
            runs[tool] = found if isinstance(found, dict) else runs[tool] + found
    out = {}
    for tool, got in runs.items():
        if isinstance(got, dict):
            out[tool] = got
            continue
        out[tool] = {
            "seconds": statistics.median(r["seconds"] for r in got),
            "cpu": statistics.median(r["cpu"] for r in got),
            "peak_mb": max(r["peak_mb"] for r in got),
            "scores": got[0]["scores"],
            "repeats": repeats,
        }
    return out


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
        return f"| {case.name} | {tool} | {m.get('skipped') or m['error']} | | | | |"
    s = m["scores"]
    shown = ", ".join(f"{k} {v:.4f}" for k, v in s.items() if k != "R@1")
    return (
        f"| {case.name} | {tool} | {m['seconds']:.2f} | {m['cpu']:.2f} | {m['peak_mb']:.0f} | "
        f"{shown} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--threads",
        default="2",
        help="torch and faiss threads (0: their defaults); a comma-separated list gives one "
        "table per setting in one run",
    )
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
    parser.add_argument(
        "--pairings",
        default="scores,report,report-same",
        help=f"comma-separated, among {tuple(PAIRINGS)}",
    )
    parser.add_argument(
        "--ten-classes", type=int, default=1, help="also the 10-class case (1) or not (0)"
    )
    parser.add_argument("--no-knn", action="store_true", help="skip the knn_search backends")
    parser.add_argument("--child", choices=tuple(TOOLS), help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = [int(t) for t in str(args.threads).split(",")]
    if args.child:
        child(args.child, Case(**json.loads(args.case)), settings[0])
        return
    for threads in settings:
        _tables(args, threads)
        print()


def _tables(args, n_threads: int) -> None:
    """The table, ratios and k-NN line of one thread setting."""

    n, d = args.n, args.dim
    cases = [Case(f"{n // 1000}k x {d}, 100 classes (R~{n // 100})", n, 0, d, 100)]
    if args.ten_classes:
        cases.append(Case(f"{n // 1000}k x {d}, 10 classes (R~{n // 10})", n, 0, d, 10))
    if args.large:
        cases.append(
            Case("10k queries vs 300k x 128, 100 classes (R~3000)", 300_000, 10_000, 128, 100)
        )
    threads = "default" if n_threads == 0 else n_threads
    print(
        f"threads={threads}, repeats={args.repeats} (median wall and CPU seconds, the tools "
        "alternating; peak = largest resident-memory growth over the runs)\n"
    )
    print("| case | tool | wall s | CPU s | peak MB | scores |")
    print("|---|---|---|---|---|---|")
    summary = []
    for case in cases:
        for pairing in args.pairings.split(","):
            first, second = PAIRINGS[pairing]
            tools = (first,) if args.no_peer and second.startswith("peer") else (first, second)
            if second.startswith("peer") and case.peer_gb() > args.peer_memory_gb:
                tools = (first,)
            found = measure(tools, case, n_threads, args.repeats)
            for tool in tools:
                print(_row(case, tool, found[tool]), flush=True)
            if len(tools) < 2:
                if second.startswith("peer") and not args.no_peer:
                    print(f"| {case.name} | {second} | skipped: needs ~{case.peer_gb():.0f} GB |")
                continue
            a, b = found[first], found[second]
            if "seconds" in a and "seconds" in b:
                common = [
                    k for k in ("P@1", "mAP@R", "RP") if k in a["scores"] and k in b["scores"]
                ]
                diff = max(abs(a["scores"][k] - b["scores"][k]) for k in common)
                summary.append(
                    f"{case.name}, {pairing}: {second}/{first} wall = "
                    f"{b['seconds'] / a['seconds']:.2f}, CPU = {b['cpu'] / a['cpu']:.2f}, "
                    f"peak memory = {b['peak_mb'] / max(a['peak_mb'], 1):.1f}, "
                    f"largest |difference| on {', '.join(common)} = {diff:.2e}"
                )
    print("\n" + "\n".join(summary))
    if not args.no_knn:
        print()
        knn_backends(min(args.n, 20_000), args.dim, 10, max(n_threads, 1), args.repeats)


if __name__ == "__main__":
    main()
