"""R@1 under the training distance (AIRM) on a large test part: fmnist-regcov's DSML-Triplet row.

The RPL table (``rankmetric bench rpl-spd``) reports R@1 under the distance each method trained
with only where the test part has at most 2000 matrices; an all-pairs AIRM search of the 10 000
fmnist-regcov test matrices is too slow on the shared machine. This script fills the gap on a
stratified 2000-matrix subsample of that test part (seed 0): for the untrained reference and for
DSML-Triplet (the same estimator, budget and seeds as the table's full mode, so the same models),
leave-one-out R@1 within the subsample under AIRM and under the Euclidean distance of
``transform`` (log-Euclidean), side by side.

Run: ``python benchmarks/bench_rpl_airm_eval.py [--seeds 5] [--n-test 2000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from rankmetric.bench import rpl
from rankmetric.bench.spdnet_baselines import fit_spdnet_row
from rankmetric.evaluate import retrieval_scores
from rankmetric.geometry import mean_whitening


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-test", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    X, y, _, _ = rpl.load_spd_split("fmnist-regcov", rpl.FMNIST_SIZES["full"])
    # the test subsample: stratified, seed 0 (the training part, whole here, draws nothing)
    _, _, X_sub, y_sub = rpl.load_spd_split("fmnist-regcov", (None, args.n_test))
    budget = {**rpl.SHARED_BUDGET, **rpl.BUDGETS["full"]}
    W = mean_whitening(torch.as_tensor(X, dtype=torch.float64))
    ref_vec = rpl.log_vectors(W @ torch.as_tensor(X_sub) @ W).numpy()
    le = retrieval_scores(ref_vec, y_sub, ks=(1,), device="cpu")["recall@1"]
    airm = rpl.airm_recall_at_1(X_sub, y_sub)
    print(f"reference      R@1 log-Euclidean {100 * le:5.1f}  AIRM {100 * airm:5.1f}", flush=True)
    rows = []
    for seed in range(args.seeds):
        start = time.perf_counter()
        est, record = fit_spdnet_row(X, y, "dsml-triplet", budget, seed=seed)
        Z = est.set_params(output="vector").transform(X_sub)
        le = retrieval_scores(Z, y_sub, ks=(1,), device="cpu")["recall@1"]
        airm = rpl.airm_recall_at_1(est.set_params(output="spd").transform(X_sub), y_sub)
        rows.append((le, airm))
        print(f"dsml seed {seed}    R@1 log-Euclidean {100 * le:5.1f}  AIRM {100 * airm:5.1f}  "
              f"best step {record['best_iter']}  {time.perf_counter() - start:.0f} s",
              flush=True)  # fmt: skip
    le, airm = np.array(rows).T * 100
    print(f"dsml mean      R@1 log-Euclidean {le.mean():5.1f} ± {le.std():.1f}  "
          f"AIRM {airm.mean():5.1f} ± {airm.std():.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
