"""Kernel WARCA in the re-identification setting: what its hyper-parameters do, on validation data.

On the ``fmnist-hist`` stand-in (LOMO-like stripe histograms of two simulated camera views of 632
Fashion-MNIST items; ``rankmetric.bench.reid_data``) — a STAND-IN, not VIPeR — this script varies
one hyper-parameter of χ²-RBF Kernel WARCA at a time around a base setting and reports the
validation score the ``rankmetric bench warca-reid`` table tunes on: for identity split k, the
training half (316 identities) is split again, 20% of its identities held out (seed 0), the model
is fitted on the other 80% and scored by leave-one-out R@1 among the held-out identities' images.
**No test identity is ever touched**, so the defaults chosen from this table are honest.

Varied (the rest at the base setting):

* ``gamma``: factor × the mean heuristic ``1 / mean χ²`` of the training histograms;
* ``sampling``: the rank estimator (``batched``, the reference's ``sequential``, ``exact``);
* ``margin``, ``n_components`` (the rank r of the embedding), ``reg_lambda`` (AON weight).

    python benchmarks/bench_warca_reid.py                 # splits 0 1, all factors
    python benchmarks/bench_warca_reid.py --splits 0 --only margin

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
from rankmetric.bench import identity_holdout, loo_recall_at_1
from rankmetric.estimators.warca import KernelWARCA
from rankmetric.kernels import default_gamma

#: The stand-in set, read once per process (every setting of every split uses it).
load_reid = functools.lru_cache(maxsize=2)(bench.load_reid)

#: The base setting every row changes one thing of.
BASE = {"gamma_factor": 1.0, "sampling": "batched", "margin": 1.0, "n_components": 64,
        "reg_lambda": 1e-3}  # fmt: skip
FACTORS = {
    "gamma_factor": [0.5, 1.0, 2.0],
    "sampling": ["batched", "sequential"],
    "margin": [0.5, 1.0, 2.0],
    "n_components": [32, 64, 128],
    "reg_lambda": [0.0, 1e-3, 1e-2, 1e-1],
}


def validation_score(split: int, setting: dict) -> tuple[float, float]:
    """(validation R@1, fit seconds) of one setting on the held-out identities of ``split``."""
    data = load_reid("fmnist-hist")
    train_ids, _ = data.split(split)
    rows = data.rows(train_ids)
    X, y = data.X[rows], data.ids[rows]
    inner, val = identity_holdout(y, 0)
    params = dict(setting)
    gamma = params.pop("gamma_factor") * default_gamma(torch.as_tensor(X[inner]), "chi2_rbf")
    params = {"validation_fraction": 0.0, **params}  # as measured (no hold-out inside fit)
    est = KernelWARCA(kernel="chi2_rbf", gamma=gamma, random_state=split, device="cpu", **params)
    start = time.perf_counter()
    est.fit(X[inner], y[inner])
    seconds = time.perf_counter() - start
    return 100 * loo_recall_at_1(None, None, est.transform(X[val]), y[val]), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--only", nargs="*", default=list(FACTORS), choices=list(FACTORS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    print(
        f"fmnist-hist STAND-IN, validation identities of splits {args.splits} (no test "
        f"identity used); torch threads={args.threads}, load {os.getloadavg()[0]:.1f}"
    )
    print(f"base: {BASE}")
    print(f"  {'factor':<14} {'value':>10} {'val R@1':>8} {'± std':>6} {'fit s':>7}")
    done: dict = {}  # the base setting is fitted once, not once per factor
    for factor in args.only:
        for value in FACTORS[factor]:
            setting = {**BASE, factor: value}
            key = tuple(sorted(setting.items()))
            if key not in done:
                done[key] = [validation_score(s, setting) for s in args.splits]
            runs = done[key]
            scores, seconds = np.array([r[0] for r in runs]), [r[1] for r in runs]
            mark = " (base)" if value == BASE[factor] else ""
            print(f"  {factor:<14} {value!s:>10} {scores.mean():8.1f} {scores.std():6.1f} "
                  f"{np.median(seconds):7.1f}{mark}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
