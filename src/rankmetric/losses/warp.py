r"""The WARP loss of WARCA (Jose & Fleuret, ECCV 2016, eq. 3–7) and its sampled-rank engine.

For an anchor :math:`i`, a positive :math:`j` (same label) and the negatives
:math:`k \in \mathrm{other}(i)`:

.. math::

    \xi_{ijk} &= F(x_i, x_j) - F(x_i, x_k) \qquad \text{(eq. 6)} \\
    \mathrm{rank}^\gamma_{ij} &= \#\{k \in \mathrm{other}(i) : \gamma + \xi_{ijk} > 0\}
        \qquad \text{(eq. 7)} \\
    \mathrm{term}_{ij} &= \frac{L(\mathrm{rank}^\gamma_{ij})}{\mathrm{rank}^\gamma_{ij}}
        \sum_k |\gamma + \xi_{ijk}|_+ \qquad \text{(eq. 5)} \\
    L(r) &= \sum_{t=1}^{r} \frac1t \qquad \text{(WARP weight, } L(0) = 0\text{)}

The formula is written once, in :func:`warp_loss_from_violations`, as
:math:`L(\hat r) / v \cdot \sum_{\mathrm{viol}} \mathrm{hinge}` where :math:`v` counts the
violators found and :math:`\hat r` estimates the rank. Three ways of finding them
feed it:

* :class:`WARPLoss` — in-batch, for any network: every other-label sample of the batch is a
  negative and the rank is the exact in-batch count (optionally rescaled to the data set by the
  fraction of violators). Built from sorted negative distances and prefix sums: O(B²) memory,
  never a B × B × B tensor.
* :func:`sampled_warp_loss` with ``sampling="batched"`` (WARCA's default) — S negatives drawn at
  once per positive pair, :math:`\hat r = |\mathrm{other}(i)| \, v / S`, an unbiased estimate of
  eq. 7.
* :func:`sampled_warp_loss` with ``sampling="sequential"`` — the reference code's estimator:
  negatives drawn until the first violator (at most ``max_sampling``),
  :math:`\hat r = \lfloor |\mathrm{other}(i)| / \mathrm{draws} \rfloor`, vectorised across pairs
  (growing chunks of draws, the first violator found with ``argmax``).
* :func:`sampled_warp_loss` with ``sampling="exact"`` — every negative: eq. 7 exactly, from a
  (2·n_pairs) × N distance matrix (small N only).

Where things live: this module holds :class:`WARPLoss` and re-exports the rest, so every name
imports from here. The terms of eq. 5–7 (WARP weight, hinge, rank estimates, distances) are in
``losses/_warp_terms.py``; the sampled engine (:func:`sampled_warp_loss`, the three violator
searches and the loss pass on the violators) in ``losses/_warp_sampling.py``. The regularisers
:func:`aon_penalty` (eq. 4) and :func:`kernel_aon_penalty` (eq. 8) live in
:mod:`rankmetric.losses.regularizers`; they are re-exported here for old imports.
"""

from __future__ import annotations

from numbers import Real

import torch

from ..geometry.aliases import canonical_metric
from ._docstrings import fill_doc
from ._warp_sampling import (
    DENSE_DETECTION_RATIO,
    EXACT_MAX_ENTRIES,
    MAX_VIOLATORS,
    SAMPLINGS,
    SEQUENTIAL_FIRST_CHUNK,
    Embed,
    sampled_warp_loss,
)
from ._warp_terms import (
    DISTANCE_EPS,
    EULER_GAMMA,
    batched_rank_estimate,
    exact_rank,
    first_violation,
    harmonic_number,
    sequential_rank_estimate,
    warp_hinge,
    warp_loss_from_violations,
)
from .base import MetricLoss, finite_loss
from .indices import IndicesTuple, pair_masks, reference_call
from .miners import hinge_sums
from .pair_distances import VECTOR_METRICS, Metric, check_batch, label_masks, pairwise_distance
from .precision import is_compiling, mixed_precision
from .regularizers import aon_penalty, kernel_aon_penalty

__all__ = [
    "SAMPLINGS",
    "harmonic_number",
    "warp_hinge",
    "warp_loss_from_violations",
    "batched_rank_estimate",
    "sequential_rank_estimate",
    "first_violation",
    "exact_rank",
    "sampled_warp_loss",
    "aon_penalty",
    "kernel_aon_penalty",
    "WARPLoss",
    # the constants and types of the sampled engine and of the terms (defined beside it)
    "Embed",
    "DENSE_DETECTION_RATIO",
    "EXACT_MAX_ENTRIES",
    "MAX_VIOLATORS",
    "SEQUENTIAL_FIRST_CHUNK",
    "DISTANCE_EPS",
    "EULER_GAMMA",
]


@fill_doc
class WARPLoss(MetricLoss):
    """In-batch WARP loss (eq. 5) for any embedding network.

    Every same-label ordered pair ``(a, p)`` of the batch is a row; every other-label sample is a
    negative. The rank is the exact in-batch count of eq. 7, or that count rescaled to the data
    set (:math:`\\hat r = |\\mathrm{other}(a)| \\, v / |\\mathrm{other}_{\\mathrm{batch}}(a)|`) when
    ``n_other`` is given to :meth:`forward`.

    Parameters
    ----------
    margin : float, default=1.0
        :math:`\\gamma`.
    distance : str or callable, default="euclidean"
        Any metric of :func:`rankmetric.losses.pair_distances.pairwise_distance` or a callable
        ``f(x, y) -> (n_x, n_y)``; WARCA's ``F`` is the (non-squared) Euclidean distance.
    reduction : {"mean", "sum", "none"}, default="mean"
        Over the (anchor, positive) rows; ``"none"`` returns one term per same-label ordered
        pair ``(a, p)``, ``a ≠ p``, in row-major order (of ``positive_mask.nonzero()``): shape
        (n_positive_pairs,). ``"mean"`` is their mean (0 for a batch without a positive pair).

    See Also
    --------
    rankmetric.WARCA : The estimator that minimises this loss for a linear map.
    rankmetric.KernelWARCA : The same for a kernel map.
    rankmetric.losses.TripletLoss : The unweighted triplet hinge that WARP weights by rank.

    %(jose_fleuret)s

    Examples
    --------
    >>> loss_fn = WARPLoss(margin=1.0)
    >>> loss = loss_fn(net(x), y)  # doctest: +SKIP
    >>> loss.backward()  # doctest: +SKIP
    """

    _repr_fields = ("margin", "distance")

    def __init__(
        self, margin: float = 1.0, distance: Metric = "euclidean", reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        if not isinstance(margin, Real) or isinstance(margin, bool) or not margin >= 0:
            raise ValueError(f"margin must be a non-negative number, got {margin!r}.")
        self.margin = float(margin)
        self.distance = canonical_metric(distance, VECTOR_METRICS, name="distance")

    @finite_loss
    @mixed_precision
    def forward(
        self,
        embeddings: torch.Tensor,
        labels,
        n_other: torch.Tensor | None = None,
        *,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: torch.Tensor | None = None,
        ref_labels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """WARP loss of a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, r)
        labels : integer tensor or array of shape (B,)
        n_other : tensor of shape (B,), optional
            ``|other(a)|`` in the whole data set for each sample, to rescale in-batch ranks.
        indices_tuple : tuple of int64 tensors, optional (keyword only)
            Mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` (read as the pairs
            ``(a, p)``, ``(a, n)``): the rows are the given positive pairs, each ranked against
            its anchor's given negatives.
        ref_emb : tensor of shape (M, r), optional (keyword only)
            Reference set of the positives and negatives (default: the batch).
        ref_labels : integer tensor of shape (M,), optional (keyword only)

        Returns
        -------
        scalar tensor, or tensor of shape (n_positive_pairs,) with ``reduction="none"``
        """
        if isinstance(n_other, (tuple, list)):
            raise ValueError(
                "WARPLoss's third argument is n_other; pass mined tuples as indices_tuple=."
            )
        labels = check_batch(embeddings, labels)
        ref_emb, ref_labels, indices = reference_call(
            embeddings, labels, indices_tuple, ref_emb, ref_labels, name=type(self).__name__
        )
        dist = pairwise_distance(embeddings, self.distance, ref_emb)
        if indices is None:
            positive, negative = label_masks(labels, ref_labels)
        else:
            positive, negative = pair_masks(indices, *dist.shape)
        n_violators, hinge_sum, _ = hinge_sums(dist, negative, self.margin)
        rank = n_violators.to(torch.float64)
        if n_other is not None:
            scale = torch.as_tensor(n_other, dtype=torch.float64, device=dist.device)
            rank = rank * (scale / negative.sum(1).clamp_min(1))[:, None]
        if is_compiling():  # every cell, then the positive ones: fixed shapes
            return self.reduce_masked(
                warp_loss_from_violations(hinge_sum, n_violators, rank), positive
            )
        terms = warp_loss_from_violations(
            hinge_sum[positive], n_violators[positive], rank[positive]
        )
        return self.reduce(terms)
