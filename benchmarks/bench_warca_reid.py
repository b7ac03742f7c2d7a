"""Re-identification-style protocol on a SYNTHETIC STAND-IN for VIPeR (not a VIPeR result).

VIPeR, CUHK, Market-1501 … are not available offline. This stand-in keeps VIPeR's protocol:
632 identities seen once by each of two cameras; each split draws 316 identities for training
(both views) and tests on the other 316 (camera A = probes, camera B = gallery, single-shot);
CMC at ranks 1/5/10/15/20, mean over ``--splits`` random splits (10 in the paper).

The images are simulated: an identity is a latent vector z ∈ R^16; a camera c sees
``h = normalise(exp((T_c z + U u + ε) / 3))``, a 128-bin non-negative "histogram" where T_c is a
camera-specific linear distortion, u ~ N(0, I_8) a per-image nuisance (pose, light) spread by a
fixed U with large variance, and ε pixel noise. Seeds are fixed (data seed 0, split seeds 0..9).

Methods: Euclidean on the histograms, KernelWARCA (χ²-RBF, the paper's re-id setting), linear
WARCA, and scikit-learn's NCA as the peer; rankmetric's LMNN if present.

    python benchmarks/bench_warca_reid.py                      # 10 splits, plot to results/
    python benchmarks/bench_warca_reid.py --splits 3 --steps 300
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from rankmetric.estimators.kernel_warca import KernelWARCA
from rankmetric.estimators.lmnn import LMNN
from rankmetric.estimators.warca import WARCA
from rankmetric.evaluate import cmc_curve

N_IDS, LATENT, BINS, NUISANCE = 632, 16, 128, 8
RANKS = (1, 5, 10, 15, 20)
CURVE = 30


def two_camera_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Views of shape (2, N_IDS, BINS): camera A then camera B of every identity."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N_IDS, LATENT))
    U = rng.standard_normal((BINS, NUISANCE)) * 1.5
    views = []
    for _camera in range(2):
        T = rng.standard_normal((BINS, LATENT)) / np.sqrt(LATENT) * 2.0
        u = rng.standard_normal((N_IDS, NUISANCE))
        raw = z @ T.T + u @ U.T / np.sqrt(NUISANCE) * 2.0 + 0.5 * rng.standard_normal((N_IDS, BINS))
        h = np.exp(raw / 3.0)
        views.append(h / h.sum(1, keepdims=True))
    return np.stack(views), np.arange(N_IDS)


def estimators(steps: int, rank: int):
    out = {
        "Euclidean": None,
        "KernelWARCA chi2 (ours)": KernelWARCA(n_components=rank, max_iter=steps, random_state=0),
        "WARCA linear (ours)": WARCA(n_components=rank, max_iter=steps, random_state=0),
        "sklearn NCA": NeighborhoodComponentsAnalysis(
            n_components=rank, max_iter=100, random_state=0
        ),
    }
    out["rankmetric LMNN"] = LMNN(n_components=rank, k=1, random_state=0)
    return out


def one_split(views, ids, split_seed: int, steps: int, rank: int, skip=()):
    rng = np.random.default_rng(split_seed)
    order = rng.permutation(N_IDS)
    train, test = order[: N_IDS // 2], order[N_IDS // 2 :]
    X_train = np.vstack([views[0, train], views[1, train]])
    y_train = np.concatenate([ids[train], ids[train]])
    results = {}
    for name, est in estimators(steps, rank).items():
        if any(word in name for word in skip):
            continue
        start = time.perf_counter()
        try:
            if est is not None:
                est.fit(X_train, y_train)
        except Exception as exc:  # a peer that cannot run on 2 samples per class
            results[name] = (None, f"failed: {type(exc).__name__}: {exc}"[:70])
            continue
        seconds = time.perf_counter() - start
        embed = (lambda X: X) if est is None else est.transform
        _, curve = cmc_curve(
            embed(views[0, test]),
            ids[test],
            embed(views[1, test]),
            ids[test],
            ranks=RANKS,
            return_curve=True,
        )
        results[name] = (np.asarray(curve[:CURVE], dtype=float), seconds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1000, help="WARCA steps")
    parser.add_argument("--rank", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--plot", default="results/warca_reid_cmc.png")
    parser.add_argument("--skip", nargs="*", default=[], help="skip methods whose name has this")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    views, ids = two_camera_data()
    curves: dict[str, list] = {}
    times: dict[str, list] = {}
    failures: dict[str, str] = {}
    for split in range(args.splits):
        for name, (curve, info) in one_split(
            views, ids, split, args.steps, args.rank, args.skip
        ).items():
            if curve is None:
                failures[name] = info
                continue
            curves.setdefault(name, []).append(curve)
            times.setdefault(name, []).append(info)
    print(
        f"SYNTHETIC two-camera stand-in for VIPeR ({N_IDS} ids, 316/316 splits, "
        f"{args.splits} splits, rank r={args.rank}, {args.steps} WARCA steps, torch threads="
        f"{args.threads}, load average {os.getloadavg()[0]:.1f})"
    )
    head = " ".join(f"{'R' + str(r):>6}" for r in RANKS)
    print(f"  {'method':<26} {head} {'fit s':>7}")
    for name, runs in curves.items():
        mean = 100 * np.mean(runs, axis=0)
        cells = " ".join(f"{mean[r - 1]:6.1f}" for r in RANKS)
        print(f"  {name:<26} {cells} {np.median(times[name]):7.2f}")
    for name, info in failures.items():
        print(f"  {name:<26} {info}")
    plot(curves, args.plot, args.splits)


def plot(curves, path: str, n_splits: int) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, runs in curves.items():
        ax.plot(np.arange(1, CURVE + 1), 100 * np.mean(runs, axis=0), label=name)
    ax.set_xlabel("rank")
    ax.set_ylabel("matching rate (%)")
    ax.set_title(f"CMC, synthetic VIPeR stand-in, mean of {n_splits} splits")
    ax.grid(alpha=0.3)
    ax.legend()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print(f"CMC curves written to {path}")


if __name__ == "__main__":
    main()
