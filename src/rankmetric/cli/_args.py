"""Checks of command-line arguments, made before any work starts.

Each raises a ``ValueError`` whose message names the option and the problem; ``cli.main``
prints it on one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "check_device",
    "check_threads",
    "check_output_file",
    "check_output_dir",
    "check_random_state",
    "is_table",
    "parameter_type",
]


def is_table(path) -> bool:
    """Whether ``path`` is a table that ``load_features`` reads (``.csv``, ``.parquet``,
    ``.mat``), rather than the arrays of a ``.npz`` / ``.npy``."""
    from ..datasets.user_features import FEATURE_SUFFIXES

    suffix = Path(str(path)).suffix.lower()
    return suffix in FEATURE_SUFFIXES and suffix != ".npz"


def check_device(device) -> None:
    """``--device`` is ``None``, ``"auto"`` or a torch device that this machine has
    (:func:`~rankmetric._utils.resolve_device`, whose message names the option)."""
    from .._utils import resolve_device

    try:
        resolve_device(device)
    except ValueError as exc:
        raise option_error(exc) from None


def vector_metric(value: str) -> str:
    """argparse ``type`` of ``--metric``: the canonical name (aliases and any case accepted)."""
    from ..neighbors import check_metric

    try:
        return check_metric(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_threads(threads, option: str = "--threads") -> None:
    """``threads`` is ``None`` or a positive integer."""
    if threads is not None and threads < 1:
        raise ValueError(f"{option} must be at least 1, got {threads}.")


def check_random_state(value, option: str = "--random-state") -> None:
    """A command-line seed is ``None`` or a non-negative integer."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{option} must be a non-negative integer or none, got {value!r}.")


def _check_writable_dir(folder: Path, what: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{what}: cannot write in {folder} ({exc.strerror or exc}).") from None


def check_output_file(path, option: str = "--out") -> None:
    """``path`` can be written: not a folder, in an existing folder we may write in."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{option} {path} is a folder; give a file name such as model.npz.")
    folder = target.parent
    if not folder.is_dir():
        raise ValueError(f"{option} {path}: the folder {folder} does not exist.")
    _check_writable_dir(folder, f"{option} {path}")


def check_output_dir(path, option: str) -> None:
    """Create folder ``path`` if needed and check files can be written there."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot create it ({exc.strerror or exc}).") from None
    _check_writable_dir(folder, f"{option} {path}")


def parameter_type(parse: Callable, default) -> Callable[[str], object]:
    """The argparse ``type=`` of an estimator parameter: ``parse(text, default)``, whose errors
    say what could not be read (argparse's own would say ``invalid <lambda> value``)."""

    def value(text: str):
        try:
            return parse(text, default)
        except (ValueError, TypeError) as exc:  # parse's own ArgumentTypeError passes through
            expected = f"a value like its default {default!r}" if default is not None else "a value"
            raise argparse.ArgumentTypeError(
                f"cannot read {text!r} as {expected} ({exc}); lists and dicts are JSON, "
                "e.g. '[1, 2]'"
            ) from None

    value.__name__ = "parameter value"
    return value


# ------------------------------------------------------------------- users' feature files (re-id)

_COLUMNS = {"id_column": "y", "camera_column": "cameras", "split_column": "split",
            "feature_columns": "features"}  # fmt: skip


def add_feature_file_options(parser: argparse.ArgumentParser) -> None:
    """``--id-column``, ``--camera-column``, ``--split-column``, ``--feature-columns`` (the
    column mapping of a feature file) and the re-id options ``--rerank`` and ``--junk-id``."""
    group = parser.add_argument_group(
        "your feature file (--data PATH: .csv, .parquet, .npz, .mat)",
        "Columns are found by name (y, labels, pid, ...; cameras, camid, ...; split); name "
        "yours when they are called otherwise.",
    )
    unset = argparse.SUPPRESS  # absent from args when not given: no "(default: None)" in help
    group.add_argument("--id-column", metavar="NAME", default=unset,
                       help="the identity / class label column")  # fmt: skip
    group.add_argument("--camera-column", metavar="NAME", default=unset,
                       help="the camera of each row")  # fmt: skip
    group.add_argument("--split-column", metavar="NAME", default=unset,
                       help="train / test / query / gallery")  # fmt: skip
    group.add_argument(
        "--feature-columns",
        default=unset,
        nargs="+",
        metavar="PATTERN",
        help="the feature columns of a table, by name or pattern ('f*', 'feat_[0-9]*'); every "
        "other column (image_path, ...) is ignored (default: every column but the id, camera "
        "and split ones, all numeric)",
    )
    group.add_argument(
        "--rerank",
        action="store_true",
        help="with cameras: k-reciprocal re-ranking (Zhong et al. 2017) of each re-id ranking",
    )
    group.add_argument(
        "--junk-id",
        nargs="+",
        default=unset,
        metavar="ID",
        help="with cameras: gallery identities ignored in every ranking, compared in the ids' "
        "own type (default: -1, Market-1501's distractors; 'none' for none)",
    )


def feature_file_columns(args: argparse.Namespace) -> dict:
    """The ``load_features`` keywords of the column options (only those given)."""
    return {key: getattr(args, option) for option, key in _COLUMNS.items()
            if getattr(args, option, None) is not None}  # fmt: skip


def check_column_options(args: argparse.Namespace, is_feature_file: bool) -> None:
    """The column and re-id options apply to a user's feature file only."""
    given = [f"--{option.replace('_', '-')}" for option in _COLUMNS if getattr(args, option, None)]
    if given and not is_feature_file:
        raise ValueError(f"{', '.join(given)}: for your own feature file (--data PATH.csv, "
                         f".parquet, .npz or .mat), not {args.data!r}.")  # fmt: skip


def junk_ids(values) -> tuple:
    """``--junk-id`` values: ``(-1,)`` when absent, ``()`` for ``none``; else the strings,
    which ``reid_scores`` compares in the type of the ids."""
    if not values:
        return (-1,)
    if [v.lower() for v in values] == ["none"]:
        return ()
    return tuple(values)


#: Parameters of :func:`rankmetric.datasets.load_split`, ``read_embeddings``,
#: ``resolve_device`` and the tuned learner's ``budget`` -> their options.
_OPTIONS = {"data": "--data", "test_domain": "--test-domain", "test_size": "--test-size",
            "covariance_estimator": "--covariance-estimator", "labels": "--labels",
            "device": "--device", "budget": "--tune"}  # fmt: skip


def option_error(exc: ValueError) -> ValueError:
    """A library error that starts with the parameter at fault, naming its option instead."""
    message = str(exc)
    for name, option in _OPTIONS.items():
        if message.startswith((f"{name} ", f"{name}:", f"{name}=")):
            return ValueError(option + message[len(name) :])
    return exc
