"""rankmetric's LMNN and ITML against metric-learn 0.7.0 on the same 5×2 CV folds.

For each data set this script runs metric-learn's side in its own environment (a subprocess,
``metric_learn_side.py`` under ``benchmarks/peers/.venv-ml``, built by ``run_metric_learn.sh``
when missing), then rankmetric's side here, so both are timed close together on one thread.
It prints k = 3 NN accuracy (mean ± std over the 10 test folds) and the median fit time of each,
with the ratio metric-learn / rankmetric (> 1: rankmetric is faster).

``ITML*`` is rankmetric's ITML given metric-learn's bounds convention (5th/95th percentiles of
*unsquared* Euclidean distances) instead of the authors' (percentiles of squared distances under
the prior), i.e. the same optimisation problem as metric-learn solves: a like-for-like timing.

Usage:
    python benchmarks/peers/compare_metric_learn.py [--datasets iris,wine,wdbc,digits]
        [--repeats 5] [--peer-json results/peers/metric_learn.json] [--out results/peers/x.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import protocol  # noqa: E402  (sets the thread variables before NumPy loads)
import torch  # noqa: E402
from sklearn.metrics import pairwise_distances  # noqa: E402

from rankmetric.estimators.itml import ITML  # noqa: E402
from rankmetric.estimators.lmnn import LMNN  # noqa: E402

torch.set_num_threads(1)
PEER_PYTHON = HERE / ".venv-ml" / "bin" / "python"


def _metric_learn_bounds(X: np.ndarray) -> np.ndarray:
    """metric-learn's default ITML bounds: percentiles 5/95 of unsquared distances of ``X``."""
    return np.percentile(pairwise_distances(np.unique(X, axis=0)), (5, 95))


OURS = {
    "LMNN": lambda X, y: LMNN(
        n_target_neighbors=protocol.K_NEIGHBOURS, random_state=0, device="cpu"
    ),
    "ITML": lambda X, y: ITML(random_state=0),
    "ITML*": lambda X, y: ITML(random_state=0, bounds=_metric_learn_bounds(X)),
}
PEER_OF = {"LMNN": "LMNN", "ITML": "ITML", "ITML*": "ITML"}


def run_peer(name: str, repeats: int) -> dict:
    """metric-learn's results on one data set, from its own environment."""
    if not PEER_PYTHON.exists():
        subprocess.run(["bash", str(HERE / "run_metric_learn.sh"), "--setup-only"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peer.json"
        subprocess.run(
            [str(PEER_PYTHON), str(HERE / "metric_learn_side.py"), str(out)]
            + ["--datasets", name, "--repeats", str(repeats)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())


def _cell(values: list[float]) -> str:
    return f"{np.mean(values):.3f}±{np.std(values):.3f}"


def print_table(ours: dict, peer: dict, euclidean: dict) -> None:
    header = (
        f"{'data':7s} {'method':6s} {'acc ours':>12s} {'acc m-l':>12s} {'fit s ours':>10s} "
        f"{'fit s m-l':>10s} {'m-l/ours':>8s}  median iterations ours vs m-l"
    )
    print(header)
    print("-" * len(header))
    for name in euclidean:
        print(f"{name:7s} {'eucl.':6s} {_cell(euclidean[name]['accuracy']):>12s}")
        for method, per_set in ours.items():
            mine, theirs = per_set[name], peer[PEER_OF[method]][name]
            t_mine, t_theirs = np.median(mine["fit_seconds"]), np.median(theirs["fit_seconds"])
            notes = (
                f"iters {np.median(mine['n_iter']):.0f} vs {np.median(theirs['n_iter']):.0f}; "
                f"ours stopped at max_iter in {mine['capped_folds']}/{len(mine['n_iter'])} folds"
            )
            print(
                f"{'':7s} {method:6s} {_cell(mine['accuracy']):>12s} "
                f"{_cell(theirs['accuracy']):>12s} {t_mine:10.3f} {t_theirs:10.3f} "
                f"{t_theirs / t_mine:8.1f}  {notes}"
            )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(protocol.DATASETS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer-json", type=Path, help="reuse metric-learn results from a file")
    parser.add_argument("--out", type=Path, help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    names = args.datasets.split(",")
    saved = json.loads(args.peer_json.read_text())["results"] if args.peer_json else None
    peer: dict = {"LMNN": {}, "ITML": {}}
    ours: dict = {method: {} for method in OURS}
    euclidean: dict = {}
    meta = {}
    for name in names:
        print(f"{name}: metric-learn ...", file=sys.stderr, flush=True)
        if saved is None:
            result = run_peer(name, args.repeats)
            meta = result["meta"]
            for method in peer:
                peer[method][name] = result["results"][method][name]
        else:
            for method in peer:
                peer[method][name] = saved[method][name]
        print(f"{name}: rankmetric ...", file=sys.stderr, flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            for method, make in OURS.items():
                ours[method][name] = protocol.evaluate(make, name, args.repeats)
        euclidean[name] = protocol.evaluate(None, name, args.repeats)
    print(
        f"stratified 2-fold CV x {args.repeats} repeats (RepeatedStratifiedKFold seed "
        f"{protocol.SEED}), "
        f"k={protocol.K_NEIGHBOURS} NN accuracy mean±std, median fit seconds, 1 thread; "
        f"peer: {meta or 'from ' + str(args.peer_json)}"
    )
    print_table(ours, peer, euclidean)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps({"peer": peer, "ours": ours, "euclidean": euclidean}, indent=1)
        )


if __name__ == "__main__":
    main()
