"""The rows of an index: vectors, their prepared norms, ids, tombstones and item attributes.

Rows are appended in growing buffers (capacity doubles, so ``add`` never copies the whole
catalogue per call); a removed item keeps its row as a tombstone (its prepared offset becomes
``+inf``, so the exact kernel never ranks it) until the index is saved, which compacts.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import torch

from ..neighbors import squared_norms

__all__ = ["Rows", "as_ids", "as_tensor_view", "unit_rows"]


def as_tensor_view(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing ``a``'s memory, read-only (memory-mapped) arrays included (no copy).

    The search never writes into the catalogue, so torch's warning about non-writable arrays
    does not apply.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not writable.*", category=UserWarning)
        return torch.from_numpy(a)


def unit_rows(E: np.ndarray) -> np.ndarray:
    """``E`` with every non-zero row scaled to unit length (in ``E``'s dtype)."""
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    return E / np.where(norms > 0, norms, 1.0).astype(E.dtype)


def as_ids(ids, n: int) -> np.ndarray:
    """``ids`` as int64 (integer ids) or object (any other hashable) array of length ``n``."""
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__"):
        raise ValueError(f"ids must be a sequence of {n} hashable ids, got {type(ids).__name__}.")
    a = ids
    if not isinstance(ids, np.ndarray):
        try:
            a = np.asarray(ids)
        except ValueError:  # ragged: tuples and others of varying length
            a = np.empty(0, dtype=object)
        if a.ndim != 1 and len(ids) == n:  # tuples as ids
            a = np.empty(0, dtype=object)
    if len(ids) != n or (a.dtype != object and a.ndim != 1):
        raise ValueError(f"ids must hold one id per row: {n} expected, got shape {a.shape}.")
    if a.dtype.kind in "iu" and a.shape == (n,):
        return a.astype(np.int64)
    if a.dtype.kind == "b" or a.dtype.kind == "f":
        raise ValueError(f"ids must be integers, strings or other hashables, not {a.dtype}.")
    out = np.empty(n, dtype=object)
    out[:] = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)  # plain Python ids
    for value in out:  # ids of any hashable type: checked once, at add
        if not isinstance(value, Hashable) or isinstance(value, (float, np.floating)):
            raise ValueError(f"ids must be hashable and not floats, got {value!r}.")
    return out


class Rows:
    """Growing row storage of one index (internal)."""

    def __init__(self, dim: int, metric: str) -> None:
        self.dim, self.metric = dim, metric
        self.n = 0
        self.vectors = np.empty((0, dim), dtype=np.float32)
        self.offset = torch.empty(0, dtype=torch.float32)
        self.ids = np.empty(0, dtype=np.int64)
        self.alive = np.empty(0, dtype=bool)
        self.attributes: dict[str, np.ndarray] | None = None
        self.n_dead = 0
        self._pos: dict | None = None
        self._view: tuple | None = None

    def tensor(self) -> torch.Tensor:
        """The stored rows as a tensor sharing their memory (kept until the storage grows)."""
        if self._view is None or self._view[0] is not self.vectors:
            self._view = (self.vectors, as_tensor_view(self.vectors))
        return self._view[1][: self.n]

    # ------------------------------------------------------------------ building
    @classmethod
    def from_arrays(cls, vectors, ids, attributes, metric: str) -> Rows:
        """Rows over saved arrays (``vectors`` may be memory-mapped; used as they are)."""
        rows = cls(vectors.shape[1], metric)
        rows.vectors, rows.ids, rows.n = vectors, ids, vectors.shape[0]
        rows.alive = np.ones(rows.n, dtype=bool)
        rows.attributes = attributes
        rows.offset = rows._prepared_offset(as_tensor_view(vectors))
        return rows

    def _prepared_offset(self, V: torch.Tensor) -> torch.Tensor:
        if self.metric == "cosine":
            return torch.zeros(V.shape[0], dtype=torch.float32)
        return squared_norms(V)

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        if need <= self.vectors.shape[0] and self.vectors.flags.writeable:
            return
        cap = max(need, 2 * self.vectors.shape[0], 1024)

        def grown(a, empty=np.empty):
            """``a``'s first ``n`` rows in a buffer of ``cap`` rows (``alive``: zeros past n)."""
            out = empty((cap, *a.shape[1:]), dtype=a.dtype)
            out[: self.n] = a[: self.n]
            return out

        self.vectors, self.ids = grown(self.vectors), grown(self.ids)
        self.offset, self.alive = grown(self.offset, torch.empty), grown(self.alive, np.zeros)
        if self.attributes is not None:
            self.attributes = {name: grown(v) for name, v in self.attributes.items()}

    def positions(self) -> dict:
        """``{id: row}`` of the living items (built once, kept up to date)."""
        if self._pos is None:
            live = np.flatnonzero(self.alive[: self.n])
            self._pos = dict(zip(self.ids[live].tolist(), live.tolist(), strict=True))
        return self._pos

    def next_ids(self, count: int) -> np.ndarray:
        """Fresh integer ids after the largest integer id in use."""
        if self.ids.dtype != np.int64:
            raise ValueError("this index has non-integer ids: pass ids= to add.")
        start = int(self.ids[: self.n].max()) + 1 if self.n else 0
        return np.arange(start, start + count, dtype=np.int64)

    def check_new_ids(self, ids: np.ndarray) -> None:
        """Refuse ids already held by a living item."""
        seen = self.positions()
        taken = [i for i in ids.tolist() if i in seen]  # dict lookups, C speed per id
        if taken:
            raise ValueError(f"{len(taken)} id(s) are already in the index, e.g. {taken[0]!r}.")

    def append(self, E: np.ndarray, ids: np.ndarray, attributes: dict | None) -> None:
        """Append prepared float32 embeddings ``E`` with their checked ids and attributes."""
        count = E.shape[0]
        if self.metric == "cosine":
            E = unit_rows(E)
        if ids.dtype == object and self.ids.dtype != object:
            self.ids = self.ids.astype(object)
        elif ids.dtype != object and self.ids.dtype == object:
            ids = ids.astype(object)
        self._reserve(count)
        rows = slice(self.n, self.n + count)
        self.vectors[rows] = E
        self.offset[rows] = self._prepared_offset(torch.from_numpy(self.vectors[rows]))
        self.ids[rows] = ids
        self.alive[rows] = True
        if attributes is not None:
            for name, values in attributes.items():
                self.attributes[name][rows] = values
        pos = self.positions()
        pos.update(zip(ids.tolist(), range(self.n, self.n + count), strict=True))
        self.n += count

    def remove(self, ids) -> int:
        """Tombstone the items ``ids``; every id must be in the index."""
        pos = self.positions()
        ids = list(ids)
        missing = [i for i in ids if i not in pos]
        if missing:
            raise ValueError(f"{len(missing)} id(s) are not in the index, e.g. {missing[0]!r}.")
        rows = np.fromiter((pos.pop(i) for i in ids), dtype=np.int64, count=len(ids))
        self.alive[rows] = False
        self.offset[torch.from_numpy(rows)] = torch.inf
        self.n_dead += rows.shape[0]
        return rows.shape[0]

    # ------------------------------------------------------------------ views
    def live_rows(self) -> np.ndarray:
        return np.flatnonzero(self.alive[: self.n])

    def live_vectors(self) -> np.ndarray:
        """The living items' vectors in id order (a view when nothing was removed)."""
        return self.vectors[: self.n] if not self.n_dead else self.vectors[self.live_rows()]

    def live_ids(self) -> np.ndarray:
        return self.ids[: self.n] if not self.n_dead else self.ids[self.live_rows()]

    def live_attributes(self) -> dict[str, np.ndarray]:
        if self.attributes is None:
            return {}
        if not self.n_dead:
            return {k: v[: self.n] for k, v in self.attributes.items()}
        live = self.live_rows()
        return {k: v[live] for k, v in self.attributes.items()}
