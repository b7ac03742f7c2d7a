"""Kernel WARCA's ``learning_rate=None`` before and after it scaled to the kernel (fmnist-hist).

The case of issue 22: ``KernelWARCA(batch_size=None, learning_rate=None, tol_window=None)``,
documented "as in WARCA", used WARCA's step size on the N-column kernel rows and diverged. This
script fits, on the training identities of split 0 of the bundled stand-in ``fmnist-hist``
(316 identities × 2 views, 156 stripe-histogram bins; a stand-in, not VIPeR), seed 0:

* 0.1's defaults (512 pairs, learning rate 0.01, 50-step window);
* the scaled-to-the-data schedule as 0.1 had it (``KERNEL_ROW_MASS = inf``: no kernel factor),
  now stopped by the divergence guard;
* the same schedule with the step size scaled to the kernel rows (this version);
* that, with early stopping on held-out validation identities (``validation_fraction=0.2``,
  ``validation_split="groups"``).

It prints the steps, the step size, the loss (first step, largest, mean of the last 10 steps),
the two-view CMC rank 1 on split 0's test identities (reported, never used to choose anything)
beside the Euclidean distance's, and the warnings issued.

It then fits all 1,264 items (VIPeR's size) of the synthetic Dirichlet histograms of
``bench_kernel_warca_defaults.py`` for 200 steps with the 0.1 step size and with ``None``.

    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_warca_schedule.py      # ~5 min
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import torch

import rankmetric.estimators.warca.kernel as kernel_warca
from rankmetric import KernelWARCA
from rankmetric.bench.reid_data import load_reid

AUTO = {"batch_size": None, "learning_rate": None, "tol_window": None, "validation_fraction": 0.0}
CASES = {  # no held-out identities unless the case says so (the default holds some out now)
    "0.1 defaults (512 pairs, learning_rate=0.01)": (
        {"learning_rate": 1e-2, "validation_fraction": 0.0},
        math.inf,
    ),
    "None schedule as in 0.1 (no kernel factor)": (AUTO, math.inf),
    "None schedule, scaled to the kernel": (AUTO, kernel_warca.KERNEL_ROW_MASS),
    "... + validation_fraction=0.2, groups": (
        {**AUTO, "validation_fraction": 0.2, "validation_split": "groups"},
        kernel_warca.KERNEL_ROW_MASS,
    ),
}


def rank1(Z, ids, camera) -> float:
    P, G = torch.as_tensor(Z[camera == 0]).double(), torch.as_tensor(Z[camera == 1]).double()
    return float(np.mean(ids[camera == 1][torch.cdist(P, G).argmin(1).numpy()] == ids[camera == 0]))


def main() -> None:
    torch.set_num_threads(1)
    print(f"# load average at start: {os.getloadavg()}")
    data = load_reid("fmnist-hist")
    train_ids, test_ids = data.split(0)
    rows, test = data.rows(train_ids), data.rows(test_ids)
    X, y = data.X[rows], data.ids[rows]
    euclid = rank1(data.X[test], data.ids[test], data.camera[test])
    print(f"Euclidean rank 1 on the test identities: {100 * euclid:.1f} %\n")
    print("| fit | steps | step size | loss: first / largest / last 10 | test rank 1 | warnings |")
    print("|---|---|---|---|---|---|")
    default_mass = kernel_warca.KERNEL_ROW_MASS
    for name, (params, mass) in CASES.items():
        kernel_warca.KERNEL_ROW_MASS = mass
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = KernelWARCA(random_state=0, **params).fit(X, y)
        finally:
            kernel_warca.KERNEL_ROW_MASS = default_mass
        loss = np.asarray(model.loss_curve_)
        said = "; ".join(
            str(w.message).split(":")[1].split(",")[0].strip()[:60]
            for w in caught
            if w.category.__name__ == "UntrainedModelWarning"
        )
        print(
            f"| {name} | {model.n_iter_} | {model.learning_rate_:.4f} | "
            f"{loss[0]:.2f} / {loss.max():.1f} / {loss[-10:].mean():.2f} | "
            f"{100 * rank1(model.transform(data.X[test]), data.ids[test], data.camera[test]):.1f} %"
            f" | {said or 'none'} |",
            flush=True,
        )
    # VIPeR's size: all 1,264 items of the synthetic Dirichlet histograms (632 identities × 2
    # cameras, 64 bins) of bench_kernel_warca_defaults.py; 200 fixed steps
    from bench_kernel_warca_defaults import dirichlet_histograms

    big = dirichlet_histograms()
    print("\n| 1,264 items (dirichlet), 200 steps | step size | loss: first / largest | diverged |")
    print("|---|---|---|---|")
    for name, lr in (("learning_rate=0.01 (0.1 default)", 1e-2), ("learning_rate=None", None)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = KernelWARCA(
                learning_rate=lr, max_iter=200, tol=None, validation_fraction=0.0, random_state=0
            )
            model.fit(big.X, big.ids)
        loss = np.asarray(model.loss_curve_)
        diverged = any("diverged" in str(w.message) for w in caught)
        print(
            f"| {name} | {model.learning_rate_:.4f} | {loss[0]:.2f} / {loss.max():.1f} | "
            f"{'yes, at step ' + str(model.n_iter_) if diverged else 'no'} |",
            flush=True,
        )
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
