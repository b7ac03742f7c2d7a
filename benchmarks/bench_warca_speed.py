"""WARCA and kernel WARCA fit speed at VIPeR scale against the GEMM bound of a step, XQDA, KISSME.

VIPeR's size (632 identities × 2 views = 1,264 items) with LOMO-size features (``--n-features``,
default 4,000; LOMO itself has 26,960), rank 100, on the synthetic VIPeR stand-in
(:func:`rankmetric.datasets.make_synthetic_reid`, seed 0; VIPeR itself is not available here).
One thread throughout (``torch.set_num_threads(1)``).

For each learner the time per training step is ``(t(b) − t(a)) / (b − a)`` from fixed-step fits of
``a`` and ``b`` steps (``tol=None``, no validation; setup such as the kernel is cancelled out),
median over ``--repeats``. The *bound* of a step is the time of its matrix products alone, run as
plain float32 GEMMs of the same shapes between those fits (so under the same machine load), one
thread; its FLOPs ÷ that time is the GEMM throughput:

* linear WARCA: ``X Wᵀ`` (2·N·D·r) and its weight gradient (2·N·D·r), the detection distances of
  the 2P pair ends to all N items (2·2P·r·N), the AON penalty and its gradient (2·2·r²·D);
* exact kernel WARCA: ``K Aᵀ`` (2·N²·r) and its gradient (2·N²·r), detection, penalty (4·r²·N);
* Nyström kernel WARCA: linear WARCA on the N × m features.

Setup (the kernel matrix, the Nyström map) is reported on its own, and so are XQDA's and
KISSME's whole fits and the steps that validation keeps (``validation_fraction=0.2``,
``validation_split="groups"``, on the same data).

Times are CPU seconds of the process (``time.process_time``; one thread, so this is the time the
work itself took), not wall-clock seconds: on a shared machine the wall clock also counts the
time the process waited for a core, which swings several-fold with the other processes' load
and says nothing about the code. ``--before-src DIR`` times another source tree (e.g. an older
commit's ``src``, ``git archive REV src | tar -x -C DIR``) side by side with this one: every
repeat runs both, alternately, each in a child process, so both see the same load.

    OMP_NUM_THREADS=1 python benchmarks/bench_warca_speed.py            # a few minutes
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_speed.py --n-features 26960 --repeats 1
    git archive f5d443a src | tar -x -C /tmp/before
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_speed.py --before-src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

RANK, LANDMARKS, PAIRS = 100, 500, 512


def gemm_step(n_rows: int, n_in: int, r: int, n_ends: int, n_items: int):
    """The matrix products of one step's bound, as a callable: the forward ``(n_rows × n_in) @
    (n_in × r)``, its weight gradient ``(r × n_rows) @ (n_rows × n_in)``, the detection
    distances ``(n_ends × r) @ (r × n_items)`` and the penalty ``(r × n_in) @ (n_in × r)`` with
    its gradient ``(r × r) @ (r × n_in)``; float32."""
    X, W = torch.randn(n_rows, n_in), torch.randn(r, n_in)
    G, E, F = torch.randn(n_rows, r), torch.randn(n_ends, r), torch.randn(n_items, r)
    R = torch.randn(r, r)

    def run() -> None:
        X @ W.T
        G.T @ X
        E @ F.T
        W @ W.T
        R @ W

    flops = 2 * (2 * n_rows * n_in * r + n_ends * r * n_items + 2 * r * r * n_in)
    return run, flops


def time_call(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return float(np.median(times))


def step_time(make, X, y, a: int, b: int, repeats: int, bound_step) -> tuple[float, float]:
    """Median seconds per step from fits of ``a`` and ``b`` fixed steps (after a warm-up fit),
    and the median time of ``bound_step`` measured between those fits (the same load)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(max_iter=2).fit(X, y)
    per_step, bound = [], []
    for _ in range(repeats):
        times = {}
        for steps in (a, b):
            bound.append(time_call(bound_step, 10))
            est = make(max_iter=steps)
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            times[steps] = time.process_time() - start
            if est.n_iter_ != steps:
                raise RuntimeError(f"the fit stopped at {est.n_iter_} of {steps} steps")
        per_step.append((times[b] - times[a]) / (b - a))
    bound.append(time_call(bound_step, 10))
    return float(np.median(per_step)), float(np.median(bound))


def make_learners(n: int, d: int) -> dict:
    """``{name: (make(**params) -> estimator, bound shape)}`` of the three learners timed."""
    from rankmetric import WARCA, KernelWARCA

    r, m, p = RANK, LANDMARKS, PAIRS
    common = {"n_components": r, "tol": None, "random_state": 0, "learning_rate": None}
    common["validation_fraction"] = 0.0  # no validation while timing steps (as before 0.2)
    # linear WARCA's learning_rate=None spikes on 4,000 standardised features (its first Adam
    # step moves an embedding by ~lr·Σ|x|); 64 / Σ|x| of that step size trains (docs/warca.md)
    linear_lr = 1e-2 * 64 / (0.8 * d)
    return {  # the bound's shapes: rows × inputs of the map, rank, pair ends, items
        "WARCA (linear)": (
            lambda **kw: WARCA(**{**common, "learning_rate": linear_lr}, **kw),
            (n, d, r, 2 * p, n),
        ),
        "KernelWARCA exact (rbf)": (
            lambda **kw: KernelWARCA(kernel="rbf", **common, **kw),
            (n, n, r, 2 * p, n),
        ),
        f"KernelWARCA Nystroem m={m} (rbf)": (
            lambda **kw: KernelWARCA(kernel="rbf", n_landmarks=m, **common, **kw),
            (n, m, r, 2 * p, n),
        ),
    }


def load_data(n_features: int):
    from rankmetric.datasets.synthetic import make_synthetic_reid

    data = make_synthetic_reid(n_features=n_features, random_state=0)
    return data.X.astype(np.float32), data.ids


def worker(args) -> None:
    """``--worker NAME``: one repeat of one learner's step time, as a JSON line."""
    X, y = load_data(args.n_features)
    make, shape = make_learners(*X.shape)[args.worker]
    bound_step, _ = gemm_step(*shape)
    measured, bound = step_time(make, X, y, *args.steps, 1, bound_step)
    print(json.dumps({"step": measured, "bound": bound}))


def profile(args) -> None:
    """``--profile NAME``: where a 100-step fit's CPU time goes, by function (cumulative)."""
    import cProfile
    import pstats

    X, y = load_data(args.n_features)
    names = dict(zip(("linear", "exact", "nystroem"), make_learners(*X.shape), strict=True))
    make, _ = make_learners(*X.shape)[names[args.profile]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(max_iter=2).fit(X, y)  # warm-up
        profiler = cProfile.Profile(timer=time.process_time)
        profiler.runcall(make(max_iter=100).fit, X, y)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def compare_steps(args, names: list[str], shapes: dict) -> None:
    """Step times of ``--before-src`` and of this tree, alternately, in child processes."""
    trees = {
        "before": args.before_src,
        "after": os.path.dirname(os.path.dirname(__import__("rankmetric").__file__)),
    }
    print(f"# before: {trees['before']}; after: {trees['after']}")
    print(
        "\n| learner | before s/step | after s/step | after / before | before bound | "
        "after bound | before ratio | after ratio | GFLOP/step |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for _ in range(args.repeats):
            for tree, src in trees.items():
                command = [sys.executable, __file__, "--worker", name, "--n-features"]
                command += [str(args.n_features), "--steps", *map(str, args.steps)]
                env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                runs[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
        med = {
            tree: {k: float(np.median([run[k] for run in rs])) for k in ("step", "bound")}
            for tree, rs in runs.items()
        }
        b, a = med["before"], med["after"]
        print(
            f"| {name} | {b['step'] * 1e3:.1f} ms | {a['step'] * 1e3:.1f} ms | "
            f"{a['step'] / b['step']:.2f} | {b['bound'] * 1e3:.1f} ms | {a['bound'] * 1e3:.1f} ms"
            f" | {b['step'] / b['bound']:.2f}× | {a['step'] / a['bound']:.2f}× | "
            f"{shapes[name] / 1e9:.2f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-features", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, nargs=2, default=(20, 60))
    parser.add_argument("--setup-repeats", type=int, default=1)
    parser.add_argument(
        "--sections",
        nargs="+",
        default=["steps", "setup", "validation"],
        choices=["steps", "setup", "validation"],
    )
    parser.add_argument("--before-src", help="another source tree to time side by side")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile",
        choices=["linear", "exact", "nystroem"],
        help="instead: cProfile (CPU-time clock) of one 100-step fit of this learner",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.worker:
        return worker(args)
    if args.profile:
        return profile(args)

    from rankmetric import KISSME, XQDA
    from rankmetric.kernels import pairwise_kernel

    X, y = load_data(args.n_features)
    n, d, r = X.shape[0], X.shape[1], RANK
    a, b = args.steps
    print(f"# VIPeR-scale stand-in: N={n} items, D={d} features, rank {r}, one thread")
    print(f"# load average at start: {os.getloadavg()}")
    learners = make_learners(n, d)
    if "steps" in args.sections and args.before_src:
        flops = {name: gemm_step(*shape)[1] for name, (_, shape) in learners.items()}
        compare_steps(args, list(learners), flops)
    print("\n| learner | s/step (median) | GEMM bound s/step | ratio | GFLOP/step | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    steps_here = "steps" in args.sections and not args.before_src
    for name, (make, shape) in learners.items() if steps_here else ():
        bound_step, flops = gemm_step(*shape)
        measured, bound = step_time(make, X, y, a, b, args.repeats, bound_step)
        print(
            f"| {name} | {measured * 1e3:.1f} ms | {bound * 1e3:.1f} ms | "
            f"{measured / bound:.2f}× | {flops / 1e9:.2f} | {flops / bound / 1e9:.1f} |",
            flush=True,
        )

    print("\n| setup or whole fit | seconds (median) |")
    print("|---|---|")
    Xt = torch.as_tensor(X)
    setups = {
        "rbf kernel, N × N": ("rbf", {}),
        "χ²-RBF kernel, N × N, 64 MiB row chunks (0.1)": ("chi2_rbf", {"chunk_elements": 1 << 24}),
        "χ²-RBF kernel, N × N, cache-sized blocks (this version)": ("chi2_rbf", {}),
    }
    for label, (kernel, options) in setups.items() if "setup" in args.sections else ():
        inputs = Xt.abs() if kernel == "chi2_rbf" else Xt  # χ² needs non-negative features
        times = []
        for _ in range(args.setup_repeats):
            start = time.process_time()
            pairwise_kernel(inputs, inputs, kernel, gamma=1.0 / d, **options)
            times.append(time.process_time() - start)
        print(f"| {label} (exact setup) | {np.median(times):.2f} |", flush=True)
    peers = (("XQDA fit", XQDA()), ("KISSME fit", KISSME(n_components=r)))
    for name, est in peers if "setup" in args.sections else ():
        times = []
        for _ in range(args.setup_repeats):
            start = time.process_time()
            est.fit(X, y)
            times.append(time.process_time() - start)
        print(f"| {name} (D={d}) | {np.median(times):.2f} |")

    print("\n| learner (validation_fraction=0.2, groups) | steps taken | step kept | fit s |")
    print("|---|---|---|---|")
    for name, (make, _) in learners.items() if "validation" in args.sections else ():
        est = make(max_iter=2000, validation_fraction=0.2, validation_split="groups")
        est.set_params(tol=1e-2, n_iter_no_change=5)
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        elapsed = time.process_time() - start
        print(f"| {name} | {est.n_iter_} | {est.best_iter_} | {elapsed:.1f} |")
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
