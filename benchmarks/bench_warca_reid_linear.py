"""Linear WARCA on ``fmnist-views``: what its hyper-parameters do, on validation identities only.

The ``rankmetric bench warca-reid`` table tunes every learner on the same inner split: for
identity split k, 20% of the 316 training identities are held out (seed 0), the learner is fitted
on the other 80% and scored by leave-one-out R@1 among the held-out identities' 126 images. This
script reports that validation score for linear WARCA under one change at a time from the table's
budget (at most 2000 steps of 512 pairs, the loss-based stop, ``reg_lambda`` 1e-3, margin 1),
beside KISSME's and XQDA's candidates on the same identities. Features are those of the table:
PCA-64 of the training images, standardised on them. **No test identity is ever touched.**

    python benchmarks/bench_warca_reid_linear.py                   # splits 0-4, every variant
    python benchmarks/bench_warca_reid_linear.py --splits 0 --only rank
    python benchmarks/bench_warca_reid_linear.py --splits 0 1 2 3 4 5 6 7 8 9 --only base warm

Prints mean validation R@1 (%) over the splits, its standard deviation, and the median fit time.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
import warnings

import numpy as np
import torch

from rankmetric import bench
from rankmetric.bench import identity_holdout, loo_recall_at_1, reid_features
from rankmetric.bench.warca import BUDGETS
from rankmetric.estimators.pair_covariance import KISSME, XQDA
from rankmetric.estimators.warca import WARCA

#: The stand-in set, read once per process (every setting of every split uses it).
load_reid = functools.lru_cache(maxsize=2)(bench.load_reid)

DATASET = "fmnist-views"
#: The table's WARCA budget and its fixed AON weight; every variant changes one thing of it.
BASE = {**BUDGETS["full"]["warca"], "reg_lambda": 1e-3, "margin": 1.0}
#: name -> list of (label, WARCA params on top of BASE, PCA dimensions kept before WARCA).
VARIANTS = {
    "base": [("base", {}, None)],
    "margin": [(f"margin {m}", {"margin": m}, None) for m in (0.5, 2.0, 4.0)],
    "rank": [(f"n_components {r}", {"n_components": r}, None) for r in (16, 24, 32, 48)],
    "pca": [(f"PCA-{d} before", {}, d) for d in (16, 24, 32, 48)],
    "init": [("init pca", {"init": "pca"}, None),
             ("init pca, n_components 32", {"init": "pca", "n_components": 32}, None)],
    "steps": [("2000 fixed steps", {"tol": None}, None),
              ("auto schedule (N-scaled batch)", {"batch_size": None, "tol_window": None,
                                                  "learning_rate": None}, None)],
    "sampling": [("sampling exact", {"sampling": "exact"}, None),
                 ("sequential, 512 draws", {"sampling": "sequential", "max_sampling": 512},
                  None)],
    "aon": [(f"reg_lambda {v}", {"reg_lambda": v}, None) for v in (0.0, 1e-2)],
    "combo": [(f"PCA-{d} before, margin {m}", {"margin": m}, d)
              for d in (24, 32) for m in (1.0, 2.0)],
    # warm starts: WARCA from KISSME's map on the same identities, scaled to the Frobenius norm
    # √r of an orthonormal W (the margin is absolute), then a few WARP steps (init "kissme")
    "warm": [(f"init KISSME, PCA-{d} before, {n} steps at {lr}",
              {"init": "kissme", "max_iter": n, "tol": None, "learning_rate": lr}, d)
             for d in (32, 64) for n, lr in ((100, 1e-3), (300, 1e-3))]
            + [("init KISSME, PCA-32 before, the table's schedule", {"init": "kissme"}, 32)],
    "baselines": [],
}  # fmt: skip
#: (label, class, params, PCA dimensions kept before). KISSME's own ``n_components`` runs its PCA
#: on the standardised (whitened) axes; "PCA-d before" keeps the images' d leading axes instead.
BASELINES = (
    [(f"KISSME n_components {d}", KISSME, {"n_components": d}, None) for d in (16, 32, 64)]
    + [(f"KISSME, PCA-{d} before", KISSME, {}, d) for d in (16, 24, 32, 48)]
    + [(f"XQDA regularization {r}", XQDA, {"regularization": r}, None) for r in (1e-2, 1e-1, 1.0)]
)


def _split_data(split: int):
    data = load_reid(DATASET)
    train_ids, _ = data.split(split)
    rows = data.rows(train_ids)
    X = reid_features(DATASET, data, rows, "warca")[rows]
    y = data.ids[rows]
    inner, val = identity_holdout(y, 0)
    return X, y, inner, val


def kissme_start(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """KISSME's map on ``(X, y)`` without its zero rows, scaled to Frobenius norm √rank."""
    L = KISSME().fit(X, y).components_
    L = L[np.abs(L).sum(axis=1) > 0]
    return L * np.sqrt(L.shape[0]) / np.linalg.norm(L)


def score(split: int, make, pca_dims: int | None) -> tuple[float, float]:
    """(validation R@1 %, fit seconds) of the estimator ``make()`` on split ``split``."""
    X, y, inner, val = _split_data(split)
    if pca_dims is not None:  # the columns are standardised principal axes, in order
        X = X[:, :pca_dims]
    est = make()
    if isinstance(getattr(est, "init", None), str) and est.init == "kissme":
        est.set_params(init=kissme_start(X[inner], y[inner]))  # timed apart: KISSME's 0.02 s
    start = time.perf_counter()
    est.fit(X[inner], y[inner])
    seconds = time.perf_counter() - start
    return 100 * loo_recall_at_1(None, None, est.transform(X[val]), y[val]), seconds


def report(label: str, runs: list[tuple[float, float]]) -> None:
    scores = np.array([r[0] for r in runs])
    seconds = np.median([r[1] for r in runs])
    per_split = " ".join(f"{s:5.1f}" for s in scores)
    print(f"  {label:<34} {scores.mean():6.1f} {scores.std():5.1f} {seconds:7.2f}   [{per_split}]",
          flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--only", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="WARCA's random_state (the table's: 0)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    print(f"{DATASET} STAND-IN, validation identities of splits {args.splits} (no test identity "
          f"used); torch threads={args.threads}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"WARCA base: {BASE}")
    print(f"  {'setting':<34} {'R@1':>6} {'±':>5} {'fit s':>7}   [per split]")
    for name in args.only:
        if name == "baselines":
            for label, cls, params, dims in BASELINES:
                report(label, [score(s, lambda p=params, c=cls: c(**p), dims) for s in args.splits])
            continue
        for label, params, dims in VARIANTS[name]:

            def make(p=params):
                return WARCA(**{**BASE, **p}, random_state=args.seed, device="cpu")

            report(label, [score(s, make, dims) for s in args.splits])


if __name__ == "__main__":
    main()
