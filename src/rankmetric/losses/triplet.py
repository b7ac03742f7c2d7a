r"""Triplet margin loss with four in-batch mining strategies, in O(B²) memory.

For an anchor :math:`a`, a positive :math:`p` (same label, :math:`p \ne a`) and a negative
:math:`n` (another label), with :math:`D` the injected distance and :math:`m` the margin,

.. math:: \ell(a, p, n) = [D_{ap} - D_{an} + m]_+ .

Mining picks the triplets of a batch (``P(a)`` / ``N(a)``: positives / negatives of ``a``):

* ``"all"``: every valid triplet (Weinberger & Saul 2009; "batch all", Hermans et al. 2017);
* ``"hard"``: per anchor the farthest positive and the closest negative ("batch hard",
  Hermans, Beyer & Leibe 2017, *In Defense of the Triplet Loss*);
* ``"semihard"`` (alias ``"facenet-semihard"``, the name of the same rule in
  :class:`~rankmetric.losses.TripletMiner`, whose ``"semihard"`` is pytorch-metric-learning's
  band of all semi-hard negatives): FaceNet (Schroff, Kalenichenko & Philbin 2015): every
  anchor-positive pair with
  its semi-hard negative, the closest negative farther than the positive,
  :math:`n^* = \arg\min \{D_{an} : n \in N(a),\ D_{an} > D_{ap}\}`. When no negative is farther
  than the positive, the farthest negative is used (TensorFlow's ``triplet_semihard_loss``
  convention: the mildest violator, not the hardest one);
* ``"random"``: per anchor one positive and one negative drawn uniformly (Triplet-Random;
  :func:`random_partners` draws them in O(B log B) without a (B, B) random matrix, and only
  those 2B distances are computed, which matters for the AIRM distance).

The loss is the mean of :math:`\ell` over the mined triplets (``average_nonzero=True``: over those
with :math:`\ell > 0`, as pytorch-metric-learning's ``AvgNonZeroReducer``).

Cost: one (B, B) distance matrix (``"random"``: only the 2B distances it draws). ``"all"``
never forms the (B, B, B) hinge tensor: per anchor the negative distances are sorted once, and
for each positive :math:`t = D_{ap} + m`

.. math::

    \sum_{n \in N(a)} [t - D_{an}]_+ = c \, t - \sum_{n :\ D_{an} < t} D_{an} , \qquad
    c = \#\{n \in N(a) : D_{an} < t\},

read off prefix sums with a binary search: O(B² log B) time, O(B²) memory, exact gradients.
``"semihard"`` uses the same search; ``"hard"`` is a masked reduction.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from .._validation import check_option, renamed_keywords
from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from .base import BatchMetricLoss, as_count, non_negative
from .indices import reference_call, to_triplets
from .miners import (
    TripletMiner,
    batch_hard_choice,
    facenet_semihard_choice,
    hinge_sums,
    random_partners,
)
from .pair_distances import (
    SPD_METRICS,
    VECTOR_METRICS,
    Metric,
    MetricSelector,
    label_masks,
    paired_distance,
    pairwise_distance,
    zero_loss,
)
from .precision import is_compiling

__all__ = ["TripletLoss", "MINING", "random_partners"]  # random_partners: from .miners

MINING = ("all", "hard", "semihard", "facenet-semihard", "random")
Mining = Literal["all", "hard", "semihard", "facenet-semihard", "random"]
Mined = tuple[Tensor, int, int]  # (hinge sum per anchor (B,), number of triplets, of them > 0)


@fill_doc
class TripletLoss(MetricSelector, BatchMetricLoss):
    """Triplet margin loss :math:`[D_{ap} - D_{an} + m]_+` over in-batch mined triplets.

    Parameters
    ----------
    margin : float, default=0.2
        ``m ≥ 0`` (FaceNet's α = 0.2, for unit-norm embeddings).
    mining : {"all", "hard", "semihard", "facenet-semihard", "random"}, default="all"
        Which triplets of the batch enter the loss (see the module docstring);
        ``"semihard"`` is FaceNet's one semi-hard negative per positive pair (as TensorFlow's
        ``triplet_semihard_loss``), also spelled ``"facenet-semihard"``. For
        pytorch-metric-learning's semi-hard triplets (every negative in the margin band) pass
        ``TripletMiner("semihard", margin=m)``'s tuple.
    metric : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable, \
default="euclidean"
        Injected distance (:func:`~rankmetric.losses.pair_distances.pairwise_distance`); a
        callable ``f(x, y)`` returns the (n_x, n_y) distance matrix. (``distance=`` before 0.2,
        still accepted with a ``FutureWarning``.)
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

    See Also
    --------
    rankmetric.losses.TripletMiner : The same triplet rules as a miner, for other losses.
    rankmetric.losses.WARPLoss : Triplet hinges weighted by the rank of the positive.
    rankmetric.losses.LiftedStructureLoss : Every negative of a pair at once, smoothly.

    Notes
    -----
    %(call_convention)s

    * ``indices_tuple``: mined triplets ``(a, p, n)`` or pairs ``(a1, p, a2, n)`` (every positive
      and negative pair with a common anchor then forms a triplet), e.g. from a
      :mod:`~rankmetric.losses.miners` miner or a pytorch-metric-learning one; they replace
      ``mining``. Anchors index ``embeddings``, partners the reference set.
    * ``ref_emb``: reference set the positives and negatives are taken from (default: the batch).
      ``ref_labels`` are its labels.
    * the result: scalar tensor, or tensor of shape (B,) with ``reduction="none"``; 0 (still
      attached to the graph) when the batch has no valid triplet.

    References
    ----------
    Schroff, Kalenichenko & Philbin, *FaceNet*, CVPR 2015. Hermans, Beyer & Leibe, *In Defense of
    the Triplet Loss for Person Re-Identification*, arXiv:1703.07737, 2017.

    %(example_batch)s
    >>> loss = losses.TripletLoss(margin=0.2, mining="hard")(x, y)
    >>> round(loss.item(), 2)
    1.74
    >>> loss.backward()
    """

    _repr_fields = ("margin", "mining", "metric", "average_nonzero")

    accepts_matrices = True

    @renamed_keywords(distance="metric")
    def __init__(
        self,
        margin: float = 0.2,
        mining: Mining = "all",
        metric: Metric = "euclidean",
        *,
        average_nonzero: bool = False,
        generator: torch.Generator | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        check_option("mining", mining, MINING)
        self.margin = non_negative("margin", margin)
        self.mining = mining
        self.metric = canonical_metric(metric, VECTOR_METRICS + SPD_METRICS)
        self.average_nonzero = bool(average_nonzero)
        self.generator = generator

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if indices_tuple is None and ref_emb is None:
            mine = self._random if self.mining == "random" else self._from_masks
            mined = mine(embeddings, labels)
        else:
            mined = self._from_reference(embeddings, labels, indices_tuple, ref_emb, ref_labels)
        if mined is None:
            per_anchor = zero_loss(embeddings) + embeddings.new_zeros(labels.shape[0])
            return self.reduce(per_anchor, 0)
        per_anchor, n_terms, n_nonzero = mined
        return self.reduce(per_anchor, n_nonzero if self.average_nonzero else n_terms)

    def _from_reference(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        """Given triplets, or the batch's own mining against a reference set."""
        ref_emb, ref_labels, indices = reference_call(
            embeddings, labels, indices_tuple, ref_emb, ref_labels, allow_matrices=True
        )
        if indices is None and self.mining != "random":
            return self._from_masks(embeddings, labels, ref_emb, ref_labels)
        if indices is None:
            miner = TripletMiner("random", self.metric, generator=self.generator)
            refs = () if ref_emb is None else (ref_emb, ref_labels)
            indices = miner(embeddings, labels, *refs)
        a, p, n = to_triplets(indices)
        if a.numel() == 0:
            return None
        dist = pairwise_distance(embeddings, self.metric, ref_emb)
        violation = dist[a, p] - dist[a, n] + self.margin
        hinge = torch.relu(violation)
        per_anchor = embeddings.new_zeros(labels.shape[0]).index_add(0, a, hinge)
        return per_anchor, a.shape[0], int((violation > 0).sum())

    def _from_masks(
        self,
        embeddings: Tensor,
        labels: Tensor,
        ref_emb: Tensor | None = None,
        ref_labels: Tensor | None = None,
    ) -> Mined | None:
        """ "all", "hard" and "semihard" mining over the (B, B) positive/negative masks."""
        positive, negative = label_masks(labels, ref_labels)
        if not is_compiling() and not bool((positive.any(dim=1) & negative.any(dim=1)).any()):
            return None
        dist = pairwise_distance(embeddings, self.metric, ref_emb)
        miner = {
            "all": _all_triplets,
            "hard": _batch_hard,
            "semihard": _semihard,
            "facenet-semihard": _semihard,
        }[self.mining]
        return miner(dist, positive, negative, self.margin)

    def _random(self, embeddings: Tensor, labels: Tensor) -> Mined | None:
        """One uniformly drawn positive and negative per anchor: 2B distances, no (B, B) matrix."""
        pos_idx, neg_idx, valid = random_partners(labels, self.generator)
        if not is_compiling() and not bool(valid.any()):
            return None
        d_ap = paired_distance(embeddings, embeddings[pos_idx], self.metric)
        d_an = paired_distance(embeddings, embeddings[neg_idx], self.metric)
        return _hinge_sum(d_ap - d_an + self.margin, valid)


def _hinge_sum(violation: Tensor, valid: Tensor) -> Mined:
    """``(Σ_valid [v]₊ per anchor (B,), #valid, #{valid : v > 0})``; rows of ``v`` are anchors."""
    hinge = torch.where(valid, torch.relu(violation), 0.0)
    per_anchor = hinge.sum(dim=1) if hinge.ndim == 2 else hinge
    return per_anchor, as_count(valid.sum()), as_count((valid & (violation > 0)).sum())


def _all_triplets(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Every valid triplet, by prefix sums over sorted negative distances (see module docstring)."""
    below, per_pair, n_neg = hinge_sums(dist, negative, margin)
    per_anchor = torch.where(positive, per_pair, 0.0).sum(dim=1)
    n_terms = as_count((positive.sum(dim=1) * n_neg).sum())
    n_nonzero = as_count(torch.where(positive, below, 0).sum())
    return per_anchor, n_terms, n_nonzero


def _semihard(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Every anchor-positive pair with its semi-hard negative (FaceNet; TF's fallback)."""
    sorted_neg, _, chosen, valid = facenet_semihard_choice(dist, positive, negative)
    d_an = torch.where(valid, sorted_neg.gather(1, chosen), 0.0)
    return _hinge_sum(dist - d_an + margin, valid)


def _batch_hard(dist: Tensor, positive: Tensor, negative: Tensor, margin: float) -> Mined:
    """Per anchor: the farthest positive against the closest negative (Hermans et al. 2017)."""
    valid, _, _, d_ap, d_an = batch_hard_choice(dist, positive, negative)
    return _hinge_sum(torch.where(valid, d_ap - d_an + margin, 0.0), valid)
