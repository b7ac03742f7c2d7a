"""Embeddings computed elsewhere, as ``rankmetric evaluate EMBEDDINGS`` reads them.

A ``.npz`` archive holds ``X`` (or ``embeddings``) and ``y`` (or ``labels``), optionally a test
part ``X_test`` / ``y_test`` and the ``cameras`` of the evaluated items (``cameras_test`` beside
``X_test``); a ``.npy`` file holds the embeddings alone, with their labels in a second file
(``.npy``, or text with one label per line). Both are read as untrusted input
(:func:`rankmetric._safe_npz.read_data_npz`: no pickled objects, sizes checked first).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._safe_npz import read_data_npy, read_data_npz
from .splits import Split
from .user_features import first_present

__all__ = ["read_embeddings"]

_KEYS = {"X": ("X", "embeddings"), "y": ("y", "labels")}


def _pick(arrays: dict, name: str, path):
    key = first_present(_KEYS[name], arrays)
    if key is None:
        raise ValueError(
            f"{path} has no array {' or '.join(_KEYS[name])!r} (found {list(arrays)})."
        )
    return arrays[key]


def _read_labels(path) -> np.ndarray:
    if not Path(path).is_file():
        raise ValueError(f"labels {path}: no such file.")
    if str(path).endswith(".npy"):
        return read_data_npy(path, f"labels {path}")
    labels = np.loadtxt(path, dtype=str, ndmin=1)
    try:
        return labels.astype(np.int64)
    except ValueError:
        return labels


def read_embeddings(path, labels=None) -> Split:
    """Read an embeddings file: the reference part and the evaluated one.

    Parameters
    ----------
    path : str or path-like
        A ``.npz`` archive (``X``, ``y``, optionally ``X_test``, ``y_test``, ``cameras`` or
        ``cameras_test``) or a ``.npy`` array of embeddings.
    labels : str or path-like, optional
        The labels of a ``.npy`` file: ``.npy``, or text with one label per line (integers
        when they all read as integers). Required with ``.npy``, refused with ``.npz``.

    Returns
    -------
    Split
        ``X_train``, ``y_train``: the file's ``X``, ``y``; ``X_test``, ``y_test``: its test part,
        empty without one (then ``X`` itself is evaluated, leave-one-out, and its cameras are
        ``cameras_train``); ``how`` says which.

    Raises
    ------
    ValueError
        Naming the file: missing, of another kind, without ``X`` or ``y``, with only one of
        ``X_test`` and ``y_test``, with cameras of the wrong length.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from rankmetric.datasets import read_embeddings
    >>> path = os.path.join(tempfile.mkdtemp(), "emb.npz")
    >>> np.savez(path, X=np.eye(4), y=[0, 0, 1, 1])
    >>> found = read_embeddings(path)
    >>> found.X_train.shape, len(found.X_test), found.how
    ((4, 4), 0, 'no test part: leave-one-out')
    """
    path = str(path)
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such file.")
    if path.endswith(".npz"):
        if labels:
            raise ValueError("labels goes with a .npy file; a .npz file holds its labels (y).")
        arrays = read_data_npz(path)  # untrusted: checked before it is read
        X, y = _pick(arrays, "X", path), _pick(arrays, "y", path)
        X_test, y_test = arrays.get("X_test"), arrays.get("y_test")
    elif path.endswith(".npy"):
        if not labels:
            raise ValueError("labels: a .npy file holds embeddings only; give its labels as well.")
        arrays, X, y, X_test, y_test = {}, read_data_npy(path), _read_labels(labels), None, None
    else:
        raise ValueError(f"{path}: expected a .npy or .npz file.")
    if (X_test is None) != (y_test is None):
        raise ValueError(f"{path} must hold both X_test and y_test, or neither.")
    key = "cameras" if X_test is None else "cameras_test"
    cameras = arrays.get(key)
    evaluated = y if X_test is None else y_test
    if cameras is not None and len(cameras) != len(evaluated):
        raise ValueError(f"{path}: {key} has {len(cameras)} values for {len(evaluated)} items.")
    if X_test is None:
        return Split(X, y, X[:0], y[:0], "no test part: leave-one-out", path, cameras_train=cameras)
    return Split(X, y, X_test, y_test, "X -> X_test", path, cameras_test=cameras)
