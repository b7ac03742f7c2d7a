"""Cost of the held-out check: fit time with held_out_check="auto" over held_out_check=False.

For each learner (default settings, ``device="cpu"``) and two data sets:

* ``digits 0-5``: the 1,083 digit images of classes 0–5 (64 features): 6 classes, so the check
  rotates 2 held-out classes through up to 3 folds — up to three probe fits on 4/6 of the data,
  the most the check ever costs (the folds run one at a time until the comparison is decisive:
  the "folds" column gives those run of those planned);
* ``50 groups``: ``make_gaussian_clusters(1500, 32, 50)`` (non-negative): 50 classes, one fold of
  10 held-out classes — one probe fit on 80 % of the data, the cost from 28 groups on;

the fits with and without the check alternate ``--repeats`` times; the script prints the median
times and their ratio (the fit-time multiple of the check), and the check's verdict. The probe
fits are as long as the learner's own fit on fewer rows, so the multiple is about
``1 + n_folds × (share of rows)^p`` with ``p`` the learner's scaling in the rows and
``n_folds`` the folds run.

Run: ``.venv/bin/python benchmarks/bench_held_out_check.py`` (a few minutes on 1 thread;
``--quick`` for one repeat of the fast learners).

``--unseen``: the issue's case instead of the timings — each learner (default settings) fitted
on the digits of classes 0–5, its ROC AUC on every pair of 500 digits of classes 6–9 (drawn with
seed 0, as ``tests/estimators/test_held_out.py`` does) beside the Euclidean distance's, and its
held-out check: the difference with its standard error over the held-out classes and over the
items, the folds run and the verdict. Timings on a shared machine are noisy: read the
ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits

from rankmetric import ITML, KISSME, LMNN, SSNE, WARCA, XQDA, KernelWARCA
from rankmetric.datasets import make_gaussian_clusters

LEARNERS = {
    "KISSME": lambda **kw: KISSME(**kw),
    "XQDA": lambda **kw: XQDA(**kw),
    "ITML": lambda **kw: ITML(random_state=0, **kw),
    "WARCA": lambda **kw: WARCA(random_state=0, device="cpu", **kw),
    "SSNE": lambda **kw: SSNE(random_state=0, device="cpu", **kw),
    "LMNN": lambda **kw: LMNN(random_state=0, **kw),
    "KernelWARCA": lambda **kw: KernelWARCA(random_state=0, device="cpu", **kw),
}
QUICK = ("KISSME", "XQDA", "WARCA")


def datasets():
    X, y = load_digits(return_X_y=True)
    yield "digits 0-5", X[y < 6], y[y < 6]
    X, y = make_gaussian_clusters(1500, 32, 50, n_informative=8, random_state=0)
    yield "50 groups", X - X.min() + 0.1, y


def timed_fit(make, X, y, check):
    est = make(held_out_check=check)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return time.perf_counter() - start, est


def unseen(names) -> None:
    """The issue's case: unseen classes 6–9 against each learner's check on classes 0–5."""
    from sklearn.metrics import roc_auc_score

    X, y = load_digits(return_X_y=True)
    seen = y < 6
    test = np.random.default_rng(0).choice(np.flatnonzero(~seen), 500, replace=False)
    i, j = np.triu_indices(test.shape[0], 1)
    X1, X2, same = X[test[i]], X[test[j]], y[test[i]] == y[test[j]]
    euclidean = roc_auc_score(same, -np.linalg.norm(X1 - X2, axis=1))
    print(
        f"| learner | unseen ROC AUC (Euclidean {euclidean:.3f}) | held-out mAP vs Euclidean "
        "| difference ± SE (classes; items) | folds | verdict |"
    )
    print("|---|---|---|---|---|---|")
    for name in names:
        _, est = timed_fit(LEARNERS[name], X[seen], y[seen], "auto")
        c = est.held_out_check_
        auc = roc_auc_score(same, -est.pair_distances(X1, X2))
        print(
            f"| {name} | {auc:.3f} | {c['learned']:.3f} vs {c['reference']:.3f} | "
            f"{c['difference']:+.3f} ± {c['standard_error']:.3f} "
            f"(± {c['item_standard_error']:.3f}) | {c['n_folds']}/{c['folds_planned']} | "
            f"{c['verdict']} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--learners", nargs="*", default=None)
    parser.add_argument("--datasets", nargs="*", default=None, help="'digits 0-5', '50 groups'")
    parser.add_argument("--unseen", action="store_true", help="the unseen-class case instead")
    args = parser.parse_args()
    names = args.learners or (QUICK if args.quick else list(LEARNERS))
    if args.unseen:
        return unseen(names)
    repeats = 1 if args.quick else args.repeats
    print("| data | learner | fit s (check off) | fit s (check on) | multiple | folds | verdict |")
    print("|---|---|---|---|---|---|---|")
    for data_name, X, y in datasets():
        if args.datasets and data_name not in args.datasets:
            continue
        for name in names:
            off, on = [], []
            for _ in range(repeats):  # alternate, so the load drifts over both alike
                off.append(timed_fit(LEARNERS[name], X, y, False)[0])
                t, est = timed_fit(LEARNERS[name], X, y, "auto")
                on.append(t)
            c = est.held_out_check_
            verdict = (
                f"{c['metric']} {c['learned']:.3f} vs {c['reference']:.3f} "
                f"(t {c['difference'] / c['standard_error']:+.1f}, {c['dof']} dof): {c['verdict']}"
            )
            m_off, m_on = statistics.median(off), statistics.median(on)
            print(
                f"| {data_name} | {name} | {m_off:.2f} | {m_on:.2f} | {m_on / m_off:.2f}× | "
                f"{c['n_folds']}/{c['folds_planned']} | {verdict} |",
                flush=True,
            )


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
