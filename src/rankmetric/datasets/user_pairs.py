"""Your own pairs: one ``.npz`` file of items and same / different pairs (:func:`read_pair_file`).

A pair file (``rankmetric fit METHOD --pairs``, ``rankmetric evaluate --pairs``) is a ``.npz``
archive (no pickled objects, sizes checked before reading) in the pair convention of
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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._safe_npz import read_data_npz

__all__ = ["PairData", "read_pair_file"]


@dataclass(frozen=True)
class PairData:
    """The pairs of a user's pair file, checked.

    Attributes
    ----------
    X : ndarray or None
        The items the training pairs index (``None`` with stacked pairs).
    pairs : ndarray
        The training pairs: (n_pairs, 2) row indices into ``X``, or (n_pairs, 2, n_features).
    y : ndarray of shape (n_pairs,)
        ``+1`` / ``-1`` (``1`` / ``0``) or similarities in ``[-1, 1]``.
    test : tuple of (ndarray of shape (n_test, 2, n_features), ndarray) or None
        The held-out pairs, stacked, and their labels.
    source : str

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import PairData
    >>> data = PairData(np.eye(3), np.array([[0, 1], [1, 2]]), np.array([1, -1]), None, "-")
    >>> data.stacked().shape
    (2, 2, 3)
    """

    X: np.ndarray | None
    pairs: np.ndarray
    y: np.ndarray
    test: tuple | None
    source: str

    def stacked(self) -> np.ndarray:
        """The training pairs as (n_pairs, 2, n_features) float64."""
        return _stacked(self.X, self.pairs, f"{self.source}: pairs")


def read_pair_file(path) -> PairData:
    """Read and check a ``.npz`` pair file (the module's table); nothing is pickled.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    PairData

    Raises
    ------
    ValueError
        Naming the file: a missing array, labels that are not one number per pair, indices out
        of the rows of ``X``, members ``X1`` / ``X2`` of different shapes.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from rankmetric.datasets import read_pair_file
    >>> path = os.path.join(tempfile.mkdtemp(), "pairs.npz")
    >>> np.savez(path, X1=np.zeros((3, 2)), X2=np.ones((3, 2)), y=[1, -1, 1])
    >>> data = read_pair_file(path)
    >>> data.pairs.shape, data.test is None
    ((3, 2, 2), True)
    """
    path = str(path)
    arrays = read_data_npz(path, path)  # untrusted: checked before it is read
    for suffix in ("", "_test"):  # X1, X2: the members of each pair, stacked here
        _stack_members(arrays, suffix, path)
    for key in ("pairs", "y"):
        if key not in arrays:
            raise ValueError(f"{path} has no array {key!r} (found {sorted(arrays)}).")
    X = arrays.get("X")
    _check_labels(arrays, "", path)
    test = None
    if "pairs_test" in arrays:
        if "y_test" not in arrays:
            raise ValueError(f"{path} has pairs_test but no y_test.")
        _check_labels(arrays, "_test", path)
        items = arrays.get("X_test", X)
        test = (_stacked(items, arrays["pairs_test"], f"{path}: pairs_test"), arrays["y_test"])
    return PairData(X, arrays["pairs"], arrays["y"], test, path)


def _check_labels(arrays: dict, suffix: str, path: str) -> None:
    """``y{suffix}`` holds one number per pair of ``pairs{suffix}`` (named as in the file)."""
    y, pairs = np.asarray(arrays[f"y{suffix}"]), np.asarray(arrays[f"pairs{suffix}"])
    if y.ndim != 1 or pairs.ndim < 1 or y.shape[0] != pairs.shape[0]:
        raise ValueError(
            f"{path}: y{suffix} must hold one label per pair of pairs{suffix} "
            f"({pairs.shape[0] if pairs.ndim else 0}), got shape {y.shape}."
        )
    if y.dtype != bool and not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"{path}: y{suffix} must hold numbers (+1/-1, 1/0 or "
                         f"similarities), got {y.dtype}.")  # fmt: skip


def _stack_members(arrays: dict, suffix: str, path: str) -> None:
    """``X1{suffix}``, ``X2{suffix}`` (n, n_features) → ``pairs{suffix}`` (n, 2, n_features)."""
    a, b = arrays.pop(f"X1{suffix}", None), arrays.pop(f"X2{suffix}", None)
    if a is None and b is None:
        return
    if a is None or b is None or f"pairs{suffix}" in arrays:
        raise ValueError(f"{path}: give X1{suffix} and X2{suffix} together, and not "
                         f"beside pairs{suffix}.")  # fmt: skip
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"{path}: X1{suffix} and X2{suffix} must both have shape "
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
