"""A search filter (boolean mask, id set or callable over attributes) as a mask over rows."""

from __future__ import annotations

import numpy as np

from ._rows import Rows

__all__ = ["allowed_rows"]


def allowed_rows(rows: Rows, filter) -> np.ndarray | None:
    """Boolean mask over the ``rows.n`` stored rows that a search may return, or None (all).

    ``filter`` is None; a boolean array over the living items in :attr:`Index.ids` order; a
    ``set`` / ``frozenset`` of ids (ids not in the index are ignored); or a callable taking the
    dict of per-item attribute arrays (living items, :attr:`Index.ids` order) and returning such
    a boolean array. Removed items are never allowed.
    """
    if filter is None:
        return None if not rows.n_dead else rows.alive[: rows.n].copy()
    if isinstance(filter, (set, frozenset)):
        return _from_id_set(rows, filter)
    if callable(filter):
        mask = filter(rows.live_attributes())
        return _from_live_mask(rows, mask, "the filter callable's result")
    return _from_live_mask(rows, filter, "filter")


def _from_live_mask(rows: Rows, mask, what: str) -> np.ndarray:
    mask = np.asarray(mask)
    n_live = rows.n - rows.n_dead
    if mask.dtype != bool or mask.shape != (n_live,):
        raise ValueError(
            f"{what} must be a boolean array with one entry per item ({n_live}), got "
            f"{mask.dtype} of shape {mask.shape}; pass a set for ids, or a callable over the "
            "attributes."
        )
    if not rows.n_dead:
        return mask
    full = np.zeros(rows.n, dtype=bool)
    full[rows.live_rows()] = mask
    return full


def _from_id_set(rows: Rows, ids: set | frozenset) -> np.ndarray:
    full = np.zeros(rows.n, dtype=bool)
    if rows.ids.dtype == np.int64:
        wanted = [i for i in ids if isinstance(i, (int, np.integer)) and not isinstance(i, bool)]
        full[:] = np.isin(rows.ids[: rows.n], np.asarray(wanted, dtype=np.int64))
        full &= rows.alive[: rows.n]
        return full
    pos = rows.positions()
    hits = [pos[i] for i in ids if i in pos]  # one dict lookup per id of the user's set
    full[np.asarray(hits, dtype=np.int64)] = True
    return full
