"""Pair files for ``rankmetric fit METHOD --pairs`` and ``rankmetric evaluate --pairs``.

A pair file is a ``.npz`` archive (read with ``allow_pickle=False``) in the pair convention of
``docs/pairs.md``:

=================  ==========================================================================
``X``              (n_samples, n_features) float: the items (index form only)
``pairs``          (n_pairs, 2) int row indices into ``X``, or (n_pairs, 2, n_features) float
                   stacked pairs (then no ``X``)
``X1``, ``X2``     or: (n_pairs, n_features) each, the two members of each pair (the
                   ``pair_distances(X1, X2)`` convention; ``X1_test``, ``X2_test`` likewise)
``y``              (n_pairs,): ``+1`` similar / ``−1`` dissimilar (``1``/``0`` too), or
                   similarities in ``[−1, 1]`` (SSNE)
``X_test``         optional: the items of the test pairs (else test indices point into ``X``)
``pairs_test``     optional: held-out pairs, same layout as ``pairs``
``y_test``         optional: their labels; a similarity counts as "same" when ``> 0``
=================  ==========================================================================

``fit`` trains on ``pairs``/``y`` and reports the verification scores of ``pairs_test`` (or,
without it, of the training pairs, marked as such); ``evaluate`` scores ``pairs_test`` when the
file has it, else ``pairs``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ._report import model_preprocessing, print_report

__all__ = [
    "add_fit_pairs_option",
    "add_evaluate_pairs_options",
    "read_pairs_file",
    "run_fit_pairs",
    "run_evaluate_pairs",
]

PAIR_FILE_HELP = (
    "a .npz pair file: X (items) + pairs (n, 2) row indices + y (+1/-1 or similarities), or "
    "stacked pairs (n, 2, n_features) + y, or the two members X1, X2 (n, n_features) + y; "
    "optional X_test/pairs_test/y_test (or X1_test, X2_test, y_test) (docs/pairs.md)"
)
DEFAULT_FAR = (1e-1, 1e-2, 1e-3)


def read_pairs_file(path: str) -> dict:
    """The parts of a pair file: ``{"train": (X, pairs, y), "test": (stacked, y) or None}``."""
    from .._safe_npz import read_data_npz

    arrays = read_data_npz(path, f"--pairs {path}")  # untrusted: checked before it is read
    for suffix in ("", "_test"):  # X1, X2: the members of each pair, stacked here
        _stack_members(arrays, suffix, path)
    for key in ("pairs", "y"):
        if key not in arrays:
            raise ValueError(f"--pairs {path} has no array {key!r} (found {sorted(arrays)}).")
    X = arrays.get("X")
    _check_labels(arrays, "", path)
    test = None
    if "pairs_test" in arrays:
        if "y_test" not in arrays:
            raise ValueError(f"--pairs {path} has pairs_test but no y_test.")
        _check_labels(arrays, "_test", path)
        items = arrays.get("X_test", X)
        test = (_stacked(items, arrays["pairs_test"], f"{path}: pairs_test"), arrays["y_test"])
    return {"train": (X, arrays["pairs"], arrays["y"]), "test": test}


def _check_labels(arrays: dict, suffix: str, path: str) -> None:
    """``y{suffix}`` holds one number per pair of ``pairs{suffix}`` (named as in the file)."""
    y, pairs = np.asarray(arrays[f"y{suffix}"]), np.asarray(arrays[f"pairs{suffix}"])
    if y.ndim != 1 or pairs.ndim < 1 or y.shape[0] != pairs.shape[0]:
        raise ValueError(
            f"--pairs {path}: y{suffix} must hold one label per pair of pairs{suffix} "
            f"({pairs.shape[0] if pairs.ndim else 0}), got shape {y.shape}."
        )
    if y.dtype != bool and not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"--pairs {path}: y{suffix} must hold numbers (+1/-1, 1/0 or "
                         f"similarities), got {y.dtype}.")  # fmt: skip


def _stack_members(arrays: dict, suffix: str, path: str) -> None:
    """``X1{suffix}``, ``X2{suffix}`` (n, n_features) → ``pairs{suffix}`` (n, 2, n_features)."""
    a, b = arrays.pop(f"X1{suffix}", None), arrays.pop(f"X2{suffix}", None)
    if a is None and b is None:
        return
    if a is None or b is None or f"pairs{suffix}" in arrays:
        raise ValueError(f"--pairs {path}: give X1{suffix} and X2{suffix} together, and not "
                         f"beside pairs{suffix}.")  # fmt: skip
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"--pairs {path}: X1{suffix} and X2{suffix} must both have shape "
                         f"(n_pairs, n_features), got {a.shape} and {b.shape}.")  # fmt: skip
    arrays[f"pairs{suffix}"] = np.stack([a, b], axis=1)


def _stacked(X, pairs, what: str) -> np.ndarray:
    """Stacked (n, 2, n_features) pairs from either layout."""
    pairs = np.asarray(pairs)
    if pairs.ndim == 3:
        if pairs.shape[1] != 2:
            raise ValueError(f"{what} must have shape (n, 2, n_features), got {pairs.shape}.")
        return pairs.astype(np.float64)
    if X is None:
        raise ValueError(f"{what} holds row indices but the file has no X (the items).")
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(
            f"{what} must be (n, 2) integer row indices or (n, 2, n_features) stacked pairs, "
            f"got {pairs.dtype} of shape {pairs.shape}."
        )
    X = np.asarray(X, dtype=np.float64)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= len(X)):
        raise ValueError(f"{what}: indices must lie in [0, {len(X)}) (rows of X).")
    return X[pairs]


def _same(y) -> np.ndarray:
    y = np.asarray(y)
    return y > 0 if y.dtype != bool else y


def _scores(distances, y, far) -> dict:
    from ..evaluate import verification_scores

    s = verification_scores(distances, _same(y), far=far)
    out = {"roc_auc": s["roc_auc"], "eer": s["eer"]}
    for f, (tar, _) in s["tar_at_far"].items():
        out[f"tar_at_far_{f:g}"] = tar
    return out


def _euclidean(stacked: np.ndarray) -> np.ndarray:
    return np.linalg.norm(stacked[:, 0] - stacked[:, 1], axis=1)


def add_fit_pairs_option(parser: argparse.ArgumentParser, cls) -> None:
    """``--pairs PAIRS.npz`` for a method whose estimator has ``fit_pairs``; ``--data`` optional."""
    if not hasattr(cls, "fit_pairs"):
        return
    parser.add_argument("--pairs", metavar="PAIRS.npz", help=PAIR_FILE_HELP + "; replaces --data")
    for action in parser._actions:  # --data or --pairs: checked in run_fit
        if action.dest == "data":
            action.required = False


def run_fit_pairs(args: argparse.Namespace, est) -> int:
    """Fit ``est`` on a pair file, print verification scores (learned vs Euclidean), save it."""
    from ._args import check_output_file

    if getattr(args, "data", None):
        raise ValueError("give either --data NAME or --pairs PAIRS.npz, not both.")
    if args.out:
        check_output_file(args.out)
    parts = read_pairs_file(args.pairs)
    X, pairs, y = parts["train"]
    start = time.perf_counter()
    if X is None:
        est.fit_pairs(pairs, y)
    else:
        est.fit_pairs(X, pairs, y)
    fit_time = time.perf_counter() - start
    if args.out:
        est.save(args.out)
    if parts["test"] is not None:
        stacked, y_eval = parts["test"]
        evaluated = "pairs_test"
    else:
        stacked, y_eval = _stacked(X, pairs, f"{args.pairs}: pairs"), y
        evaluated = "the training pairs (the file has no pairs_test)"
    learned = est.pair_distances(stacked[:, 0], stacked[:, 1])
    preprocess, preprocessing = model_preprocessing(est)
    report = {
        "method": type(est).__name__,
        "pairs": args.pairs,
        "n_train_pairs": int(len(y)),
        "fit_seconds": round(fit_time, 3),
        "evaluated_on": evaluated,
        "n_evaluated_pairs": int(len(y_eval)),
        "preprocessing": preprocessing,
    }
    if preprocess is not None:  # Euclidean on the features the learned part receives, and raw
        same = np.stack([preprocess(stacked[:, 0]), preprocess(stacked[:, 1])], axis=1)
        report["euclidean"] = _scores(_euclidean(same), y_eval, DEFAULT_FAR)
        report["euclidean_raw"] = _scores(_euclidean(stacked), y_eval, DEFAULT_FAR)
    else:
        report["euclidean"] = _scores(_euclidean(stacked), y_eval, DEFAULT_FAR)
    report["learned"] = _scores(learned, y_eval, DEFAULT_FAR)
    if args.out:
        report["saved_to"] = args.out
    print_report(report, args.json)
    return 0


def add_evaluate_pairs_options(parser: argparse.ArgumentParser) -> None:
    """``--pairs PAIRS.npz`` and ``--far`` for ``rankmetric evaluate``."""
    parser.add_argument(
        "--pairs",
        metavar="PAIRS.npz",
        help=PAIR_FILE_HELP + "; prints ROC AUC, EER and TAR@FAR of its test pairs (else of its "
        "pairs) under --model's distance, or the Euclidean one",
    )
    parser.add_argument(
        "--far",
        type=float,
        nargs="+",
        default=list(DEFAULT_FAR),
        metavar="RATE",
        help="false accept rates of TAR@FAR with --pairs (default: %(default)s)",
    )


def run_evaluate_pairs(args: argparse.Namespace) -> int:
    """Verification scores of a pair file under a saved model's distance (or Euclidean)."""
    if args.embeddings or args.data:
        raise ValueError("--pairs replaces EMBEDDINGS and --data: give the pairs file only.")
    parts = read_pairs_file(args.pairs)
    if parts["test"] is not None:
        stacked, y = parts["test"]
        evaluated = "pairs_test"
    else:
        X, pairs, y = parts["train"]
        stacked, evaluated = _stacked(X, pairs, f"{args.pairs}: pairs"), "pairs"
    if args.model:
        from ..io import load_model

        model = load_model(args.model)
        distances = model.pair_distances(stacked[:, 0], stacked[:, 1])
        source = args.model
    else:
        distances, source = _euclidean(stacked), "Euclidean distance"
    report = {
        "source": source,
        "pairs": f"{args.pairs} ({evaluated})",
        "n_pairs": int(len(y)),
        "n_same": int(np.count_nonzero(_same(y))),
        "scores": _scores(distances, y, tuple(args.far)),
    }
    print_report(report, args.json)
    return 0
