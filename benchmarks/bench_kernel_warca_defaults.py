"""Kernel WARCA's defaults chosen on validation identities of several histogram stand-ins.

Each candidate changes one setting of the current defaults (step size rule, kernel width rule,
rank, AON weight λ, step budget, holding identities out for early stopping); every candidate
gets the same budget (at most 2,000 steps, the ``tol`` rule of the defaults unless the candidate
is a fixed budget or early-stops on held-out identities). Scores are rank 1 of the
two-view CMC (camera-A probes against the camera-B gallery) among **validation identities only**:
on each stand-in, split 0's training identities (316 of 632) lose a quarter of their identities
(79, seeded) to validation; test identities are never used. Two fit seeds per candidate give the
seed noise.

Stand-ins (none is a re-identification set; VIPeR / Market-1501 are not available here):

``fmnist-hist``  the bundled stand-in: Fashion-MNIST test items in two simulated views, as
                 LOMO-like stripe histograms (156 bins);
``fmnist-hist-b`` the same construction on 632 other Fashion-MNIST items (training set, seed 1);
``mnist-hist``   the same construction on 632 MNIST-5k digits (seed 2);
``dirichlet``    synthetic colour histograms: Dirichlet identities, a per-camera transfer curve
                 per bin, multinomial sampling noise (64 bins, square-rooted).

    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_warca_defaults.py          # ~25 min, 1 core
    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_warca_defaults.py --sets dirichlet --seeds 0
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch

CANDIDATES = {
    "current defaults": {},
    "learning_rate=None": {"learning_rate": None},
    "gamma ×0.5": {"gamma_factor": 0.5},
    "gamma ×2": {"gamma_factor": 2.0},
    "n_components=32": {"n_components": 32},
    "n_components=128": {"n_components": 128},
    "reg_lambda=0": {"reg_lambda": 0.0},
    "reg_lambda=1e-2": {"reg_lambda": 1e-2},
    "500 fixed steps": {"max_iter": 500, "tol": None},
    "1000 fixed steps": {"max_iter": 1000, "tol": None},
    "hold out 20 % of identities (early stopping)": {
        "validation_fraction": 0.2,
        "validation_split": "groups",
    },
}
#: Every candidate's fit: the default ``validation_fraction="auto"`` fits a second model to
#: check the first against the Euclidean distance, which does not change the model scored here.
BASE = {"validation_fraction": 0.0}
STAND_INS = ("fmnist-hist", "fmnist-hist-b", "mnist-hist", "dirichlet")


def dirichlet_histograms(n_ids: int = 632, n_bins: int = 64, seed: int = 0):
    """Two-camera synthetic histograms (the generator of tests/estimators/test_reid_validation)."""
    from rankmetric.datasets.synthetic import ReidData

    rng = np.random.default_rng(seed)
    identities = rng.dirichlet(np.full(n_bins, 0.5), size=n_ids)
    transfer = rng.lognormal(sigma=0.8, size=(2, n_bins))
    views = []
    for camera in range(2):
        p = identities * transfer[camera]
        p /= p.sum(axis=1, keepdims=True)
        counts = np.array([rng.multinomial(60, row) for row in p])
        views.append(np.sqrt(counts / 60.0))
    return ReidData(np.vstack(views), np.tile(np.arange(n_ids), 2), np.repeat([0, 1], n_ids))


def image_histograms(images: np.ndarray, seed: int):
    """632 of ``images`` (n, 784) in [0, 255], two simulated views, stripe histograms."""
    from rankmetric.datasets.synthetic import ReidData, make_camera_views
    from rankmetric.preprocessing import StripeHistograms

    pick = np.sort(np.random.default_rng(seed).choice(len(images), 632, replace=False))
    views = make_camera_views(images[pick].reshape(-1, 28, 28) / 255.0, random_state=seed)
    features = StripeHistograms(image_shape=(28, 28)).fit_transform(views.X)
    return ReidData(features, views.ids, views.camera)


def load(name: str):
    from rankmetric.bench.reid_data import load_reid
    from rankmetric.datasets import load_dataset

    if name == "fmnist-hist":
        return load_reid("fmnist-hist")
    if name == "fmnist-hist-b":
        return image_histograms(load_dataset("fashion-mnist").X, seed=1)
    if name == "mnist-hist":
        return image_histograms(load_dataset("mnist-5k").X, seed=2)
    return dirichlet_histograms()


def rank1(Z: np.ndarray, ids: np.ndarray, camera: np.ndarray) -> float:
    """Two-view CMC rank 1: camera-0 probes against the camera-1 gallery."""
    P, G = torch.as_tensor(Z[camera == 0]), torch.as_tensor(Z[camera == 1])
    nearest = torch.cdist(P.double(), G.double()).argmin(dim=1).numpy()
    return float(np.mean(ids[camera == 1][nearest] == ids[camera == 0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(STAND_INS), choices=STAND_INS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    args = parser.parse_args()
    torch.set_num_threads(1)
    from rankmetric import KernelWARCA
    from rankmetric.kernels import default_gamma

    print(f"# load average at start: {os.getloadavg()}")
    scores: dict[str, list[list[float]]] = {c: [] for c in args.candidates}
    for name in args.sets:
        data = load(name)
        train_ids, _ = data.split(0)  # the test identities are never touched
        val_ids = np.random.default_rng(0).choice(train_ids, len(train_ids) // 4, replace=False)
        fit_rows = data.rows(np.setdiff1d(train_ids, val_ids))
        val_rows = data.rows(val_ids)
        X, y = data.X[fit_rows].astype(np.float32), data.ids[fit_rows]
        Xv = data.X[val_rows].astype(np.float32)
        euclid = rank1(Xv, data.ids[val_rows], data.camera[val_rows])
        gamma0 = default_gamma(torch.as_tensor(X), "chi2_rbf", np.random.default_rng(0))
        print(
            f"\n## {name}: {X.shape[0]} training items, {X.shape[1]} bins, "
            f"{len(val_ids)} validation identities; Euclidean rank 1 {euclid:.3f}"
        )
        print("| candidate | " + " | ".join(f"seed {s}" for s in args.seeds) + " | steps | s |")
        print("|---|" + "---|" * len(args.seeds) + "---|---|")
        for cand in args.candidates:
            params = dict(CANDIDATES[cand])
            factor = params.pop("gamma_factor", None)
            if factor is not None:
                params["gamma"] = factor * gamma0
            row, steps, start = [], [], time.perf_counter()
            for seed in args.seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = KernelWARCA(random_state=seed, **{**BASE, **params}).fit(X, y)
                row.append(rank1(model.transform(Xv), data.ids[val_rows], data.camera[val_rows]))
                steps.append(model.n_iter_)
            scores[cand].append(row)
            elapsed = (time.perf_counter() - start) / len(args.seeds)
            print(
                f"| {cand} | "
                + " | ".join(f"{v:.3f}" for v in row)
                + f" | {int(np.median(steps))} | {elapsed:.0f} |",
                flush=True,
            )

    print("\n## mean validation rank 1 over stand-ins and seeds")
    print("| candidate | mean | seed-to-seed SD of the mean | wins vs current (set×seed) |")
    print("|---|---|---|---|")
    base = np.array(scores[args.candidates[0]])
    for cand in args.candidates:
        s = np.array(scores[cand])  # (sets, seeds)
        sd = float(np.std(s.mean(axis=0), ddof=1)) if s.shape[1] > 1 else float("nan")
        wins = int(np.sum(s > base))
        print(f"| {cand} | {s.mean():.3f} | {sd:.3f} | {wins}/{s.size} |")
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
