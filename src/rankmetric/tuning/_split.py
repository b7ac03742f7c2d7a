"""The validation hold-out and the nested subsamples of the successive-halving rounds."""

from __future__ import annotations

import numpy as np

from .._utils import make_rng

#: With this many labels or more (and no cameras), ``split="auto"`` holds out groups.
MIN_GROUPS_FOR_GROUP_SPLIT = 20
#: Fewest groups (or rows per class, stratified) a subsampled round keeps.
MIN_ROUND_GROUPS = 16


def group_holdout(groups, fraction: float = 0.25, *, random_state=None):
    """Training and validation rows with whole groups (identities, classes) held out.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        The group (identity or class label) of each row.
    fraction : float, default=0.25
        Share of the groups held out (rounded, at least 2, leaving at least 2).
    random_state : int, Generator or None
        Picks the held-out groups.

    Returns
    -------
    train_rows, validation_rows : ndarray of int
        Sorted row indices; no group has rows in both.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import group_holdout
    >>> groups = np.repeat(np.arange(8), 2)
    >>> train, val = group_holdout(groups, 0.25, random_state=0)
    >>> len(train), len(val), set(groups[train]) & set(groups[val])
    (12, 4, set())
    """
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be one-dimensional, got shape {groups.shape}.")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}.")
    names = np.unique(groups)
    if names.shape[0] < 4:
        raise ValueError(
            f"too few groups to hold some out: {names.shape[0]} (at least 4 are needed)."
        )
    n_held = min(max(2, round(fraction * names.shape[0])), names.shape[0] - 2)
    held = make_rng(random_state).choice(names, n_held, replace=False)
    mask = np.isin(groups, held)
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def stratified_holdout(y, fraction, rng):
    """Rows held out within every class (a class of one row stays in training)."""
    val = []
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        n_held = min(round(fraction * rows.shape[0]), rows.shape[0] - 1)
        val.append(rng.choice(rows, n_held, replace=False))
    mask = np.zeros(y.shape[0], dtype=bool)
    mask[np.concatenate(val)] = True
    if not mask.any():
        raise ValueError("too few rows per class to hold some out for validation.")
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def round_ranks(y, inner, by_groups, rng):
    """Nested subsamples of the training part for the rounds: ``(rank, size)`` per row.

    A round with share ``f`` keeps the rows with ``rank < max(MIN_ROUND_GROUPS, ceil(f size))``.
    By groups: ``rank`` is the row's group's place in a random order of the groups and ``size``
    their number (whole groups are kept). Stratified: ``rank`` is the row's place in a random
    order of its class and ``size`` the class's size (every class keeps its share).
    """
    labels = y[inner]
    names, codes = np.unique(labels, return_inverse=True)
    if by_groups:
        place = np.empty(names.shape[0], dtype=np.int64)
        place[rng.permutation(names.shape[0])] = np.arange(names.shape[0])
        return place[codes], np.full(labels.shape[0], names.shape[0])
    rank = np.empty(labels.shape[0], dtype=np.int64)
    for code in range(names.shape[0]):
        rows = np.flatnonzero(codes == code)
        rank[rows[rng.permutation(rows.shape[0])]] = np.arange(rows.shape[0])
    return rank, np.bincount(codes)[codes]


def subsample(inner, ranks, fraction):
    """The training rows of a round with share ``fraction`` (see :func:`round_ranks`)."""
    if fraction >= 1.0:
        return inner
    rank, size = ranks
    keep = np.maximum(MIN_ROUND_GROUPS, np.ceil(fraction * size))
    return inner[rank < keep]
