"""Multi-Similarity loss with its pair mining (Wang, Han, Huang, Dong & Scott, CVPR 2019).

With ``S`` the injected similarity (cosine in the paper), ``P_i`` / ``N_i`` the positives /
negatives of anchor ``i`` and the mining margin ``ε``, the mined pairs are (eq. 5–6)

    P̂_i = {j ∈ P_i : S_ij − ε < max_{k ∈ N_i} S_ik} ,
    N̂_i = {k ∈ N_i : S_ik + ε > min_{j ∈ P_i} S_ij} ,

(both against the *unmined* sets; the selection carries no gradient), and the loss (eq. 7) is

    L = 1/B Σ_i [ 1/α · log(1 + Σ_{j ∈ P̂_i} exp(−α (S_ij − λ)))
                + 1/β · log(1 + Σ_{k ∈ N̂_i} exp( β (S_ik − λ))) ] ,

an empty mined set contributing ``log 1 = 0``. This is the paper's equation and the value of
pytorch-metric-learning's ``MultiSimilarityLoss`` fed by its ``MultiSimilarityMiner``; the
authors' code instead skips an anchor entirely when either of its mined sets is empty. Defaults
α = 2, β = 50, λ = 0.5, ε = 0.1 are the paper's. Cost: O(B²) time and memory.
"""

from __future__ import annotations

import torch

from .base import MetricLoss
from .pair_distances import (
    SIMILARITIES,
    Similarity,
    check_batch,
    check_metric,
    label_masks,
    pairwise_similarity,
)

__all__ = ["MultiSimilarityLoss"]


class MultiSimilarityLoss(MetricLoss):
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

    References
    ----------
    Wang, Han, Huang, Dong & Scott, *Multi-Similarity Loss with General Pair Weighting for Deep
    Metric Learning*, CVPR 2019.
    """

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
        if not epsilon >= 0:
            raise ValueError(f"epsilon must be >= 0, got {epsilon}.")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.base = float(base)
        self.epsilon = float(epsilon)
        self.mining = bool(mining)
        self.similarity = check_metric(similarity, SIMILARITIES, "similarity")

    def extra_repr(self) -> str:
        return (
            f"alpha={self.alpha}, beta={self.beta}, base={self.base}, epsilon={self.epsilon}, "
            f"mining={self.mining}, similarity={self.similarity!r}, {super().extra_repr()}"
        )

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The loss of a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, d)
        labels : integer tensor of shape (B,)

        Returns
        -------
        scalar tensor, or tensor of shape (B,) with ``reduction="none"``
            0 (attached to the graph) when no pair is mined.
        """
        labels = check_batch(embeddings, labels)
        sim = pairwise_similarity(embeddings, self.similarity)
        positive, negative = label_masks(labels)
        if self.mining:
            positive, negative = self.mine(sim.detach(), positive, negative)
        pos_term = _log1p_sum_exp(-self.alpha * (sim - self.base), positive) / self.alpha
        neg_term = _log1p_sum_exp(self.beta * (sim - self.base), negative) / self.beta
        return self.reduce(pos_term + neg_term)

    def mine(
        self, sim: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The mined pair masks ``P̂`` and ``N̂`` (eq. 5–6), each a bool tensor of shape (B, B)."""
        hardest_neg = sim.masked_fill(~negative, -torch.inf).amax(dim=1, keepdim=True)
        hardest_pos = sim.masked_fill(~positive, torch.inf).amin(dim=1, keepdim=True)
        return (
            positive & (sim - self.epsilon < hardest_neg),
            negative & (sim + self.epsilon > hardest_pos),
        )


def _log1p_sum_exp(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise ``log(1 + Σ_{mask} exp(x))``: 0 with zero gradient for an empty row, shape (n,)."""
    padded = torch.cat([x.masked_fill(~mask, -torch.inf), x.new_zeros(x.shape[0], 1)], dim=1)
    return torch.logsumexp(padded, dim=1)
