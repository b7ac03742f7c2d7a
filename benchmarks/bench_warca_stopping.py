"""WARCA's default stopping rule against the reference code's 2000 fixed steps.

For each data set, one stratified 2-fold split (``StratifiedKFold(2, shuffle=True,
random_state=0)``), features standardised on the training half, WARCA fitted with the defaults of
rankmetric 0.1 (512 pairs per step, learning rate 0.01; stops on the training loss: ``tol=1e-2``
over ``tol_window=50`` steps) and with ``tol=None``
(exactly ``max_iter=2000`` steps, as the reference does), seed = fold index; k-NN accuracy
(k = 3) on the test half, averaged over the two folds, and the mean fit time.

    python benchmarks/bench_warca_stopping.py
    python benchmarks/bench_warca_stopping.py --sets wdbc digits --threads 2
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from rankmetric import WARCA
from rankmetric.datasets import load_dataset
from rankmetric.estimators.warca import SCHEDULE_0_1

SETS = ["wdbc", "iris", "sonar", "ionosphere", "glass", "digits", "balance-scale"]
# the table of docs/warca.md ("Stopping") compares the stopping rule under 0.1's schedule
VARIANTS = {"default": SCHEDULE_0_1, "2000 fixed": {**SCHEDULE_0_1, "tol": None}}


def run_set(name: str) -> dict:
    data = load_dataset(name)
    X, y = data.X.astype(np.float64), data.y
    out = {key: {"acc": [], "seconds": [], "steps": []} for key in VARIANTS}
    folds = StratifiedKFold(2, shuffle=True, random_state=0).split(X, y)
    for fold, (train, test) in enumerate(folds):
        scaler = StandardScaler().fit(X[train])
        X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
        for key, params in VARIANTS.items():
            start = time.perf_counter()
            model = WARCA(random_state=fold, device="cpu", **params).fit(X_train, y[train])
            out[key]["seconds"].append(time.perf_counter() - start)
            out[key]["steps"].append(model.n_iter_)
            knn = KNeighborsClassifier(3).fit(model.transform(X_train), y[train])
            out[key]["acc"].append(100 * knn.score(model.transform(X_test), y[test]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=SETS)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    print(f"torch threads={args.threads}; one 2-fold split per set; k-NN k=3")
    print(f"{'data set':<14} {'default: steps':>15} {'acc %':>7} {'fit s':>6}   "
          f"{'2000 fixed: acc %':>17} {'fit s':>6} {'time ratio':>10}")  # fmt: skip
    for name in args.sets:
        res = run_set(name)
        auto, fixed = res["default"], res["2000 fixed"]
        steps = ", ".join(str(s) for s in auto["steps"])
        ratio = np.mean(fixed["seconds"]) / np.mean(auto["seconds"])
        print(
            f"{name:<14} {steps:>15} {np.mean(auto['acc']):>7.2f} {np.mean(auto['seconds']):>6.2f}"
            f"   {np.mean(fixed['acc']):>17.2f} {np.mean(fixed['seconds']):>6.2f} {ratio:>10.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
