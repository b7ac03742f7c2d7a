r"""Similarity regression on the sphere: SSNE's loss.

SSNE (Batra & Shakhnarovich) minimises, over pairs :math:`q` with target similarity :math:`s_q`,

.. math::

    J(W) = \lambda \sum_q (s_q - \hat S_q)^2 + \sum_m \Vert w_m \Vert_2 ,
    \qquad \hat S_q = H(x_{q1})^\top H(x_{q2}).

This module holds the squared loss (averaged per pair, so its scale does not depend on how many
pairs are drawn); the group-norm penalty :math:`\sum_m \Vert w_m \Vert_2` and its proximal operator
live in :mod:`rankmetric.losses.regularizers` (re-exported here for old imports). With the per-pair
mean the objective optimised is

.. math::

    J'(W) = \operatorname{mean}_q (s_q - \hat S_q)^2
            + \mathtt{reg\_lambda} \sum_m \Vert w_m \Vert_2 ,

i.e. :math:`J' = J / (\lambda |C|)` with :math:`\mathtt{reg\_lambda} = 1 / (\lambda |C|)` for
:math:`|C|` pairs.

The loss grows like the fourth power of the embeddings' scale (it expects unit-norm embeddings):
a value beyond the dtype's range (float32 embeddings of norm above about 1e9) raises a
``ValueError`` naming the scale (:func:`rankmetric.losses.base.finite_loss`).
"""

from __future__ import annotations

import torch

from ..models.sphere import sphere_similarity
from ._docstrings import fill_doc
from .base import BatchMetricLoss, finite_loss
from .indices import reference_call, to_pairs
from .regularizers import group_norm_penalty, group_soft_threshold_

__all__ = [
    "SimilarityRegressionLoss",
    "label_similarity_targets",
    "jaccard_similarity_targets",
    "group_norm_penalty",
    "group_soft_threshold_",
]


def label_similarity_targets(
    labels_a: torch.Tensor, labels_b: torch.Tensor, neg_target: float = -1.0
) -> torch.Tensor:
    """Targets ``s = 1`` for same-label pairs and ``neg_target`` otherwise.

    ``labels_a`` and ``labels_b`` broadcast against each other (paired vectors, or a column and a
    row for every pair of a batch); the result has their broadcast shape and float32 dtype.

    Parameters
    ----------
    labels_a, labels_b : Tensor
        Labels of the two members of each pair; they broadcast against each other.
    neg_target : float, default=-1.0
        Target of a pair with different labels.

    Returns
    -------
    Tensor, float32
        The targets, of the broadcast shape of ``labels_a`` and ``labels_b``.

    See Also
    --------
    rankmetric.losses.jaccard_similarity_targets : Graded targets from label sets.
    rankmetric.losses.SimilarityRegressionLoss : The loss that regresses on them.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import label_similarity_targets
    >>> labels = torch.tensor([0, 0, 1])
    >>> label_similarity_targets(labels[:, None], labels[None, :], neg_target=0.0)
    tensor([[1., 1., 0.],
            [1., 1., 0.],
            [0., 0., 1.]])
    """
    same = labels_a == labels_b
    return torch.where(same, 1.0, float(neg_target)).to(torch.float32)


def jaccard_similarity_targets(
    labels_a: torch.Tensor, labels_b: torch.Tensor, neg_target: float = -1.0
) -> torch.Tensor:
    """Targets from label sets: ``s = neg_target + (1 − neg_target) · J(a, b)``.

    ``J = |a ∩ b| / |a ∪ b|`` is the Jaccard index of the two label sets (``J = 1`` when both are
    empty), so disjoint sets get ``neg_target`` and equal sets ``+1``, as with single labels.

    Parameters
    ----------
    labels_a, labels_b : Tensor of shape (n_pairs, n_labels)
        Binary label-indicator rows (multi-label ``y``).
    neg_target : float, default=-1.0

    Returns
    -------
    Tensor of shape (n_pairs,), float32

    See Also
    --------
    rankmetric.losses.label_similarity_targets : Targets from single labels.
    rankmetric.SSNE : Its ``fit_pairs`` takes such real-valued targets.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import jaccard_similarity_targets
    >>> a = torch.tensor([[1, 1, 0], [1, 0, 0]])
    >>> b = torch.tensor([[1, 0, 1], [1, 0, 0]])
    >>> jaccard_similarity_targets(a, b)  # J = 1/3 and 1
    tensor([-0.3333,  1.0000])
    """
    a, b = labels_a.bool(), labels_b.bool()
    inter = (a & b).sum(dim=-1).to(torch.float32)
    union = (a | b).sum(dim=-1).to(torch.float32)
    jaccard = torch.where(union > 0, inter / union.clamp_min(1.0), 1.0)
    return float(neg_target) + (1.0 - float(neg_target)) * jaccard


@fill_doc
class SimilarityRegressionLoss(BatchMetricLoss):
    """Squared loss between target similarities and :math:`\\hat S = H(a)^\\top H(b)`, averaged over
    pairs.

    Two faces share one formula:

    * ``loss(embeddings, labels)``: every unordered pair ``i < j`` of the batch, with target
      ``+1`` for the same label and ``neg_target`` otherwise;
    * ``loss.pairs(emb_a, emb_b, targets)``: explicit pairs with real-valued targets in
      ``[-1, 1]`` (partial supervision).

    Parameters
    ----------
    neg_target : float, default=-1.0
        Target similarity of a pair with different labels (``-1``: opposite points on the sphere;
        ``0``: orthogonal).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns the squared error of every pair: for ``loss(embeddings, labels)`` the
        pairs ``i < j`` in row-major order, shape (B (B − 1) / 2,); for ``loss.pairs(...)`` one
        per given pair, times its weight when ``weights`` are given. ``"sum"`` is their sum;
        ``"mean"`` their mean (the weighted mean, :math:`\\sum w e / \\sum w`, with weights).

    See Also
    --------
    rankmetric.SSNE : The estimator that minimises this loss with a group-norm penalty.
    rankmetric.losses.label_similarity_targets : Targets of the pairs of a labelled batch.
    rankmetric.losses.group_norm_penalty : The L1,2 penalty that SSNE adds.

    Notes
    -----
    %(call_convention)s

    * ``embeddings``: tensor of shape (batch_size, n_components), unit-norm.
    * ``indices_tuple``: mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` (read as ``(a, p,
      a, n)``): the given positive pairs (target 1) then negative pairs (target ``neg_target``) are
      the terms, instead of every pair ``i < j``.
    * ``ref_emb``: reference set: without ``indices_tuple`` every (query, reference) pair is a term,
      in row-major order. ``ref_labels`` are its labels.
    * the result: scalar tensor, or tensor of shape (n_terms,) with ``reduction="none"``.

    %(batra_shakhnarovich)s

    %(example_batch)s
    >>> h = torch.nn.functional.normalize(x, dim=1)  # points on the unit sphere
    >>> loss = losses.SimilarityRegressionLoss()(h, y)
    >>> loss.shape
    torch.Size([])
    >>> loss.backward()
    """

    _repr_fields = ("neg_target",)

    def __init__(self, neg_target: float = -1.0, *, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if not -1.0 <= float(neg_target) < 1.0:
            raise ValueError(f"neg_target must lie in [-1, 1), got {float(neg_target)}.")
        self.neg_target = float(neg_target)

    @finite_loss
    def pairs(
        self,
        emb_a: torch.Tensor,
        emb_b: torch.Tensor,
        targets: torch.Tensor,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Mean of :math:`(s_q - H(a_q)^\\top H(b_q))^2` over the pairs :math:`q`.

        Parameters
        ----------
        emb_a, emb_b : Tensor of shape (n_pairs, n_components)
            Unit-norm embeddings of the two sides of each pair.
        targets : Tensor of shape (n_pairs,)
            Target similarities ``s_q``.
        weights : Tensor of shape (n_pairs,), optional
            Non-negative pair weights; the result is then the weighted mean.

        Returns
        -------
        Scalar tensor, or tensor of shape (n_pairs,) with ``reduction="none"``.
        """
        if targets.shape != emb_a.shape[:1]:
            raise ValueError(
                f"targets must have shape ({emb_a.shape[0]},), got {tuple(targets.shape)}."
            )
        sq = (targets.to(emb_a.dtype) - sphere_similarity(emb_a, emb_b)) ** 2
        if weights is None:
            return self.reduce(sq)
        weights = weights.to(sq.dtype)
        return self.reduce(weights * sq, weights.sum())

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        ref, ref_labels, indices = reference_call(
            embeddings, labels, indices_tuple, ref_emb, ref_labels
        )
        same = ref is None
        ref_emb, ref_labels = (embeddings, labels) if same else (ref, ref_labels)
        if indices is not None:
            a1, p, a2, n = to_pairs(indices)
            emb_a = embeddings[torch.cat([a1, a2])]
            emb_b = ref_emb[torch.cat([p, n])]
            targets = torch.cat(
                [emb_a.new_ones(a1.shape[0]), emb_a.new_full((a2.shape[0],), self.neg_target)]
            )
            return self.pairs(emb_a, emb_b, targets)
        n = embeddings.shape[0]
        if same and n < 2:
            raise ValueError("a batch needs at least two embeddings to form a pair.")
        gram = embeddings @ ref_emb.T
        targets = label_similarity_targets(labels[:, None], ref_labels[None, :], self.neg_target)
        squared = (targets.to(gram.dtype) - gram) ** 2
        if not same:  # every (query, reference) pair, in row-major order
            return self.reduce(squared.flatten())
        upper = torch.triu(torch.ones(n, n, dtype=torch.bool, device=embeddings.device), 1)
        return self.reduce_masked(squared, upper)
