"""Points and their groups, from pairs: the distinct rows of a stack of points, and the groups
(connected components) that similar pairs make of their points.

Both the learners' pair checks (the stacked form of the pair convention, ``docs/pairs.md``) and
the held-out split of a user's pair file (:func:`rankmetric.datasets.holdout_pairs`) and the
held-out check use them, so an item and its group mean the same everywhere.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["distinct_rows", "pair_groups"]

#: Elements hashed or compared at once.
ROW_CHUNK_ELEMENTS = 1 << 22


def _row_hashes(flat: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's values (``-0.0`` and ``0.0`` alike), in bounded chunks."""
    words = np.uint64 if flat.dtype.itemsize == 8 else np.uint32
    mult = np.random.default_rng(0x5EED).integers(1, 2**63, size=flat.shape[1], dtype=np.uint64)
    mult |= np.uint64(1)
    out = np.empty(flat.shape[0], dtype=np.uint64)
    step = max(1, (ROW_CHUNK_ELEMENTS >> 3) // max(flat.shape[1], 1))  # three temporaries a chunk
    for start in range(0, flat.shape[0], step):  # chunks of rows, vectorised inside
        bits = (flat[start : start + step] + 0.0).view(words).astype(np.uint64)
        bits ^= bits >> np.uint64(29)
        with np.errstate(over="ignore"):
            out[start : start + step] = (bits * mult).sum(axis=1, dtype=np.uint64)
    return out


def distinct_rows(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)``: the first row of each distinct value, in order of appearance, and
    each row's distinct-point number (``flat[first][inverse] == flat``).

    Rows are hashed in chunks (8 bytes a row) instead of sorted as ``np.unique(axis=0)`` does
    (which copies the whole array); equal hashes are then checked value by value, so a hash
    collision can never merge two different points.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric._validation.points import distinct_rows
    >>> first, inverse = distinct_rows(np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]]))
    >>> first.tolist(), inverse.tolist()
    ([0, 1], [0, 1, 0])
    """
    first, inverse = _in_order_of_appearance(
        *np.unique(_row_hashes(flat), return_index=True, return_inverse=True)[1:]
    )
    step = max(1, (ROW_CHUNK_ELEMENTS >> 3) // max(flat.shape[1], 1))
    for start in range(0, flat.shape[0], step):  # every row equals its representative
        sl = slice(start, start + step)
        if not np.all(flat[sl] == flat[first[inverse[sl]]]):
            break
    else:
        return first, inverse
    # a 64-bit collision (about 1 in 10^6 for 10^7 rows): the exact, sorting method
    return _in_order_of_appearance(
        *np.unique(flat, axis=0, return_index=True, return_inverse=True)[1:]
    )


def _in_order_of_appearance(first: np.ndarray, inverse: np.ndarray):
    """``np.unique``'s ``(first, inverse)`` renumbered so the distinct values come in the order
    they first appear."""
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return first[order], rank[inverse.ravel()]


def pair_groups(a, b, similar, n_points: int) -> np.ndarray:
    """Group codes of points from their pairs: the connected components of the similar pairs.

    Pairs have no labels of their own; when "similar" means "same identity", the components of
    the similar pairs are the identities (or unions of them).

    Parameters
    ----------
    a, b : array-like of shape (n_pairs,), int
        Row indices of the two members of each pair.
    similar : array-like of shape (n_pairs,), bool
    n_points : int

    Returns
    -------
    ndarray of shape (n_points,), int
        Component code of each point (a point in no similar pair is its own group).

    Examples
    --------
    >>> from rankmetric._validation.points import pair_groups
    >>> pair_groups([0, 2, 0], [1, 3, 2], [True, True, False], 5).tolist()
    [0, 0, 1, 1, 2]
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    sim = np.asarray(similar, dtype=bool)
    graph = coo_matrix(
        (np.ones(int(sim.sum())), (a[sim], b[sim])), shape=(n_points, n_points)
    ).tocsr()
    return connected_components(graph, directed=False)[1].astype(np.int64)
