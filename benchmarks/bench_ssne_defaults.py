"""How SSNE's defaults were chosen: validation thirds of the Table 1 training halves only.

Protocol (never touches a 5×2 test half): for each of the nine UCI sets of SSNE's Table 1 and
each of the first ``--folds`` folds of ``RepeatedStratifiedKFold(n_splits=2, n_repeats=5,
random_state=0)`` (the bench's folds), take the *training* half only, standardise it, split it
with the bench's stratified validation third (``rankmetric.bench.ssne.stratified_holdout``, seed =
fold number), fit SSNE on the inner two thirds and score k-NN accuracy (k = 3) on the third.
The score of a setting is its mean over folds, averaged over the nine sets (equal weight).

Two stages, each choosing by that score:

1. solver {full, bcd} × ``neg_target`` {−1, 0} × ``positive_sampling`` {pairs, classes}, at
   ``reg_lambda=1e-3`` and 1000 steps (8 settings);
2. around the winner, one factor at a time: ``reg_lambda`` {1e-4, 1e-2}, ``max_iter`` {300, 2000}.

``--config`` scores given settings only (the later stages of ``docs/ssne.md``), optionally on
some ``--sets``; besides SSNE's parameters a setting may hold ``m_per_feature=F`` (``M = F·D``
clipped to ``[16, 256]`` like the default ``F = 2``) and ``seed_offset=K`` (fit seed fold + K
instead of fold, same validation split: how much a score moves with the seed alone). E.g. on
the validation thirds of 6 training halves:

    python benchmarks/bench_ssne_defaults.py --folds 4 --jobs 2 --out /tmp/ssne_defaults.json
    python benchmarks/bench_ssne_defaults.py --folds 6 --jobs 1 \
        --config solver=bcd,neg_target=0.0,reg_lambda=0.0001,positive_sampling=classes
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SETS = ("ionosphere", "balance-scale", "wdbc", "pima", "wine", "iris", "heart", "sonar", "glass")
BASE = {"reg_lambda": 1e-3, "max_iter": 1000}
STAGE1 = [
    {"solver": solver, "neg_target": neg, "positive_sampling": sampling}
    for solver in ("full", "bcd")
    for neg in (-1.0, 0.0)
    for sampling in ("pairs", "classes")
]
STAGE2 = [{"reg_lambda": 1e-4}, {"reg_lambda": 1e-2}, {"max_iter": 300}, {"max_iter": 2000}]


def _key(params: dict) -> str:
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


def _parse(text: str) -> dict:
    """``name=value,...`` over :data:`BASE`; numbers are read as numbers."""
    params = dict(BASE)
    for item in text.split(","):
        name, _, value = item.partition("=")
        try:
            params[name] = int(value) if value.isdigit() else float(value)
        except ValueError:
            params[name] = value
    return params


def validation_score(task: tuple[str, int, dict]) -> float:
    """k-NN accuracy (k = 3) on the validation third of one training half."""
    import torch

    from rankmetric.bench.ssne import cv_fold, load_arrays, stratified_holdout
    from rankmetric.estimators.ssne import SSNE
    from rankmetric.evaluate import knn_accuracy

    torch.set_num_threads(1)
    dataset, fold, params = task
    params = dict(params)
    X, y, X_extra, y_extra = load_arrays(dataset)
    if X_extra is not None:
        X, y = np.vstack([X, X_extra]), np.concatenate([y, y_extra])
    train, _ = cv_fold(y, fold, n_repeats=5)  # the test half is never read
    X, y = X[train], y[train]
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    inner, val = stratified_holdout(y, fold)
    if "m_per_feature" in params:  # M = factor · D clipped like the default (factor 2)
        factor = float(params.pop("m_per_feature"))
        params["n_components"] = int(np.clip(round(factor * X.shape[1]), 16, 256))
    seed = fold + int(params.pop("seed_offset", 0))  # same split, another fit seed
    model = SSNE(random_state=seed, device="cpu", **params).fit(X[inner], y[inner])
    Z_inner, Z_val = model.transform(X[inner]), model.transform(X[val])
    return float(knn_accuracy(Z_inner, y[inner], Z_val, y[val], k=3, device="cpu"))


def evaluate(settings: list[dict], folds: int, pool, sets=SETS) -> dict[str, dict]:
    """Per setting: mean validation accuracy per set (percent) and the mean over sets."""
    tasks = [(d, f, s) for s in settings for d in sets for f in range(folds)]
    scores = list(pool.map(validation_score, tasks))
    out = {}
    for s in settings:
        per_set = {
            d: 100 * float(np.mean([sc for (dd, _, ss), sc in zip(tasks, scores, strict=True)
                                    if ss is s and dd == d]))
            for d in sets
        }  # fmt: skip
        out[_key(s)] = {
            "params": s,
            "per_set": per_set,
            "mean": float(np.mean(list(per_set.values()))),
        }
    return out


def _print(results: dict[str, dict], title: str) -> None:
    print(f"\n{title}\n", flush=True)
    sets = list(next(iter(results.values()))["per_set"])
    print("| setting | " + " | ".join(sets) + " | mean |")
    print("|---|" + "---|" * (len(sets) + 1))
    for key, r in sorted(results.items(), key=lambda kv: -kv[1]["mean"]):
        cells = " | ".join(f"{r['per_set'][d]:.2f}" for d in sets)
        print(f"| {key} | {cells} | **{r['mean']:.2f}** |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=4, help="training halves used (of 10)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=None, help="JSON file for every score")
    parser.add_argument(
        "--config",
        action="append",
        default=None,
        help="skip stages 1-2: score these settings only (repeatable), e.g. "
        "'solver=bcd,neg_target=0.0,reg_lambda=0.0001'",
    )
    parser.add_argument(
        "--stage2-around",
        default=None,
        help="skip stage 1: run stage 2 around this stage-1 setting, e.g. "
        "'solver=bcd,neg_target=0.0,positive_sampling=pairs' (the winner is rescored too)",
    )
    parser.add_argument(
        "--sets", default=",".join(SETS), help="comma-separated data sets (default: all nine)"
    )
    args = parser.parse_args()
    sets = tuple(args.sets.split(","))
    unknown = set(sets) - set(SETS)
    if unknown:
        parser.error(f"unknown data sets {sorted(unknown)}; choose from {', '.join(SETS)}")
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        if args.config:
            scored = evaluate([_parse(text) for text in args.config], args.folds, pool, sets)
            _print(scored, f"Settings given (validation thirds of {args.folds} training halves)")
            chosen = max(scored.values(), key=lambda r: r["mean"])["params"]
            print(f"\nbest: {chosen}  ({time.perf_counter() - start:.0f} s)")
            if args.out:
                with open(args.out, "w") as fh:
                    record = {"folds": args.folds, "configs": scored, "best": chosen}
                    json.dump(record, fh, indent=1)
            return
        if args.stage2_around:
            best = _parse(args.stage2_around)
            stage1 = evaluate([best], args.folds, pool)
        else:
            stage1 = evaluate([{**BASE, **s} for s in STAGE1], args.folds, pool)
            _print(stage1, f"Stage 1 (validation thirds of {args.folds} training halves per set)")
            best = max(stage1.values(), key=lambda r: r["mean"])["params"]
        stage2 = evaluate([{**best, **s} for s in STAGE2], args.folds, pool)
        stage2[_key(best)] = stage1[_key(best)]
        _print(stage2, "Stage 2 (one factor at a time around the stage-1 winner)")
        chosen = max(stage2.values(), key=lambda r: r["mean"])["params"]
    print(f"\nchosen: {chosen}  ({time.perf_counter() - start:.0f} s)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"folds": args.folds, "stage1": stage1, "stage2": stage2,
                       "chosen": chosen}, fh, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
