r"""Lifted structured loss (Song et al. 2016), exact, in O(B²) memory; and its generalised form.

Original form (Song, Xiang, Jegelka & Savarese, CVPR 2016, eq. 4), with :math:`P` the positive
pairs and :math:`N(i)` the negatives of :math:`i` in the batch, :math:`D` the injected distance and
:math:`\alpha` the margin:

.. math::

    J_{ij} &= \log\Big(\sum_{k \in N(i)} e^{\alpha - D_{ik}}
              + \sum_{l \in N(j)} e^{\alpha - D_{jl}}\Big) + D_{ij}, \\
    J &= \frac{1}{2|P|} \sum_{(i,j) \in P} [J_{ij}]_+^2 .

:math:`J_{ij}` is symmetric, so the value is the same whether :math:`P` holds ordered or unordered
pairs (we sum over ordered pairs :math:`i \ne j`). The two sums over negatives depend on one row
each, so with :math:`r_i = \log \sum_{k \in N(i)} e^{\alpha - D_{ik}}` (one masked log-sum-exp per
row, computed once)

.. math:: J_{ij} = \operatorname{logaddexp}(r_i, r_j) + D_{ij},

an O(B²)-time, O(B²)-memory computation with no (#pos × #neg) or (B, B, B) tensor.

Generalised form (Hermans, Beyer & Leibe 2017, *In Defense of the Triplet Loss*, sec. 2), averaged
over the anchors that have both a positive and a negative:

.. math::

    L_a = \Big[\log \sum_{p \in P(a)} e^{D_{ap}}
          + \log \sum_{n \in N(a)} e^{\alpha - D_{an}}\Big]_+ .
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from .._validation import check_option, renamed_keywords
from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from .base import BatchMetricLoss
from .indices import all_pairs, pair_counts, reference_call, to_pairs
from .pair_distances import (
    SPD_METRICS,
    VECTOR_METRICS,
    Metric,
    MetricSelector,
    label_masks,
    masked_logsumexp,
    pairwise_distance,
    zero_loss,
)
from .precision import is_compiling

__all__ = ["LiftedStructureLoss", "FORMS"]

FORMS = ("original", "generalized")


# alike: numpydoc See Also / Notes skeleton alike in NPairLoss; the text differs
# alike: the constructor of the metric-injected losses (margin, metric and its old name) is alike in
# TripletLoss; defaults and other parameters differ
@fill_doc
class LiftedStructureLoss(MetricSelector, BatchMetricLoss):
    """Lifted structured loss over every positive and negative pair of a batch.

    Parameters
    ----------
    margin : float, default=1.0
        :math:`\\alpha` (Song et al. use 1 with Euclidean distances).
    metric : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable, \
default="euclidean"
        Injected distance (:func:`~rankmetric.losses.pair_distances.pairwise_distance`).
        (``distance=`` before 0.2, still accepted with a ``FutureWarning``.)
    form : {"original", "generalized"}, default="original"
        ``"original"``: Song et al. 2016, exact, O(B²) memory. ``"generalized"``: Hermans et al.
        2017 (one log-sum-exp over positives and one over negatives per anchor).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns, for ``"original"``, the terms :math:`\\tfrac12 [J_{ij}]_+^2` of the
        ordered positive pairs :math:`(i, j)`, :math:`i \\ne j`, in row-major order (shape
        (n_positive_pairs,)); for ``"generalized"``, :math:`L_a` of each anchor that has a positive
        and a negative, in batch order. ``"mean"`` (the loss of the paper) is the mean of these
        terms.

    See Also
    --------
    rankmetric.losses.TripletLoss : One negative per triplet instead of all of them.
    rankmetric.losses.MultiSimilarityLoss : A weighted generalisation over mined pairs.

    Notes
    -----
    %(call_convention)s

    * ``indices_tuple``: mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` (read as ``(a, p,
      a, n)``). ``"original"``: one term per given positive pair, against the given negative pairs
      of its two members (a repeated pair counts as often as it is given, as in
      pytorch-metric-learning); ``"generalized"``: the pair sets.
    * ``ref_emb``: reference set of the pairs' second members (default: the batch). With a reference
      set, ``"original"`` uses the negatives of the anchor ``i`` only (a reference sample has no
      negatives of its own in the call): :math:`J_{ij} = r_i + D_{ij}`. ``ref_labels`` are its
      labels.
    * the result: scalar tensor, or the terms of ``reduction="none"``; 0 (still attached to the
      graph; no term) when the batch has no positive pair or no negative.

    References
    ----------
    Song, Xiang, Jegelka & Savarese, *Deep Metric Learning via Lifted Structured Feature
    Embedding*, CVPR 2016. Hermans, Beyer & Leibe, arXiv:1703.07737, 2017.

    %(example_batch)s
    >>> loss = losses.LiftedStructureLoss(margin=1.0)(x, y)
    >>> round(loss.item(), 2)
    9.35
    >>> loss.backward()
    """

    _repr_fields = ("margin", "metric", "form")

    accepts_matrices = True

    @renamed_keywords(distance="metric")
    def __init__(
        self,
        margin: float = 1.0,
        metric: Metric = "euclidean",
        *,
        form: Literal["original", "generalized"] = "original",
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        check_option("form", form, FORMS)
        self.margin = float(margin)
        self.metric = canonical_metric(metric, VECTOR_METRICS + SPD_METRICS)
        self.form = form

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if indices_tuple is not None or ref_emb is not None:
            return self._with_tuple(embeddings, labels, indices_tuple, ref_emb, ref_labels)
        positive, negative = label_masks(labels)
        valid_anchor = positive.any(dim=1) & negative.any(dim=1)
        if not is_compiling() and not bool(valid_anchor.any()):
            return self.reduce(zero_loss(embeddings).reshape(1)[:0])
        dist = pairwise_distance(embeddings, self.metric)
        if self.form == "original":
            return self.reduce_masked(self._original(dist, negative), positive)
        return self.reduce_masked(self._generalized(dist, positive, negative), valid_anchor)

    def _with_tuple(self, embeddings, labels, indices_tuple, ref_emb, ref_labels) -> Tensor:
        """Given pairs, or every pair of the batch against a reference set."""
        ref_emb, ref_labels, indices = reference_call(
            embeddings, labels, indices_tuple, ref_emb, ref_labels, allow_matrices=True
        )
        same = ref_emb is None
        a1, p, a2, neg = all_pairs(labels, ref_labels) if indices is None else to_pairs(indices)
        if a1.numel() == 0 or a2.numel() == 0:
            return self.reduce(zero_loss(embeddings).reshape(1)[:0])
        dist = pairwise_distance(embeddings, self.metric, ref_emb)
        n, m = dist.shape
        if self.form == "generalized":
            positive = pair_counts(a1, p, n, m, torch.int64) > 0
            negative = pair_counts(a2, neg, n, m, torch.int64) > 0
            valid_anchor = positive.any(dim=1) & negative.any(dim=1)
            return self.reduce(self._generalized(dist, positive, negative)[valid_anchor])
        counts = pair_counts(a2, neg, n, m, dist.dtype)
        log_counts = torch.where(counts > 0, counts.log(), 0.0)
        row_lse, has_neg = masked_logsumexp(self.margin - dist + log_counts, counts > 0)
        lse_a, neg_a = row_lse[a1], has_neg[a1]
        if same:  # the negatives of both members of the pair (Song et al.'s J_ij)
            lse_p, neg_p = row_lse[p], has_neg[p]
            one = torch.where(neg_a, lse_a, torch.where(neg_p, lse_p, 0.0))
            lse = torch.where(neg_a & neg_p, torch.logaddexp(lse_a, lse_p), one)
        else:
            lse = torch.where(neg_a, lse_a, 0.0)
        return self.reduce(0.5 * torch.relu(lse + dist[a1, p]) ** 2)

    def _original(self, dist: Tensor, negative: Tensor) -> Tensor:
        """``½ [logaddexp(r_i, r_j) + D_ij]₊²`` of every pair, shape (B, B).

        Read on the ordered positive pairs, their mean is ``1/(2|P|) Σ_P [J_ij]₊²``.
        """
        row_lse, _ = masked_logsumexp(self.margin - dist, negative)
        lifted = torch.logaddexp(row_lse[:, None], row_lse[None, :]) + dist
        return 0.5 * torch.relu(lifted) ** 2

    def _generalized(self, dist: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``[lse_P(a)(D) + lse_N(a)(α − D)]₊`` of every anchor (read on the valid ones), (B,)."""
        pos_lse, _ = masked_logsumexp(dist, positive)
        neg_lse, _ = masked_logsumexp(self.margin - dist, negative)
        return torch.relu(pos_lse + neg_lse)
