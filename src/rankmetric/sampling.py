"""Vectorised samplers over class labels: positive pairs, negatives, balanced pairs and batches.

Every sampler draws all of its indices at once from a NumPy ``Generator`` (no Python loop over
samples or pairs), so one seed reproduces a whole training run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LabelIndex", "PairIndex"]


@dataclass(frozen=True)
class LabelIndex:
    """Samples grouped by class, for O(1) vectorised draws.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Integer class codes ``0..Q-1`` (as returned by ``check_labels``).
    """

    codes: np.ndarray
    order: np.ndarray  # sample indices sorted by class
    starts: np.ndarray  # first position of each class in ``order``
    counts: np.ndarray  # samples per class

    @classmethod
    def from_codes(cls, codes: np.ndarray) -> LabelIndex:
        codes = np.asarray(codes, dtype=np.int64)
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        return cls(codes=codes, order=order, starts=starts, counts=counts)

    @property
    def n_samples(self) -> int:
        return self.codes.shape[0]

    def positive_pairs(
        self, n_pairs: int, rng: np.random.Generator, class_uniform: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ordered pairs ``(i, j)``, ``i != j``, same class.

        Uniform over all such pairs by default (a class is drawn in proportion to
        ``n_c (n_c − 1)``); with ``class_uniform`` the class is drawn uniformly among those with
        two samples, then a pair inside it, so small classes get as many pairs as large ones.
        """
        weights = self.counts * (self.counts - 1.0)
        if weights.sum() <= 0:
            raise ValueError("no class has two samples, so no positive pair exists.")
        if class_uniform:
            weights = (weights > 0).astype(np.float64)
        cls = rng.choice(len(self.counts), size=n_pairs, p=weights / weights.sum())
        n_c = self.counts[cls]
        a = rng.integers(0, n_c)
        b = rng.integers(0, n_c - 1)
        b = b + (b >= a)
        return self.order[self.starts[cls] + a], self.order[self.starts[cls] + b]

    def negatives(
        self, anchors: np.ndarray, n_per_anchor: int, rng: np.random.Generator
    ) -> np.ndarray:
        """For each anchor, ``n_per_anchor`` samples of another class, uniform with replacement.

        Returns an array of shape (len(anchors), n_per_anchor).
        """
        c = self.codes[anchors][:, None]
        n_other = self.n_samples - self.counts[c]
        if np.any(n_other <= 0):
            raise ValueError("an anchor's class holds every sample, so it has no negatives.")
        pos = rng.integers(0, n_other, size=(len(anchors), n_per_anchor))
        pos = pos + np.where(pos >= self.starts[c], self.counts[c], 0)
        return self.order[pos]

    def n_negatives(self, anchors: np.ndarray) -> np.ndarray:
        """Number of samples of another class than each anchor's."""
        return self.n_samples - self.counts[self.codes[anchors]]

    def balanced_pairs(
        self,
        n_pairs: int,
        rng: np.random.Generator,
        positive_fraction: float = 0.5,
        class_uniform: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs with a fixed share of same-class pairs; returns ``(i, j, same)``.

        ``class_uniform`` is passed to :meth:`positive_pairs`; the first point of a different-class
        pair is uniform over the samples.
        """
        n_pos = int(round(n_pairs * positive_fraction))
        if n_pos:
            pi, pj = self.positive_pairs(n_pos, rng, class_uniform)
        else:
            pi, pj = np.empty(0, int), np.empty(0, int)
        ni = rng.integers(0, self.n_samples, size=n_pairs - n_pos)
        nj = self.negatives(ni, 1, rng)[:, 0]
        i = np.concatenate([pi, ni])
        j = np.concatenate([pj, nj])
        same = np.concatenate([np.ones(n_pos, bool), np.zeros(n_pairs - n_pos, bool)])
        return i, j, same

    def class_balanced_batch(
        self, n_classes: int, n_per_class: int, rng: np.random.Generator
    ) -> np.ndarray:
        """``n_per_class`` samples from each of ``n_classes`` random classes.

        Classes with fewer samples than ``n_per_class`` are drawn with repetition.
        Returns indices of shape (n_classes * n_per_class,).
        """
        n_classes = min(n_classes, len(self.counts))
        present = np.flatnonzero(self.counts > 0)
        cls = rng.choice(present, size=min(n_classes, len(present)), replace=False)
        n_c = self.counts[cls]
        keys = rng.random((len(cls), int(n_c.max())))
        keys[np.arange(keys.shape[1])[None, :] >= n_c[:, None]] = np.inf
        ranks = np.argsort(keys, axis=1)[:, :n_per_class]
        if ranks.shape[1] < n_per_class:
            ranks = np.pad(ranks, ((0, 0), (0, n_per_class - ranks.shape[1])), mode="wrap")
        ranks = ranks % n_c[:, None]
        return self.order[(self.starts[cls][:, None] + ranks).ravel()]


@dataclass(frozen=True)
class PairIndex:
    """Positive pairs and per-item negatives from explicit pair supervision, for WARP sampling.

    The sampler interface of :class:`LabelIndex` (``positive_pairs``, ``negatives``,
    ``n_negatives``, ``n_samples``) over a graph of similar and dissimilar pairs instead of class
    labels: the negatives of an item are its dissimilar partners. WARCA's loss uses the negatives
    of a pair's first item for both ends, which holds when "similar" is an equivalence (same
    identity): if ``i ~ j`` and ``i ≁ l`` then ``j ≁ l``. Only similar pairs with an end that has
    a dissimilar partner are drawn, oriented so that that end comes first.

    Parameters
    ----------
    first, second : ndarray of shape (n_positive,)
        Oriented similar pairs whose first item has at least one negative.
    indptr : ndarray of shape (n_samples + 1,)
        ``partners[indptr[i]:indptr[i + 1]]`` are the dissimilar partners of item ``i``.
    partners : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> index = PairIndex.from_pairs(np.array([0, 0]), np.array([1, 2]), np.array([True, False]), 3)
    >>> index.positive_pairs(2, np.random.default_rng(0))[0].tolist()
    [0, 0]
    >>> index.negatives(np.array([0]), 3, np.random.default_rng(0)).tolist()
    [[2, 2, 2]]
    """

    first: np.ndarray
    second: np.ndarray
    indptr: np.ndarray
    partners: np.ndarray

    @classmethod
    def from_pairs(
        cls, a: np.ndarray, b: np.ndarray, similar: np.ndarray, n_samples: int
    ) -> PairIndex:
        """Build from pairs ``(a, b)`` of item indices and their ``similar`` flags."""
        a, b, similar = np.asarray(a, np.int64), np.asarray(b, np.int64), np.asarray(similar)
        da, db = a[~similar], b[~similar]
        src, dst = np.concatenate([da, db]), np.concatenate([db, da])
        order = np.argsort(src, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n_samples))])
        first = np.concatenate([a[similar], b[similar]])
        second = np.concatenate([b[similar], a[similar]])
        usable = indptr[first + 1] > indptr[first]
        if not usable.any():
            raise ValueError(
                "no similar pair has an item with a dissimilar partner, so no (anchor, "
                "positive, negative) can be sampled; give pairs that share items, or triplets."
            )
        return cls(first=first[usable], second=second[usable], indptr=indptr, partners=dst[order])

    @property
    def n_samples(self) -> int:
        return self.indptr.shape[0] - 1

    def positive_pairs(
        self, n_pairs: int, rng: np.random.Generator, class_uniform: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """``n_pairs`` similar pairs, uniform with replacement (``class_uniform`` is ignored)."""
        q = rng.integers(0, self.first.shape[0], size=n_pairs)
        return self.first[q], self.second[q]

    def negatives(
        self, anchors: np.ndarray, n_per_anchor: int, rng: np.random.Generator
    ) -> np.ndarray:
        """For each anchor, ``n_per_anchor`` of its dissimilar partners, uniform with replacement.

        Returns an array of shape (len(anchors), n_per_anchor).
        """
        degree = self.n_negatives(anchors)
        if np.any(degree <= 0):
            raise ValueError("an anchor has no dissimilar partner, so it has no negatives.")
        pos = (rng.random((len(anchors), n_per_anchor)) * degree[:, None]).astype(np.int64)
        pos = np.minimum(pos, degree[:, None] - 1)
        return self.partners[self.indptr[anchors][:, None] + pos]

    def n_negatives(self, anchors: np.ndarray) -> np.ndarray:
        """Number of dissimilar partners of each anchor."""
        return self.indptr[np.asarray(anchors) + 1] - self.indptr[np.asarray(anchors)]
