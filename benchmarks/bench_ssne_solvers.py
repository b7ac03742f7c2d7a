"""SSNE solvers and settings side by side: k-NN accuracy, training objective and fit time.

The measurement behind SSNE's defaults. It runs on sets that are *not* in the paper's Table 1
(vehicle, vowel, digits), so that nothing is tuned on the benchmark's test folds. For each
configuration and each fold of 5×2 stratified CV (seed 0): fit on the training half, k-NN accuracy
(k = 3) on the test half, the objective ``mean (s − Ŝ)² + reg_lambda · Σ||w_m||`` on 20 000
class-balanced training pairs (fixed seed), and the fit time. Configurations run side by side in
one process pool; figures are means (accuracy, objective) and medians (time) over folds.

    python benchmarks/bench_ssne_solvers.py                       # full vs bcd, a few minutes
    python benchmarks/bench_ssne_solvers.py --config solver=full,max_iter=4000 \\
        --config solver=bcd,block_size=8,max_iter=4000 --sets vehicle
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from rankmetric.datasets import load_dataset
from rankmetric.estimators.ssne import SSNE
from rankmetric.evaluate import knn_accuracy
from rankmetric.sampling import LabelIndex

SETS = ["vehicle", "vowel", "digits"]
CONFIGS = [
    "solver=full",
    "solver=bcd,block_size=8",
    "solver=bcd,block_size=16",
    "solver=full,max_iter=4000",
    "solver=bcd,block_size=8,max_iter=4000",
]
N_OBJECTIVE_PAIRS = 20_000


def _parse_config(text: str) -> dict:
    params = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        try:
            params[name] = json.loads(value)
        except json.JSONDecodeError:
            params[name] = value
    return params


def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    data = load_dataset(name)
    if getattr(data, "X_test", None) is None:
        return data.X, data.y
    return np.vstack([data.X, data.X_test]), np.concatenate([data.y, data.y_test])


def _fold(params: dict, X, y, train, test, seed: int, threads: int) -> dict:
    """Fit one configuration on one fold; accuracy, training objective, fit time."""
    torch.set_num_threads(threads)
    scaler = StandardScaler().fit(X[train])
    X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
    model = SSNE(**{"random_state": seed, "device": "cpu", **params})
    start = time.perf_counter()
    model.fit(X_train, y[train])
    seconds = time.perf_counter() - start
    accuracy = knn_accuracy(model.transform(X_train), y[train], model.transform(X_test), y[test])
    codes = np.unique(y[train], return_inverse=True)[1]
    i, j, same = LabelIndex.from_codes(codes).balanced_pairs(
        N_OBJECTIVE_PAIRS, np.random.default_rng(123)
    )
    targets = np.where(same, 1.0, model.neg_target)
    objective = model.objective(X_train, np.stack([i, j], axis=1), targets)
    return {
        "accuracy": accuracy,
        "objective": objective,
        "seconds": seconds,
        "active": int(model.active_components_.size),
    }


def _warm_up(threads: int) -> None:
    """One tiny fit, so that torch's one-off start-up cost is not charged to the first fold."""
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    SSNE(max_iter=2, device="cpu").fit(rng.normal(size=(20, 3)), np.arange(20) % 2)


def run(sets, configs: list[dict], n_repeats: int, n_jobs: int, threads: int) -> list[dict]:
    rows = []
    for name in sets:
        X, y = _load(name)
        cv = RepeatedStratifiedKFold(n_splits=2, n_repeats=n_repeats, random_state=0)
        folds = list(cv.split(X, y))
        jobs = [
            delayed(_fold)(params, X, y, train, test, seed, threads)
            for params in configs
            for seed, (train, test) in enumerate(folds)
        ]
        results = Parallel(n_jobs=n_jobs)(jobs)
        for c, params in enumerate(configs):
            mine = results[c * len(folds) : (c + 1) * len(folds)]
            rows.append(
                {
                    "set": name,
                    "config": params,
                    "accuracy": [
                        100 * np.mean([r["accuracy"] for r in mine]),
                        100 * np.std([r["accuracy"] for r in mine]),
                    ],
                    "objective": float(np.mean([r["objective"] for r in mine])),
                    "seconds_median": float(np.median([r["seconds"] for r in mine])),
                    "active": float(np.mean([r["active"] for r in mine])),
                }
            )
    return rows


def _print(rows: list[dict]) -> None:
    print(
        f"{'set':8s} {'configuration':44s} {'k-NN acc %':>14s} {'objective':>9s} "
        f"{'obj/ref':>7s} {'fit s':>6s} {'time/ref':>8s} {'units':>5s}"
    )
    for row in rows:
        ref = next(r for r in rows if r["set"] == row["set"])
        config = ",".join(f"{k}={v}" for k, v in row["config"].items()) or "defaults"
        print(
            f"{row['set']:8s} {config:44s} {row['accuracy'][0]:7.2f} ± {row['accuracy'][1]:4.2f} "
            f"{row['objective']:9.4f} {row['objective'] / ref['objective']:7.3f} "
            f"{row['seconds_median']:6.2f} {row['seconds_median'] / ref['seconds_median']:8.2f} "
            f"{row['active']:5.0f}"
        )


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument(
        "--config", action="append", help="SSNE parameters name=value,name=value (repeatable)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="repetitions of 2-fold CV")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--n-jobs", type=int, default=1, help="fits in parallel")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    configs = [_parse_config(c) for c in (args.config or CONFIGS)]
    _warm_up(args.threads)
    start = time.perf_counter()
    rows = run(args.sets.split(","), configs, args.repeats, args.n_jobs, args.threads)
    _print(rows)
    print(
        f"{args.repeats}x2 CV, seed 0, {args.threads} thread(s) per fit, "
        f"{args.n_jobs} fit(s) in parallel; total {time.perf_counter() - start:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
