"""Soak test: many fit / transform / save / load cycles of every estimator, and a long
``knn_search`` loop, recording resident memory and open file descriptors (issue #27, item 6).

Each estimator is fitted on small data (60 samples, 4 features, 3 classes; SPD estimators on
40 SPD matrices 4 × 4), transforms its training data, is saved to a temporary ``.npz`` and
loaded back, ``--cycles`` times in one process. Resident memory (``VmRSS``) and the number of
open file descriptors (``/proc/self/fd``) are sampled after every cycle. The growth reported
is the median of the last quarter of the samples minus the median of the second quarter (the
first quarter is warm-up: allocator pools, lazy imports, torch's caches); "growth/cycle" is
that difference divided by the cycles between the two quarters' midpoints::

    OMP_NUM_THREADS=1 python benchmarks/bench_soak.py --cycles 1000 --search-loops 10000

Prints one table row per estimator (and one for ``knn_search``), and ``--json`` writes them.
Linux only (``/proc/self``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not in /proc/self/status")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _estimators():
    import rankmetric as rm

    return {
        "WARCA": (lambda: rm.WARCA(max_iter=5, random_state=0, device="cpu"), "vec"),
        "KernelWARCA": (
            lambda: rm.KernelWARCA(kernel="rbf", max_iter=5, random_state=0, device="cpu"),
            "vec",
        ),
        "SSNE": (lambda: rm.SSNE(max_iter=5, random_state=0, device="cpu"), "vec"),
        "LMNN": (lambda: rm.LMNN(max_iter=5, random_state=0, device="cpu"), "vec"),
        "MultiMetricLMNN": (
            lambda: rm.MultiMetricLMNN(max_iter=5, n_clusters=2, random_state=0, device="cpu"),
            "vec",
        ),
        "ITML": (lambda: rm.ITML(max_iter=5, random_state=0), "vec"),
        "KISSME": (lambda: rm.KISSME(), "vec"),
        "XQDA": (lambda: rm.XQDA(), "vec"),
        "RPLEmbedding": (lambda: rm.RPLEmbedding(max_iter=5, random_state=0, device="cpu"), "spd"),
        "SPDNetEmbedding": (
            lambda: rm.SPDNetEmbedding(max_iter=5, random_state=0, device="cpu"),
            "spd",
        ),
    }


def _data(kind: str):
    from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters

    if kind == "spd":
        return make_spd_clusters(40, 4, 2, random_state=0)
    return make_gaussian_clusters(60, 4, 3, n_informative=2, random_state=0)


def growth(samples: list[float]) -> tuple[float, float]:
    """(last-quarter median − second-quarter median, that per cycle)."""
    n = len(samples)
    q = max(n // 4, 1)
    second, last = samples[q : 2 * q] or samples, samples[n - q :]
    delta = statistics.median(last) - statistics.median(second)
    cycles = max((n - q / 2) - (1.5 * q), 1)
    return delta, delta / cycles


def _use(est, X):
    """``transform`` (``predict`` for multiple-metric LMNN, which has no single embedding)."""
    return est.transform(X) if hasattr(est, "transform") else est.predict(X)


def soak_estimator(make, kind: str, cycles: int, folder: Path, trace: int = 0) -> dict:
    from rankmetric.io import load_model

    X, y = _data(kind)
    path = folder / "model.npz"
    rss, fds = [], []
    start = time.perf_counter()
    for _ in range(cycles):
        est = make().fit(X, y)
        _use(est, X)
        est.save(path)
        _use(load_model(path), X)
        rss.append(rss_mb())
        fds.append(open_fds())
        if trace and len(rss) % trace == 0:
            print(f"  cycle {len(rss)}: RSS {rss[-1]:.1f} MB, {fds[-1]} fds", flush=True)
    return _row(rss, fds, cycles, time.perf_counter() - start)


def soak_search(loops: int) -> dict:
    from rankmetric.evaluate import knn_search

    rng = np.random.default_rng(0)
    G = rng.standard_normal((2000, 16)).astype(np.float32)
    Q = rng.standard_normal((200, 16)).astype(np.float32)
    rss, fds = [], []
    start = time.perf_counter()
    for i in range(loops):
        knn_search(Q, G, k=10, device="cpu")
        if i % 10 == 0:
            rss.append(rss_mb())
            fds.append(open_fds())
    return _row(rss, fds, loops, time.perf_counter() - start, every=10)


def _row(rss, fds, cycles, seconds, every: int = 1) -> dict:
    rss_growth, per_sample = growth(rss)
    fd_growth, _ = growth([float(f) for f in fds])
    return {
        "cycles": cycles,
        "seconds": round(seconds, 1),
        "rss_start_mb": round(rss[0], 1),
        "rss_end_mb": round(rss[-1], 1),
        "rss_max_mb": round(max(rss), 1),
        "rss_growth_mb": round(rss_growth, 2),
        "rss_growth_kb_per_cycle": round(per_sample * 1024 / every, 3),
        "fds_start": fds[0],
        "fds_end": fds[-1],
        "fd_growth": fd_growth,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--search-loops", type=int, default=10000)
    parser.add_argument("--only", nargs="*", help="estimator names (default: every one)")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--trace", type=int, default=0, help="print RSS every N cycles")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter=5, by design
    rows = {}
    header = (
        f"{'what':<16} {'cycles':>6} {'s':>7} {'RSS start':>9} {'RSS end':>8} {'RSS max':>8} "
        f"{'growth MB':>9} {'KB/cycle':>8} {'fds':>7}"
    )
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, kind) in _estimators().items():
            if args.only and name not in args.only:
                continue
            rows[name] = soak_estimator(make, kind, args.cycles, Path(tmp), args.trace)
            _print(name, rows[name])
    if args.search_loops:
        rows["knn_search"] = soak_search(args.search_loops)
        _print("knn_search", rows["knn_search"])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


def _print(name: str, r: dict) -> None:
    print(
        f"{name:<16} {r['cycles']:>6} {r['seconds']:>7.1f} {r['rss_start_mb']:>9.1f} "
        f"{r['rss_end_mb']:>8.1f} {r['rss_max_mb']:>8.1f} {r['rss_growth_mb']:>9.2f} "
        f"{r['rss_growth_kb_per_cycle']:>8.3f} {r['fds_start']:>3}→{r['fds_end']:<3}",
        flush=True,
    )


if __name__ == "__main__":
    main()
