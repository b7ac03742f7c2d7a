"""SSNE's fixed defaults, untuned, against the (standardised) Euclidean k-NN on SSNE's UCI sets.

A component benchmark of the defaults, not the paper table: the table of SSNE's Table 1 with every
method tuned on validation data is ``rankmetric bench ssne-uci`` (``rankmetric.bench.ssne``, whose
``PAPER_TABLE1`` this script prints beside its own figures). What this script adds: SSNE exactly
at its defaults (or at ``--param`` overrides) with no tuning, and SSNE's median fit time.

Protocol (the paper's): k-NN accuracy (k = 3), mean ± std over 5 times repeated stratified 2-fold
cross-validation (:func:`rankmetric.evaluate.repeated_cv_knn`, fold seed 0). SSNE runs with fixed
default hyper-parameters (nothing is tuned on the test halves; the defaults were chosen on
validation thirds of the training halves with ``benchmarks/bench_ssne_defaults.py``) and
``random_state=0``. The paper's numbers are printed beside ours; "protein" is not available
offline.

    python benchmarks/bench_ssne_fixed_defaults.py          # all nine sets, 5-10 min on 1 core
    python benchmarks/bench_ssne_fixed_defaults.py --sets iris,wine --param neg_target=0.0
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from rankmetric.bench.ssne import PAPER_TABLE1, PAPER_TABLE1_METHODS, UCI_SETS
from rankmetric.datasets import load_dataset
from rankmetric.estimators.ssne import SSNE
from rankmetric.evaluate import repeated_cv_knn

SETS = [name for name in UCI_SETS if name != "protein"]  # protein is not available offline
_COLUMNS = ("euclidean", "euclidean-scaled", "ssne")
#: Table 1 of the paper: (mean, std) in percent for Euc., Euc. (Scaled) and SSNE.
PAPER = {
    name: tuple(row[PAPER_TABLE1_METHODS.index(column)] for column in _COLUMNS)
    for name, row in PAPER_TABLE1.items()
}


def _parse_param(text: str) -> tuple[str, object]:
    """``name=value`` with value read as JSON when possible (numbers, true/false, null)."""
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    data = load_dataset(name)
    if getattr(data, "X_test", None) is None:
        return data.X, data.y
    return np.vstack([data.X, data.X_test]), np.concatenate([data.y, data.y_test])


def _warm_up() -> None:
    """One tiny fit, so that torch's one-off start-up cost is not charged to the first fold."""
    rng = np.random.default_rng(0)
    SSNE(max_iter=2, device="cpu").fit(rng.normal(size=(20, 3)), np.arange(20) % 2)


def _fmt(mean: float, std: float) -> str:
    return f"{mean:6.2f} ± {std:4.2f}"


def run(sets, params: dict, n_repeats: int, k: int, n_jobs: int | None) -> list[dict]:
    """One row per set: our three accuracies (percent), SSNE's fit times and the paper's row."""
    rows = []
    for name in sets:
        X, y = _load(name)
        cv = dict(n_repeats=n_repeats, k=k, random_state=0)
        euclidean = repeated_cv_knn(None, X, y, standardize=False, **cv)
        scaled = repeated_cv_knn(None, X, y, standardize=True, **cv)
        model = SSNE(**{"random_state": 0, "device": "cpu", **params})
        ssne = repeated_cv_knn(model, X, y, standardize=True, n_jobs=n_jobs, **cv)
        rows.append(
            {
                "set": name,
                "shape": list(X.shape),
                "euclidean": [100 * euclidean.mean, 100 * euclidean.std],
                "scaled": [100 * scaled.mean, 100 * scaled.std],
                "ssne": [100 * ssne.mean, 100 * ssne.std],
                "ssne_fit_seconds_median": float(np.median(ssne.fit_times)),
                "paper": PAPER.get(name),
            }
        )
        _print_row(rows[-1])
    return rows


def _print_header() -> None:
    print(
        f"{'set':14s} {'Euc. ours':>14s} {'paper':>14s} {'Scaled ours':>14s} {'paper':>14s} "
        f"{'SSNE ours':>14s} {'paper':>14s} {'SSNE-Scaled':>11s} {'fit s':>6s}"
    )


def _print_row(row: dict) -> None:
    paper = row["paper"] or ((np.nan, np.nan),) * 3
    gain = row["ssne"][0] - row["scaled"][0]
    print(
        f"{row['set']:14s} {_fmt(*row['euclidean']):>14s} {_fmt(*paper[0]):>14s} "
        f"{_fmt(*row['scaled']):>14s} {_fmt(*paper[1]):>14s} {_fmt(*row['ssne']):>14s} "
        f"{_fmt(*paper[2]):>14s} {gain:>+11.2f} {row['ssne_fit_seconds_median']:6.2f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated data set names")
    parser.add_argument("--param", action="append", default=[], help="SSNE parameter name=value")
    parser.add_argument("--repeats", type=int, default=5, help="repetitions of 2-fold CV")
    parser.add_argument("--k", type=int, default=3, help="neighbours of the k-NN vote")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--n-jobs", type=int, default=None, help="folds fitted in parallel")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    torch.set_num_threads(args.threads)
    params = dict(_parse_param(p) for p in args.param)
    _warm_up()
    print(f"SSNE parameters: defaults {params or ''}; k={args.k}; {args.repeats}x2 CV, seed 0")
    _print_header()
    start = time.perf_counter()
    rows = run(args.sets.split(","), params, args.repeats, args.k, args.n_jobs)
    ours = np.mean([r["ssne"][0] for r in rows])
    scaled = np.mean([r["scaled"][0] for r in rows])
    print(f"mean over sets: SSNE {ours:.2f}, standardised Euclidean {scaled:.2f}")
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"params": params, "rows": rows}, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
