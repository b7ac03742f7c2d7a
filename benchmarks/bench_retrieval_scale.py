"""Large-scale retrieval: 10,000 queries against a 1,000,000 × 128 gallery, in bounded memory.

Three measurements, each in a fresh process; peak memory is the growth of the resident set
above what the process holds once the data exist (the kernel's peak mark ``VmHWM`` is reset
first, so data generation's temporaries do not hide it):

1. ``knn_search`` (k = 10, exact) with the chunked torch backend and with faiss's flat index;
2. ``retrieval_scores`` (P@1 and mAP@R) against pytorch-metric-learning's ``AccuracyCalculator``
   on the same embeddings — this reuses ``bench_evaluation.py`` (its ``measure``), with a case
   of 10,000 classes so that R ≈ 100;
3. ``transform`` of 1,000,000 rows by a fitted WARCA and SSNE (chunked for SSNE).

    python benchmarks/bench_retrieval_scale.py                     # the full 1M case
    python benchmarks/bench_retrieval_scale.py --n-gallery 200000  # a quicker run
    python benchmarks/bench_retrieval_scale.py --no-peer --repeats 3

The data are Gaussian class centres plus noise, float32 (``bench_evaluation.make_data``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _memory import reset_peak_mb, run_children, status_mb  # noqa: E402
from bench_evaluation import Case, make_data  # noqa: E402
from bench_evaluation import measure as measure_evaluation  # noqa: E402

K = 10
TASKS = ("torch", "faiss", "transform-warca", "transform-ssne")


def _search(backend: str, gallery, queries) -> dict:
    from rankmetric.evaluate import knn_search

    _, idx = knn_search(queries[0], gallery[0], k=K, backend=backend, device="cpu")
    return {"recall@1": float((gallery[1][idx[:, 0]] == queries[1]).mean())}


def _fitted(method: str, gallery):
    """A small fit (2,000 samples, few steps): only ``transform`` is measured."""
    from rankmetric.estimators.ssne import SSNE
    from rankmetric.estimators.warca import WARCA

    X, y = gallery[0][:2000], gallery[1][:2000] % 10
    params = dict(n_components=64, max_iter=20, batch_size=128, random_state=0, device="cpu")
    if method == "warca":
        return WARCA(**params).fit(X, y)
    return SSNE(**params).fit(X, y)


def child(task: str, case: Case, threads: int) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import torch

    torch.set_num_threads(threads)
    if task == "faiss":
        import faiss

        faiss.omp_set_num_threads(threads)
    gallery, queries = make_data(case)
    warm = make_data(Case("warm-up", 2000, 100, case.dim, 10), seed=1)
    if task.startswith("transform"):
        model = _fitted(task.split("-")[1], gallery)
        model.transform(warm[0][0])
        run = lambda: {"shape": list(model.transform(gallery[0]).shape)}  # noqa: E731
    else:
        _search(task, *warm)
        run = lambda: _search(task, gallery, queries)  # noqa: E731
    base = reset_peak_mb()
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mb": status_mb("VmHWM") - base, "result": result}))


def measure(task: str, case: Case, threads: int, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child", task, "--case", json.dumps(asdict(case))]
    runs = run_children([*cmd, "--threads", str(threads)], repeats)
    if isinstance(runs, dict):
        return runs
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "result": runs[0]["result"],
    }


def _line(name: str, m: dict) -> str:
    if "error" in m:
        return f"| {name} | error: {m['error']} | | |"
    shown = m.get("result") or m.get("scores")
    return f"| {name} | {m['seconds']:.1f} | {m['peak_mb']:.0f} | {json.dumps(shown)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-gallery", type=int, default=1_000_000)
    parser.add_argument("--n-queries", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2, help="torch and faiss threads")
    parser.add_argument("--repeats", type=int, default=1, help="runs per measurement (median)")
    parser.add_argument("--no-peer", action="store_true", help="skip the evaluation comparison")
    parser.add_argument("--child", choices=TASKS, help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Case(**json.loads(args.case)), args.threads)
        return
    n_classes = max(10, args.n_gallery // 100)  # R ~ 100 relevant items per query
    case = Case(
        f"{args.n_queries} queries vs {args.n_gallery} x {args.dim}",
        args.n_gallery,
        args.n_queries,
        args.dim,
        n_classes,
    )
    gallery_mb = args.n_gallery * args.dim * 4 / 2**20
    print(
        f"{case.name}, {n_classes} classes; threads={args.threads}, repeats={args.repeats} "
        f"(median seconds; peak MB = resident-memory growth above the data, gallery alone "
        f"{gallery_mb:.0f} MB)\n"
    )
    print("| measurement | seconds | peak MB | result |")
    print("|---|---|---|---|")
    found = {}
    for task, name in (
        ("torch", f"knn_search k={K}, torch (chunked)"),
        ("faiss", f"knn_search k={K}, faiss IndexFlatL2"),
        ("transform-warca", f"WARCA(64).transform, {args.n_gallery} rows"),
        ("transform-ssne", f"SSNE(64).transform, {args.n_gallery} rows"),
    ):
        found[task] = measure(task, case, args.threads, args.repeats)
        print(_line(name, found[task]), flush=True)
    if not args.no_peer:
        for tool, name in (
            ("ours", "retrieval_scores (P@1, mAP@R), rankmetric"),
            ("peer", "AccuracyCalculator (P@1, mAP@R), pytorch-metric-learning"),
        ):
            found[tool] = measure_evaluation(tool, case, args.threads, args.repeats)
            print(_line(name, found[tool]), flush=True)
    print()
    for a, b, what in (("faiss", "torch", "knn_search"), ("peer", "ours", "evaluation")):
        if "seconds" in found.get(a, {}) and "seconds" in found.get(b, {}):
            print(
                f"{what}: time {a}/{b} = {found[a]['seconds'] / found[b]['seconds']:.2f}, "
                f"peak memory {a}/{b} = {found[a]['peak_mb'] / max(found[b]['peak_mb'], 1):.2f}"
            )


if __name__ == "__main__":
    main()
