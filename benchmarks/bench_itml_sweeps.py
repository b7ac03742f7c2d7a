"""ITML at its default bounds against metric-learn 0.7.0's ITML_Supervised: sweeps and time.

Both sides run the shared protocol of ``benchmarks/peers/protocol.py`` (5×2 CV, standardised
features, k = 3 NN, one thread; fit time is ``time.perf_counter`` around ``fit``, median over
the 10 folds) in one run: metric-learn in its own environment (``benchmarks/peers/.venv-ml``,
built by ``benchmarks/peers/run_metric_learn.sh --setup-only``; metric-learn needs
scikit-learn ≤ 1.7) as a subprocess, then rankmetric here. Rows:

* ``rankmetric ITML``: our defaults (the authors' bounds: 5th/95th percentiles of *squared*
  prior distances; stop when the dual variables' relative change after a sweep over every
  constraint is < ``tol``, the criterion metric-learn uses, with the same 1e-3; between those
  sweeps, sweeps over the active constraints only; similar and dissimilar constraints
  alternate);
* ``rankmetric ITML, metric-learn bounds``: the same solver given metric-learn's bounds
  (percentiles of *unsquared* distances, compared with squared ones), i.e. metric-learn's
  optimisation problem.

Each table is run with one BLAS thread and again with the default threads (``--threads``);
no hyper-parameter is chosen (both sides run their defaults), so no test fold informs a choice.
``sweeps`` counts every sweep, whether over all constraints or over the active ones.

    python benchmarks/bench_itml_sweeps.py [--datasets wine,wdbc,digits] [--repeats 5]
        [--threads 1,default]   # metric-learn's venv: $ML_VENV or benchmarks/peers/.venv-ml
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "peers"
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import protocol  # noqa: E402  (sets the thread variables before NumPy loads)
from sklearn.metrics import pairwise_distances  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from rankmetric.estimators.itml import ITML  # noqa: E402

PEER_PYTHON = Path(os.environ.get("ML_VENV", HERE / ".venv-ml")) / "bin" / "python"
PEER_CODE = """
import json, sys
sys.path.insert(0, {here!r})
import protocol, metric_learn
from threadpoolctl import threadpool_limits
threadpool_limits({threads})
make = lambda X, y: metric_learn.ITML_Supervised(random_state=0)
out = {{name: protocol.evaluate(make, name, {repeats}) for name in {names!r}}}
print(json.dumps(out))
"""


def peer(names: list[str], repeats: int, threads: int) -> dict:
    code = PEER_CODE.format(here=str(HERE), repeats=repeats, names=names, threads=threads)
    done = subprocess.run(
        [str(PEER_PYTHON), "-c", code], check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def metric_learn_bounds(X: np.ndarray) -> np.ndarray:
    return np.percentile(pairwise_distances(X), (5, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="wine,wdbc,digits")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,default")
    args = parser.parse_args()
    for threads in args.threads.split(","):
        n = 1 if threads == "1" else os.cpu_count()
        print(f"\nBLAS threads: {n} ({threads})\n")
        with threadpool_limits(n):  # protocol.py set one thread at import
            table(args.datasets.split(","), args.repeats, n)


def table(names: list[str], repeats: int, threads: int) -> None:
    """One side-by-side table of every data set at ``threads`` BLAS threads."""
    theirs = peer(names, repeats, threads) if PEER_PYTHON.exists() else None
    rows = {
        "rankmetric ITML": lambda X, y: ITML(random_state=0),
        "rankmetric ITML, metric-learn bounds": lambda X, y: ITML(
            random_state=0, bounds=metric_learn_bounds(X)
        ),
    }
    print("| data | method | 3-NN % | sweeps (median) | fit s (median) | metric-learn ÷ this |")
    print("|---|---|---|---|---|---|")
    for name in names:
        ref = None
        if theirs is not None:
            r = theirs[name]
            ref = float(np.median(r["fit_seconds"]))
            print(
                f"| {name} | metric-learn ITML_Supervised | {100 * np.mean(r['accuracy']):.2f} | "
                f"{np.median(r['n_iter']):.0f} | {ref:.3f} | 1.00 |"
            )
        for label, make in rows.items():
            r = protocol.evaluate(make, name, repeats)
            sec = float(np.median(r["fit_seconds"]))
            ratio = f"{ref / sec:.2f}" if ref else "—"
            print(
                f"| {name} | {label} | {100 * np.mean(r['accuracy']):.2f} | "
                f"{np.median(r['n_iter']):.0f} | {sec:.3f} | {ratio} |",
                flush=True,
            )
    if theirs is None:
        print(f"(metric-learn not run: no {PEER_PYTHON}; see run_metric_learn.sh)")


if __name__ == "__main__":
    main()
