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
    "check_input_file",
    "check_output_file",
    "check_output_dir",
    "check_random_state",
    "parameter_type",
]


def check_device(device, option: str = "--device") -> None:
    """``device`` is ``None``, ``"auto"`` or a torch device string that this machine has."""
    if device is None or device == "auto":
        return
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"{option} {device!r} is not a torch device (try cpu, cuda, cuda:1 or auto)."
        ) from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{option} {device!r}: no CUDA device is available here.")


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


def check_input_file(path, option: str) -> None:
    """``path`` names an existing, readable file."""
    if not Path(path).is_file():
        raise ValueError(f"{option} {path}: no such file.")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{option} {path}: the file cannot be read (permission denied).")


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


def check_output_dir(path, option: str) -> Path:
    """Create folder ``path`` if needed and check files can be written there."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot create it ({exc.strerror or exc}).") from None
    _check_writable_dir(folder, f"{option} {path}")
    return folder


def parameter_type(parse: Callable, default) -> Callable[[str], object]:
    """The argparse ``type=`` of an estimator parameter: ``parse(text, default)``, whose errors
    say what could not be read (argparse's own would say ``invalid <lambda> value``)."""

    def value(text: str):
        try:
            return parse(text, default)
        except argparse.ArgumentTypeError:
            raise
        except (ValueError, TypeError) as exc:
            expected = f"a value like its default {default!r}" if default is not None else "a value"
            raise argparse.ArgumentTypeError(
                f"cannot read {text!r} as {expected} ({exc}); lists and dicts are JSON, "
                "e.g. '[1, 2]'"
            ) from None

    value.__name__ = "parameter value"
    return value
