"""RPL accuracy on the SPD stand-ins (Table 1 protocol) against pyRiemann's tangent space.

For each data set (covariance matrices of the official train/test split, ``load_spd``) and seed:

* ours: ``RPLEmbedding(**params, random_state=seed)`` fitted on the training split; the test
  matrices are embedded with ``transform`` (``output="vector"``: the upper triangle of log Y, whose
  Euclidean distance is the log-Euclidean distance between the SPD outputs);
* peer: ``pyriemann.tangentspace.TangentSpace(metric="riemann")`` fitted on the training split, i.e.
  the test matrices whitened by the training Riemannian mean and log-mapped (no learning);

then, on the test embeddings only: F1 and NMI of k-means with k = number of classes (k-means seed
= the seed), R@1 and R@3 (leave-one-out within the test split, Euclidean distance on the
embedding) and mAP@R, with :mod:`rankmetric.evaluate`. It prints mean ± std over the seeds, in %,
and the ratio ours / peer of the means.

Run: ``.venv/bin/python benchmarks/bench_rpl_accuracy.py`` (5 seeds, 4 sets; several minutes on
2 cores; ``--jobs`` runs seeds in parallel processes, ``--quick`` runs 2 seeds of 2 small sets).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from rankmetric.evaluate import clustering_scores, retrieval_scores

DATASETS = ("BasicMotions", "HandMovementDirection", "FingerMovements", "SelfRegulationSCP1")
METRICS = ("f1", "recall@1", "recall@3", "nmi", "map@r")


def load_sets(names, npz: str | None = None) -> dict[str, dict[str, np.ndarray]]:
    """``{name: {"X", "y", "X_test", "y_test"}}`` from ``load_spd`` or a file of ``--dump``."""
    if npz is not None:
        with np.load(npz, allow_pickle=False) as f:
            return {n: {k: f[f"{n}/{k}"] for k in ("X", "y", "X_test", "y_test")} for n in names}
    from rankmetric.datasets import load_spd

    sets = {}
    for name in names:
        d = load_spd(name)
        sets[name] = {"X": d.X, "y": d.y, "X_test": d.X_test, "y_test": d.y_test}
    return sets


def scores(embeddings: np.ndarray, labels: np.ndarray, seed: int) -> dict[str, float]:
    """F1, NMI (k-means), R@1, R@3 and mAP@R of test embeddings, as in the RPL paper."""
    found = retrieval_scores(embeddings, labels, ks=(1, 3), device="cpu")
    found.update(clustering_scores(embeddings, labels, random_state=seed))
    return {m: found[m] for m in METRICS}


def run_ours(data: dict, seed: int, params: dict, threads: int = 1) -> dict[str, float]:
    from rankmetric.estimators.spd import RPLEmbedding

    torch.set_num_threads(threads)
    start = time.perf_counter()
    with threadpool_limits(threads):
        est = RPLEmbedding(**params, random_state=seed, device="cpu").fit(data["X"], data["y"])
        out = scores(est.transform(data["X_test"]), data["y_test"], seed)
    out["seconds"] = time.perf_counter() - start
    out["n_iter"] = est.n_iter_
    return out


def run_peer(data: dict, seed: int) -> dict[str, float]:
    from pyriemann.tangentspace import TangentSpace

    with threadpool_limits(1):
        ts = TangentSpace(metric="riemann").fit(data["X"])
        return scores(ts.transform(data["X_test"]), data["y_test"], seed)


def _summary(runs: list[dict], key: str) -> tuple[float, float]:
    values = 100 * np.array([r[key] for r in runs])
    return float(values.mean()), float(values.std())


def _ratio(ours: float, peer: float) -> str:
    """ours / peer, or n/a when the peer's figure (in %) is below 1 (NMI at chance level)."""
    return f"{ours / peer:>16.2f}" if peer >= 1.0 else f"{'n/a':>16}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--params", default="{}", help="JSON of RPLEmbedding parameters")
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes (1 thread each)")
    parser.add_argument("--data", default=None, help="an .npz written by --dump (no fetch)")
    parser.add_argument("--dump", default=None, help="write the covariance sets to this .npz, exit")
    parser.add_argument("--json", default=None, help="also write every run to this file")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    names = args.datasets.split(",")
    seeds = list(range(2 if args.quick else args.seeds))
    if args.quick:
        names = [n for n in names if n in ("BasicMotions", "SelfRegulationSCP1")] or names[:1]
    sets = load_sets(names, args.data)
    if args.dump:
        flat = {f"{n}/{k}": v for n, d in sets.items() for k, v in d.items()}
        np.savez_compressed(args.dump, **flat)
        print(f"wrote {', '.join(names)} to {args.dump}")
        return
    params = json.loads(args.params)
    torch.set_num_threads(1)
    print(f"RPLEmbedding params: {params or 'defaults'}; seeds {seeds}; torch threads 1 per run")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        ours = {n: [pool.submit(run_ours, sets[n], s, params) for s in seeds] for n in names}
        peer = {n: [pool.submit(run_peer, sets[n], s) for s in seeds] for n in names}
        ours = {n: [f.result() for f in fs] for n, fs in ours.items()}
        peer = {n: [f.result() for f in fs] for n, fs in peer.items()}
    header = "".join(f"{m:>16}" for m in METRICS)
    print(f"{'data set':<23}{'method':<14}{header}{'s/fit':>8}")
    for name in names:
        for method, runs in (("RPL (ours)", ours[name]), ("TS (pyRiem.)", peer[name])):
            cells = "".join("{:>10.1f} ± {:<4.1f}".format(*_summary(runs, m)) for m in METRICS)
            secs = (
                f"{np.median([r['seconds'] for r in runs]):>8.1f}" if "seconds" in runs[0] else ""
            )
            print(f"{name:<23}{method:<14}{cells}{secs}")
        ratios = "".join(
            _ratio(_summary(ours[name], m)[0], _summary(peer[name], m)[0]) for m in METRICS
        )
        print(f"{'':<23}{'ratio':<14}{ratios}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"params": params, "ours": ours, "peer": peer}, fh, indent=1)


if __name__ == "__main__":
    main()
