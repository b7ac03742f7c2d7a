r"""Multi-Similarity loss with its pair mining (Wang, Han, Huang, Dong & Scott, CVPR 2019).

With :math:`S` the injected similarity (cosine in the paper), :math:`P_i` / :math:`N_i` the
positives / negatives of anchor :math:`i` and the mining margin :math:`\varepsilon`, the mined
pairs are (eq. 5–6)

.. math::

    \hat P_i &= \{j \in P_i : S_{ij} - \varepsilon < \max_{k \in N_i} S_{ik}\} , \\
    \hat N_i &= \{k \in N_i : S_{ik} + \varepsilon > \min_{j \in P_i} S_{ij}\}

(both against the *unmined* sets; the selection carries no gradient), and the loss (eq. 7) is

.. math::

    L = \frac1B \sum_i \Big[ \frac1\alpha
          \log\Big(1 + \sum_{j \in \hat P_i} e^{-\alpha (S_{ij} - \lambda)}\Big)
        + \frac1\beta \log\Big(1 + \sum_{k \in \hat N_i} e^{\beta (S_{ik} - \lambda)}\Big) \Big] ,

an empty mined set contributing :math:`\log 1 = 0`. This is the paper's equation and the value of
pytorch-metric-learning's ``MultiSimilarityLoss`` fed by its ``MultiSimilarityMiner``; the
authors' code instead skips an anchor entirely when either of its mined sets is empty. Defaults
:math:`\alpha = 2, \beta = 50, \lambda = 0.5, \varepsilon = 0.1` are the paper's. Cost: O(B²)
time and memory.
"""

from __future__ import annotations

import torch

from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from .base import BatchMetricLoss, non_negative
from .indices import pair_masks, reference_call
from .miners import multi_similarity_masks
from .pair_distances import (
    SIMILARITIES,
    Similarity,
    label_masks,
    pairwise_similarity,
)

__all__ = ["MultiSimilarityLoss"]


@fill_doc
class MultiSimilarityLoss(BatchMetricLoss):
    """Multi-Similarity loss over the mined pairs of a batch.

    Parameters
    ----------
    alpha : float, default=2.0
        ``α > 0``, scale of the positive pairs' soft weighting.
    beta : float, default=50.0
        ``β > 0``, scale of the negative pairs' soft weighting.
    base : float, default=0.5
        ``λ``, the similarity threshold both terms are centred on.
    epsilon : float, default=0.1
        ``ε ≥ 0``, the margin of the pair mining.
    mining : bool, default=True
        Mine pairs as above; ``False`` uses every positive and negative pair.
    similarity : {"cosine", "dot"} or callable, default="cosine"
        Injected similarity (:func:`~rankmetric.losses.pair_distances.pairwise_similarity`).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns the bracketed term of eq. 7 for every anchor, shape (B,), in batch
        order (0 for an anchor without mined pairs); ``"mean"`` is their mean over the batch.

    See Also
    --------
    rankmetric.losses.MultiSimilarityMiner : Its pair mining, usable with other losses.
    rankmetric.losses.CrossBatchMemory : Compare each batch with past batches too.
    rankmetric.losses.LiftedStructureLoss : Every pair of a batch, one margin.

    Notes
    -----
    %(call_convention)s

    * ``indices_tuple``: mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` (read as the pairs
      ``(a, p)`` and ``(a, n)``); they replace the loss's own mining. A pair given twice counts once
      (the loss is a function of the pair sets).
    * ``ref_emb``: reference set the pairs' second members come from (default: the batch).
      ``ref_labels`` are its labels.
    * the result: scalar tensor, or tensor of shape (B,) with ``reduction="none"``; 0 (attached to
      the graph) when no pair is mined.

    References
    ----------
    Wang, Han, Huang, Dong & Scott, *Multi-Similarity Loss with General Pair Weighting for Deep
    Metric Learning*, CVPR 2019.

    %(example_batch)s
    >>> loss = losses.MultiSimilarityLoss()(x, y)
    >>> round(loss.item(), 2)
    1.21
    >>> loss.backward()
    """

    _repr_fields = ("alpha", "beta", "base", "epsilon", "mining", "similarity")

    # alike: a constructor of float hyper-parameters, shaped like RiemannianPotatoLoss's; the
    # parameters differ
    def __init__(
        self,
        alpha: float = 2.0,
        beta: float = 50.0,
        base: float = 0.5,
        epsilon: float = 0.1,
        *,
        mining: bool = True,
        similarity: Similarity = "cosine",
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        for name, value in (("alpha", alpha), ("beta", beta)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}.")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.base = float(base)
        self.epsilon = non_negative("epsilon", epsilon)
        self.mining = bool(mining)
        self.similarity = canonical_metric(similarity, SIMILARITIES, name="similarity")

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        ref_emb, ref_labels, indices = reference_call(
            embeddings, labels, indices_tuple, ref_emb, ref_labels
        )
        sim = pairwise_similarity(embeddings, self.similarity, ref_emb)
        if indices is not None:
            positive, negative = pair_masks(indices, *sim.shape)
        else:
            positive, negative = label_masks(labels, ref_labels)
            if self.mining:
                positive, negative = self.mine(sim.detach(), positive, negative)
        pos_term = _log1p_sum_exp(-self.alpha * (sim - self.base), positive) / self.alpha
        neg_term = _log1p_sum_exp(self.beta * (sim - self.base), negative) / self.beta
        return self.reduce(pos_term + neg_term)

    def mine(
        self, sim: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The mined pair masks ``P̂`` and ``N̂`` (eq. 5–6), each a bool tensor of shape (B, M).

        Parameters
        ----------
        sim : Tensor of shape (B, M)
            Similarities of the batch to the reference set.
        positive, negative : bool Tensor of shape (B, M)
            The same-label and different-label pairs.

        Returns
        -------
        positive, negative : bool Tensor of shape (B, M)
            The mined subsets of ``positive`` and ``negative``.
        """
        return multi_similarity_masks(sim, positive, negative, self.epsilon)


def _log1p_sum_exp(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise ``log(1 + Σ_{mask} exp(x))``: 0 with zero gradient for an empty row, shape (n,)."""
    padded = torch.cat([x.masked_fill(~mask, -torch.inf), x.new_zeros(x.shape[0], 1)], dim=1)
    return torch.logsumexp(padded, dim=1)
