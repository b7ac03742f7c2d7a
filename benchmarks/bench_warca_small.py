"""Choosing WARCA's data-scaled defaults on *validation* data (never the 5×2 test folds).

For each data set, each outer training half of ``StratifiedKFold(2, shuffle=True,
random_state=0)`` is split again (``StratifiedKFold(2, shuffle=True, random_state=1)``); WARCA
is fitted on an inner half and scored (k-NN, k = 3) on the other, for every candidate rule.
The outer test halves are not touched. Fit times are means over the 4 inner fits (one torch
thread), as multiples of LMNN's mean fit time on the same inner halves, measured in the same
run.

    python benchmarks/bench_warca_small.py
    python benchmarks/bench_warca_small.py --sets wdbc digits
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from rankmetric import LMNN, WARCA
from rankmetric.datasets import load_dataset

SETS = ["wdbc", "digits", "wine", "ionosphere", "iris", "sonar"]
#: Candidate rules (WARCA parameters; the unset ones keep their data-scaled defaults).
RULES = {
    "0.1 defaults (512 pairs, window 50, lr 0.01)": {
        "batch_size": 512,
        "tol_window": 50,
        "learning_rate": 0.01,
    },
    "fixed 128 pairs, window 20": {"batch_size": 128, "tol_window": 20, "learning_rate": 0.01},
    "fixed 64 pairs, window 20, lr 0.03": {
        "batch_size": 64,
        "tol_window": 20,
        "learning_rate": 0.03,
    },
    "scaled (clip(N/4, 64, 512) pairs), lr 0.01": {"learning_rate": 0.01},
    "scaled, lr 0.03": {"learning_rate": 0.03},
    "scaled, lr 0.01·sqrt(512/batch) (the default)": {},
}


def inner_splits(X, y):
    outer = StratifiedKFold(2, shuffle=True, random_state=0).split(X, y)
    for train, _ in outer:  # the outer test half is never used here
        inner = StratifiedKFold(2, shuffle=True, random_state=1).split(X[train], y[train])
        for fit_idx, val_idx in inner:
            yield train[fit_idx], train[val_idx]


def score(est, X, y, fit_idx, val_idx) -> tuple[float, float]:
    scaler = StandardScaler().fit(X[fit_idx])
    X_fit, X_val = scaler.transform(X[fit_idx]), scaler.transform(X[val_idx])
    start = time.perf_counter()
    est.fit(X_fit, y[fit_idx])
    seconds = time.perf_counter() - start
    knn = KNeighborsClassifier(3).fit(est.transform(X_fit), y[fit_idx])
    return seconds, 100 * knn.score(est.transform(X_val), y[val_idx])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=SETS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print("| data | rule | validation acc % | fit s | × LMNN |")
    print("|---|---|---|---|---|")
    for name in args.sets:
        data = load_dataset(name)
        X, y = data.X.astype(np.float64), data.y
        splits = list(inner_splits(X, y))
        lmnn = [score(LMNN(), X, y, f, v) for f, v in splits]
        base = np.mean([s for s, _ in lmnn])
        print(f"| {name} | LMNN | {np.mean([a for _, a in lmnn]):.2f} | {base:.2f} | 1.00 |")
        for rule, params in RULES.items():
            runs = [
                score(WARCA(random_state=i, device="cpu", **params), X, y, f, v)
                for i, (f, v) in enumerate(splits)
            ]
            sec, acc = np.mean([s for s, _ in runs]), np.mean([a for _, a in runs])
            print(f"| {name} | {rule} | {acc:.2f} | {sec:.2f} | {sec / base:.2f} |", flush=True)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
