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

The regularisers :func:`aon_penalty` (eq. 4) and :func:`kernel_aon_penalty` (eq. 8) live in
:mod:`rankmetric.losses.regularizers`; they are re-exported here for old imports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real

import numpy as np
import torch

from ..sampling import LabelIndex
from .base import MetricLoss, finite_loss
from .indices import IndicesTuple, check_indices_tuple, check_reference, pair_masks
from .pair_distances import Metric, check_batch, check_metric, label_masks, pairwise_distance
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
]

SAMPLINGS = ("batched", "sequential", "exact")
EULER_GAMMA = 0.5772156649015329
#: First chunk of draws of the sequential sampler (doubles each round).
SEQUENTIAL_FIRST_CHUNK = 16
#: Violators per row the batched mode evaluates with gradients (a uniform subset of them).
MAX_VIOLATORS = 16
#: Largest (2·batch) × N distance matrix the ``"exact"`` mode may build (2^27 = 512 MiB float32).
EXACT_MAX_ENTRIES = 1 << 27
#: Detection uses the dense (2·batch) × N distance matrix while N ≤ this many times the draws S.
DENSE_DETECTION_RATIO = 16
#: Squared distances are clamped at this value before the square root (finite gradients).
DISTANCE_EPS = 1e-12

#: ``embed(indices)`` returns the embeddings (n, r) of training samples ``indices`` (n,);
#: ``embed(None)`` returns all N of them (so a kernel model can use ``K`` without copying it).
Embed = Callable[[torch.Tensor | None], torch.Tensor]


def harmonic_number(rank: torch.Tensor) -> torch.Tensor:
    """WARP weight :math:`L(r) = \\sum_{t=1}^r 1/t`, extended to real :math:`r \\ge 0` by
    :math:`\\psi(r + 1) + \\gamma_E`.

    Equal to the harmonic number on integers, exactly 0 at ``r = 0``, increasing and concave, so
    the real-valued batched estimate ``r̂`` needs no rounding.

    Parameters
    ----------
    rank : tensor of any shape, values ``≥ 0``

    Returns
    -------
    tensor of the same shape
    """
    rank = rank.to(torch.get_default_dtype()) if not rank.is_floating_point() else rank
    value = torch.special.digamma(rank + 1.0) + EULER_GAMMA
    return torch.where(rank > 0, value, torch.zeros_like(value))


def warp_hinge(
    d_pos: torch.Tensor, d_neg: torch.Tensor, margin: float, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """:math:`|\\gamma + \\xi|_+ = \\max(0, \\gamma + d(a, p) - d(a, n))` for each (anchor,
    positive) row and negative.

    Parameters
    ----------
    d_pos : tensor of shape (P,)
        Distance from each anchor to its positive.
    d_neg : tensor of shape (P, S)
        Distances from each anchor to S negatives.
    margin : float
        :math:`\\gamma`.
    valid : bool tensor of shape (P, S), optional
        Negatives to count; the others get a hinge of 0.

    Returns
    -------
    tensor of shape (P, S)
    """
    hinge = torch.relu(margin + d_pos[:, None] - d_neg)
    return hinge if valid is None else torch.where(valid, hinge, torch.zeros_like(hinge))


def warp_loss_from_violations(
    hinge_sum: torch.Tensor, n_violators: torch.Tensor, rank: torch.Tensor
) -> torch.Tensor:
    """One term of eq. 5 per (anchor, positive) row.

    .. math:: \\frac{L(\\hat r)}{v} \\sum_{\\mathrm{violators}} |\\gamma + \\xi|_+

    With all negatives seen, :math:`v = \\hat r = \\mathrm{rank}^\\gamma` and this is eq. 5 exactly.
    With S negatives drawn uniformly, :math:`|\\mathrm{other}| / S \\cdot \\sum_{\\mathrm{sampled}}`
    estimates :math:`\\sum_k` and :math:`\\hat r = |\\mathrm{other}| \\, v / S`, so
    :math:`\\frac{L(\\hat r)}{\\hat r} \\frac{|\\mathrm{other}|}{S} \\sum
    = \\frac{L(\\hat r)}{v} \\sum`. With the sequential sampler :math:`v = 1` (the first
    violator) and :math:`\\hat r = \\lfloor |\\mathrm{other}| / \\mathrm{draws} \\rfloor`. The
    weight is a constant of the gradient (the rank is piecewise constant in the parameters).

    Parameters
    ----------
    hinge_sum : tensor of shape (P,)
        Sum of the hinges of the violators found for each row.
    n_violators : tensor of shape (P,)
        Number of violators found (``v``).
    rank : tensor of shape (P,)
        Rank estimate :math:`\\hat r` (:math:`\\mathrm{rank}^\\gamma` of eq. 7 or its estimate).

    Returns
    -------
    tensor of shape (P,)
        0 for rows without a violator.
    """
    v = n_violators.to(hinge_sum.dtype)
    weight = harmonic_number(rank.to(hinge_sum.dtype)) / v.clamp_min(1.0)
    return torch.where(v > 0, weight.detach() * hinge_sum, torch.zeros_like(hinge_sum))


def batched_rank_estimate(
    n_violators: torch.Tensor, n_drawn: torch.Tensor | int, n_other: torch.Tensor
) -> torch.Tensor:
    """:math:`\\hat r = |\\mathrm{other}(i)| \\, v / S`: unbiased for eq. 7 when the S negatives are
    uniform draws.

    Parameters
    ----------
    n_violators : tensor of shape (P,)
        ``v``, violators among the S draws.
    n_drawn : int or tensor of shape (P,)
        ``S``.
    n_other : tensor of shape (P,)
        ``|other(i)|``.
    """
    return n_other.to(torch.float64) * n_violators.to(torch.float64) / n_drawn


def sequential_rank_estimate(n_draws: torch.Tensor, n_other: torch.Tensor) -> torch.Tensor:
    """The reference code's
    :math:`\\hat r = \\lfloor |\\mathrm{other}(i)| / \\mathrm{draws} \\rfloor` (draws up to the
    first violator)."""
    return torch.floor(n_other.to(torch.float64) / n_draws.to(torch.float64).clamp_min(1.0))


def first_violation(violates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Position of the first ``True`` of each row.

    Parameters
    ----------
    violates : bool tensor of shape (P, S)

    Returns
    -------
    found : bool tensor of shape (P,)
    position : int64 tensor of shape (P,)
        Index of the first violator (0 where none was found).
    """
    found = violates.any(dim=1)
    position = violates.to(torch.uint8).argmax(dim=1)
    return found, position


def exact_rank(d_pos: torch.Tensor, d_neg: torch.Tensor, margin: float) -> torch.Tensor:
    """:math:`\\mathrm{rank}^\\gamma` of eq. 7,
    :math:`\\#\\{k : \\gamma + d(a, p) - d(a, k) > 0\\}`, over all negatives given.

    Parameters
    ----------
    d_pos : tensor of shape (P,)
    d_neg : tensor of shape (P, n_other)
        Distances to every negative of each anchor.

    Returns
    -------
    int64 tensor of shape (P,)
    """
    return (margin + d_pos[:, None] - d_neg > 0).sum(dim=1)


def _paired_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a, b) = ||a − b||₂`` row by row (broadcasting), with a finite gradient at 0."""
    return (a - b).square().sum(-1).clamp_min(DISTANCE_EPS).sqrt()


def _cross_sq_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a_i, b_j)²`` for every row pair from ``||a||² + ||b||² − 2 aᵀb`` (one matrix product).

    Parameters
    ----------
    a : tensor of shape (n_a, r), or (p, n_a, r) for p batched problems
    b : tensor of shape (n_b, r), or (p, n_b, r)

    Returns
    -------
    tensor of shape (n_a, n_b) or (p, n_a, n_b), clamped at ``DISTANCE_EPS``
    """
    sq_a = a.square().sum(-1)
    sq_b = b.square().sum(-1)
    if a.dim() == 2:
        sq = torch.addmm(sq_b[None, :], a, b.T, alpha=-2.0)
    else:
        sq = torch.baddbmm(sq_b[:, None, :], a, b.transpose(-1, -2), alpha=-2.0)
    return (sq + sq_a[..., :, None]).clamp_min(DISTANCE_EPS)


def _cross_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a_i, b_j)`` for every row pair (the square root of :func:`_cross_sq_euclidean`)."""
    return _cross_sq_euclidean(a, b).sqrt()


def _as_index(indices: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(indices), dtype=torch.long, device=device)


def _embed_rows(embed: Embed, indices: torch.Tensor, n_samples: int) -> torch.Tensor:
    """``embed`` of an index tensor of any shape, shape ``(*indices.shape, r)``.

    When there are at least as many indices as training samples, every sample is embedded once
    and rows are gathered: cheaper than embedding duplicates, and the gradient then flows
    through one ``(N, D) @ (D, r)`` product. Rows are gathered with ``index_select``, whose
    backward is an ``index_add`` (several times faster on CPU than the accumulating
    ``index_put`` behind ``tensor[indices]``).
    """
    flat = indices.reshape(-1)
    rows = embed(None).index_select(0, flat) if flat.numel() >= n_samples else embed(flat)
    return rows.reshape(*indices.shape, rows.shape[-1])


class _Distances:
    """Squared distances from both ends of each positive pair to chosen samples (no gradient).

    Squared, so that detection compares ``d² < (γ + d(a, p))²`` without a square root per draw.
    Two layouts, chosen by cost:

    * sparse: only the drawn negatives are embedded and compared (O(P·S·r), independent of N;
      all N samples are embedded once instead when N ≤ P·S);
    * dense: the ends' squared distances to all N samples from one matrix product, O(P·N)
      memory, then the draws are gathered from it. Always used by ``"exact"``, and by the
      samplers whenever ``N ≤ 16·S``, where one (2P × r) @ (r × N) product is cheaper
      than gathering P·S embedded rows (3–4× faster per step on N < 2,000).
    """

    def __init__(
        self, embed: Embed, ends: torch.Tensor, n_samples: int, dense: bool, n_draws: int = 0
    ) -> None:
        self.embed, self.ends, self.n_samples, self.partial = embed, ends, n_samples, None
        rank = ends.shape[-1]
        self.sq_ends = ends.square().sum(-1)  # (P, 2)
        if dense or n_samples <= DENSE_DETECTION_RATIO * n_draws:
            everything = embed(None)
            # ||b||² − 2 aᵀb only: adding ||a||² after the gather keeps the big matrix to one pass
            partial = torch.addmm(
                everything.square().sum(-1)[None, :],
                ends.reshape(-1, rank),
                everything.T,
                alpha=-2.0,
            )
            self.partial = partial.reshape(ends.shape[0], 2, n_samples)  # (P, 2, N)

    def full_below(self, threshold: torch.Tensor) -> torch.Tensor:
        """Dense mode: bool (P, 2, N), ``d²(end, k) < threshold`` of each pair, for every k."""
        return self.partial < (threshold[:, None] - self.sq_ends)[:, :, None]

    def to(self, pairs: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        """Squared distances (p, 2, S) from the ends of ``pairs`` (p,) to ``negatives`` (p, S)."""
        if self.partial is not None:
            drawn = self.partial[pairs].gather(2, negatives[:, None, :].expand(-1, 2, -1))
            return (drawn + self.sq_ends[pairs][:, :, None]).clamp_min(DISTANCE_EPS)
        e_neg = _embed_rows(self.embed, negatives, self.n_samples)
        return _cross_sq_euclidean(self.ends[pairs], e_neg)


class _Violations:
    """What the detection pass found, per (anchor, positive) row of the symmetric batch.

    Rows ``0..P-1`` use anchor ``first`` and positive ``second``; rows ``P..2P-1`` the reverse
    (the reference code's symmetric treatment: both ends of a positive pair are anchors against
    the same negatives). ``rows``/``negatives`` list each counted (row, negative) draw.
    """

    def __init__(self, anchors, positives, rows, negatives, n_violators, rank):
        self.anchors = anchors  # (R,) sample index of each row's anchor
        self.positives = positives  # (R,)
        self.rows = rows  # (V,) row of each selected violator
        self.negatives = negatives  # (V,) sample index of each selected violator
        self.n_violators = n_violators  # (R,)
        self.rank = rank  # (R,)


def _detect_batched(
    dist, index, rng, first, threshold, n_other, n_negatives, max_violators
) -> tuple:
    negatives = _as_index(index.negatives(first, n_negatives, rng), threshold.device)  # (P, S)
    pairs = torch.arange(first.shape[0], device=threshold.device)
    violates = threshold[:, None, None] - dist.to(pairs, negatives) > 0  # (P, 2, S)
    violates = violates.transpose(0, 1).reshape(-1, n_negatives)  # rows: anchor first, then second
    rank = batched_rank_estimate(violates.sum(dim=1), n_negatives, n_other.repeat(2))
    if max_violators is not None:  # the first ones of i.i.d. draws: a uniform subset
        violates &= violates.cumsum(dim=1) <= max_violators
    rows, cols = violates.nonzero(as_tuple=True)
    return rows, negatives.repeat(2, 1)[rows, cols], violates.sum(dim=1), rank


def _detect_sequential(dist, index, rng, first, threshold, n_other, max_sampling) -> tuple:
    device, n_pairs = threshold.device, first.shape[0]
    limit = torch.clamp(n_other, max=max_sampling)  # draws allowed per pair (capped at |other|)
    chosen = torch.full((n_pairs,), -1, dtype=torch.long, device=device)
    n_draws = torch.zeros(n_pairs, dtype=torch.long, device=device)
    pending = torch.arange(n_pairs, device=device)
    offset, chunk, max_limit = 0, SEQUENTIAL_FIRST_CHUNK, int(limit.max())
    while pending.numel() and offset < max_limit:
        size = min(chunk, max_limit - offset)
        drawn = _as_index(index.negatives(first[pending.cpu().numpy()], size, rng), device)
        violates = (threshold[pending, None, None] - dist.to(pending, drawn) > 0).any(dim=1)
        allowed = offset + torch.arange(size, device=device) < limit[pending, None]
        found, position = first_violation(violates & allowed)
        hit = pending[found]
        chosen[hit] = drawn[found, position[found]]
        n_draws[hit] = offset + position[found] + 1
        pending = pending[~found]
        offset, chunk = offset + size, chunk * 2
    pair_rows = torch.nonzero(chosen >= 0).squeeze(1)
    rows = torch.cat([pair_rows, pair_rows + n_pairs])
    n_violators = (chosen >= 0).long().repeat(2)
    rank = sequential_rank_estimate(n_draws, n_other).repeat(2)
    return rows, chosen[pair_rows].repeat(2), n_violators, rank


def _detect_exact(dist, index, first, threshold) -> tuple:
    device = threshold.device
    codes = torch.as_tensor(index.codes, device=device)
    first_t = _as_index(first, device)
    negative = codes[None, :] != codes[first_t][:, None]  # (P, N): other(i) = other(j)
    violates = dist.full_below(threshold) & negative[:, None, :]
    violates = violates.transpose(0, 1).reshape(-1, negative.shape[1])  # (2P, N)
    n_violators = violates.sum(dim=1)
    rows, negatives = violates.nonzero(as_tuple=True)
    return rows, negatives, n_violators, n_violators.to(torch.float64)


def _check_exact_size(n_pairs: int, n_samples: int) -> None:
    if 2 * n_pairs * n_samples > EXACT_MAX_ENTRIES:
        raise ValueError(
            f"sampling='exact' needs a (2·batch_size) × n_samples = {2 * n_pairs} × {n_samples} "
            f"distance matrix, above {EXACT_MAX_ENTRIES} entries; use sampling='batched'."
        )


def sampled_warp_loss(
    embed: Embed,
    index: LabelIndex,
    rng: np.random.Generator,
    *,
    n_pairs: int,
    max_sampling: int,
    margin: float = 1.0,
    sampling: str = "batched",
    device: str | torch.device = "cpu",
    embed_detached: Embed | None = None,
    max_violators: int | None = MAX_VIOLATORS,
) -> torch.Tensor:
    """WARCA's stochastic WARP loss over a whole training set (the estimator's loss).

    Draws ``n_pairs`` positive pairs uniformly over same-label pairs, finds violating negatives
    for both ends of each pair without building a graph, then evaluates the loss with gradients
    on the violators only, and returns the mean of :func:`warp_loss_from_violations` over the
    ``2 · n_pairs`` (anchor, positive) rows.

    Parameters
    ----------
    embed : callable ``indices (n,) or None -> embeddings (n, r)``
        Differentiable embedding of training samples by index; ``embed(None)`` embeds all N.
    index : LabelIndex
        The training labels.
    rng : numpy Generator
        Draws pairs and negatives.
    n_pairs : int
        Positive pairs per call.
    max_sampling : int
        ``"batched"``: negatives drawn per pair (S). ``"sequential"``: most draws per pair before
        giving up (capped at ``|other(i)|``). Unused by ``"exact"``.
    margin : float, default=1.0
        ``γ``.
    sampling : {"batched", "sequential", "exact"}
        ``"exact"`` counts eq. 7 over every negative (memory O(n_pairs · N), small N only).
    device : torch device of the embeddings.
    embed_detached : callable, optional
        A cheaper ``embed`` for the detection pass (no gradient needed), e.g. rows of a
        precomputed embedding.
    max_violators : int or None, default=16
        ``"batched"`` only: the hinge mean over a row's violators is estimated from at most this
        many of them (the first ones drawn: a uniform subset, so the loss stays unbiased) while
        ``r̂`` still counts them all. Bounds the gradient pass when most draws violate (early in
        training); ``None`` uses every violator.

    Returns
    -------
    scalar tensor
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}.")
    device = torch.device(device)
    first, second = index.positive_pairs(n_pairs, rng)
    n_other = _as_index(index.n_negatives(first), device)
    a, p = _as_index(first, device), _as_index(second, device)
    detached = embed_detached or embed
    dense = sampling == "exact"
    if dense:
        _check_exact_size(len(first), index.n_samples)
    with torch.no_grad():
        e_a, e_p = detached(a), detached(p)
        n_draws = 0 if sampling == "exact" else max_sampling
        ends = torch.stack([e_a, e_p], dim=1)
        dist = _Distances(detached, ends, index.n_samples, dense, n_draws)
        threshold = (margin + _paired_euclidean(e_a, e_p)).square()  # compared with d²
        if sampling == "batched":
            found = _detect_batched(
                dist, index, rng, first, threshold, n_other, max_sampling, max_violators
            )
        elif sampling == "sequential":
            found = _detect_sequential(dist, index, rng, first, threshold, n_other, max_sampling)
        else:
            found = _detect_exact(dist, index, first, threshold)
    violations = _Violations(torch.cat([a, p]), torch.cat([p, a]), *found)
    return _loss_on_violators(embed, violations, margin, index.n_samples, dense)


def _loss_on_violators(
    embed: Embed, found: _Violations, margin: float, n_samples: int, dense: bool
) -> torch.Tensor:
    """Differentiable mean over rows of ``L(r̂)/v · Σ hinge`` using only the selected violators."""
    n_rows = found.anchors.shape[0]
    active = torch.unique(found.rows)
    slot = torch.full((n_rows,), -1, dtype=torch.long, device=found.rows.device)
    slot[active] = torch.arange(active.numel(), device=active.device)
    row_slot = slot[found.rows]
    if dense:
        hinge_sum = _dense_hinge_sums(embed, found, active, row_slot, margin, n_samples)
    else:
        hinge_sum = _sparse_hinge_sums(embed, found, active, row_slot, margin, n_samples)
    terms = warp_loss_from_violations(hinge_sum, found.n_violators[active], found.rank[active])
    return terms.sum() / n_rows


def _sparse_hinge_sums(embed, found, active, row_slot, margin, n_samples) -> torch.Tensor:
    """Hinge sums per active row from the embeddings of the violators only."""
    n_active = active.numel()
    parts = (found.anchors[active], found.positives[active], found.negatives)
    if 2 * n_active + found.negatives.numel() >= n_samples:
        # rows of one embedding of all N: each part's gradient is an index_add into an (N, r)
        # buffer, not a zero-filled copy of every gathered row per slice
        everything = embed(None)
        e_a, e_p, e_n = (everything.index_select(0, part) for part in parts)
    else:
        emb = embed(torch.cat(parts))
        e_a, e_p, e_n = emb.split([n_active, n_active, found.negatives.numel()])
    d_ap = _paired_euclidean(e_a, e_p)
    d_an = _paired_euclidean(e_a.index_select(0, row_slot), e_n)
    hinge = torch.relu(margin + d_ap.index_select(0, row_slot) - d_an)
    return torch.zeros(n_active, dtype=hinge.dtype, device=hinge.device).index_add(
        0, row_slot, hinge
    )


def _dense_hinge_sums(embed, found, active, row_slot, margin, n_samples) -> torch.Tensor:
    """Hinge sums per active row from all N embeddings and a (rows × N) count matrix."""
    everything = embed(None)
    e_a, e_p = everything[found.anchors[active]], everything[found.positives[active]]
    counts = torch.zeros(active.numel(), n_samples, dtype=everything.dtype, device=active.device)
    counts.index_put_(
        (row_slot, found.negatives), torch.ones_like(row_slot, dtype=counts.dtype), True
    )
    d_ap = _paired_euclidean(e_a, e_p)
    hinge = torch.relu(margin + d_ap[:, None] - _cross_euclidean(e_a, everything))
    return (hinge * counts).sum(dim=1)


def _batch_warp_terms(
    dist: torch.Tensor, negative: torch.Tensor, margin: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Violator count and hinge sum for every (anchor, positive) cell of a batch.

    For anchor ``a`` with its negatives' distances sorted ascending ``s_1 ≤ s_2 ≤ …``, the
    violators of positive ``p`` are the ``v = #{s < γ + d_ap}`` first ones, and
    ``Σ hinge = v (γ + d_ap) − (s_1 + … + s_v)``: O(B² log B) time and O(B²) memory.

    Parameters
    ----------
    dist : tensor of shape (B, B)
    negative : bool tensor of shape (B, B)

    Returns
    -------
    n_violators : int64 tensor of shape (B, B)
    hinge_sum : tensor of shape (B, B)
    """
    inf = torch.tensor(math.inf, dtype=dist.dtype, device=dist.device)
    sorted_neg, _ = torch.where(negative, dist, inf).sort(dim=1)
    prefix = torch.where(torch.isfinite(sorted_neg), sorted_neg, 0.0).cumsum(dim=1)
    threshold = margin + dist
    n_violators = torch.searchsorted(sorted_neg.detach(), threshold.detach().contiguous())
    taken = prefix.gather(1, (n_violators - 1).clamp_min(0))
    taken = torch.where(n_violators > 0, taken, torch.zeros_like(taken))
    return n_violators, n_violators.to(dist.dtype) * threshold - taken


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

    References
    ----------
    .. [1] C. Jose and F. Fleuret. Scalable Metric Learning via Weighted Approximate Rank
       Component Analysis. ECCV 2016.

    Examples
    --------
    >>> loss_fn = WARPLoss(margin=1.0)
    >>> loss = loss_fn(net(x), y)  # doctest: +SKIP
    >>> loss.backward()  # doctest: +SKIP
    """

    def __init__(
        self, margin: float = 1.0, distance: Metric = "euclidean", reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        if not isinstance(margin, Real) or isinstance(margin, bool) or not margin >= 0:
            raise ValueError(f"margin must be a non-negative number, got {margin!r}.")
        self.margin = float(margin)
        self.distance = check_metric(distance, ("euclidean", "sqeuclidean", "cosine"))

    def extra_repr(self) -> str:
        return f"margin={self.margin}, distance={self.distance!r}, {super().extra_repr()}"

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
        same = ref_emb is None
        ref_emb, ref_labels = check_reference(embeddings, labels, ref_emb, ref_labels)
        if indices_tuple is None:
            positive, negative = label_masks(labels, None if same else ref_labels)
        else:
            indices = check_indices_tuple(
                indices_tuple, labels.shape[0], ref_labels.shape[0], labels.device
            )
            positive, negative = pair_masks(indices, labels.shape[0], ref_labels.shape[0])
        dist = pairwise_distance(embeddings, self.distance, None if same else ref_emb)
        n_violators, hinge_sum = _batch_warp_terms(dist, negative, self.margin)
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
