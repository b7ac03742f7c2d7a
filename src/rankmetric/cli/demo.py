"""``rankmetric demo``: where a learned metric matters, and where it does not, in about a minute.

Three cases, each against the plain Euclidean distance on the same features:

- **re-identification across cameras** (:func:`~rankmetric.datasets.make_multicamera_reid` with
  its default settings): half of the identities train WARCA, XQDA and SSNE, the other half are
  queried under the Market-1501 protocol; rank-1 and mAP, with and without k-reciprocal
  re-ranking; a CMC figure;
- **verification from pairs** (:func:`~rankmetric.datasets.make_synthetic_reid`, the VIPeR
  stand-in): the metrics learn from "same" / "different" pairs only (no identity labels) and
  decide whether two unseen images show the same identity; ROC AUC and TAR at 1 % FAR; a ROC
  figure;
- **a UCI set** (wdbc): k-NN accuracy under stratified cross-validation, features standardised
  inside each fold for every method, Euclidean included (``--full``: the earlier 5x2 protocol
  on wine, wdbc and digits with LMNN and scikit-learn's NCA too).

The identity splits and all settings are fixed in advance (generator defaults, estimator
defaults, seed 0); nothing is tuned on the scored part.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from .._progress import ProgressLines
from ._args import check_output_file, check_threads

SUMMARY = "where a learned metric matters: re-id, verification from pairs, a UCI set"
DESCRIPTION = (
    "About a minute on 2 cores: Euclidean against WARCA, XQDA and SSNE on a multi-camera "
    "re-identification stand-in (rank-1, mAP, with and without k-reciprocal re-ranking), on "
    "verification from labelled pairs (ROC AUC, TAR at 1 percent FAR) and on a UCI set (k-NN "
    "accuracy); the gains in points, and a CMC / ROC figure."
)
DEMO_DATASETS = ("wine", "wdbc", "digits")
QUICK_DATASETS = ("wdbc",)
CASES = ("reid", "pairs", "uci")
NEGATIVES_PER_IDENTITY = 10  # "different" training pairs per identity in the pairs case


def _methods(quick: bool, seed: int) -> dict:
    """The learners of the UCI table (``None`` is the plain Euclidean distance)."""
    from .. import SSNE, WARCA, XQDA

    steps = 300 if quick else 2000
    methods = {
        "Euclidean": None,
        "WARCA": WARCA(max_iter=steps, random_state=seed),
        "XQDA": XQDA(),
        "SSNE": SSNE(max_iter=steps, random_state=seed),
    }
    if not quick:
        from sklearn.neighbors import NeighborhoodComponentsAnalysis

        from .. import LMNN

        methods["LMNN"] = LMNN(max_iter=200, random_state=seed)
        methods["NCA (scikit-learn)"] = NeighborhoodComponentsAnalysis(
            max_iter=200, random_state=seed
        )
    return methods


# ------------------------------------------------------------------------------- re-identification


def _identity_halves(ids: np.ndarray, seed: int) -> np.ndarray:
    """A mask of the rows whose identity is in the scored half (a seeded identity split)."""
    identities = np.unique(ids)
    held = np.random.default_rng(seed).choice(identities, len(identities) // 2, replace=False)
    return np.isin(ids, held)


def reid_case(seed: int, progress) -> dict:
    """Rank-1 / mAP of Euclidean, WARCA, XQDA and SSNE (and re-ranking) on the multi-camera
    stand-in; ``{"rows": [(method, rank1, mAP)], "curves": {method: CMC}, "about": str}``."""
    from .. import SSNE, WARCA, XQDA
    from ..datasets import make_multicamera_reid
    from ..evaluate import query_gallery_split, reid_scores, rerank_k_reciprocal

    data = make_multicamera_reid(random_state=seed)
    scored = _identity_halves(data.ids, seed)
    X_tr, y_tr, c_tr = data.X[~scored], data.ids[~scored], data.camera[~scored]
    X_te, y_te, c_te = data.X[scored], data.ids[scored], data.camera[scored]
    q, g = query_gallery_split(y_te, c_te)
    ranks = np.arange(1, 21)

    def score(D, metric="euclidean"):
        query, gallery = (D, None) if metric == "precomputed" else (D[q], D[g])
        return reid_scores(query, y_te[q], c_te[q], gallery, y_te[g], c_te[g], ranks=ranks,
                           metric=metric, device="cpu", return_curve=True)  # fmt: skip

    learners = {
        "WARCA": (WARCA(random_state=seed), {"cameras": c_tr}),
        "XQDA": (XQDA(), {"cameras": c_tr}),
        "SSNE": (SSNE(random_state=seed), {}),
    }
    embedded = {"Euclidean": X_te}
    for name, (est, fit_params) in learners.items():
        start = time.perf_counter()
        embedded[name] = est.fit(X_tr, y_tr, **fit_params).transform(X_te)
        progress(f"re-id: {name} fitted", start)
    rows, curves = [], {}
    for name, Z in embedded.items():
        reranked = score(rerank_k_reciprocal(Z[q], Z[g], device="cpu"), "precomputed")
        for label, (scores, curve) in ((name, score(Z)), (f"{name} + re-ranking", reranked)):
            rows.append((label, scores["cmc"][1], scores["mAP"]))
            curves[label] = (ranks, curve[: len(ranks)])
    progress("re-id: scored")
    n_ids = len(np.unique(data.ids))
    about = (
        f"make_multicamera_reid(random_state={seed}), its defaults: {n_ids} identities, "
        f"{len(np.unique(data.camera))} cameras; {n_ids - n_ids // 2} identities "
        f"({len(X_tr)} images) train the metrics, the other {n_ids // 2} are scored: "
        f"{len(q)} queries against {len(g)} gallery images, Market-1501 protocol (a query's "
        "same-camera matches are removed)"
    )
    axes = {"xlabel": "rank", "ylabel": "matches within rank (%)", "title": "Re-id: CMC",
            "xticks": [1, 5, 10, 15, 20]}  # fmt: skip
    return {"rows": rows, "curves": curves, "about": about, "axes": axes}


# ------------------------------------------------------------------------------ pair verification


def _training_pairs(m: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``i < m`` (camera A) and ``m + j`` (camera B): each identity's own pair ("same"),
    and ``NEGATIVES_PER_IDENTITY`` pairs with random other identities ("different")."""
    i_neg = np.repeat(np.arange(m), NEGATIVES_PER_IDENTITY)
    j_neg = (i_neg + rng.integers(1, m, i_neg.size)) % m  # never the identity itself
    first = np.concatenate([np.arange(m), i_neg])
    second = m + np.concatenate([np.arange(m), j_neg])
    labels = np.concatenate([np.ones(m), -np.ones(i_neg.size)])
    return np.column_stack([first, second]), labels


def pairs_case(seed: int, progress) -> dict:
    """ROC AUC / TAR at 1 % FAR of metrics learned from pairs only, on unseen identities;
    ``{"rows": [(method, auc, tar)], "curves": {method: (far, tar)}, "about": str}``."""
    from .. import KISSME, SSNE, WARCA
    from ..datasets import make_synthetic_reid
    from ..evaluate import verification_scores

    data = make_synthetic_reid(random_state=seed)
    n = len(data.ids) // 2  # camera A's rows, then camera B's in the same identity order
    scored = _identity_halves(data.ids[:n], seed)
    A, B = data.X[:n], data.X[n:]
    X_tr = np.vstack([A[~scored], B[~scored]])
    pairs, labels = _training_pairs(int((~scored).sum()), np.random.default_rng(seed))
    A_te, B_te = A[scored], B[scored]
    same = np.eye(len(A_te), dtype=bool).ravel()  # every camera-A image against every B one

    def score(Za, Zb):
        import torch

        from .._distances import squared_euclidean

        d = squared_euclidean(torch.as_tensor(Za), torch.as_tensor(Zb)).sqrt().ravel()
        return verification_scores(d.numpy(), same, far=(0.01,))

    learners = {"WARCA": WARCA(random_state=seed), "KISSME": KISSME(),
                "SSNE": SSNE(random_state=seed)}  # fmt: skip
    found = {"Euclidean": score(A_te, B_te)}
    for name, est in learners.items():
        start = time.perf_counter()
        est.fit_pairs(X_tr, pairs, labels)
        found[name] = score(est.transform(A_te), est.transform(B_te))
        progress(f"pairs: {name} fitted", start)
    rows = [(name, s["roc_auc"], s["tar_at_far"][0.01][0]) for name, s in found.items()]
    curves = {
        name: (np.maximum(s["roc"]["far"], 1e-4), s["roc"]["tar"]) for name, s in found.items()
    }
    about = (
        f"make_synthetic_reid(random_state={seed}) (VIPeR stand-in, 2 cameras): the metrics "
        f"learn from {len(labels)} labelled pairs of {len(X_tr) // 2} identities "
        f"({int((labels > 0).sum())} same, {int((labels < 0).sum())} different; no identity "
        f"labels), then verify {same.size} pairs of {len(A_te)} unseen identities "
        "(XQDA needs identity labels: KISSME, the classic pair learner, stands in)"
    )
    axes = {"xlabel": "false accept rate", "ylabel": "true accept rate (%)", "xscale": "log",
            "title": "Verification from pairs: ROC", "xlim": (1e-4, 1)}  # fmt: skip
    return {"rows": rows, "curves": curves, "about": about, "axes": axes}


# ------------------------------------------------------------------------------------ UCI k-NN


def uci_case(args: argparse.Namespace, progress) -> tuple[list[str], dict]:
    """The k-NN table of ``args.datasets`` (lines) and the warnings raised while fitting."""
    from ..datasets import load_dataset
    from ..evaluate import repeated_cv_knn

    repeats = 1 if args.quick else 5
    methods = _methods(args.quick, args.seed)
    lines = [
        f"k-NN accuracy (k={args.k}, %) under {repeats}x2 stratified cross-validation; features "
        "standardised inside each fold for every method, Euclidean included.",
        "",
        f"| {'data set':<10} | " + " | ".join(f"{m:>18}" for m in methods) + " |",
        "|" + "-" * 12 + "|" + "|".join("-" * 20 for _ in methods) + "|",
    ]
    noted: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name in args.datasets:
        data = load_dataset(name)
        cells = []
        for method, est in methods.items():
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = repeated_cv_knn(est, data.X, data.y, n_repeats=repeats, n_splits=2,
                                      k=args.k, random_state=args.seed)  # fmt: skip
            for kind, count in Counter(w.category.__name__ for w in caught).items():
                noted[(method, kind)].append(f"{name} ({count}x)")
            cells.append(
                f"{100 * res.mean:5.1f}±{100 * res.std:4.1f} ({time.perf_counter() - start:4.0f}s)"
            )
            progress(f"{name}: {method} cross-validated", start)
        lines.append(f"| {name:<10} | " + " | ".join(f"{c:>18}" for c in cells) + " |")
    lines += ["", "(mean ± std over the folds; the time in brackets is the whole "
              "cross-validation.)"]  # fmt: skip
    return lines, noted


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


# ---------------------------------------------------------------------------------- the report


def _table(rows, names: tuple[str, str], gain_of: int, gain_name: str) -> list[str]:
    """A Markdown table of ``(method, score, score)`` rows in %, with the gain of column
    ``gain_of`` over the first row in points (headed ``gain_name``)."""
    base = rows[0][gain_of]
    head = f"| {'method':<22} | {names[0]:>10} | {names[1]:>10} | {gain_name:>13} |"
    lines = [head, "|" + "|".join("-" * n for n in (24, 12, 12, 15)) + "|"]
    for name, a, b in rows:
        gain = 100 * ((a, b)[gain_of - 1] - base)
        shown = "" if name == rows[0][0] else f"{gain:+.1f}"
        lines.append(f"| {name:<22} | {100 * a:10.1f} | {100 * b:10.1f} | {shown:>13} |")
    return lines


def _best_gain(rows, column: int) -> tuple[str, float]:
    best = max(rows[1:], key=lambda row: row[column])
    return best[0], 100 * (best[column] - rows[0][column])


def _figure(path: Path, reid: dict | None, pairs: dict | None) -> str:
    """Draw the CMC and ROC curves into ``path``; a sentence saying what was written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "figure: skipped (matplotlib is not installed: pip install 'rankmetric[plot]')."
    panels = [p for p in (reid, pairs) if p is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    colours: dict[str, str] = {}  # one colour per method, dashed with re-ranking
    for ax, case in zip(axes[0], panels, strict=True):
        for name, (x, y) in case["curves"].items():
            colour = colours.setdefault(name.split(" + ")[0], f"C{len(colours)}")
            style = "--" if " + " in name else "-"
            ax.plot(x, 100 * np.asarray(y), ls=style, color=colour, label=name)
        ax.set(**case["axes"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"figure: {path.resolve()}"


def run_demo(args: argparse.Namespace) -> int:
    import torch

    check_threads(args.threads)
    if args.figure:
        check_output_file(args.figure, "--figure")
    torch.set_num_threads(args.threads)
    if args.datasets is None:
        args.datasets = list(QUICK_DATASETS if args.quick else DEMO_DATASETS)
    progress = ProgressLines("demo")
    print(f"rankmetric demo: learned metrics against Euclidean on the same features, seed "
          f"{args.seed}. Stand-in data: no figure here is a benchmark's figure.")  # fmt: skip
    reid = pairs = None
    if "reid" in args.cases:
        reid = reid_case(args.seed, progress)
        plain = [row for row in reid["rows"] if " + " not in row[0]]
        reranked = [reid["rows"][0]] + [row for row in reid["rows"] if " + " in row[0]]
        name, gain = _best_gain(plain, 1)
        name_rr, gain_rr = _best_gain(reranked, 1)
        print(f"\n1. Re-identification across cameras: {reid['about']}.\n")
        print("\n".join(_table(reid["rows"], ("rank-1 %", "mAP %"), 1, "rank-1 gain")))
        print(f"\nRe-id gain: {gain:+.1f} points of rank-1 over Euclidean ({name}); "
              f"{gain_rr:+.1f} with re-ranking ({name_rr}).")  # fmt: skip
    if "pairs" in args.cases:
        pairs = pairs_case(args.seed, progress)
        name, gain = _best_gain(pairs["rows"], 2)
        print(f"\n2. Verification from pairs: {pairs['about']}.\n")
        print("\n".join(_table(pairs["rows"], ("ROC AUC %", "TAR@1%FAR"), 2, "TAR gain")))
        print(f"\nVerification gain: {gain:+.1f} points of TAR at 1 % FAR over Euclidean "
              f"({name}).")  # fmt: skip
    if "uci" in args.cases:
        lines, noted = uci_case(args, progress)
        print("\n3. A UCI set, where the features already separate the classes: " + lines[0])
        print("\n".join(lines[1:]))
        _print_warning_summary(noted, n_folds=2 * (1 if args.quick else 5))
    if args.figure and (reid or pairs):
        print("\n" + _figure(Path(args.figure), reid, pairs))
    return 0


def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the options of ``demo`` to its ``parser``."""
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=CASES,
        default=list(CASES),
        metavar="CASE",
        help="which cases to run, among %(choices)s (default: all)",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        metavar="NAME",
        help=f"data sets of the UCI table (default: {' '.join(QUICK_DATASETS)}; with --full "
        f"{' '.join(DEMO_DATASETS)})",
    )
    parser.add_argument(
        "--full",
        dest="quick",
        action="store_false",
        help="the UCI table under 5x2 CV with full budgets, LMNN and NCA too, on "
        f"{', '.join(DEMO_DATASETS)} (several minutes)",
    )
    parser.add_argument(
        "--figure",
        default="rankmetric-demo.png",
        metavar="PATH",
        help="where the CMC / ROC figure is written (default: %(default)s; '' for none)",
    )
    parser.add_argument("-k", type=int, default=3, help="neighbours in the k-NN vote (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.set_defaults(func=run_demo, quick=True)
