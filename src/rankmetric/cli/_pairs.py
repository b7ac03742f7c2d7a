"""``rankmetric fit METHOD --pairs`` and ``rankmetric evaluate --pairs``: verification scores.

The pair file (``docs/pairs.md``) is read and checked by
:func:`rankmetric.datasets.read_pair_file`. ``fit`` trains on ``pairs``/``y`` and reports the
verification scores of ``pairs_test``; without it, ``--test-size`` of the items are held out
whole (:func:`rankmetric.datasets.holdout_pairs`), and ``--test-size 0`` scores the training
pairs, marked as such. ``evaluate`` scores ``pairs_test``; without it, with ``--model``, the
pairs that ``fit`` held out of the same file (same ``--test-size``), and without a model every
pair.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ._args import option_error
from ._report import euclidean_spaces, held_out_report, model_preprocessing, print_report

__all__ = [
    "add_fit_pairs_option",
    "add_evaluate_pairs_options",
    "run_fit_pairs",
    "run_evaluate_pairs",
]

PAIR_FILE_HELP = (
    "a .npz pair file: X (items) + pairs (n, 2) row indices + y (+1/-1 or similarities), or "
    "stacked pairs (n, 2, n_features) + y, or the two members X1, X2 (n, n_features) + y; "
    "optional X_test/pairs_test/y_test (or X1_test, X2_test, y_test) (docs/pairs.md); without "
    "test pairs, --test-size of the items are held out whole (their groups of similar pairs)"
)
DEFAULT_FAR = (1e-1, 1e-2, 1e-3)


def _read(path: str):
    """The pair file of ``--pairs`` (:func:`~rankmetric.datasets.read_pair_file`)."""
    from ..datasets import read_pair_file

    try:
        return read_pair_file(path)
    except ValueError as exc:
        raise ValueError(f"--pairs {exc}") from None


def _same(y) -> np.ndarray:
    """Similar pairs: ``+1``, ``1``, ``True`` or a similarity above 0 (as the split reads them)."""
    return np.asarray(y) > 0


def _scores(distances, y, far) -> dict:
    from ..evaluate import verification_scores

    s = verification_scores(distances, _same(y), far=far)
    tars = {f"tar_at_far_{f:g}": tar for f, (tar, _) in s["tar_at_far"].items()}
    return {"roc_auc": s["roc_auc"], "eer": s["eer"], **tars}


def _held_out(data, test_size: float):
    """The file's test pairs, else ``test_size`` of its items held out
    (:func:`~rankmetric.datasets.holdout_pairs`)."""
    from ..datasets import holdout_pairs

    try:
        return holdout_pairs(data, test_size)
    except ValueError as exc:
        raise option_error(exc) from None


def _evaluated(data, pairs_name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(stacked pairs, y, what they are)``: the test pairs, else the pairs."""
    if data.test is not None:
        return (*data.test, data.how or "pairs_test")
    return data.stacked(), data.y, pairs_name


def _euclidean(stacked: np.ndarray) -> np.ndarray:
    return np.linalg.norm(stacked[:, 0] - stacked[:, 1], axis=1)


def add_fit_pairs_option(parser: argparse.ArgumentParser, cls) -> None:
    """``--pairs PAIRS.npz`` for a method whose estimator has ``fit_pairs`` (``--data`` is then
    optional: one of the two is checked in ``run_fit``)."""
    if hasattr(cls, "fit_pairs"):
        parser.add_argument(
            "--pairs", metavar="PAIRS.npz", help=PAIR_FILE_HELP + "; replaces --data"
        )


def run_fit_pairs(args: argparse.Namespace, est) -> int:
    """Fit ``est`` on a pair file, print verification scores (learned vs Euclidean), save it
    (``--out`` was checked with the other options, in ``run_fit``)."""
    if getattr(args, "data", None):
        raise ValueError("give either --data NAME or --pairs PAIRS.npz, not both.")
    data = _held_out(_read(args.pairs), args.test_size)
    items = () if data.X is None else (data.X,)  # stacked pairs, or items and row indices
    start = time.perf_counter()
    est.fit_pairs(*items, data.pairs, data.y)
    fit_time = time.perf_counter() - start
    if args.out:
        est.save(args.out)
    stacked, y_eval, evaluated = _evaluated(
        data, "the training pairs (the file has no pairs_test; --test-size 0)"
    )
    learned = est.pair_distances(stacked[:, 0], stacked[:, 1])
    preprocess, preprocessing = model_preprocessing(est)
    report = {
        "method": type(est).__name__,
        "pairs": args.pairs,
        "n_train_pairs": int(len(data.y)),
        **({"n_pairs_left_out": data.n_left_out} if data.n_left_out else {}),
        "fit_seconds": round(fit_time, 3),
        "evaluated_on": evaluated,
        "n_evaluated_pairs": int(len(y_eval)),
        "preprocessing": preprocessing,
        **held_out_report(est),
    }
    for name, pairs_in in euclidean_spaces(stacked, preprocess):
        report[name] = _scores(_euclidean(pairs_in), y_eval, DEFAULT_FAR)
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
        help=PAIR_FILE_HELP + "; prints ROC AUC, EER and TAR@FAR of its test pairs under "
        "--model's distance (without pairs_test: the pairs rankmetric fit held out, same "
        "--test-size), or under the Euclidean distance (without --model: every pair)",
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
    data = _read(args.pairs)
    if args.model:  # never the pairs the model was fitted on
        data = _held_out(data, args.test_size)
    stacked, y, evaluated = _evaluated(data, "pairs")
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
