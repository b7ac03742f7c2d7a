"""Fit-time scaling of linear WARCA with the number of samples N (D=128, r=32, fixed steps).

Each (N, method) runs in its own process so that its peak resident memory (``VmHWM``) is its
own. Ours is the batched WARP estimator; the peer is the reference code's sequential sampler
(draws until the first violator, vectorised across pairs) at the same number of steps, and
scikit-learn's NCA where its N × N matrices fit (it has no fixed-step mode: ``max_iter`` L-BFGS
iterations).

    python benchmarks/bench_warca_scaling.py                # N = 10k, 100k (a few minutes)
    python benchmarks/bench_warca_scaling.py --full         # adds N = 1M (X alone is 512 MB)

Data: 100 Gaussian classes in D=128 (float32), seed 0. Time is the median over ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from sklearn.base import clone

from _memory import reset_peak_mb, status_mb

DIM, RANK, CLASSES = 128, 32, 100


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of 100 Gaussian classes in 128 dimensions, float32, built in place."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLASSES, DIM), dtype=np.float32) * 0.5
    y = rng.integers(0, CLASSES, n)
    X = rng.standard_normal((n, DIM), dtype=np.float32)
    for start in range(0, n, 65536):
        X[start : start + 65536] += centres[y[start : start + 65536]]
    return X, y


def worker(n: int, method: str, steps: int, threads: int) -> dict:
    """Fit once in this process; return seconds and peak memory."""
    import torch

    torch.set_num_threads(threads)
    X, y = make_data(n)
    if method == "nca":
        from sklearn.neighbors import NeighborhoodComponentsAnalysis

        est = NeighborhoodComponentsAnalysis(n_components=RANK, max_iter=steps, random_state=0)
    else:
        from rankmetric.estimators.warca import WARCA

        est = WARCA(
            n_components=RANK,
            max_iter=steps,
            tol=None,  # fixed steps
            sampling=method,
            random_state=0,
            device="cpu",
        )
    clone(est).set_params(max_iter=2).fit(X[:2000], y[:2000])  # one-time library set-up
    base_rss = reset_peak_mb()
    start = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - start
    peak = status_mb("VmHWM")
    return {
        "seconds": seconds,
        "peak_mb": peak,
        "data_mb": X.nbytes / 2**20,
        "extra_mb": peak - base_rss,
    }


def run(n: int, method: str, steps: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(n), method, str(steps), str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also N = 1,000,000")
    parser.add_argument("--steps", type=int, default=500, help="WARCA steps (default 500)")
    parser.add_argument("--nca-iter", type=int, default=5, help="NCA L-BFGS iterations")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-sequential", action="store_true")
    parser.add_argument("--no-nca", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        n, method, steps, threads = args.worker
        print(json.dumps(worker(int(n), method, int(steps), int(threads))))
        return
    sizes = [10_000, 100_000] + ([1_000_000] if args.full else [])
    print(
        f"linear WARCA fit time, D={DIM}, r={RANK}, {args.steps} steps, batch 512 pairs, "
        f"torch threads={args.threads}, load average {os.getloadavg()[0]:.1f}"
    )
    header = (
        f"{'N':>9} {'method':<22} {'fit s':>8} {'s/step ms':>9} {'peak MB':>8} {'X MB':>6} "
        f"{'vs batched':>10}"
    )
    print(header)
    for n in sizes:
        methods = [("batched", args.steps)]
        if not args.no_sequential:
            methods.append(("sequential", args.steps))
        if n <= 10_000 and not args.no_nca:
            methods.append(("nca", args.nca_iter))
        base = None
        for method, steps in methods:
            runs = [run(n, method, steps, args.threads) for _ in range(args.repeats)]
            seconds = float(np.median([r["seconds"] for r in runs]))
            base = seconds if base is None else base
            label = {
                "batched": "WARCA batched (ours)",
                "sequential": "WARCA sequential (ref)",
                "nca": f"sklearn NCA ({steps} it)",
            }[method]
            per_step = 1000 * seconds / steps
            print(
                f"{n:>9} {label:<22} {seconds:>8.2f} {per_step:>9.1f} "
                f"{runs[0]['peak_mb']:>8.0f} {runs[0]['data_mb']:>6.0f} {seconds / base:>10.2f}",
                flush=True,
            )
        if n > 10_000:
            gb = n * n * 8 / 2**30
            print(f"{n:>9} {'sklearn NCA':<22} {'n/a: N×N float64 = ' + f'{gb:.0f} GB':>30}")


if __name__ == "__main__":
    main()
