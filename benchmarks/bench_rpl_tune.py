"""Tune RPLEmbedding's defaults on validation data carved out of the official training splits.

For each data set of ``bench_rpl_accuracy.DATASETS``, the official *training* split is divided
(stratified, ``--val-fraction`` held out, one split per seed); each configuration of the grid is
fitted on the rest and scored on the held-out part exactly as the test figures are (R@1 and
mAP@R leave-one-out within the held-out part). The test splits are never read. It prints every
configuration's mean score per set and overall (mean over sets and seeds of (R@1 + mAP@R) / 2),
best first.

Run: ``.venv/bin/python benchmarks/bench_rpl_tune.py --jobs 16`` (the full grid is about a CPU
hour: meant for a many-core machine; ``--quick`` tries 4 configurations).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from bench_rpl_accuracy import DATASETS, load_sets
from rankmetric.evaluate import retrieval_scores

GRID = {
    "distance": ["airm", "log_euclidean"],
    "learning_rate": [3e-3, 1e-2, 3e-2],
    "margin": [1.0, 2.0],
    "n_per_class": [8, 16],
    "hidden_ratio": [0.5, 0.75],
}


def configurations(quick: bool, overrides: dict) -> list[dict]:
    grid = {**GRID, **overrides}
    keys = list(grid)
    configs = [dict(zip(keys, values)) for values in itertools.product(*grid.values())]
    return configs[:: len(configs) // 4][:4] if quick else configs


def score_config(data: dict, config: dict, seed: int, val_fraction: float) -> dict:
    from rankmetric.estimators.rpl import RPLEmbedding

    torch.set_num_threads(1)
    params = dict(config)
    c = data["X"].shape[1]
    params["hidden_sizes"] = max(2, round(params.pop("hidden_ratio") * c))
    X, X_val, y, y_val = train_test_split(
        data["X"], data["y"], test_size=val_fraction, stratify=data["y"], random_state=seed
    )
    start = time.perf_counter()
    with threadpool_limits(1):
        est = RPLEmbedding(**params, random_state=seed, device="cpu").fit(X, y)
        found = retrieval_scores(est.transform(X_val), y_val, ks=(1,), device="cpu")
    return {
        "score": (found["recall@1"] + found["map@r"]) / 2,
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--val-fraction", type=float, default=0.3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--data", default=None, help="an .npz written by bench_rpl_accuracy --dump")
    parser.add_argument("--json", default=None)
    parser.add_argument("--grid", default="{}", help='JSON overriding GRID, e.g. {"margin": [1]}')
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    names = args.datasets.split(",")
    sets = load_sets(names, args.data)
    for d in sets.values():  # the test split is never used here
        d.pop("X_test"), d.pop("y_test")
    configs = configurations(args.quick, json.loads(args.grid))
    seeds = range(args.seeds)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            (i, n, s): pool.submit(score_config, sets[n], cfg, s, args.val_fraction)
            for i, cfg in enumerate(configs)
            for n in names
            for s in seeds
        }
        results = {key: f.result() for key, f in futures.items()}
    rows = []
    for i, cfg in enumerate(configs):
        per_set = {n: np.mean([results[i, n, s]["score"] for s in seeds]) for n in names}
        secs = np.mean([results[i, n, s]["seconds"] for n in names for s in seeds])
        rows.append((float(np.mean(list(per_set.values()))), cfg, per_set, secs))
    rows.sort(key=lambda r: -r[0])
    print(f"{'overall':>8}  " + "".join(f"{n[:14]:>15}" for n in names) + f"{'s/fit':>7}  config")
    for overall, cfg, per_set, secs in rows:
        cells = "".join(f"{100 * per_set[n]:>15.1f}" for n in names)
        print(f"{100 * overall:>8.1f}  {cells}{secs:>7.1f}  {json.dumps(cfg)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"overall": o, "config": c, "per_set": p} for o, c, p, _ in rows], fh)


if __name__ == "__main__":
    main()
