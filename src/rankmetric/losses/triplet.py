"""Triplet margin loss with four in-batch mining strategies, in O(B²) memory.

For an anchor ``a``, a positive ``p`` (same label, ``p ≠ a``) and a negative ``n`` (another label),
with ``D`` the injected distance and ``m`` the margin,

    ℓ(a, p, n) = [D_ap − D_an + m]₊ .

Mining picks the triplets of a batch (``P(a)`` / ``N(a)``: positives / negatives of ``a``):

* ``"all"``: every valid triplet (Weinberger & Saul 2009; "batch all", Hermans et al. 2017);
* ``"hard"``: per anchor the farthest positive and the closest negative ("batch hard",
  Hermans, Beyer & Leibe 2017, *In Defense of the Triplet Loss*);
* ``"semihard"``: FaceNet (Schroff, Kalenichenko & Philbin 2015): every anchor-positive pair with
  its semi-hard negative, the closest negative farther than the positive,
  ``n* = argmin {D_an : n ∈ N(a), D_an > D_ap}``. When no negative is farther than the positive,
  the farthest negative is used (TensorFlow's ``triplet_semihard_loss`` convention: the mildest
  violator, not the hardest one);
* ``"random"``: per anchor one positive and one negative drawn uniformly (Triplet-Random;
  :func:`random_partners` draws them in O(B log B) without a (B, B) random matrix, and only
  those 2B distances are computed, which matters for the AIRM distance).

The loss is the mean of ``ℓ`` over the mined triplets (``average_nonzero=True``: over those with
``ℓ > 0``, as pytorch-metric-learning's ``AvgNonZeroReducer``).

Cost: one (B, B) distance matrix (``"random"``: only the 2B distances it draws). ``"all"``
never forms the (B, B, B) hinge tensor: per anchor the negative distances are sorted once, and
for each positive ``t = D_ap + m``

    Σ_{n ∈ N(a)} [t − D_an]₊ = c · t − Σ_{n : D_an < t} D_an ,    c = #{n ∈ N(a) : D_an < t},

read off prefix sums with a binary search: O(B² log B) time, O(B²) memory, exact gradients.
``"semihard"`` uses the same search; ``"hard"`` is a masked reduction.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from .base import MetricLoss
from .pair_distances import (
    SPD_METRICS,
    VECTOR_METRICS,
    Metric,
    check_batch,
    check_metric,
    label_masks,
    paired_distance,
    pairwise_distance,
    zero_loss,
)

__all__ = ["TripletLoss", "MINING", "random_partners"]

MINING = ("all", "hard", "semihard", "random")
Mining = Literal["all", "hard", "semihard", "random"]
Mined = tuple[Tensor, int, int]  # (hinge sum per anchor (B,), number of triplets, of them > 0)


class TripletLoss(MetricLoss):
    """Triplet margin loss ``[D_ap − D_an + m]₊`` over in-batch mined triplets.

    Parameters
    ----------
    margin : float, default=0.2
        ``m ≥ 0`` (FaceNet's α = 0.2, for unit-norm embeddings).
    mining : {"all", "hard", "semihard", "random"}, default="all"
        Which triplets of the batch enter the loss (see the module docstring).
    distance : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable, \
default="euclidean"
        Injected distance (:func:`~rankmetric.losses.pair_distances.pairwise_distance`); a
        callable ``f(x, y)`` returns the (n_x, n_y) distance matrix.
    average_nonzero : bool, default=False
        Average over the triplets with a positive hinge only, instead of all mined triplets.
    generator : torch.Generator, optional
        Random source of ``mining="random"`` (seed it for reproducible draws).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns, for every anchor of the batch, the sum of the hinges of its mined
        triplets, shape (B,), in batch order (0 for an anchor without one) — per-triplet terms
        would take O(B³) memory with ``mining="all"``. ``"sum"`` is their sum; ``"mean"``
        divides that sum by the number of mined triplets (or of those with a positive hinge,
        ``average_nonzero=True``), not by B.

    References
    ----------
    Schroff, Kalenichenko & Philbin, *FaceNet*, CVPR 2015. Hermans, Beyer & Leibe, *In Defense of
    the Triplet Loss for Person Re-Identification*, arXiv:1703.07737, 2017.
    """

    def __init__(
        self,
        margin: float = 0.2,
        mining: Mining = "all",
        distance: Metric = "euclidean",
        *,
        average_nonzero: bool = False,
        generator: torch.Generator | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        if not margin >= 0:
            raise ValueError(f"margin must be >= 0, got {margin}.")
        if mining not in MINING:
            raise ValueError(f"mining must be one of {MINING}, got {mining!r}.")
        self.margin = float(margin)
        self.mining = mining
        self.distance = check_metric(distance, VECTOR_METRICS + SPD_METRICS)
        self.average_nonzero = bool(average_nonzero)
        self.generator = generator

    def extra_repr(self) -> str:
        return (
            f"margin={self.margin}, mining={self.mining!r}, distance={self.distance!r}, "
            f"average_nonzero={self.average_nonzero}, {super().extra_repr()}"
        )

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The loss of a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, d), or (B, c, c) for an SPD metric
        labels : integer tensor of shape (B,)

        Returns
        -------
        scalar tensor, or tensor of shape (B,) with ``reduction="none"``
            0 (still attached to the graph) when the batch has no valid triplet.
        """
        labels = check_batch(embeddings, labels, allow_matrices=True)
        mine = self._random if self.mining == "random" else self._from_masks
        mined = mine(embeddings, labels)
        if mined is None:
            per_anchor = zero_loss(embeddings) + embeddings.new_zeros(labels.shape[0])
            return self.reduce(per_anchor, 0)
        per_anchor, n_terms, n_nonzero = mined
        return self.reduce(per_anchor, n_nonzero if self.average_nonzero else n_terms)

    def _from_masks(self, embeddings: Tensor, labels: Tensor) -> Mined | None:
        """ "all", "hard" and "semihard" mining over the (B, B) positive/negative masks."""
        positive, negative = label_masks(labels)
        if not bool((positive.any(dim=1) & negative.any(dim=1)).any()):
            return None
        dist = pairwise_distance(embeddings, self.distance)
        miner = {"all": _all_triplets, "hard": _batch_hard, "semihard": _semihard}[self.mining]
        return miner(dist, positive, negative, self.margin)

    def _random(self, embeddings: Tensor, labels: Tensor) -> Mined | None:
        """One uniformly drawn positive and negative per anchor: 2B distances, no (B, B) matrix."""
        pos_idx, neg_idx, valid = random_partners(labels, self.generator)
        if not bool(valid.any()):
            return None
        d_ap = paired_distance(embeddings, embeddings[pos_idx], self.distance)
        d_an = paired_distance(embeddings, embeddings[neg_idx], self.distance)
        return _hinge_sum(d_ap - d_an + self.margin, valid)


def _hinge_sum(violation: Tensor, valid: Tensor) -> Mined:
    """``(Σ_valid [v]₊ per anchor (B,), #valid, #{valid : v > 0})``; rows of ``v`` are anchors."""
    hinge = torch.where(valid, torch.relu(violation), 0.0)
    per_anchor = hinge.sum(dim=1) if hinge.ndim == 2 else hinge
    return per_anchor, int(valid.sum()), int((valid & (violation > 0)).sum())


def _sorted_negatives(dist: Tensor, negative: Tensor) -> tuple[Tensor, Tensor]:
    """Each row's negative distances in increasing order, non-negatives (+inf) last.

    Returns ``(sorted_dist (B, B), n_negatives (B,))``.
    """
    masked = dist.masked_fill(~negative, torch.inf)
    return masked.sort(dim=1).values, negative.sum(dim=1)


def _all_triplets(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Every valid triplet, by prefix sums over sorted negative distances (see module docstring)."""
    sorted_neg, n_neg = _sorted_negatives(dist, negative)
    threshold = dist + margin  # t_ap, shape (B, B)
    below = torch.searchsorted(sorted_neg.contiguous(), threshold.detach().contiguous())
    finite = sorted_neg.masked_fill(torch.isinf(sorted_neg), 0.0).to(torch.float64)
    prefix = torch.cat([finite.new_zeros(dist.shape[0], 1), finite.cumsum(dim=1)], dim=1)
    # c·t − Σ D_an in float64: the difference of two sums of up to B terms each
    per_pair = (below * threshold.to(torch.float64) - prefix.gather(1, below)).to(dist.dtype)
    per_anchor = torch.where(positive, per_pair, 0.0).sum(dim=1)
    n_terms = int((positive.sum(dim=1) * n_neg).sum())
    n_nonzero = int(torch.where(positive, below, 0).sum())
    return per_anchor, n_terms, n_nonzero


def _semihard(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Every anchor-positive pair with its semi-hard negative (FaceNet; TF's fallback)."""
    sorted_neg, n_neg = _sorted_negatives(dist, negative)
    farther = torch.searchsorted(sorted_neg.contiguous(), dist.detach().contiguous(), right=True)
    last = (n_neg - 1).clamp_min(0)[:, None].expand_as(farther)
    chosen = torch.where(farther < n_neg[:, None], farther, last)
    d_an = sorted_neg.gather(1, chosen)
    valid = positive & (n_neg > 0)[:, None]
    d_an = torch.where(valid, d_an, 0.0)
    return _hinge_sum(dist - d_an + margin, valid)


def _batch_hard(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Per anchor: the farthest positive against the closest negative (Hermans et al. 2017)."""
    hardest_pos = dist.masked_fill(~positive, -torch.inf).amax(dim=1)
    hardest_neg = dist.masked_fill(~negative, torch.inf).amin(dim=1)
    valid = positive.any(dim=1) & negative.any(dim=1)
    violation = torch.where(valid, hardest_pos - hardest_neg + margin, 0.0)
    return _hinge_sum(violation, valid)


def random_partners(
    labels: Tensor, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """For every sample, one uniformly drawn positive (same label, not itself) and negative.

    O(B log B) time and O(B) memory: the batch is sorted by label once, so that a class occupies
    a contiguous block ``[start, start + count)``; a positive is a uniform offset into the block
    that skips the sample itself, a negative a uniform position outside the block.

    Parameters
    ----------
    labels : tensor of shape (B,)
    generator : torch.Generator, optional
        Random source (on any device; the draws are moved to the labels' device).

    Returns
    -------
    positives, negatives : int64 tensors of shape (B,)
        Batch indices; arbitrary where ``valid`` is False.
    valid : bool tensor of shape (B,)
        Samples that have a positive and a negative.
    """
    n = labels.shape[0]
    order = torch.sort(labels, stable=True).indices
    _, block, counts = torch.unique_consecutive(
        labels[order], return_inverse=True, return_counts=True
    )
    rank = torch.empty_like(order)
    rank[order] = torch.arange(n, device=labels.device)
    start, count = (counts.cumsum(0) - counts)[block[rank]], counts[block[rank]]
    device = generator.device if generator is not None else labels.device
    draws = torch.rand(2, n, generator=generator, device=device, dtype=torch.float64)
    draws = draws.to(labels.device)
    n_pos, n_neg = (count - 1).clamp_min(1), (n - count).clamp_min(1)
    pos_offset = torch.minimum((draws[0] * n_pos).long(), n_pos - 1)
    pos_offset = pos_offset + (pos_offset >= rank - start).long()  # skip the sample itself
    neg_slot = torch.minimum((draws[1] * n_neg).long(), n_neg - 1)
    neg_slot = neg_slot + count * (neg_slot >= start).long()  # jump over the own block
    positives = order[(start + pos_offset).clamp_max(n - 1)]
    negatives = order[neg_slot.clamp_max(n - 1)]
    return positives, negatives, (count >= 2) & (count < n)
