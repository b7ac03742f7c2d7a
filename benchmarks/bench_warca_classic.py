"""WARCA against the classic Mahalanobis learners: 5×2 CV k-NN accuracy (k=3) and fit time.

Same folds for every method (``rankmetric.evaluate.repeated_cv_knn``, seed 0: each training fold
is standardised, the learner fitted on it, k-NN scored on the test fold). Methods: Euclidean
(standardised), WARCA with the batched estimator (ours, defaults), WARCA with rankmetric
0.1's fixed schedule (512 pairs, window 50, learning rate 0.01; ``--skip 0.1`` leaves it
out), WARCA with the reference code's sequential sampler, scikit-learn's NCA, and
rankmetric's LMNN and ITML.

    python benchmarks/bench_warca_classic.py                       # digits, wdbc, fashion-2000
    python benchmarks/bench_warca_classic.py --sets digits --repeats 2
    python benchmarks/bench_warca_classic.py --fashion-size 5000
    python benchmarks/bench_warca_classic.py --sets fashion-mnist --fashion-size 5000 \
        --fashion-pca 0 --n-components 64 --skip ITML    # raw 784 pixels, rank-64 maps

Fashion-MNIST: a stratified random subset (``--fashion-size``, seed 0) of the 60k training
images, pixel values / 255, projected on its top 64 principal axes (PCA fitted on the subset,
before the folds, for every method alike; ``--fashion-pca 0`` keeps the 784 raw pixels, where a
full-rank LMNN or ITML would dominate the run, hence ``--n-components``). Fit times are medians
over the folds, in seconds, with ``torch.set_num_threads(--threads)``.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from rankmetric.estimators.itml import ITML
from rankmetric.estimators.lmnn import LMNN
from rankmetric.estimators.warca import SCHEDULE_0_1, WARCA
from rankmetric.evaluate import repeated_cv_knn


def load(name: str, fashion_size: int, fashion_pca: int = 64):
    from rankmetric.datasets import load_dataset

    data = load_dataset(name)
    X, y = data.X.astype(np.float64), data.y
    if name == "fashion-mnist":
        rng = np.random.default_rng(0)
        keep = np.sort(rng.choice(X.shape[0], fashion_size, replace=False))
        X, y = X[keep] / 255.0, y[keep]
        if fashion_pca:
            X = PCA(fashion_pca, random_state=0).fit_transform(X)
    return X, y


def methods(with_sequential: bool, n_components: int | None = None):
    """(label, estimator or None); ``n_components`` for every learner that has it (not ITML)."""
    rank = {"n_components": n_components}
    out = [("Euclidean", None), ("WARCA batched (ours)", WARCA(random_state=0, **rank))]
    out.append(("WARCA, 0.1 schedule", WARCA(random_state=0, **SCHEDULE_0_1, **rank)))
    if with_sequential:
        out.append(
            (
                "WARCA sequential (ref)",
                WARCA(sampling="sequential", max_sampling=512, random_state=0, **rank),
            )
        )
    nca = NeighborhoodComponentsAnalysis(random_state=0, max_iter=100, **rank)
    out.append(("sklearn NCA", nca))
    out.append(("rankmetric LMNN", LMNN(random_state=0, **rank)))
    out.append(("rankmetric ITML", ITML(random_state=0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["digits", "wdbc", "fashion-mnist"])
    parser.add_argument("--repeats", type=int, default=5, help="CV repetitions (5 for 5×2)")
    parser.add_argument("--fashion-size", type=int, default=2000)
    parser.add_argument(
        "--fashion-pca", type=int, default=64, help="Fashion-MNIST PCA dimensions (0: raw pixels)"
    )
    parser.add_argument(
        "--n-components", type=int, default=None, help="rank of WARCA, NCA and LMNN (default: D)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-sequential", action="store_true")
    parser.add_argument("--skip", nargs="*", default=[], help="method labels to skip")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    print(
        f"{args.repeats}×2 CV, k-NN k=3, torch threads={args.threads}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for name in args.sets:
        try:
            X, y = load(name, args.fashion_size, args.fashion_pca)
        except (ValueError, OSError) as exc:
            print(f"\n{name}: not available ({exc}); run `rankmetric data fetch {name}`")
            continue
        print(f"\n{name}: {X.shape[0]} × {X.shape[1]}, {len(np.unique(y))} classes")
        print(f"  {'method':<24} {'accuracy %':>14} {'fit s (median)':>15} {'time / WARCA':>13}")
        warca_time = None
        for label, est in methods(not args.no_sequential, args.n_components):
            if any(s in label for s in args.skip):
                continue
            res = repeated_cv_knn(est, X, y, n_repeats=args.repeats, n_splits=2, k=3)
            fit = float(np.median(res.fit_times))
            if label.startswith("WARCA batched"):
                warca_time = fit
            ratio = f"{fit / warca_time:13.2f}" if warca_time and est is not None else " " * 13
            print(
                f"  {label:<24} {100 * res.mean:>7.2f} ± {100 * res.std:4.2f} {fit:>15.2f} {ratio}",
                flush=True,
            )


if __name__ == "__main__":
    main()
