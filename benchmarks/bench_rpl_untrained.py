"""Which default ``RPLEmbedding`` fits keep their untrained network (``best_iter_ == 0``)?

For each set and seed: the default ``RPLEmbedding(random_state=seed)`` fitted on the official
training part of ``load_spd(name)``; prints the steps run, the kept step, the validation R@1 of
step 0 and of the kept step, the best gain over step 0 with its paired standard error, the fit
time, and whether the fit warned that it kept the untrained network. The test parts are not read.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_rpl_untrained.py`` (``--sets``, ``--seeds``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from rankmetric.datasets import load_spd
from rankmetric.estimators.spd import RPLEmbedding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["HandMovementDirection", "BasicMotions"])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        "set | seed | n_iter | best_iter | val R@1 step 0 | val R@1 kept | gain ± se | fit s "
        "| warned"
    )
    for name in args.sets:
        data = load_spd(name)
        for seed in range(args.seeds):
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = RPLEmbedding(random_state=seed).fit(data.X, data.y)
            seconds = time.perf_counter() - start
            warned = any("untrained network" in str(w.message) for w in caught)
            gain, se = est.validation_gain_
            print(
                f"{name} | {seed} | {est.n_iter_} | {est.best_iter_} | "
                f"{est.initial_validation_score_:.3f} | {est.validation_score_:.3f} | "
                f"{gain:+.3f} ± {se:.3f} | {seconds:.1f} | {warned}",
                flush=True,
            )


if __name__ == "__main__":
    main()
