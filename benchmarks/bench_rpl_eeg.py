"""Does RPL learn on EEG, and does it reach MDM? Settings chosen on validation data only.

Two stages, each printed as a table:

1. ``--stage validation``: for each candidate setting of ``RPLEmbedding`` (:data:`CANDIDATES`),
   each set and seed, fit on an inner training part and score an inner validation part that the
   test data never touches:

   * real sets (``load_spd``: OAS covariances of the bundled UEA recordings): the official
     *training* part split 75 / 25 (stratified, ``seed``);
   * the cross-session simulation (:func:`simulate_sessions`, the EEG guide's case: two
     recording days of source-mixing trials, the second day's channels mixed anew): train on
     day 1 of simulation seed ``100 + seed``, validate on its day 2 (each day re-centred at its own
     mean, ``DomainRecentering``); the test simulation (seed ``seed``) is another draw.

   Scores: the k-NN accuracy (k = 3, the RPL table's) of the validation part against the inner
   training part's embedding and that of a nearest-centroid vote on it (scikit-learn's
   ``NearestCentroid``: MDM's rule in the learned space), the kept step (``best_iter_``; 0 = the
   untrained network) and the fit time; MDM and TangentSpace + LogisticRegression on the same
   parts for reference.
2. ``--stage test``: the chosen setting (``--setting``) against MDM and TS + LR on the official
   test parts (the simulation: train day 1, test day 2 of simulation seed ``seed``), with the
   median fit time.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_rpl_eeg.py --stage validation``
(``--sets``, ``--seeds``, ``--settings``), then ``--stage test --setting NAME``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NearestCentroid

from rankmetric import MDM, RPLEmbedding
from rankmetric.datasets import load_spd
from rankmetric.evaluate import knn_accuracy
from rankmetric.preprocessing import Covariances, DomainRecentering, TangentSpace

SIMULATION = "cross-session simulation"
SETS = (SIMULATION, "SelfRegulationSCP1", "FingerMovements", "EyesOpenShut")
#: Candidate settings of RPLEmbedding (the default first; since 0.2 it validates with mAP).
CANDIDATES = {
    "default": {},
    "recall@1": {"validation_metric": "recall@1"},  # the default before 0.2
    "map": {"validation_metric": "map"},
    "se0.5": {"selection_se": 0.5},
    "map+se0.5": {"validation_metric": "map", "selection_se": 0.5},
    "lr3e-2": {"learning_rate": 3e-2},
    "lr1e-3": {"learning_rate": 1e-3},
    "map+lr3e-2": {"validation_metric": "map", "learning_rate": 3e-2},
}
K = 3
GAIN = 1.15  # class effect on a source's amplitude


def simulate_sessions(seed: int, n_per_day: int = 80, c: int = 8, t: int = 128):
    """Two days of two-class trials from mixed sources; day 2's mixing differs (a new cap).

    Each trial is ``A_day @ S``: ``c`` sources of unit-variance noise, of which the first two
    change their power with the class (left: source 0 × GAIN, right: source 1 × GAIN); the mixing
    ``A_day = A + 0.3 G_day`` of the day; pink-ish background. Returns OAS covariances of the
    two days, each re-centred at its own Riemannian mean (the guide's cross-session recipe),
    with their labels.
    """
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(c, c))
    days = []
    for _ in range(2):
        y = np.tile([0, 1], n_per_day // 2)
        gains = np.ones((len(y), c))
        gains[y == 0, 0] = GAIN
        gains[y == 1, 1] = GAIN
        S = rng.normal(size=(len(y), c, t)) * gains[:, :, None]
        S = np.cumsum(S, axis=2) * 0.1 + S  # a little temporal correlation
        mixing = A + 0.3 * rng.normal(size=(c, c))
        X = mixing @ S
        C = Covariances(estimator="oas").fit_transform(X)
        days.append((DomainRecentering(device="cpu").fit_transform(C), y))
    return days


def _parts(name: str, seed: int, stage: str):
    """``(X_train, y_train, X_eval, y_eval)`` of a stage (validation parts never see test)."""
    if name == SIMULATION:
        (X0, y0), (X1, y1) = simulate_sessions(100 + seed if stage == "validation" else seed)
        return X0, y0, X1, y1
    data = load_spd(name)
    if stage == "test":
        return data.X, data.y, data.X_test, data.y_test
    X_tr, X_va, y_tr, y_va = train_test_split(
        data.X, data.y, test_size=0.25, stratify=data.y, random_state=seed
    )
    return X_tr, y_tr, X_va, y_va


def _baselines(X, y, X_eval, y_eval) -> dict:
    out = {}
    start = time.perf_counter()
    out["MDM"] = (MDM(device="cpu").fit(X, y).score(X_eval, y_eval), time.perf_counter() - start)
    start = time.perf_counter()
    ts = TangentSpace(device="cpu").fit(X)
    clf = LogisticRegression(max_iter=1000).fit(ts.transform(X), y)
    out["TS+LR"] = (clf.score(ts.transform(X_eval), y_eval), time.perf_counter() - start)
    return out


def _rpl(X, y, X_eval, y_eval, params: dict, seed: int) -> tuple[float, float, float, int]:
    """``(k-NN accuracy, nearest-centroid accuracy, fit seconds, kept step)`` of one fit."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RPLEmbedding(random_state=seed, device="cpu", **params).fit(X, y)
    seconds = time.perf_counter() - start
    Z, Z_eval = est.transform(X), est.transform(X_eval)
    knn = knn_accuracy(Z, y, Z_eval, y_eval, k=K, device="cpu")
    centroid = NearestCentroid().fit(Z, y).score(Z_eval, y_eval)
    return knn, centroid, seconds, est.best_iter_


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=["validation", "test"], default="validation")
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--settings", nargs="+", default=list(CANDIDATES))
    parser.add_argument("--setting", default="default", help="the setting of --stage test")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = args.settings if args.stage == "validation" else [args.setting]
    print(f"stage: {args.stage}; RPL: {K}-NN and nearest-centroid accuracy on its embedding; "
          "MDM, TS+LR: their own predict")  # fmt: skip
    print("set | seed | method | accuracy | nearest centroid | kept step | fit s")
    for name in args.sets:
        for seed in range(args.seeds):
            X, y, X_eval, y_eval = _parts(name, seed, args.stage)
            for method, (acc, seconds) in _baselines(X, y, X_eval, y_eval).items():
                print(f"{name} | {seed} | {method} | {acc:.3f} | — | — | {seconds:.3f}", flush=True)
            for setting in settings:
                knn, centroid, seconds, kept = _rpl(X, y, X_eval, y_eval, CANDIDATES[setting], seed)
                print(f"{name} | {seed} | RPL {setting} | {knn:.3f} | {centroid:.3f} | {kept} | "
                      f"{seconds:.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
