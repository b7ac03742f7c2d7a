"""Vectorised samplers over class labels: positive pairs, negatives, balanced pairs and batches.

Every sampler draws all of its indices at once from a NumPy ``Generator`` (no Python loop over
samples or pairs), so one seed reproduces a whole training run. :class:`ClassBalancedBatchSampler`
serves the same P × K batches to a ``torch.utils.data.DataLoader``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import BatchSampler

from . import _distributed
from ._utils import make_rng
from ._validation import (
    POSITIVE_INT,
    RANDOM_STATE,
    check_labels,
    check_param,
    encode_labels,
    renamed_keywords,
)

__all__ = [
    "LabelIndex",
    "CrossCameraLabelIndex",
    "ClassBalancedBatchSampler",
    "PairIndex",
    "check_cameras",
    "camera_group_codes",
]

#: ``positives=`` of the label-trained estimators: every same-label pair, or only the pairs of
#: the same label seen by two different cameras (camera-aware training).
POSITIVES = ("all", "cross_camera")


def check_cameras(cameras, n_samples: int) -> np.ndarray:
    """Validate per-sample camera ids and encode them as integers ``0..C-1``.

    Parameters
    ----------
    cameras : array-like of shape (n_samples,)
        Camera id of each sample (integers or strings).
    n_samples : int
        Number of rows of ``X``.

    Returns
    -------
    ndarray of shape (n_samples,), dtype int64

    See Also
    --------
    rankmetric.sampling.camera_group_codes : One code per (label, camera) group.
    rankmetric.sampling.CrossCameraLabelIndex : Cross-camera positive pairs.

    Examples
    --------
    >>> check_cameras(["a", "b", "a"], 3).tolist()
    [0, 1, 0]
    """
    cameras = np.asarray(cameras)
    if cameras.ndim != 1 or cameras.shape[0] != n_samples:
        raise ValueError(
            f"cameras must hold one camera id per sample: {n_samples} samples but cameras of "
            f"shape {cameras.shape}."
        )
    if cameras.dtype.kind == "f" and not np.all(np.isfinite(cameras)):
        raise ValueError("cameras contains NaN or infinity; give every sample a camera id.")
    if cameras.dtype.kind == "O" and any(c is None for c in cameras.tolist()):
        raise ValueError("cameras contains None; give every sample a camera id.")
    return encode_labels(cameras.ravel())[1][0]


def camera_group_codes(codes: np.ndarray, cameras: np.ndarray) -> np.ndarray:
    """Integer code of each sample's (label, camera) group, ``0..G-1``.

    Two samples of the same label are a cross-camera pair exactly when their group codes differ.

    Parameters
    ----------
    codes, cameras : int ndarrays of shape (n_samples,)
        Class codes and camera codes (as :func:`check_cameras` returns).

    Returns
    -------
    ndarray of shape (n_samples,), dtype int64

    See Also
    --------
    rankmetric.sampling.check_cameras : Validate the camera codes first.

    Examples
    --------
    >>> camera_group_codes([0, 0, 1, 1], [0, 1, 1, 1]).tolist()
    [0, 1, 2, 2]
    """
    pairs = np.stack([np.asarray(codes, np.int64), np.asarray(cameras, np.int64)], axis=1)
    return np.unique(pairs, axis=0, return_inverse=True)[1].astype(np.int64).ravel()


@dataclass(frozen=True)
class LabelIndex:
    """Samples grouped by class, for O(1) vectorised draws.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Integer class codes ``0..Q-1`` (as returned by ``check_labels``).

    See Also
    --------
    rankmetric.sampling.CrossCameraLabelIndex : Positive pairs across two cameras only.
    rankmetric.sampling.PairIndex : The same interface over explicit pair supervision.
    rankmetric.sampling.ClassBalancedBatchSampler : Class-balanced batches for a ``DataLoader``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.sampling import LabelIndex
    >>> index = LabelIndex.from_codes(np.array([0, 0, 1, 1, 1]))
    >>> index.counts.tolist(), index.n_samples
    ([2, 3], 5)
    >>> i, j = index.positive_pairs(4, np.random.default_rng(0))
    >>> bool((index.codes[i] == index.codes[j]).all() and (i != j).all())
    True
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
class CrossCameraLabelIndex(LabelIndex):
    """A :class:`LabelIndex` whose positive pairs join two cameras: same label, other camera.

    Negatives are as in :class:`LabelIndex` (any sample of another label, any camera). Samples
    are ordered by (label, camera), so the same-camera partners of a sample are one contiguous
    run inside its label's block and a cross-camera partner is drawn, like a negative, by
    skipping that run. A label seen by one camera only contributes no positive pair (its
    samples still serve as negatives of the others).

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Integer class codes ``0..Q-1``.

    See Also
    --------
    rankmetric.sampling.LabelIndex : Positive pairs from any two samples of a label.
    rankmetric.sampling.check_cameras : Validate the camera codes it takes.

    Examples
    --------
    >>> import numpy as np
    >>> index = CrossCameraLabelIndex.from_cameras([0, 0, 0, 1, 1], [0, 0, 1, 0, 0])
    >>> i, j = index.positive_pairs(100, np.random.default_rng(0))
    >>> bool(np.all(np.isin(i, [0, 1, 2]) & (i != j) & ((i == 2) | (j == 2))))
    True
    """

    group_starts: np.ndarray  # per position of ``order``: first position of its (label, camera)
    group_counts: np.ndarray  # per position of ``order``: samples of its (label, camera)
    partners: np.ndarray  # per position of ``order``: same label, other camera

    @classmethod
    def from_cameras(cls, codes, cameras) -> CrossCameraLabelIndex:
        """Build from class codes and integer camera codes (as :func:`check_cameras` returns).

        Raises a ``ValueError`` when no label is seen by two cameras (no positive pair).
        """
        codes = np.asarray(codes, dtype=np.int64)
        groups = camera_group_codes(codes, cameras)
        order = np.lexsort((groups, codes))  # by label, then camera; groups of a label adjacent
        counts = np.bincount(codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        sorted_groups = groups[order]
        group_sizes = np.bincount(groups)
        first_pos = np.full(group_sizes.shape[0], order.shape[0])
        np.minimum.at(first_pos, sorted_groups, np.arange(order.shape[0]))
        group_starts = first_pos[sorted_groups]
        group_counts = group_sizes[sorted_groups]
        partners = counts[codes[order]] - group_counts
        if not np.any(partners > 0):
            raise ValueError(
                "no identity is seen by two cameras, so cross-camera positives "
                "(positives='cross_camera') have no pair to draw; use positives='all'."
            )
        return cls(
            codes=codes,
            order=order,
            starts=starts,
            counts=counts,
            group_starts=group_starts,
            group_counts=group_counts,
            partners=partners,
        )

    @property
    def n_positive_pairs(self) -> int:
        """Number of ordered cross-camera positive pairs."""
        return int(self.partners.sum())

    def positive_pairs(
        self, n_pairs: int, rng: np.random.Generator, class_uniform: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ordered pairs ``(i, j)`` of the same class and different cameras.

        Uniform over all such pairs by default; with ``class_uniform`` the class is uniform
        among those seen by two cameras, then a pair inside it uniform.
        """
        weights = self.partners.astype(np.float64)
        if class_uniform:
            cls_of = self.codes[self.order]
            per_class = np.bincount(cls_of, weights=weights, minlength=len(self.counts))
            weights = np.divide(
                weights, per_class[cls_of], out=np.zeros_like(weights), where=per_class[cls_of] > 0
            )
        pos = rng.choice(self.order.shape[0], size=n_pairs, p=weights / weights.sum())
        cls_start = self.starts[self.codes[self.order[pos]]]
        skip_from = self.group_starts[pos] - cls_start
        b = rng.integers(0, self.partners[pos])
        b = b + np.where(b >= skip_from, self.group_counts[pos], 0)
        return self.order[pos], self.order[cls_start + b]


def _integer_seed(random_state) -> int:
    """One int seed from a ``random_state``: an int itself, else one draw (``None``: OS entropy)."""
    if random_state is not None and not isinstance(
        random_state, (np.random.Generator, np.random.RandomState)
    ):
        return int(random_state)
    return int(make_rng(random_state).integers(0, 2**63))


class ClassBalancedBatchSampler(BatchSampler):
    """Batches of ``n_classes`` distinct classes × ``n_per_class`` samples, for a ``DataLoader``.

    Each epoch every class's samples are shuffled and cut into chunks of ``n_per_class`` (the
    last chunk of a class, and a class smaller than ``n_per_class``, is completed with other
    samples of the same class); a batch takes one chunk from each of ``n_classes`` classes,
    the classes with the most chunks left first (ties broken at random), so that every sample
    is seen once per epoch wherever the class sizes allow it (a class holding more than
    ``1 / n_classes`` of the chunks cannot be exhausted with one chunk per batch). The epoch has
    ``ceil(total_chunks / n_classes)`` batches (in all, over the distributed ranks, rounded up to
    a multiple of their number); the last ones are completed with repeated chunks.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
        Class labels of the data set (integers or strings).
    n_classes : int
        ``P``, classes per batch; at most the number of distinct labels.
    n_per_class : int
        ``K``, samples per class in a batch.
    random_state : int, Generator, RandomState or None, default=0
        Seeds the shuffles, as the estimators' ``random_state`` does. It is turned into one
        integer seed here (an int is that seed; a ``Generator`` or ``RandomState`` gives one
        draw; ``None`` fresh OS entropy), and epoch ``e`` draws from ``(seed, e)``: every rank of
        a distributed run draws the same global sequence of batches when each is given the same
        int or an identically seeded generator (``None`` is refused with more than one replica).
        Each new pass over the sampler starts the next epoch (new shuffles in a plain loop, no
        call needed); :meth:`set_epoch` chooses the epoch of the next pass explicitly.
        (``seed=``, the former name, still works with a ``FutureWarning`` until 0.3.)
    num_replicas : int, optional
        Number of distributed processes; default ``torch.distributed``'s world size when it is
        initialised, else 1.
    rank : int, optional
        This process's rank in ``0..num_replicas − 1``; default ``torch.distributed``'s rank when
        initialised, else 0. Rank ``r`` gets global batches ``r, r + R, r + 2R, …`` (disjoint
        across ranks); the epoch's batch count is rounded up to a multiple of ``R`` (with
        repeated chunks, as ``DistributedSampler`` pads) so that every rank has as many.

    See Also
    --------
    rankmetric.sampling.LabelIndex : The same class-balanced draws inside the estimators.
    rankmetric.losses.TripletMiner : Mine triplets from such batches.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(6), 4)
    >>> sampler = ClassBalancedBatchSampler(labels, n_classes=3, n_per_class=2, random_state=0)
    >>> len(sampler)
    4
    >>> batch = next(iter(sampler))
    >>> len(batch), len(set(labels[batch]))
    (6, 3)
    """

    @renamed_keywords(seed="random_state")
    def __init__(
        self,
        labels,
        n_classes: int,
        n_per_class: int,
        *,
        random_state=0,
        num_replicas: int | None = None,
        rank: int | None = None,
    ) -> None:
        check_param("random_state", random_state, [RANDOM_STATE])
        if isinstance(labels, torch.Tensor):
            labels = labels.detach().cpu().numpy()
        _, codes = check_labels(labels, min_classes=1)
        for name, value in (("n_classes", n_classes), ("n_per_class", n_per_class)):
            check_param(name, value, [POSITIVE_INT])
        self.index = LabelIndex.from_codes(codes)
        present = int((self.index.counts > 0).sum())
        if n_classes > present:
            raise ValueError(
                f"n_classes={n_classes} but the labels hold only {present} distinct classes."
            )
        num_replicas = _distributed.world_size() if num_replicas is None else num_replicas
        rank = _distributed.rank() if rank is None else rank
        if not 1 <= num_replicas or not 0 <= rank < num_replicas:
            raise ValueError(f"rank must lie in 0..num_replicas-1, got {rank} of {num_replicas}.")
        if random_state is None and num_replicas > 1:
            raise ValueError(
                f"random_state=None would draw other batches on each of the {num_replicas} "
                "replicas; give every rank the same int random_state."
            )
        self.n_classes = int(n_classes)
        self.n_per_class = int(n_per_class)
        self.batch_size = self.n_classes * self.n_per_class
        self.drop_last = True
        self.random_state = random_state
        self._seed = _integer_seed(random_state)
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.epoch = 0
        self._advance = False  # the next pass starts the next epoch (unless set_epoch is called)

    @property
    def seed(self) -> int:
        """The integer seed of the shuffles (``random_state`` turned into one int)."""
        return self._seed

    def set_epoch(self, epoch: int) -> None:
        """Use the shuffles of epoch ``epoch`` for the next pass (as
        ``DistributedSampler.set_epoch``); without it each pass starts the next epoch."""
        self.epoch = int(epoch)
        self._advance = False

    @property
    def _n_chunks(self) -> np.ndarray:
        return -(-self.index.counts // self.n_per_class)  # ceil, 0 for an absent class

    def _n_global_batches(self) -> int:
        """``ceil(total_chunks / P)``, rounded up to a multiple of the number of replicas."""
        per_rank = -(-int(self._n_chunks.sum()) // (self.n_classes * self.num_replicas))
        return per_rank * self.num_replicas

    def __len__(self) -> int:
        return self._n_global_batches() // self.num_replicas

    def __iter__(self) -> Iterator[list[int]]:
        if self._advance:
            self.epoch += 1
        self._advance = True
        batches = self.global_batches()[self.rank :: self.num_replicas]
        for batch in batches:
            yield batch.tolist()

    def global_batches(self) -> np.ndarray:
        """Every batch of the current epoch, all ranks' together: shape (n_batches, P·K)."""
        rng = np.random.default_rng([self._seed, self.epoch])
        idx, k, p = self.index, self.n_per_class, self.n_classes
        # shuffled positions within each class: samples grouped by class, random order inside
        shuffled = np.lexsort((rng.random(idx.n_samples), idx.codes))
        n_chunks = self._n_chunks
        remaining = n_chunks.copy()
        used = np.zeros_like(n_chunks)
        present = n_chunks > 0
        n_batches = self._n_global_batches()
        classes = np.empty((n_batches, p), dtype=np.int64)
        chunk = np.empty((n_batches, p), dtype=np.int64)
        for b in range(n_batches):  # one step per batch, vectorised over classes
            key = np.where(present, remaining + rng.random(len(n_chunks)), -np.inf)
            chosen = np.argpartition(-key, p - 1)[:p]
            classes[b], chunk[b] = chosen, used[chosen]
            used[chosen] += 1
            remaining[chosen] = np.maximum(remaining[chosen] - 1, 0)
        # chunk t of class c: its shuffled samples t·K .. t·K + K − 1, cyclically
        counts = idx.counts[classes][..., None]
        offsets = (chunk[..., None] * k + np.arange(k)) % counts
        return shuffled[idx.starts[classes][..., None] + offsets].reshape(n_batches, p * k)


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

    See Also
    --------
    rankmetric.sampling.LabelIndex : The same interface over class labels.
    rankmetric.WARCA : Its ``fit_pairs`` samples with this index.

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
