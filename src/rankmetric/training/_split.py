"""The one validation split: a share of each class's rows, or whole classes (groups) held out.

Every hold-out of the package draws here: the early stopping of the iterative estimators
(``validation_fraction`` / ``validation_split``), the held-out check of every learner
(:mod:`rankmetric.estimators._held_out`, several disjoint folds of whole groups) and the
validation of the self-tuning learners (:func:`rankmetric.tuning.group_holdout`); and the
held-out check's draw of the items it ranks, every held-out class its share
(:func:`sample_retrieval_items`, which validation scoring uses too).
"""

from __future__ import annotations

import numpy as np

from ._scoring import MAX_VALIDATION_ITEMS

__all__ = ["VALIDATION_SPLITS", "holdout_folds", "sample_retrieval_items", "split_validation"]

#: How ``validation_fraction`` holds data out: a share of each class, or whole classes.
VALIDATION_SPLITS = ("stratified", "groups")


def holdout_folds(
    codes: np.ndarray,
    fraction: float,
    rng: np.random.Generator,
    *,
    split: str = "groups",
    min_groups: int = 4,
    min_held: int = 0,
    max_folds: int = 1,
    what: str = "validation_split='groups'",
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random (train, held-out) row indices: one fold, or disjoint folds of whole groups.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,), int
        Class (group, identity) codes ``0..Q-1``.
    fraction : float in (0, 1)
        Share held out by a fold.
    rng : numpy.random.Generator
        Draws the rows or groups held out.
    split : {"groups", "stratified"}, default="groups"
        ``"stratified"``: ``round(fraction · n_c)`` rows of each class ``c``, every class keeping
        two training rows (no fold when fewer than two rows would be held out). ``"groups"``:
        ``max(2, round(fraction · Q₂))`` of the ``Q₂`` classes with two rows or more, whole
        (the classes of one row always stay to learn from), leaving two of them to learn from.
    min_groups : int, default=4
        ``"groups"``: fewest classes with two rows.
    min_held, max_folds : int, default=0 and 1
        ``"groups"``: as many disjoint folds as it takes to hold out ``min_held`` classes in
        all, at most ``max_folds`` (and as many as the classes allow).
    what : str
        Names the split in errors.

    Returns
    -------
    list of (train_idx, held_idx)
        Sorted int64 row indices; an empty list when a stratified split holds out fewer than two
        rows.

    Raises
    ------
    ValueError
        For ``"groups"``, when fewer than ``min_groups`` classes have two rows.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.repeat(np.arange(10), 3)
    >>> (train, held), = holdout_folds(codes, 0.2, np.random.default_rng(0))
    >>> len(train), len(held), len(np.unique(codes[held]))
    (24, 6, 2)
    >>> folds = holdout_folds(codes, 0.2, np.random.default_rng(0), min_held=6, max_folds=3)
    >>> [len(np.unique(codes[held])) for _, held in folds]
    [2, 2, 2]
    """
    n = codes.shape[0]
    counts = np.bincount(codes)
    if split == "stratified":
        n_held = np.clip(np.round(fraction * counts).astype(np.int64), 0, np.maximum(counts - 2, 0))
        if n_held.sum() < 2:
            return []
        order = np.lexsort((rng.random(n), codes))  # random order within each class
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty_like(order)
        rank[order] = np.arange(n) - starts[codes[order]]
        is_val = rank < n_held[codes]
        return [(np.flatnonzero(~is_val), np.flatnonzero(is_val))]
    eligible = np.flatnonzero(counts >= 2)
    if eligible.shape[0] < max(min_groups, 4):
        raise ValueError(
            f"{what}: too few groups to hold whole ones out: only {eligible.shape[0]} groups have "
            f"two rows or more, and {max(min_groups, 4)} are needed (at least two held "
            "out, two to learn from). Use more groups, or hold out a share of each class."
        )
    n_held = min(max(2, int(round(fraction * eligible.shape[0]))), eligible.shape[0] - 2)
    n_folds = max(1, min(max_folds, -(-min_held // n_held), eligible.shape[0] // n_held))
    drawn = rng.choice(eligible, n_folds * n_held, replace=False)  # in random order
    folds = []
    for k in range(n_folds):
        held = np.isin(codes, drawn[k * n_held : (k + 1) * n_held])
        folds.append((np.flatnonzero(~held), np.flatnonzero(held)))
    return folds


def split_validation(
    codes: np.ndarray, fraction: float, split: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random (train, validation) row indices holding out ``fraction`` of the data.

    The first fold of :func:`holdout_folds`; ``fraction=0`` (or a stratified split that would
    hold out fewer than two rows) returns every row for training and none for validation,
    without drawing from ``rng``.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,), int
        Class (identity) codes ``0..Q-1``.
    fraction : float in [0, 1)
        Share held out.
    split : {"stratified", "groups"}
        A share of each class's rows, or whole classes (see :func:`holdout_folds`).
    rng : numpy.random.Generator

    Returns
    -------
    train_idx, val_idx : ndarrays of int64, sorted

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.repeat(np.arange(5), 10)
    >>> train, val = split_validation(codes, 0.2, "stratified", np.random.default_rng(0))
    >>> np.bincount(codes[val]).tolist()
    [2, 2, 2, 2, 2]
    """
    folds = holdout_folds(codes, fraction, rng, split=split) if fraction > 0 else []
    return folds[0] if folds else (np.arange(codes.shape[0]), np.empty(0, dtype=np.int64))


def sample_retrieval_items(
    codes: np.ndarray, rng: np.random.Generator, max_items: int = MAX_VALIDATION_ITEMS
) -> np.ndarray:
    """Indices of at most about ``max_items`` items for a leave-one-out ranking (validation
    scoring, the check against the Euclidean distance, the held-out check), every class kept
    when it can be: a class with more than its share (``max_items // n_classes`` items, at least
    2) gives that many, drawn at random, a smaller one all its items. With more than
    ``max_items / 2`` classes whole classes are drawn instead, so the items keep their matches.
    All items when there are no more than ``max_items``. (Whole classes were drawn always until
    0.3's development: two classes of 6,000 items then kept one, every item's only matches its
    own, every distance at mAP 1.)

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.repeat([0, 1, 2], [5000, 3000, 10])
    >>> kept = sample_retrieval_items(codes, np.random.default_rng(0), 2000)
    >>> np.bincount(codes[kept]).tolist()
    [666, 666, 10]
    >>> len(sample_retrieval_items(np.repeat(np.arange(10), 3), np.random.default_rng(0), 7))
    6
    """
    n = codes.shape[0]
    if n <= max_items:
        return np.arange(n)
    classes, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    quota = max_items // classes.shape[0]
    if quota < 2:  # many classes: whole ones
        drawn = rng.permutation(classes.shape[0])
        fit = int(np.searchsorted(np.cumsum(counts[drawn]), max_items, side="right"))
        return np.flatnonzero(np.isin(inverse, drawn[: max(1, fit)]))
    shuffled = rng.permutation(n)
    by_class = shuffled[np.argsort(inverse[shuffled], kind="stable")]
    rank = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)  # rank in its class
    return np.sort(by_class[rank < quota])
