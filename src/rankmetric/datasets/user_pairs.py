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

A file without test pairs is split by :func:`holdout_pairs` (what ``rankmetric fit --pairs``
and ``rankmetric evaluate --pairs --model`` do): whole groups of items held out, so that no
item of a test pair is seen in training. Every number must be finite: a NaN or an infinity is
refused as the file is read, naming its array and first row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._safe_npz import read_data_npz
from .._validation import check_finite
from .._validation.points import distinct_rows, pair_groups

__all__ = ["PairData", "holdout_pairs", "read_pair_file"]

#: The arrays of a pair file that hold numbers which must be finite (stacked ``pairs`` too).
FLOAT_ARRAYS = ("X", "X_test", "X1", "X2", "X1_test", "X2_test", "pairs", "pairs_test", "y",
                "y_test")  # fmt: skip


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
    how : str
        Where the test pairs come from (``"pairs_test"``, or the hold-out of
        :func:`holdout_pairs`); empty without them.
    n_left_out : int
        Pairs of the file in neither part (:func:`holdout_pairs`: one member held out, the
        other not).

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
    how: str = ""
    n_left_out: int = 0

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
    return pair_data(read_data_npz(path, path), path)  # untrusted: checked before it is read


def pair_data(arrays: dict, path: str) -> PairData:
    """The checked :class:`PairData` of a pair file's ``arrays`` (the module's table), read
    from ``path`` (a ``.npz``, or a pair table turned into these arrays)."""
    for key in FLOAT_ARRAYS:
        if key in arrays:
            check_finite(arrays[key], f"{path}: {key}")
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
    return PairData(X, arrays["pairs"], arrays["y"], test, path, "pairs_test" if test else "")


def holdout_pairs(data: PairData, test_size: float = 0.3) -> PairData:
    """Hold out test pairs whose items never appear in a training pair (seed 0).

    The items (the rows of ``X``, or the distinct rows of stacked pairs) fall into groups, the
    connected components of the similar pairs (the identities, when "similar" means "same
    identity"; an item in no similar pair is a group of its own). Whole groups, drawn at random
    with seed 0, are held out until they hold ``test_size`` of the items; a pair whose two
    members are held out is a test pair, a pair with neither is a training pair, and a pair
    with one of each is left out (in neither part: it would show a test item in training), as
    verification protocols with disjoint identities do. A group larger than the share is held
    out only when nothing else is left to draw.

    Parameters
    ----------
    data : PairData
        A pair file read by :func:`read_pair_file`. When it has test pairs (``pairs_test``) or
        ``test_size`` is 0, it is returned as it is.
    test_size : float, default=0.3
        The share of the items held out, in ``[0, 1)``.

    Returns
    -------
    PairData
        The training pairs as ``pairs``, ``y`` (indices into the same ``X``, or stacked pairs),
        the held-out ones as ``test``; ``how`` says how they were drawn and ``n_left_out`` counts
        the pairs in neither part.

    Raises
    ------
    ValueError
        Naming ``test_size`` when it is outside ``[0, 1)``, or when a part would have no similar
        or no dissimilar pair (a file with one kind only is returned as it is: the fit names
        that problem) (a similarity counts as similar when ``> 0``); the message says
        what to do (test pairs in the file, another share, or ``test_size=0`` to score the
        training pairs).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import PairData, holdout_pairs
    >>> X = np.random.default_rng(0).normal(size=(12, 3))  # six identities of two items
    >>> i, j = np.triu_indices(12, 1)
    >>> same = i // 2 == j // 2
    >>> data = PairData(X, np.stack([i, j], axis=1), np.where(same, 1, -1), None, "mine.npz")
    >>> split = holdout_pairs(data, test_size=0.3)  # two identities: four items
    >>> len(split.y), len(split.test[1]), split.n_left_out
    (28, 6, 32)
    >>> split.how
    '30% of the items held out (whole groups of similar pairs, seed 0)'
    """
    if not 0 <= test_size < 1:
        raise ValueError(f"test_size must lie in [0, 1), got {test_size!r}.")
    same = np.asarray(data.y) > 0  # +1, 1, True, or a similarity above 0
    if data.test is not None or test_size == 0 or same.all() or not same.any():
        return data  # a file of one kind of pair: the fit names that problem
    ids = _item_ids(data)
    n_items = int(ids.max()) + 1
    groups = pair_groups(ids[:, 0], ids[:, 1], same, n_items)
    held_group = _held_groups(groups, test_size)
    held = held_group[groups][ids]
    test, train = held.all(axis=1), ~held.any(axis=1)
    share = f"{test_size:.0%} of the items held out (whole groups of similar pairs, seed 0)"
    for part, name in ((train, "training"), (test, "test")):
        if not (same[part].any() and (~same[part]).any()):
            raise ValueError(
                f"test_size: holding out {test_size:.0%} of the items (whole groups of similar "
                f"pairs, seed 0) leaves the {name} pairs of {data.source} "
                "without both similar and dissimilar pairs; put test pairs in the file "
                "(pairs_test, y_test), choose another test_size, or 0 to score the training "
                "pairs."
            )
    pairs, y = np.asarray(data.pairs), np.asarray(data.y)
    test_pairs = _stacked(data.X, pairs[test], f"{data.source}: pairs")
    n_left_out = int(np.count_nonzero(~test & ~train))
    return PairData(data.X, pairs[train], y[train], (test_pairs, y[test]), data.source, share,
                    n_left_out)  # fmt: skip


def _item_ids(data: PairData) -> np.ndarray:
    """(n_pairs, 2) item numbers of the pairs' members: the distinct points among those the
    pairs use (two equal rows of ``X`` are one item, as the learners count them)."""
    pairs = _checked_form(data.X, data.pairs, f"{data.source}: pairs")
    if data.X is None:
        return distinct_rows(pairs.reshape(-1, pairs.shape[2]))[1].reshape(-1, 2)
    used, where = np.unique(pairs, return_inverse=True)
    rows = np.asarray(data.X, dtype=np.float64)[used]
    return distinct_rows(rows)[1][where.reshape(-1, 2)]


def _held_groups(groups: np.ndarray, test_size: float) -> np.ndarray:
    """Whether each group is held out: groups in a seeded random order, those larger than the
    share last, taken until they hold ``test_size`` of the items."""
    sizes = np.bincount(groups)
    order = np.random.default_rng(0).permutation(sizes.shape[0])
    target = test_size * groups.shape[0]
    order = order[np.argsort(sizes[order] > target, kind="stable")]
    taken = np.searchsorted(np.cumsum(sizes[order]), target) + 1
    held = np.zeros(sizes.shape[0], dtype=bool)
    held[order[: min(taken, sizes.shape[0] - 1)]] = True
    return held


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


def _checked_form(X, pairs, what: str) -> np.ndarray:
    """``pairs`` in either layout, checked: (n, 2, n_features) stacked, or (n, 2) integer row
    indices of ``X``."""
    pairs = np.asarray(pairs)
    if pairs.ndim == 3:
        if pairs.shape[1] != 2:
            raise ValueError(f"{what} must have shape (n, 2, n_features), got {pairs.shape}.")
        return pairs
    if X is None:
        raise ValueError(f"{what} holds row indices but the file has no X (the items).")
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(
            f"{what} must be (n, 2) integer row indices or (n, 2, n_features) stacked pairs, "
            f"got {pairs.dtype} of shape {pairs.shape}."
        )
    if pairs.size and (pairs.min() < 0 or pairs.max() >= len(X)):
        raise ValueError(f"{what}: indices must lie in [0, {len(X)}) (rows of X).")
    return pairs


def _stacked(X, pairs, what: str) -> np.ndarray:
    """Stacked (n, 2, n_features) float64 pairs from either layout."""
    pairs = _checked_form(X, pairs, what)
    if pairs.ndim == 3:
        return pairs.astype(np.float64)
    return np.asarray(X, dtype=np.float64)[pairs]
