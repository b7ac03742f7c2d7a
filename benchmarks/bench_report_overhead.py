"""What ``retrieval_report`` costs over ``retrieval_scores`` on the same embeddings, in one process.

Median process CPU time of 5 calls each (after one warm-up call), one thread, on synthetic
float32 embeddings (Gaussian class centres plus noise, leave-one-out): ``retrieval_scores``;
``retrieval_report`` with every score and NMI/AMI (torch k-means, one restart); without the
clustering; and on ``retrieval_scores``' quantities (``include=("precision@1", "map@r",
"recall@k")``, no clustering). The default is issue 35's Fashion-MNIST-sized 3,000 × 64.

    OMP_NUM_THREADS=1 python benchmarks/bench_report_overhead.py
    OMP_NUM_THREADS=1 python benchmarks/bench_report_overhead.py --n 20000 --classes 100
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from rankmetric.evaluate import retrieval_report, retrieval_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((args.classes, args.dim)).astype(np.float32)
    y = rng.integers(0, args.classes, args.n)
    X = rng.standard_normal((args.n, args.dim), dtype=np.float32) + centres[y]
    calls = {
        "retrieval_scores": lambda: retrieval_scores(X, y, ks=(1,), device="cpu"),
        "retrieval_report": lambda: retrieval_report(X, y, device="cpu"),
        "retrieval_report(clustering=False)": lambda: retrieval_report(
            X, y, device="cpu", clustering=False
        ),
        "retrieval_report(include=scores' quantities, clustering=False)": lambda: retrieval_report(
            X, y, device="cpu", clustering=False, include=("precision@1", "map@r", "recall@k")
        ),
    }
    times = {}
    for name, call in calls.items():
        call()  # warm-up
        runs = []
        for _ in range(args.repeats):
            start = time.process_time()
            call()
            runs.append(time.process_time() - start)
        times[name] = statistics.median(runs)
    print(f"{args.n} x {args.dim}, {args.classes} classes, leave-one-out, 1 thread, median CPU "
          f"time of {args.repeats}")  # fmt: skip
    base = times["retrieval_scores"]
    for name, seconds in times.items():
        print(f"{name}: {seconds * 1e3:.1f} ms ({seconds / base:.2f}x retrieval_scores)")


if __name__ == "__main__":
    main()
