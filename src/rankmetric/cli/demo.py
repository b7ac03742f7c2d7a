"""``rankmetric demo``: learn metrics on bundled data sets and compare them with Euclidean k-NN."""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict

from ._args import check_threads

DEMO_DATASETS = ("wine", "wdbc", "digits")


def _methods(quick: bool, seed: int) -> dict:
    """The learners compared by the demo (``None`` is the plain Euclidean distance)."""
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    from .. import LMNN, SSNE, WARCA

    steps = 300 if quick else 2000
    return {
        "Euclidean": None,
        "WARCA": WARCA(max_iter=steps, random_state=seed),
        "SSNE": SSNE(max_iter=steps, random_state=seed),
        "LMNN": LMNN(max_iter=50 if quick else 200, random_state=seed),
        "NCA (scikit-learn)": NeighborhoodComponentsAnalysis(
            max_iter=50 if quick else 200, random_state=seed
        ),
    }


def run_demo(args: argparse.Namespace) -> int:
    import torch

    from ..datasets import load_dataset
    from ..evaluate import repeated_cv_knn

    check_threads(args.threads)
    torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 5
    print(
        f"k-NN accuracy (k={args.k}, %) under {repeats}x2 stratified cross-validation, "
        f"features standardised inside each fold, seed {args.seed}.\n"
    )
    methods = _methods(args.quick, args.seed)
    header = f"| {'data set':<10} | " + " | ".join(f"{m:>18}" for m in methods) + " |"
    print(header)
    print("|" + "-" * 12 + "|" + "|".join("-" * 20 for _ in methods) + "|")
    noted: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name in args.datasets:
        data = load_dataset(name)
        cells = []
        for method, est in methods.items():
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = repeated_cv_knn(
                    est,
                    data.X,
                    data.y,
                    n_repeats=repeats,
                    n_splits=2,
                    k=args.k,
                    random_state=args.seed,
                )
            for kind in dict.fromkeys(w.category.__name__ for w in caught):
                noted[(method, kind)].append(f"{name} ({_count(caught, kind)}x)")
            cells.append(
                f"{100 * res.mean:5.1f}±{100 * res.std:4.1f} ({time.perf_counter() - start:4.0f}s)"
            )
        print(f"| {name:<10} | " + " | ".join(f"{c:>18}" for c in cells) + " |")
    print("\n(mean ± std over the folds; the time in brackets is the whole cross-validation.)")
    _print_warning_summary(noted, n_folds=2 * repeats)
    return 0


def _count(caught: list[warnings.WarningMessage], kind: str) -> int:
    return sum(w.category.__name__ == kind for w in caught)


_EXPLAINED = {
    "ConvergenceWarning": "stopped at its iteration cap before the convergence test was met "
    "(expected with the demo's short budgets; `--full` trains longer)",
}


def _print_warning_summary(noted: dict[tuple[str, str], list[str]], n_folds: int) -> None:
    """One line per (method, warning kind) raised while fitting, instead of one per fold."""
    if not noted:
        return
    print(f"\nWarnings raised while fitting ({n_folds} folds per data set):")
    for (method, kind), where in noted.items():
        what = _EXPLAINED.get(kind, "see the library's warning for details")
        print(f"- {method}: {kind} on {', '.join(where)} — {what}.")


def register(subparsers, full: bool = True) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="learn metrics on bundled data sets and compare them with Euclidean k-NN",
        description=(
            "Fit WARCA, SSNE, LMNN and scikit-learn's NCA on data sets bundled with scikit-learn "
            "(no download) and print their k-NN accuracy beside plain Euclidean k-NN."
        ),
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=list(DEMO_DATASETS),
        metavar="NAME",
        help="data sets to use (default: %(default)s)",
    )
    parser.add_argument(
        "--full",
        dest="quick",
        action="store_false",
        help="5x2 CV and full training budgets instead of the quick 1x2 run",
    )
    parser.add_argument("-k", type=int, default=3, help="neighbours in the k-NN vote (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.set_defaults(func=run_demo, quick=True)
