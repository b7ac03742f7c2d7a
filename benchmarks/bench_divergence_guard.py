"""The training loss of fits the divergence guard judges, recorded with the guard off.

For each fit (training identities only: no test fold is read) this script records the training
loss of every step with the divergence guard disabled, then prints the loss's course (first step,
the means of the first 10-step windows, the last window), how long the 10-step mean stays above
10 times the first step's loss, and where a rule stops it:

* the guard of commit ed508af ("old"): the 10-step mean above 10× the first step's;
* the guard of :func:`rankmetric.training.train` now ("now"), replayed on the recorded losses.

The fits: Kernel WARCA with the bench's pinned 0.2 settings (``bench.warca.KERNEL_WARCA_02``,
RBF, both of the bench's ``reg_lambda`` candidates) on splits 0–2 of ``multicam-reid`` and split 0
of ``synthetic-reid`` and ``fmnist-views`` (the bench's preprocessing); issue 22's case
(``fmnist-hist`` split 0, ``learning_rate=None`` without the kernel factor); 0.1's step size on
the 1,264 Dirichlet histograms of ``bench_kernel_warca_defaults.py``; linear WARCA's
``learning_rate=None`` on 4,000 standardised features (``bench_warca_speed.py``'s data); and a
deliberately huge ``learning_rate=1.0`` on ``multicam-reid`` split 0.

    OMP_NUM_THREADS=1 python benchmarks/bench_divergence_guard.py      # ~6 min
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

import rankmetric.estimators.warca.kernel as kernel_warca
import rankmetric.estimators.warca.solver as solver
from rankmetric import WARCA, KernelWARCA
from rankmetric.bench.reid_data import load_reid
from rankmetric.bench.warca import KERNEL_WARCA_02
from rankmetric.training import Stopping, train

WINDOW, FACTOR = 10, 10.0
STEPS = 400


def bench_features(name: str, data, rows: np.ndarray) -> np.ndarray:
    """The bench's inputs of the RBF rows: PCA-64 on image views, then standardised, fitted on
    the training rows."""
    X = data.X
    if name == "fmnist-views":
        X = PCA(n_components=64, random_state=0).fit(X[rows]).transform(X)
    return StandardScaler().fit(X[rows]).transform(X)[rows]


def cases():
    """``(name, make estimator, X, y)`` of each fit, lazily."""
    pinned = {"kernel": "rbf", "max_iter": STEPS, "random_state": 0, **KERNEL_WARCA_02}
    pinned["held_out_check"] = False
    for name, splits in (("multicam-reid", (0, 1, 2)), ("synthetic-reid", (0,)),
                         ("fmnist-views", (0,))):  # fmt: skip
        data = load_reid(name)
        for split in splits:
            rows = data.rows(data.split(split)[0])
            X, y = bench_features(name, data, rows), data.ids[rows]
            for lam in (1e-3, 1e-2):
                yield (f"{name} split {split}, bench 0.2, λ={lam:g}",
                       functools.partial(KernelWARCA, **pinned, reg_lambda=lam), X, y)  # fmt: skip
            if name == "multicam-reid" and split == 0:
                huge = {**pinned, "learning_rate": 1.0}
                yield (f"{name} split 0, learning_rate=1.0",
                       functools.partial(KernelWARCA, **huge), X, y)  # fmt: skip
    data = load_reid("fmnist-hist")
    rows = data.rows(data.split(0)[0])
    auto = {"batch_size": None, "learning_rate": None, "tol_window": None, "tol": None}
    auto.update(validation_fraction=0.0, held_out_check=False, max_iter=STEPS, random_state=0)
    yield ("fmnist-hist split 0, issue 22 (None, no kernel factor)",
           functools.partial(KernelWARCA, **auto), data.X[rows], data.ids[rows])  # fmt: skip
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_kernel_warca_defaults import dirichlet_histograms

    big = dirichlet_histograms()
    old = {"learning_rate": 1e-2, "max_iter": 200, "tol": None, "validation_fraction": 0.0}
    yield ("dirichlet 1,264 items, learning_rate=0.01",
           functools.partial(KernelWARCA, **old, held_out_check=False, random_state=0),
           big.X, big.ids)  # fmt: skip
    from rankmetric.datasets.synthetic import make_synthetic_reid

    wide = make_synthetic_reid(n_features=4000, random_state=0)
    linear = {"n_components": 100, "tol": None, "learning_rate": None, "max_iter": 200}
    linear.update(validation_fraction=0.0, held_out_check=False, random_state=0)
    yield ("linear WARCA, 4,000 features, learning_rate=None",
           functools.partial(WARCA, **linear), wide.X.astype(np.float32), wide.ids)  # fmt: skip


def guard_off_curve(make, X, y) -> np.ndarray:
    """The training loss of every step of ``make().fit(X, y)`` with the guard disabled."""
    default = solver.Stopping
    solver.Stopping = functools.partial(Stopping, divergence_factor=None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(make().fit(X, y).loss_curve_, dtype=np.float64)
    finally:
        solver.Stopping = default


def guard_now(losses: np.ndarray) -> int | None:
    """The step at which :func:`train`'s guard stops ``losses`` (replayed), or ``None``."""
    weight = torch.nn.Parameter(torch.zeros(1))
    module = torch.nn.Module()
    module.weight = weight
    values = torch.as_tensor(losses)

    def loss_step(step):
        return weight.sum() * 0 + values[step]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train(module, torch.optim.SGD([weight], lr=0.0), loss_step,
                       rng=np.random.default_rng(0), max_iter=len(losses))  # fmt: skip
    return result.n_iter if result.diverged else None


def describe(losses: np.ndarray) -> dict:
    threshold = losses[0] + (FACTOR - 1) * abs(losses[0])
    windowed = np.convolve(losses, np.full(WINDOW, 1 / WINDOW), mode="valid")  # ends at step i+10
    above = windowed > threshold
    run = longest = 0
    for a in above:
        run = run + 1 if a else 0
        longest = max(longest, run)
    # the largest windowed loss above the threshold against the largest of the 10 steps before
    ratios = [windowed[i] / windowed[i - WINDOW : i].max()
              for i in range(WINDOW, len(windowed)) if above[i]]  # fmt: skip
    blocks = losses[: len(losses) // WINDOW * WINDOW].reshape(-1, WINDOW).mean(axis=1)
    return {
        "first": losses[0],
        "windows": blocks[:6],
        "last": losses[-WINDOW:].mean(),
        "above": int((blocks > threshold).sum()),
        "longest": longest,
        "ratio": max(ratios) if ratios else math.nan,
        "old": int(np.argmax(above)) + WINDOW if above.any() else None,
    }


def main() -> None:
    torch.set_num_threads(1)
    print(f"# load average at start: {os.getloadavg()}")
    print(
        "| fit (guard off) | steps | first | 10-step means 1–6 | last 10 | windows above 10× "
        "| longest run above (steps) | largest ratio to the 10 before | old stop | now |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    default_mass = kernel_warca.KERNEL_ROW_MASS
    for name, make, X, y in cases():
        if "no kernel factor" in name:
            kernel_warca.KERNEL_ROW_MASS = math.inf
        try:
            losses = guard_off_curve(make, X, y)
        finally:
            kernel_warca.KERNEL_ROW_MASS = default_mass
        d = describe(losses)
        now = guard_now(losses)
        means = ", ".join(f"{m:.4g}" for m in d["windows"])
        print(f"| {name} | {len(losses)} | {d['first']:.3g} | {means} | {d['last']:.3g} | "
              f"{d['above']} | {d['longest']} | {d['ratio']:.2f} | {d['old'] or 'none'} | "
              f"{now or 'none'} |", flush=True)  # fmt: skip
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
