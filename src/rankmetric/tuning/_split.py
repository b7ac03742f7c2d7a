"""The validation hold-out and the nested subsamples of the successive-halving rounds.

The hold-out is the package's one split (:func:`rankmetric.training.holdout_folds`).
"""

from __future__ import annotations

import numpy as np

from .._utils import make_rng
from ..training import holdout_folds

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
        Share of the groups with two rows or more held out (rounded, at least 2, leaving at
        least 2; groups of one row always stay in training).
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
    codes = np.unique(groups, return_inverse=True)[1].ravel()
    return holdout_folds(codes, fraction, make_rng(random_state), what="group_holdout")[0]


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
