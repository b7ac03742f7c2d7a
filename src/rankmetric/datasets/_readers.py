"""Readers of the formats the sets come in: R ``.rda``, gzipped idx-ubyte and CSV, KEEL ``.dat``."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np

__all__ = ["read_rda_frame", "read_idx_gz", "read_csv_gz", "read_keel_dat", "frame_to_xy"]


def read_rda_frame(path: Path, obj: str):
    """The data frame named ``obj`` of an R ``.rda`` file, as a pandas DataFrame.

    Needs the pure-Python ``rdata`` package (the ``data`` extra: ``pip install rankmetric[data]``).
    """
    try:
        import rdata
    except ImportError:
        raise ValueError(
            f"reading {path.name} needs the 'rdata' package: pip install 'rankmetric[data]'."
        ) from None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unknown encoding", category=UserWarning)
        frames = rdata.read_rda(str(path))
    if obj not in frames:
        raise ValueError(f"{path.name} has no object {obj!r} (found {sorted(frames)}).")
    return frames[obj]


def frame_to_xy(frame, target: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Split an mlbench data frame into float features and the label column.

    Factor (categorical) feature columns whose levels are numbers are cast to those numbers.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    labels : ndarray of shape (n_samples,), dtype str
    feature_names : list of str
    """
    columns = [column for column in frame.columns if column != target]
    X = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        values = frame[column]
        if hasattr(values, "cat"):
            values = values.astype(str)
        X[:, j] = values.to_numpy(dtype=np.float64)
    labels = frame[target].astype(str).to_numpy(dtype=str)
    return X, labels, [str(column) for column in columns]


def read_idx_gz(path: Path) -> np.ndarray:
    """Read a gzip-compressed idx file (the MNIST format): big-endian header, then uint8 data.

    Returns
    -------
    ndarray of uint8, shape given by the header (e.g. (60000, 28, 28) or (60000,))
    """
    with gzip.open(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path.name} is not an unsigned-byte idx file.")
    n_dims = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=n_dims, offset=4).astype(np.int64)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * n_dims)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path.name}: header promises {tuple(dims)} but holds {data.size} bytes.")
    return data.reshape(tuple(dims))


def read_csv_gz(path: Path) -> np.ndarray:
    """A gzip-compressed numeric CSV file without header, as a float64 array."""
    return np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)


def read_keel_dat(path: Path) -> np.ndarray:
    """A KEEL-style ``.dat`` of comma-separated numbers (``@`` header lines skipped)."""
    return np.loadtxt(path, delimiter=",", dtype=np.float64, comments="@", ndmin=2)
