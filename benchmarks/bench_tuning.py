"""Budgeted self-tuning (``rankmetric.tuning``): time as a multiple of one default fit, and scores.

For each (set, method): one identity split of a ``rankmetric bench warca-reid`` stand-in
(``--identities`` of them drawn with seed 0, half for training, half for test), features
standardised on the training identities (Kernel WARCA on ``fmnist-hist``: the raw histograms,
χ²-RBF), then

* the learner with its defaults, fitted on the training identities (time ``t_default``);
* its ``*CV`` learner (``budget=--budget``), fitted on the same rows with their cameras (time
  ``t_tuned``; validation held out by identity inside ``fit``, never a test identity).

Reported: ``t_tuned / t_default``, the validation rank-1 of Euclidean / the defaults / the
chosen values (``reference_score_``, ``default_score_``, ``best_score_``) and the test rank-1
(camera-A probes against the camera-B gallery of the test identities) of Euclidean, the
defaults and the tuned learner. One split only: differences of a few points are noise. The
machine may be shared: times carry its load. Example (the figures of docs/tuning.md):

    python benchmarks/bench_tuning.py --sets synthetic-reid --identities 200 \
        --methods kissme xqda lmnn warca
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.preprocessing import StandardScaler

from rankmetric.bench.reid_data import load_reid
from rankmetric.evaluate import reid_scores
from rankmetric.tuning import CV_CLASSES

METHODS = ("kissme", "xqda", "itml", "lmnn", "warca", "ssne", "kernel-warca")
HISTOGRAM_SETS = ("fmnist-hist",)


def split(name: str, n_identities: int, seed: int = 0):
    """(X, ids, cameras, train mask) of ``n_identities`` identities of a stand-in set."""
    data = load_reid(name)
    rng = np.random.default_rng(seed)
    keep = rng.choice(np.unique(data.ids), n_identities, replace=False)
    rows = np.flatnonzero(np.isin(data.ids, keep))
    X, ids, cams = data.X[rows].astype(np.float64), data.ids[rows], data.camera[rows]
    train = np.isin(ids, rng.permutation(keep)[: n_identities // 2])
    return X, ids, cams, train


def test_rank1(Z, ids, cams, train) -> float:
    """Rank-1 of camera-A probes against the camera-B gallery of the test identities."""
    q, g = ~train & (cams == 0), ~train & (cams == 1)
    return float(reid_scores(Z[q], ids[q], cams[q], Z[g], ids[g], cams[g], ranks=(1,),
                             device="cpu")["cmc"][1])  # fmt: skip


def run(name: str, method: str, n_identities: int, budget: float, seed: int) -> dict:
    X, ids, cams, train = split(name, n_identities, seed)
    if not (method == "kernel-warca" and name in HISTOGRAM_SETS):
        X = StandardScaler().fit(X[train]).transform(X)
    cv_class = CV_CLASSES[method]
    learner = cv_class._learner
    params = learner().get_params()
    default = learner(random_state=seed) if "random_state" in params else learner()
    if method == "kernel-warca" and name not in HISTOGRAM_SETS:
        default.set_params(kernel="rbf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        default.fit(X[train], ids[train])
        t_default = time.perf_counter() - start
        start = time.perf_counter()
        cv = cv_class(default, budget=budget, random_state=seed)
        cv.fit(X[train], ids[train], cameras=cams[train])
        t_tuned = time.perf_counter() - start
    return {
        "set": name,
        "method": method,
        "t_default": t_default,
        "t_tuned": t_tuned,
        "ratio": t_tuned / t_default,
        "n_fits": len(cv.tuning_results_["score"]),
        "val_euclidean": cv.reference_score_,
        "val_default": cv.default_score_,
        "val_tuned": cv.best_score_,
        "test_euclidean": test_rank1(X, ids, cams, train),
        "test_default": test_rank1(default.transform(X), ids, cams, train),
        "test_tuned": test_rank1(cv.transform(X), ids, cams, train),
        "best_params": cv.best_params_,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["synthetic-reid", "fmnist-hist"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--identities", type=int, default=200)
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args()
    rows = []
    print("| set | method | t default s | t tuned s | tuned / default | fits | val R1 Eucl / "
          "default / tuned | test R1 Eucl / default / tuned | chosen |")  # fmt: skip
    print("|:--|:--|--:|--:|--:|--:|--:|--:|:--|")
    for name in args.sets:
        for method in args.methods:
            r = run(name, method, args.identities, args.budget, args.seed)
            rows.append(r)
            val = " / ".join(f"{100 * r[k]:.1f}" for k in ("val_euclidean", "val_default",
                                                            "val_tuned"))  # fmt: skip
            test = " / ".join(f"{100 * r[k]:.1f}" for k in ("test_euclidean", "test_default",
                                                             "test_tuned"))  # fmt: skip
            chosen = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in r["best_params"].items())  # fmt: skip
            print(f"| {name} | {method} | {r['t_default']:.2f} | {r['t_tuned']:.2f} | "
                  f"{r['ratio']:.1f} | {r['n_fits']} | {val} | {test} | {chosen} |",
                  flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1, default=str)


if __name__ == "__main__":
    main()
