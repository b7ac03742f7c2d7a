r"""Multi-class N-pair loss (Sohn, NeurIPS 2016) with its L2 embedding regulariser.

From a batch, one (anchor, positive) pair is taken per class: the first two samples of each class
in batch order (classes with a single sample are left out). With :math:`N` such pairs
:math:`(f_i, f_i^+)` of distinct classes and :math:`s` the injected similarity (the inner product
in the paper),

.. math::

    L = \frac1N \sum_i \log\Big(1 + \sum_{j \ne i} e^{s(f_i, f_j^+) - s(f_i, f_i^+)}\Big)
        + \frac{\lambda}{2} \operatorname{mean}_{f \in \{f_i\} \cup \{f_i^+\}} \Vert f \Vert^2 ,

i.e. the cross-entropy of the (N, N) similarity matrix :math:`s(f_i, f_j^+)` with targets on its
diagonal, plus the regulariser of the paper (Sohn keeps the embedding norms small instead of
normalising them). The regulariser's scale follows TensorFlow's ``npairs_loss(reg_lambda=0.002)``:
:math:`\tfrac14 \lambda (\operatorname{mean} \Vert f_i \Vert^2
+ \operatorname{mean} \Vert f_i^+ \Vert^2)`. Cost: an O(B log B) sort and an (N, N) matrix.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from .base import BatchMetricLoss, non_negative
from .indices import all_pairs, reference_call, to_pairs
from .pair_distances import (
    SIMILARITIES,
    Similarity,
    pairwise_similarity,
    zero_loss,
)
from .precision import is_compiling

__all__ = ["NPairLoss", "first_pair_per_class"]


@fill_doc
class NPairLoss(BatchMetricLoss):
    """Multi-class N-pair loss: softmax of each anchor over the positives of all classes.

    Parameters
    ----------
    l2_weight : float, default=0.002
        :math:`\\lambda` of the L2 embedding regulariser (0 disables it).
    similarity : {"dot", "cosine"} or callable, default="dot"
        Injected similarity (:func:`~rankmetric.losses.pair_distances.pairwise_similarity`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns one term per (anchor, positive) pair, i.e. per class with two samples
        in increasing label order, shape (N,): the pair's cross-entropy plus its share
        :math:`\\tfrac{\\lambda}{4} (\\Vert f_i \\Vert^2 + \\Vert f_i^+ \\Vert^2)` of the
        regulariser; ``"mean"`` (the loss of the paper) is their mean.

    See Also
    --------
    rankmetric.losses.ProxyNCALoss : A softmax over learned class proxies instead of positives.
    rankmetric.losses.MultiSimilarityLoss : Soft weighting of every mined pair.

    Notes
    -----
    The batch should hold at least two samples of at least two classes (the paper's batches hold
    exactly two per class); only the first two samples of each class are used. A batch with fewer
    than two such pairs gives a zero loss (still attached to the graph).

    %(call_convention)s

    * ``indices_tuple``: mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)``: of their positive
      pairs ``(a1, p)``, the first one of each anchor label is used (pytorch-metric-learning's
      ``NPairsLoss`` does the same), instead of the first two samples of each class.
    * ``ref_emb``: reference set the positives come from (default: the batch); without
      ``indices_tuple`` each class's first query is paired with its first reference. ``ref_labels``
      are its labels.
    * the result: scalar tensor, or tensor of shape (N,) with ``reduction="none"``.

    References
    ----------
    Sohn, *Improved Deep Metric Learning with Multi-class N-pair Loss Objective*, NeurIPS 2016.

    %(example_batch)s
    >>> loss = losses.NPairLoss()(x, y)
    >>> round(loss.item(), 2)
    2.93
    >>> loss.backward()
    """

    _repr_fields = ("l2_weight", "similarity")

    def __init__(
        self, l2_weight: float = 0.002, similarity: Similarity = "dot", *, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.l2_weight = non_negative("l2_weight", l2_weight)
        self.similarity = canonical_metric(similarity, SIMILARITIES, name="similarity")

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if indices_tuple is None and ref_emb is None and is_compiling():
            return self._fixed_shape(embeddings, labels)
        if indices_tuple is None and ref_emb is None:
            anchor_idx, positive_idx = first_pair_per_class(labels)
            ref_emb = embeddings
        else:
            ref, ref_labels, indices = reference_call(
                embeddings, labels, indices_tuple, ref_emb, ref_labels
            )
            ref_emb = embeddings if ref is None else ref
            a1, p, _, _ = all_pairs(labels, ref_labels) if indices is None else to_pairs(indices)
            first = _first_per_label(labels[a1])
            anchor_idx, positive_idx = a1[first], p[first]
        if not is_compiling() and anchor_idx.shape[0] < 2:
            return self.reduce(zero_loss(embeddings).reshape(1)[:0])
        anchors, positives = embeddings[anchor_idx], ref_emb[positive_idx]
        logits = pairwise_similarity(anchors, self.similarity, positives)
        targets = torch.arange(anchors.shape[0], device=embeddings.device)
        terms = F.cross_entropy(logits, targets, reduction="none")
        terms = self._with_l2(terms, anchors, positives)
        return self.reduce(terms)

    def _with_l2(self, terms: torch.Tensor, anchors: torch.Tensor, positives: torch.Tensor):
        """``terms`` plus the L2 penalty ``¼ λ (‖a‖² + ‖p‖²)`` of each pair's embeddings."""
        if self.l2_weight > 0:
            sq_norms = anchors.pow(2).sum(dim=1) + positives.pow(2).sum(dim=1)
            terms = terms + 0.25 * self.l2_weight * sq_norms
        return terms

    def _fixed_shape(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The same loss over the (B, B) sorted batch with masks: no data-dependent shape.

        Used inside ``torch.compile`` (``"mean"`` and ``"sum"`` agree with eager mode up to
        rounding): position ``k`` of the label-sorted batch is an anchor when it starts a class
        with two samples, and its positive is position ``k + 1``.
        """
        n = labels.shape[0]
        order, ranked, first = _label_runs(labels)
        has_second = torch.zeros_like(first)
        has_second[:-1] = ranked[1:] == ranked[:-1]
        is_anchor = first & has_second
        following = torch.arange(1, n + 1, device=labels.device).clamp_max(n - 1)
        anchors, positives = embeddings[order], embeddings[order[following]]
        logits = pairwise_similarity(anchors, self.similarity, positives)
        own = logits.diagonal()
        masked = logits.masked_fill(~is_anchor[None, :], torch.finfo(logits.dtype).min)
        terms = torch.logsumexp(masked, dim=1) - own
        terms = self._with_l2(terms, anchors, positives)
        n_pairs = is_anchor.sum()
        return self.reduce_masked(terms, is_anchor & (n_pairs >= 2))


def _first_per_label(labels: torch.Tensor) -> torch.Tensor:
    """Position of the first occurrence of each distinct value, in increasing value order."""
    order, _, starts = _label_runs(labels)
    return order[starts]


def _label_runs(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(order, sorted labels, run starts)``: the stable label sort and where each class begins."""
    order = torch.sort(labels, stable=True).indices
    ranked = labels[order]
    starts = torch.ones_like(ranked, dtype=torch.bool)
    starts[1:] = ranked[1:] != ranked[:-1]
    return order, ranked, starts


def first_pair_per_class(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the first and second sample of every class that has two.

    Parameters
    ----------
    labels : tensor of shape (B,)

    Returns
    -------
    anchors, positives : int64 tensors of shape (N,)
        One entry per class with at least two samples, in increasing label order.
    """
    order, ranked, starts = _label_runs(labels)
    first = torch.nonzero(starts).flatten()
    has_second = first + 1 < ranked.shape[0]
    first = first[has_second]
    first = first[ranked[first + 1] == ranked[first]]
    return order[first], order[first + 1]
