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

from ._args import is_table, option_error
from ._fitted_split import record_fit_split, use_fit_split
from ._report import (
    beside_euclidean,
    check_model_input,
    euclidean_spaces,
    held_out_report,
    model_preprocessing,
    print_report,
)

__all__ = [
    "check_pair_options",
    "add_fit_pairs_option",
    "add_evaluate_pairs_options",
    "run_fit_pairs",
    "run_evaluate_pairs",
]

PAIR_FILE_HELP = (
    "a .npz pair file: X (items) + pairs (n, 2) row indices + y (+1/-1 or similarities), or "
    "stacked pairs (n, 2, n_features) + y, or the two members X1, X2 (n, n_features) + y; "
    "optional X_test/pairs_test/y_test (or X1_test, X2_test, y_test) (docs/pairs.md); or a "
    ".csv/.parquet table of pairs (img1, img2, same[, split]) of the items in --data; without "
    "test pairs, --test-size of the items are held out whole (their groups of similar pairs)"
)
DEFAULT_FAR = (1e-1, 1e-2, 1e-3)


def _add_pair_table_options(parser: argparse.ArgumentParser) -> None:
    """``--pair-columns`` and ``--item-column``: a table of pairs and its items' identifiers."""
    group = parser.add_argument_group(
        "a table of pairs (--pairs PAIRS.csv --data ITEMS)",
        "Each row names two items and a label (+1/-1, 1/0, true/false or a similarity), "
        "optionally a split (train/test); the items' features are in --data.",
    )
    unset = argparse.SUPPRESS
    group.add_argument("--pair-columns", nargs=3, metavar=("FIRST", "SECOND", "LABEL"),
                       default=unset, help="the pair table's item and label columns (default: "
                       "found by name: img1/img2, a/b, image_a/image_b, ...; same, y, label, "
                       "...)")  # fmt: skip
    group.add_argument("--item-column", metavar="NAME", default=unset,
                       help="the items' identifier column in --data, as the pairs name them "
                       "(default: row numbers, from 0)")  # fmt: skip


#: Options of ``fit`` / ``evaluate`` that a pair file does not use: refused, not ignored.
_NOT_WITH_PAIRS = ("tune", "id_column", "camera_column", "split_column", "rerank", "junk_id")
#: Options of a table of pairs only.
_PAIR_TABLE_ONLY = ("pair_columns", "item_column")


def _given(args, names) -> list[str]:
    return [
        f"--{n.replace('_', '-')}" for n in names if getattr(args, n, None) not in (None, False)
    ]


def check_pair_options(args: argparse.Namespace) -> None:
    """Refuse the options that the pairs (``--pairs``), or their absence, leave unused: an
    option that is silently ignored (``--tune``, ``--id-column``) reads as if it took effect."""
    if getattr(args, "pairs", None):
        unused = _given(args, _NOT_WITH_PAIRS)
        if unused:
            raise ValueError(f"{', '.join(unused)}: for --data with class labels, not with "
                             "--pairs (a pair file has no class labels or cameras).")  # fmt: skip
        if not is_table(args.pairs) and _given(args, _PAIR_TABLE_ONLY):
            raise ValueError(f"{', '.join(_given(args, _PAIR_TABLE_ONLY))}: for a table of "
                             "pairs (--pairs PAIRS.csv), not a .npz pair file.")  # fmt: skip
    elif _given(args, _PAIR_TABLE_ONLY):
        raise ValueError(f"{', '.join(_given(args, _PAIR_TABLE_ONLY))}: for a table of pairs "
                         "(--pairs PAIRS.csv --data ITEMS).")  # fmt: skip


def _items(args):
    """The items of a pair table: ``--data``'s features, ``--item-column`` their identifiers."""
    from ..datasets import load_features

    if not args.data:
        raise ValueError(f"--pairs {args.pairs} lists pairs of items: give the items' features "
                         "with --data FILE (.csv, .parquet, .npz, .mat, .npy).")  # fmt: skip
    columns = {"items": getattr(args, "item_column", None),
               "features": getattr(args, "feature_columns", None)}  # fmt: skip
    try:  # a table, arrays, or a .npy of rows (the pairs then name row numbers)
        return load_features(args.data, require_labels=False,
                             **{k: v for k, v in columns.items() if v is not None})  # fmt: skip
    except ValueError as exc:
        raise ValueError(f"--data {exc}") from None


def _read(args):
    """The pairs of ``--pairs``: a ``.npz`` pair file
    (:func:`~rankmetric.datasets.read_pair_file`), or a table of pairs of the items in
    ``--data`` (:func:`~rankmetric.datasets.read_pair_table`)."""
    from ..datasets import read_pair_file, read_pair_table

    table = is_table(args.pairs)
    if args.data and not table:
        raise ValueError("give either --data NAME or --pairs PAIRS.npz, not both (--data "
                         "goes with a table of pairs: the items' features).")  # fmt: skip
    items = _items(args) if table else None
    try:
        if table:
            return read_pair_table(args.pairs, items, getattr(args, "pair_columns", None))
        return read_pair_file(args.pairs)
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
            "--pairs", metavar="PAIRS", help=PAIR_FILE_HELP + "; replaces --data (a .npz)"
        )
        _add_pair_table_options(parser)


def run_fit_pairs(args: argparse.Namespace, est) -> int:
    """Fit ``est`` on a pair file, print verification scores (learned vs Euclidean), save it
    (``--out`` was checked with the other options, in ``run_fit``)."""
    check_pair_options(args)
    data = _held_out(_read(args), args.test_size)
    items = () if data.X is None else (data.X,)  # stacked pairs, or items and row indices
    start = time.perf_counter()
    est.fit_pairs(*items, data.pairs, data.y)
    fit_time = time.perf_counter() - start
    if args.out:
        record_fit_split(est, args, args.pairs, data.how or "pairs_test")
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
    _add_pair_table_options(parser)
    parser.add_argument(
        "--pairs",
        metavar="PAIRS",
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
    if args.embeddings:
        raise ValueError("--pairs replaces EMBEDDINGS: give the pairs file (and, for a table "
                         "of pairs, the items' features with --data).")  # fmt: skip
    from ..io import load_model

    check_pair_options(args)
    model = load_model(args.model) if args.model else None
    model_split = use_fit_split(args, model, args.pairs)  # --test-size as the fit's
    data = _read(args)
    if model is not None:  # never the pairs the model was fitted on
        data = _held_out(data, args.test_size)
    stacked, y, evaluated = _evaluated(data, "pairs")
    if model is not None:
        check_model_input(model, stacked, args.data or args.pairs, f"--model {args.model}")
        distances = model.pair_distances(stacked[:, 0], stacked[:, 1])
        source = args.model
    else:
        distances, source = _euclidean(stacked), "Euclidean distance"
    report = {
        "source": source,
        "pairs": f"{args.pairs} ({evaluated})",
        "n_pairs": int(len(y)),
        "n_same": int(np.count_nonzero(_same(y))),
        **({"model_split": model_split} if model_split else {}),
        "scores": _scores(distances, y, tuple(args.far)),
    }
    if model is not None:  # the same pairs under the Euclidean distance, beside
        euclidean = _scores(_euclidean(stacked), y, tuple(args.far))
        report.update(beside_euclidean(report["scores"], euclidean, lower_is_better=("eer",)))
    print_report(report, args.json)
    return 0
