"""Classic Mahalanobis baselines (LMNN, ITML) on the 5×2 CV k-NN protocol.

Without ``--peers`` it prints rankmetric's LMNN and ITML against the Euclidean k-NN on the
bundled sets (accuracy mean ± std over the 10 test folds, median fit seconds, one thread). With
``--peers`` it runs ``benchmarks/peers/compare_metric_learn.py``: the same folds side by side with
metric-learn 0.7.0 in its own environment.

Usage:
    python benchmarks/bench_classic.py [--datasets iris,wine,wdbc,digits] [--repeats 5] [--peers]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import compare_metric_learn  # noqa: E402  (sets one thread for BLAS/OpenMP and torch)
import numpy as np  # noqa: E402
import protocol  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(protocol.DATASETS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peers", action="store_true", help="compare with metric-learn 0.7.0")
    args = parser.parse_args(argv)
    if args.peers:
        compare_metric_learn.main(["--datasets", args.datasets, "--repeats", str(args.repeats)])
        return
    print(f"{'data':7s} {'method':6s} {'accuracy':>12s} {'fit s':>8s} {'iters':>6s}")
    for name in args.datasets.split(","):
        euclidean = protocol.evaluate(None, name, args.repeats)["accuracy"]
        print(f"{name:7s} {'eucl.':6s} {np.mean(euclidean):7.3f}±{np.std(euclidean):.3f}")
        for method in ("LMNN", "ITML"):
            result = protocol.evaluate(compare_metric_learn.OURS[method], name, args.repeats)
            acc = result["accuracy"]
            print(
                f"{'':7s} {method:6s} {np.mean(acc):7.3f}±{np.std(acc):.3f} "
                f"{np.median(result['fit_seconds']):8.3f} {np.median(result['n_iter']):6.0f}"
            )


if __name__ == "__main__":
    main()
