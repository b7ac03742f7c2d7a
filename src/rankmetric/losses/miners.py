"""Miners: pick the pairs or triplets of a batch that a loss should see, as index tuples.

A miner is called like a loss, ``miner(embeddings, labels, ref_emb=None, ref_labels=None)``,
without gradients, and returns a PML-shaped tuple (:mod:`rankmetric.losses.indices`) that any
pair or triplet loss of :mod:`rankmetric.losses` — or of pytorch-metric-learning — accepts as
``indices_tuple``::

    miner = TripletMiner("semihard", margin=0.2)
    loss = TripletLoss(0.2)(emb, labels, miner(emb, labels))

* :class:`TripletMiner` ``"all"`` / ``"hard"`` / ``"facenet-semihard"`` / ``"random"``: the
  mining strategies of :class:`~rankmetric.losses.TripletLoss` (the same selection, so
  ``TripletLoss(mining=s)(x, y)`` equals ``TripletLoss()(x, y, TripletMiner(s)(x, y))``; the
  loss's ``"semihard"`` is FaceNet's, the miner's ``"facenet-semihard"``);
  ``"semihard"``, ``"margin-all"``, ``"margin-hard"`` and ``"easy"``: the triplets of
  pytorch-metric-learning's ``TripletMarginMiner`` (``type_of_triplets`` ``"semihard"``,
  ``"all"``, ``"hard"``, ``"easy"``), every negative in the margin band of each positive pair;
* :class:`BatchHardMiner`: ``TripletMiner("hard")`` under its usual name (Hermans et al. 2017;
  the selection of PML's ``BatchHardMiner``);
* :class:`MultiSimilarityMiner`: the pair mining of the Multi-Similarity loss (Wang et al. 2019,
  eq. 5–6; the selection of PML's ``MultiSimilarityMiner``), as ``(a1, p, a2, n)``.

Cost: one (B, M) distance matrix and O(B·M) masks; ``"all"`` returns every triplet (its output
is O(B·M²) long, but no (B, M, M) mask is formed); ``"random"`` on a batch without a reference
set draws in O(B log B) without any (B, B) matrix.
"""

from __future__ import annotations

import abc
from typing import Literal

import torch
from torch import Tensor, nn

from .._validation import check_option, renamed_keywords
from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from .base import non_negative
from .indices import IndicesTuple, all_triplets, check_reference, run_offsets
from .pair_distances import (
    SIMILARITIES,
    SPD_METRICS,
    VECTOR_METRICS,
    Metric,
    MetricSelector,
    Similarity,
    check_batch,
    label_masks,
    pairwise_distance,
    pairwise_similarity,
)
from .precision import compute_dtype

__all__ = [
    "PML_TYPE_OF_TRIPLETS",
    "Miner",
    "TripletMiner",
    "BatchHardMiner",
    "MultiSimilarityMiner",
    "TRIPLET_STRATEGIES",
    "batch_hard_choice",
    "facenet_semihard_choice",
    "multi_similarity_masks",
    "random_partners",
]

TRIPLET_STRATEGIES = (
    "all", "hard", "semihard", "facenet-semihard", "margin-all", "margin-hard", "easy", "random"
)  # fmt: skip
Strategy = Literal[
    "all", "hard", "semihard", "facenet-semihard", "margin-all", "margin-hard", "easy", "random"
]  # fmt: skip
#: pytorch-metric-learning's ``TripletMarginMiner(type_of_triplets=...)`` → our strategy.
PML_TYPE_OF_TRIPLETS = {
    "all": "margin-all",
    "hard": "margin-hard",
    "semihard": "semihard",
    "easy": "easy",
}
#: Band of negatives ``(low, high]`` of each positive pair, relative to ``D_ap`` and the margin
#: ``m``: ``D_an − D_ap`` in ``(low, high]`` (pytorch-metric-learning's ``triplet_margin``).
_BANDS = {
    "semihard": (0.0, 1.0),  # 0 < D_an − D_ap ≤ m
    "margin-all": (-torch.inf, 1.0),  # D_an − D_ap ≤ m
    "margin-hard": (-torch.inf, 0.0),  # D_an − D_ap ≤ 0 (and ≤ m)
    "easy": (1.0, torch.inf),  # D_an − D_ap > m
}


@fill_doc
class Miner(nn.Module, metaclass=abc.ABCMeta):
    """Base of the miners: validates the batch and mines without gradients.

    Subclasses implement ``mine(embeddings, labels, ref_emb, ref_labels, same)``, where ``same``
    says that the reference set is the batch itself (a sample is then not its own positive).

    See Also
    --------
    rankmetric.losses.TripletMiner : Triplets by the rules of the triplet loss.
    rankmetric.losses.MultiSimilarityMiner : Pairs by the rule of the Multi-Similarity loss.

    %(example_batch)s
    >>> miner = losses.TripletMiner("all")
    >>> isinstance(miner, losses.Miner)
    True
    >>> anchors, positives, negatives = miner(x, y)
    >>> anchors.shape
    torch.Size([48])
    """

    allow_matrices = False

    # alike: the (embeddings, labels, ref_emb, ref_labels) call convention of losses and miners,
    # alike in TripletLoss._from_masks
    def forward(
        self,
        embeddings: Tensor,
        labels: Tensor,
        ref_emb: Tensor | None = None,
        ref_labels: Tensor | None = None,
    ) -> IndicesTuple:
        """Mine a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, d)
        labels : integer tensor of shape (B,)
        ref_emb : tensor of shape (M, d), optional
            Reference set the partners are taken from (default: the batch).
        ref_labels : integer tensor of shape (M,), optional

        Returns
        -------
        tuple of int64 tensors
            ``(a, p, n)`` or ``(a1, p, a2, n)``; anchors index ``embeddings``, partners the
            reference set.
        """
        labels = check_batch(embeddings, labels, allow_matrices=self.allow_matrices)
        same = ref_emb is None
        ref_emb, ref_labels = check_reference(
            embeddings, labels, ref_emb, ref_labels, allow_matrices=self.allow_matrices
        )
        with torch.no_grad():
            dtype = compute_dtype(embeddings.dtype)
            return self.mine(
                embeddings.detach().to(dtype), labels, ref_emb.detach().to(dtype), ref_labels, same
            )

    @abc.abstractmethod
    def mine(
        self, embeddings: Tensor, labels: Tensor, ref_emb: Tensor, ref_labels: Tensor, same: bool
    ) -> IndicesTuple:
        """The index tuple of a validated, detached batch (each subclass's mining rule).

        Parameters
        ----------
        embeddings : Tensor of shape (B, ...)
            The batch, detached.
        labels : Tensor of shape (B,)
            Its labels.
        ref_emb : Tensor of shape (M, ...)
            The reference set (the batch itself when ``same``).
        ref_labels : Tensor of shape (M,)
            Its labels.
        same : bool
            Whether the reference set is the batch (a sample is then not its own positive).

        Returns
        -------
        tuple of Tensor
            Triplets ``(a, p, n)`` or pairs ``(a1, p, a2, n)`` of indices (``a`` into the batch,
            ``p`` and ``n`` into the reference set).
        """


class TripletMiner(MetricSelector, Miner):
    """The triplets of a batch chosen by one of :class:`~rankmetric.losses.TripletLoss`'s rules.

    Parameters
    ----------
    strategy : {"all", "hard", "semihard", "facenet-semihard", "margin-all", "margin-hard", \
"easy", "random"}, default="all"
        ``"all"``: every valid triplet, in row-major (a, p, n) order. ``"hard"``: per anchor the
        farthest positive and the closest negative (batch hard). ``"semihard"``: as
        pytorch-metric-learning's ``TripletMarginMiner("semihard")``, every triplet with
        ``0 < D_an − D_ap ≤ margin`` (all semi-hard negatives of each positive pair).
        ``"facenet-semihard"``: every (anchor, positive) pair with its one FaceNet semi-hard
        negative (the closest negative farther than the positive; the farthest negative when
        none is) — what ``"semihard"`` meant in earlier versions and what ``TripletLoss(mining=
        "semihard")`` uses. ``"margin-all"`` / ``"margin-hard"`` / ``"easy"``: PML's ``"all"``
        (``D_an − D_ap ≤ margin``), ``"hard"`` (``D_an − D_ap ≤ 0``) and ``"easy"``
        (``D_an − D_ap > margin``). ``"random"``: per anchor one uniformly drawn positive and
        negative.
    metric : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable, \
default="euclidean"
        As :func:`~rankmetric.losses.pair_distances.pairwise_distance` (``distance=`` before
        0.2, still accepted with a ``FutureWarning``).
    margin : float, default=0.2
        The margin of the band strategies (``"semihard"``, ``"margin-all"``, ``"margin-hard"``,
        ``"easy"``); PML's default.
    generator : torch.Generator, optional
        Random source of ``"random"``.
    type_of_triplets : {"all", "hard", "semihard", "easy"}, optional
        pytorch-metric-learning's spelling, with its meaning: the strategy
        :data:`PML_TYPE_OF_TRIPLETS` maps it to (``"all"`` → ``"margin-all"``, ``"hard"`` →
        ``"margin-hard"``); give it or ``strategy``, not both.

    See Also
    --------
    rankmetric.losses.TripletLoss : The loss with the same rules built in.
    rankmetric.losses.BatchHardMiner : ``TripletMiner("hard")`` under its usual name.

    References
    ----------
    .. [1] F. Schroff, D. Kalenichenko and J. Philbin. FaceNet: A Unified Embedding for Face
       Recognition and Clustering. CVPR 2015 (``"facenet-semihard"``).
    .. [2] A. Hermans, L. Beyer and B. Leibe. In Defense of the Triplet Loss for Person
       Re-Identification. arXiv:1703.07737, 2017 (``"hard"``, ``"all"``).

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import TripletLoss, TripletMiner
    >>> x, y = torch.randn(8, 3), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    >>> a, p, n = TripletMiner("hard")(x, y)
    >>> a.shape
    torch.Size([8])
    >>> loss = TripletLoss(0.2)(x, y, (a, p, n))
    >>> a, p, n = TripletMiner(type_of_triplets="semihard", margin=0.5)(x, y)  # PML's spelling
    >>> bool(((x[n] - x[a]).norm(dim=1) > (x[p] - x[a]).norm(dim=1)).all())
    True
    """

    allow_matrices = True

    @renamed_keywords(distance="metric")
    def __init__(
        self,
        strategy: Strategy | None = None,
        metric: Metric = "euclidean",
        *,
        margin: float = 0.2,
        generator: torch.Generator | None = None,
        type_of_triplets: str | None = None,
    ) -> None:
        super().__init__()
        if type_of_triplets is not None:
            if type_of_triplets not in PML_TYPE_OF_TRIPLETS:
                raise ValueError(
                    f"type_of_triplets must be one of {tuple(PML_TYPE_OF_TRIPLETS)} "
                    f"(pytorch-metric-learning's), got {type_of_triplets!r}."
                )
            if strategy is not None:
                raise ValueError(
                    "give strategy or type_of_triplets (pytorch-metric-learning's spelling), "
                    "not both."
                )
            strategy = PML_TYPE_OF_TRIPLETS[type_of_triplets]
        strategy = "all" if strategy is None else strategy
        check_option("strategy", strategy, TRIPLET_STRATEGIES)
        self.strategy = strategy
        self.margin = non_negative("margin", margin)
        self.metric = canonical_metric(metric, VECTOR_METRICS + SPD_METRICS)
        self.generator = generator

    def extra_repr(self) -> str:
        band = f", margin={self.margin}" if self.strategy in _BANDS else ""
        return f"strategy={self.strategy!r}{band}, metric={self.metric!r}"

    def mine(self, embeddings, labels, ref_emb, ref_labels, same):
        ref_arg = None if same else ref_labels
        if self.strategy == "all":
            return all_triplets(labels, ref_arg)
        if self.strategy == "random":
            return _random_triplets(labels, ref_arg, self.generator)
        positive, negative = label_masks(labels, ref_arg)
        dist = pairwise_distance(embeddings, self.metric, None if same else ref_emb)
        if self.strategy == "hard":
            valid, hardest_pos, hardest_neg, _, _ = batch_hard_choice(dist, positive, negative)
            anchors = torch.nonzero(valid).flatten()
            return anchors, hardest_pos[anchors], hardest_neg[anchors]
        if self.strategy == "facenet-semihard":
            _, order, chosen, valid = facenet_semihard_choice(dist, positive, negative)
            a, p = torch.nonzero(valid, as_tuple=True)
            return a, p, order[a, chosen[a, p]]
        return _band_triplets(dist, positive, negative, _BANDS[self.strategy], self.margin)


class BatchHardMiner(TripletMiner):
    """Batch-hard triplets (Hermans, Beyer & Leibe 2017): ``TripletMiner("hard")``.

    Per anchor with a positive and a negative: the farthest positive and the closest negative.

    Parameters
    ----------
    metric : str or callable, default="euclidean"
        As :class:`TripletMiner` (``distance=`` before 0.2, still accepted with a
        ``FutureWarning``).

    See Also
    --------
    rankmetric.losses.TripletMiner : The other triplet rules.
    rankmetric.losses.TripletLoss : A triplet loss that mines the same way with ``mining="hard"``.

    References
    ----------
    .. [1] A. Hermans, L. Beyer and B. Leibe. In Defense of the Triplet Loss for Person
       Re-Identification. arXiv:1703.07737, 2017.

    Examples
    --------
    >>> import torch
    >>> x, y = torch.randn(6, 2), torch.tensor([0, 0, 1, 1, 2, 2])
    >>> [t.shape[0] for t in BatchHardMiner()(x, y)]
    [6, 6, 6]
    """

    @renamed_keywords(distance="metric")
    def __init__(self, metric: Metric = "euclidean") -> None:
        super().__init__("hard", metric)


class MultiSimilarityMiner(Miner):
    """The pair mining of the Multi-Similarity loss (Wang et al., CVPR 2019, eq. 5–6).

    A positive pair is kept when ``S_ij − ε < max_{k ∈ N_i} S_ik``, a negative pair when
    ``S_ik + ε > min_{j ∈ P_i} S_ij``.

    Parameters
    ----------
    epsilon : float, default=0.1
        ``ε ≥ 0``.
    similarity : {"cosine", "dot"} or callable, default="cosine"

    See Also
    --------
    rankmetric.losses.MultiSimilarityLoss : The loss this mining was designed for.
    rankmetric.losses.TripletMiner : Triplets instead of pairs.

    References
    ----------
    .. [1] X. Wang, X. Han, W. Huang, D. Dong and M. R. Scott. Multi-Similarity Loss with General
       Pair Weighting for Deep Metric Learning. CVPR 2019.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import MultiSimilarityLoss
    >>> x, y = torch.randn(8, 3), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    >>> pairs = MultiSimilarityMiner(0.1)(x, y)
    >>> len(pairs)
    4
    >>> loss = MultiSimilarityLoss()(x, y, pairs)
    """

    def __init__(self, epsilon: float = 0.1, similarity: Similarity = "cosine") -> None:
        super().__init__()
        self.epsilon = non_negative("epsilon", epsilon)
        self.similarity = canonical_metric(similarity, SIMILARITIES, name="similarity")

    def extra_repr(self) -> str:
        return f"epsilon={self.epsilon}, similarity={self.similarity!r}"

    def mine(self, embeddings, labels, ref_emb, ref_labels, same):
        positive, negative = label_masks(labels, None if same else ref_labels)
        sim = pairwise_similarity(embeddings, self.similarity, None if same else ref_emb)
        positive, negative = multi_similarity_masks(sim, positive, negative, self.epsilon)
        a1, p = torch.nonzero(positive, as_tuple=True)
        a2, n = torch.nonzero(negative, as_tuple=True)
        return a1, p, a2, n


def multi_similarity_masks(
    sim: Tensor, positive: Tensor, negative: Tensor, epsilon: float
) -> tuple[Tensor, Tensor]:
    """The mined pair masks ``P̂`` and ``N̂`` of the Multi-Similarity loss (eq. 5–6), (B, M) each.

    Both are selected against the *unmined* sets; ``sim`` should be detached.
    """
    hardest_neg = sim.masked_fill(~negative, -torch.inf).amax(dim=1, keepdim=True)
    hardest_pos = sim.masked_fill(~positive, torch.inf).amin(dim=1, keepdim=True)
    return positive & (sim - epsilon < hardest_neg), negative & (sim + epsilon > hardest_pos)


def sorted_negatives(dist: Tensor, negative: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Each row's negative distances in increasing order, the one sort every triplet rule uses.

    Returns ``(sorted_neg, order, n_neg)``: the sorted distances (B, M) with the gradient of
    ``dist`` (+inf for non-negatives, last), their columns (B, M) and each row's number of
    negatives (B,).
    """
    sorted_neg, order = dist.masked_fill(~negative, torch.inf).sort(dim=1)
    return sorted_neg, order, negative.sum(dim=1)


def hinge_sums(dist: Tensor, negative: Tensor, margin: float) -> tuple[Tensor, Tensor, Tensor]:
    """Per (anchor, positive) cell, the violating negatives and their hinges, from one sort.

    With ``t = D_ap + m`` and ``c`` the negatives of the anchor closer than ``t`` (the
    violators), ``Σ_n [t − D_an]₊ = c t − Σ_{D_an < t} D_an``, read off prefix sums of the
    sorted negative distances with a binary search: O(B² log B) time, O(B²) memory, exact
    gradients (the difference of the two sums is taken in float64). The triplet loss's
    ``"all"`` mining and the WARP loss both sum these hinges.

    Parameters
    ----------
    dist : tensor of shape (B, M)
    negative : bool tensor of shape (B, M)
    margin : float

    Returns
    -------
    n_violators : int64 tensor of shape (B, M)
    hinge_sum : tensor of shape (B, M), of ``dist``'s dtype
    n_negatives : int64 tensor of shape (B,)
    """
    sorted_neg, _, n_neg = sorted_negatives(dist, negative)
    threshold = dist + margin
    below = torch.searchsorted(sorted_neg.contiguous(), threshold.detach().contiguous())
    finite = sorted_neg.masked_fill(torch.isinf(sorted_neg), 0.0).to(torch.float64)
    prefix = torch.cat([finite.new_zeros(dist.shape[0], 1), finite.cumsum(dim=1)], dim=1)
    # c·t − Σ D_an in float64: the difference of two sums of up to B terms each
    per_pair = (below * threshold.to(torch.float64) - prefix.gather(1, below)).to(dist.dtype)
    return below, per_pair, n_neg


def batch_hard_choice(dist: Tensor, positive: Tensor, negative: Tensor):
    """Batch-hard selection (Hermans et al. 2017), the one used by the miner and the loss.

    Returns ``(valid, hardest_pos, hardest_neg, d_ap, d_an)``: which rows have a positive and a
    negative, for every row the column of its farthest positive and of its closest negative, and
    their distances (with the gradient of ``dist``; masked first, so that a row without a
    positive or negative passes no gradient to ``dist``).
    """
    farthest = dist.masked_fill(~positive, -torch.inf)
    closest = dist.masked_fill(~negative, torch.inf)
    hardest_pos, hardest_neg = farthest.detach().argmax(dim=1), closest.detach().argmin(dim=1)
    d_ap = farthest.gather(1, hardest_pos.unsqueeze(1)).squeeze(1)
    d_an = closest.gather(1, hardest_neg.unsqueeze(1)).squeeze(1)
    valid = positive.any(dim=1) & negative.any(dim=1)
    return valid, hardest_pos, hardest_neg, d_ap, d_an


def facenet_semihard_choice(dist: Tensor, positive: Tensor, negative: Tensor):
    """FaceNet's semi-hard negative of every positive pair, the one used by the miner and the loss.

    Per (a, p): the closest negative farther than ``D_ap``, else the farthest negative
    (TensorFlow's ``triplet_semihard_loss`` convention).

    Returns
    -------
    sorted_neg : tensor (B, M)
        Each row's negative distances in increasing order (+inf for non-negatives), with the
        gradient of ``dist``.
    order : int64 tensor (B, M)
        Their columns.
    chosen : int64 tensor (B, M)
        For every (a, p), the position in ``sorted_neg[a]`` of its semi-hard negative.
    valid : bool tensor (B, M)
        The positive pairs whose anchor has a negative.
    """
    sorted_neg, order, n_neg = sorted_negatives(dist, negative)
    farther = torch.searchsorted(
        sorted_neg.detach().contiguous(), dist.detach().contiguous(), right=True
    )
    last = (n_neg - 1).clamp_min(0)[:, None].expand_as(farther)
    chosen = torch.where(farther < n_neg[:, None], farther, last)
    return sorted_neg, order, chosen, positive & (n_neg > 0)[:, None]


def _band_triplets(dist, positive, negative, band, margin) -> IndicesTuple:
    """Every (a, p, n) with ``low·m < D_an − D_ap ≤ high·m`` (pytorch-metric-learning's bands).

    Per positive pair the negatives of the band are a contiguous run of the anchor's sorted
    negative distances, found by two binary searches; the output is built from the runs'
    lengths (no (B, M, M) mask).
    """
    sorted_neg, order, n_neg = sorted_negatives(dist, negative)
    sorted_neg, n_neg = sorted_neg.contiguous(), n_neg.unsqueeze(1)
    a, p = torch.nonzero(positive & (n_neg > 0), as_tuple=True)

    def edge(factor):  # negatives with D_an ≤ D_ap + factor·m, per positive pair
        if factor == -torch.inf:
            return torch.zeros_like(a)
        if factor == torch.inf:
            return n_neg.squeeze(1)[a]
        bound = dist[a, p] + factor * margin
        found = torch.searchsorted(sorted_neg[a], bound.unsqueeze(1).contiguous(), right=True)
        return torch.minimum(found.squeeze(1), n_neg.squeeze(1)[a])

    low, high = edge(band[0]), edge(band[1])
    count = (high - low).clamp_min(0)
    a_rep, p_rep = a.repeat_interleave(count), p.repeat_interleave(count)
    return a_rep, p_rep, order[a_rep, low.repeat_interleave(count) + run_offsets(count)]


def _random_triplets(
    labels: Tensor, ref_labels: Tensor | None, generator: torch.Generator | None
) -> IndicesTuple:
    if ref_labels is None:
        positives, negatives, valid = random_partners(labels, generator)
        anchors = torch.nonzero(valid).flatten()
        return anchors, positives[anchors], negatives[anchors]
    positive, negative = label_masks(labels, ref_labels)
    anchors = torch.nonzero(positive.any(dim=1) & negative.any(dim=1)).flatten()
    if anchors.numel() == 0:
        return anchors, anchors.clone(), anchors.clone()
    draw = [
        torch.multinomial(mask[anchors].double(), 1, generator=generator)[:, 0]
        for mask in (positive, negative)
    ]
    return anchors, draw[0], draw[1]


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
