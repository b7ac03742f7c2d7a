"""SPD geometry speed: ``rankmetric.geometry`` against pyRiemann on the same random SPD matrices.

Rows (defaults: c = 32, float64 for both libraries unless the row says otherwise):

* pairwise AIRM: the distance matrix of ``--n-pairwise`` (1000) matrices, ``pairwise_airm(X)``
  against ``pyriemann.geometry.distance.pairwise_distance(X, metric="riemann")``; also ours in
  float32 (pyRiemann still float64: a precision trade, marked);
* pairwise log-Euclidean, same sizes;
* Riemannian mean of ``--n-mean`` (500) matrices, tol 1e-8, at most 50 iterations, both;
* AIRM distance of ``--n-pairs`` (1000) pairs: ours forward + backward (gradients with respect to
  both inputs) against pyRiemann's forward alone, since pyRiemann has no backward.

Each row times ours and pyRiemann alternately in this one process, ``--repeats`` times (the two
pairwise AIRM rows share pyRiemann's runs), and prints
the medians, the ratio pyRiemann / ours (> 1: ours is faster) and the largest absolute difference
between the two results. ``torch.set_num_threads(--threads)`` and ``threadpoolctl`` cap torch and
NumPy's BLAS at the same thread count. With ``--device cuda`` ours runs on the GPU (synchronised
before the clock stops) and pyRiemann on the CPU.

Run: ``.venv/bin/python benchmarks/bench_geometry.py`` (about 5 minutes at one thread on a quiet
CPU, most of it pyRiemann's pairwise matrix; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from pyriemann.geometry.distance import distance_riemann, pairwise_distance
from pyriemann.geometry.mean import mean_riemann
from threadpoolctl import threadpool_limits

from rankmetric.geometry import (
    airm_distance,
    pairwise_airm,
    pairwise_log_euclidean,
    riemannian_mean,
)


@dataclass
class Row:
    name: str
    ours: Callable[[], torch.Tensor]
    theirs: Callable[[], np.ndarray]
    note: str = ""
    theirs_key: str = ""  # rows with the same key share one measurement of pyRiemann


def random_spd(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """Sample covariances of 2c Gaussian samples (plus a small ridge), float64 (n, c, c)."""
    Z = rng.standard_normal((n, c, 2 * c))
    return Z @ np.swapaxes(Z, -1, -2) / (2 * c) + 1e-3 * np.eye(c)


def build_rows(args: argparse.Namespace) -> list[Row]:
    rng = np.random.default_rng(args.seed)
    device = torch.device(args.device)
    X = random_spd(rng, args.n_pairwise, args.c)
    M = random_spd(rng, args.n_mean, args.c)
    A, B = random_spd(rng, args.n_pairs, args.c), random_spd(rng, args.n_pairs, args.c)
    Xt = torch.from_numpy(X).to(device)
    Mt = torch.from_numpy(M).to(device)
    At, Bt = torch.from_numpy(A).to(device), torch.from_numpy(B).to(device)

    def forward_backward() -> torch.Tensor:
        A_, B_ = At.clone().requires_grad_(), Bt.clone().requires_grad_()
        d = airm_distance(A_, B_)
        d.sum().backward()
        return d.detach()

    n, m, k = args.n_pairwise, args.n_mean, args.n_pairs
    return [
        Row(
            f"pairwise AIRM {n}x{n}",
            lambda: pairwise_airm(Xt),
            lambda: pairwise_distance(X, metric="riemann"),
            theirs_key="pairwise-riemann",
        ),
        Row(
            f"pairwise AIRM {n}x{n}, ours float32",
            lambda: pairwise_airm(Xt.float()),
            lambda: pairwise_distance(X, metric="riemann"),
            "ours float32 vs pyRiemann float64 (same pyRiemann run as above)",
            theirs_key="pairwise-riemann",
        ),
        Row(
            f"pairwise log-Euclidean {n}x{n}",
            lambda: pairwise_log_euclidean(Xt),
            lambda: pairwise_distance(X, metric="logeuclid"),
        ),
        Row(
            f"Riemannian mean of {m}",
            lambda: riemannian_mean(Mt, tol=1e-8, max_iter=50),
            lambda: mean_riemann(M, tol=1e-8, maxiter=50),
        ),
        Row(
            f"AIRM distance, {k} pairs",
            forward_backward,
            lambda: distance_riemann(A, B),
            "ours forward+backward vs pyRiemann forward only",
        ),
    ]


def timed(fn: Callable, device: torch.device) -> tuple[float, object]:
    """Wall time of one call (after a device synchronisation) and its result."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def measure(row: Row, repeats: int, device: torch.device, cache: dict) -> dict:
    """Median times of ours and pyRiemann, alternating; pyRiemann reused across rows by key."""
    if device.type == "cuda":
        timed(row.ours, device)  # warm-up: CUDA context, kernels, allocator
    shared = cache.get(row.theirs_key) if row.theirs_key else None
    ours_times, theirs_times = [], [] if shared is None else shared[0]
    for _ in range(repeats):
        t, ours = timed(row.ours, device)
        ours_times.append(t)
        if shared is None:
            t, theirs = timed(row.theirs, torch.device("cpu"))
            theirs_times.append(t)
    theirs = theirs if shared is None else shared[1]
    if row.theirs_key:
        cache[row.theirs_key] = (theirs_times, theirs)
    ours_s, theirs_s = statistics.median(ours_times), statistics.median(theirs_times)
    difference = np.abs(ours.double().cpu().numpy() - np.asarray(theirs)).max()
    return {
        "row": row.name,
        "ours_s": ours_s,
        "pyriemann_s": theirs_s,
        "ratio": theirs_s / ours_s,
        "max_abs_diff": float(difference),
        "note": row.note,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-pairwise", type=int, default=1000)
    parser.add_argument("--n-mean", type=int, default=500)
    parser.add_argument("--n-pairs", type=int, default=1000)
    parser.add_argument("--c", type=int, default=32, help="matrix size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", default="", help="comma-separated substrings selecting rows")
    parser.add_argument("--quick", action="store_true", help="n-pairwise 200, n-mean 100")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_pairwise, args.n_mean, args.n_pairs, args.repeats = 200, 100, 200, 1
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    wanted = [s for s in args.rows.split(",") if s]
    rows = [r for r in build_rows(args) if not wanted or any(s in r.name for s in wanted)]
    print(
        f"# c={args.c}, threads={args.threads}, device={args.device}, repeats={args.repeats}, "
        f"torch {torch.__version__}; medians; ratio = pyRiemann / ours"
    )
    print(f"{'row':44s} {'ours s':>9s} {'pyRiemann s':>12s} {'ratio':>7s} {'max|diff|':>10s}  note")
    results, cache = [], {}
    with threadpool_limits(args.threads):
        for row in rows:
            r = measure(row, args.repeats, device, cache)
            results.append(r)
            print(
                f"{r['row']:44s} {r['ours_s']:9.3f} {r['pyriemann_s']:12.3f} {r['ratio']:6.2f}x "
                f"{r['max_abs_diff']:10.1e}  {r['note']}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
