"""WARCA and kernel WARCA fit speed at VIPeR scale against the GEMM bound of a step, XQDA, KISSME.

VIPeR's size (632 identities × 2 views = 1,264 items) with LOMO-size features (``--n-features``,
default 4,000; LOMO itself has 26,960), rank 100, on the synthetic VIPeR stand-in
(:func:`rankmetric.datasets.make_synthetic_reid`, seed 0; VIPeR itself is not available here).
One thread throughout (``torch.set_num_threads(1)``).

For each learner the time per training step is ``(t(b) − t(a)) / (b − a)`` from fixed-step fits of
``a`` and ``b`` steps (``tol=None``, no validation; setup such as the kernel is cancelled out),
median over ``--repeats``. The *bound* of a step is its matrix-product work divided by the GEMM
throughput measured in the same run on the same shapes (float32, one thread):

* linear WARCA: ``X Wᵀ`` (2·N·D·r) and its weight gradient (2·N·D·r), the detection distances of
  the 2P pair ends to all N items (2·2P·r·N), the AON penalty and its gradient (2·2·r²·D);
* exact kernel WARCA: ``K Aᵀ`` (2·N²·r) and its gradient (2·N²·r), detection, penalty (4·r²·N);
* Nyström kernel WARCA: linear WARCA on the N × m features.

Setup (the kernel matrix, the Nyström map) is reported on its own, and so are XQDA's and
KISSME's whole fits and the steps that validation keeps (``validation_fraction=0.2``,
``validation_split="groups"``, on the same data).

    OMP_NUM_THREADS=1 python benchmarks/bench_warca_speed.py            # a few minutes
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_speed.py --n-features 26960 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch

RANK, LANDMARKS, PAIRS = 100, 500, 512


def gemm_rate(m: int, k: int, n: int, repeats: int = 15) -> float:
    """Measured float32 GEMM throughput (FLOP/s) of an (m × k) @ (k × n) product, one thread
    (median of ``repeats``, after one warm-up)."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2.0 * m * k * n / float(np.median(times[1:]))


def step_time(make, X, y, a: int, b: int, repeats: int) -> float:
    """Median seconds per step from fits of ``a`` and ``b`` fixed steps (after a warm-up fit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(max_iter=2).fit(X, y)
    per_step = []
    for _ in range(repeats):
        times = {}
        for steps in (a, b):
            est = make(max_iter=steps)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            times[steps] = time.perf_counter() - start
        per_step.append((times[b] - times[a]) / (b - a))
    return float(np.median(per_step))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-features", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, nargs=2, default=(20, 60))
    parser.add_argument("--setup-repeats", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)

    from rankmetric import KISSME, WARCA, XQDA, KernelWARCA
    from rankmetric.datasets.synthetic import make_synthetic_reid
    from rankmetric.kernels import pairwise_kernel

    data = make_synthetic_reid(n_features=args.n_features, random_state=0)
    X, y = data.X.astype(np.float32), data.ids
    n, d, r, m, p = X.shape[0], X.shape[1], RANK, LANDMARKS, PAIRS
    a, b = args.steps
    print(f"# VIPeR-scale stand-in: N={n} items, D={d} features, rank {r}, one thread")
    print(f"# load average at start: {os.getloadavg()}")

    common = {"n_components": r, "tol": None, "random_state": 0, "learning_rate": None}
    # linear WARCA's learning_rate=None diverges on 4,000 standardised features (its first Adam
    # step moves an embedding by ~lr·Σ|x|); 64 / Σ|x| of that step size trains (docs/warca.md)
    linear_lr = 1e-2 * 64 / (0.8 * d)
    learners = {
        "WARCA (linear)": (
            lambda **kw: WARCA(**{**common, "learning_rate": linear_lr}, **kw),
            2 * 2 * n * d * r + 2 * 2 * p * r * n + 4 * r * r * d,
            (n, d, r),
        ),
        "KernelWARCA exact (rbf)": (
            lambda **kw: KernelWARCA(kernel="rbf", **common, **kw),
            2 * 2 * n * n * r + 2 * 2 * p * r * n + 4 * r * r * n,
            (n, n, r),
        ),
        f"KernelWARCA Nystroem m={m} (rbf)": (
            lambda **kw: KernelWARCA(kernel="rbf", n_landmarks=m, **common, **kw),
            2 * 2 * n * m * r + 2 * 2 * p * r * n + 4 * r * r * m,
            (n, m, r),
        ),
    }
    print("\n| learner | s/step (median) | GEMM bound s/step | ratio | GFLOP/step | GEMM GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for name, (make, flops, shape) in learners.items():
        rate = gemm_rate(*shape)
        measured = step_time(make, X, y, a, b, args.repeats)
        bound = flops / rate
        print(
            f"| {name} | {measured * 1e3:.1f} ms | {bound * 1e3:.1f} ms | "
            f"{measured / bound:.2f}× | {flops / 1e9:.2f} | {rate / 1e9:.1f} |"
        )

    print("\n| setup or whole fit | seconds (median) |")
    print("|---|---|")
    Xt = torch.as_tensor(X)
    for kernel in ("rbf", "chi2_rbf"):
        inputs = Xt.abs() if kernel == "chi2_rbf" else Xt  # χ² needs non-negative features
        times = []
        for _ in range(args.setup_repeats):
            start = time.perf_counter()
            pairwise_kernel(inputs, inputs, kernel, gamma=1.0 / d)
            times.append(time.perf_counter() - start)
        print(f"| {kernel} kernel, N × N (exact setup) | {np.median(times):.2f} |")
    for name, est in (("XQDA fit", XQDA()), ("KISSME fit", KISSME(n_components=r))):
        times = []
        for _ in range(args.setup_repeats):
            start = time.perf_counter()
            est.fit(X, y)
            times.append(time.perf_counter() - start)
        print(f"| {name} (D={d}) | {np.median(times):.2f} |")

    print("\n| learner (validation_fraction=0.2, groups) | steps taken | step kept | fit s |")
    print("|---|---|---|---|")
    for name, (make, _, _) in learners.items():
        est = make(max_iter=2000, validation_fraction=0.2, validation_split="groups")
        est.set_params(tol=1e-2, patience=5)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        elapsed = time.perf_counter() - start
        print(f"| {name} | {est.n_iter_} | {est.best_iter_} | {elapsed:.1f} |")
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
