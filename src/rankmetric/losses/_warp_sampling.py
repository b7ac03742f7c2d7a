r"""WARCA's sampled-rank engine: :func:`sampled_warp_loss` over a whole training set.

Draws positive pairs, finds violating negatives for both ends of each pair without a graph
(batched, sequential or exact rank estimates: :mod:`rankmetric.losses.warp` describes the three),
then evaluates the loss with gradients on the violators only. Public names are re-exported by
:mod:`rankmetric.losses.warp`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .._distances import complete_squared_euclidean, partial_squared_euclidean, squared_norms
from .._validation import check_option
from ..sampling import LabelIndex
from ._warp_terms import (
    DISTANCE_EPS,
    batched_rank_estimate,
    cross_euclidean,
    first_violation,
    paired_euclidean,
    sequential_rank_estimate,
    warp_loss_from_violations,
)

SAMPLINGS = ("batched", "sequential", "exact")
#: First chunk of draws of the sequential sampler (doubles each round).
SEQUENTIAL_FIRST_CHUNK = 16
#: Violators per row the batched mode evaluates with gradients (a uniform subset of them).
MAX_VIOLATORS = 16
#: Largest (2·batch) × N distance matrix the ``"exact"`` mode may build (2^27 = 512 MiB float32).
EXACT_MAX_ENTRIES = 1 << 27
#: Detection uses the dense (2·batch) × N distance matrix while N ≤ this many times the draws S.
DENSE_DETECTION_RATIO = 16

#: ``embed(indices)`` returns the embeddings (n, r) of training samples ``indices`` (n,);
#: ``embed(None)`` returns all N of them (so a kernel model can use ``K`` without copying it).
Embed = Callable[[torch.Tensor | None], torch.Tensor]


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
        self.all_rows: tuple[torch.Tensor, torch.Tensor] | None = None  # (E, ‖E‖²) of all N
        rank = ends.shape[-1]
        self.sq_ends = squared_norms(ends)  # (P, 2)
        if dense or n_samples <= DENSE_DETECTION_RATIO * n_draws:
            # ||b||² − 2 aᵀb only: adding ||a||² after the gather keeps the big matrix to one pass
            partial = partial_squared_euclidean(ends.reshape(-1, rank), embed(None))
            self.partial = partial.reshape(ends.shape[0], 2, n_samples)  # (P, 2, N)

    def full_below(self, threshold: torch.Tensor) -> torch.Tensor:
        """Dense mode: bool (P, 2, N), ``d²(end, k) < threshold`` of each pair, for every k."""
        return self.partial < (threshold[:, None] - self.sq_ends)[:, :, None]

    def to(self, pairs: torch.Tensor | None, negatives: torch.Tensor) -> torch.Tensor:
        """Squared distances (p, 2, S) from the ends of ``pairs`` (p,; None: every pair) to
        ``negatives`` (p, S)."""
        if self.partial is not None:  # gathered in place: no (p, 2, N) copy for every pair
            partial = self.partial if pairs is None else self.partial[pairs]
            sq_ends = self.sq_ends if pairs is None else self.sq_ends[pairs]
            drawn = partial.gather(2, negatives[:, None, :].expand(-1, 2, -1))
            return complete_squared_euclidean(drawn, sq_ends, DISTANCE_EPS)
        ends = self.ends if pairs is None else self.ends[pairs]
        sq_ends = self.sq_ends if pairs is None else self.sq_ends[pairs]
        flat = negatives.reshape(-1)
        if flat.numel() >= self.n_samples:
            # rows of all N embedded once (as _embed_rows does), their squared norms computed
            # once per row rather than once per draw (the sequential sampler's rounds share both)
            if self.all_rows is None:
                everything = self.embed(None)
                self.all_rows = everything, squared_norms(everything)
            everything, sq_all = self.all_rows
            e_neg = everything.index_select(0, flat).reshape(*negatives.shape, -1)
            sq_neg = sq_all.index_select(0, flat).reshape(negatives.shape)
        else:
            e_neg = _embed_rows(self.embed, negatives, self.n_samples)
            sq_neg = squared_norms(e_neg)
        # cross_sq_euclidean's formula, with the ends' and the rows' squared norms from above
        partial = partial_squared_euclidean(ends, e_neg, sq_b=sq_neg)
        return complete_squared_euclidean(partial, sq_ends, DISTANCE_EPS)


class _Violations(NamedTuple):
    """What the detection pass found, per (anchor, positive) row of the symmetric batch.

    Rows ``0..P-1`` use anchor ``first`` and positive ``second``; rows ``P..2P-1`` the reverse
    (the reference code's symmetric treatment: both ends of a positive pair are anchors against
    the same negatives). ``rows``/``negatives`` list each counted (row, negative) draw.
    """

    anchors: torch.Tensor  # (R,) sample index of each row's anchor
    positives: torch.Tensor  # (R,)
    rows: torch.Tensor  # (V,) row of each selected violator
    negatives: torch.Tensor  # (V,) sample index of each selected violator
    n_violators: torch.Tensor  # (R,)
    rank: torch.Tensor  # (R,)


def _detect_batched(
    dist, index, rng, first, threshold, n_other, n_negatives, max_violators
) -> tuple:
    negatives = _as_index(index.negatives(first, n_negatives, rng), threshold.device)  # (P, S)
    violates = threshold[:, None, None] - dist.to(None, negatives) > 0  # (P, 2, S)
    violates = violates.transpose(0, 1).reshape(-1, n_negatives)  # rows: anchor first, then second
    rank = batched_rank_estimate(violates.sum(dim=1), n_negatives, n_other.repeat(2))
    if max_violators is not None:  # the first ones of i.i.d. draws: a uniform subset
        violates &= violates.cumsum(dim=1) <= max_violators
    rows, cols = violates.nonzero(as_tuple=True)
    return rows, negatives[rows % negatives.shape[0], cols], violates.sum(dim=1), rank


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
    check_option("sampling", sampling, SAMPLINGS)
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
        threshold = (margin + paired_euclidean(e_a, e_p)).square()  # compared with d²
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
    # the detectors list rows in ascending order (row-major nonzero; the sequential one cats
    # the ascending anchor-side rows and the same rows + n_pairs), so their distinct values
    # need no sort
    active = torch.unique_consecutive(found.rows)
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
        return _ViolatorHinges.apply(embed(None), *parts, row_slot, margin)
    else:
        emb = embed(torch.cat(parts))
        e_a, e_p, e_n = emb.split([n_active, n_active, found.negatives.numel()])
    d_ap = paired_euclidean(e_a, e_p)
    d_an = paired_euclidean(e_a.index_select(0, row_slot), e_n)
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
    d_ap = paired_euclidean(e_a, e_p)
    hinge = torch.relu(margin + d_ap[:, None] - cross_euclidean(e_a, everything))
    return (hinge * counts).sum(dim=1)


class _ViolatorHinges(torch.autograd.Function):
    """:func:`_sparse_hinge_sums` on rows of one embedding ``E`` of all N items, fused.

    ``hinge_sum[s] = Σ_{v: row_slot[v] = s} [γ + F(e_a[s], e_p[s]) − F(e_a[s], e_n[v])]_+`` with
    ``F`` of :func:`~rankmetric.losses._warp_terms.paired_euclidean`. The forward runs the same
    operations as the autograd graph of that formula; the backward is that graph's backward
    written out, operation for operation and in the engine's order, so values and gradients are
    bit-identical to it (``tests/losses/test_warp_fused.py``), but it skips what the generic
    graph materialises on the (violators × r) rows besides: the ``diff.pow(1)`` copy of the
    square's backward and the negated copy of the subtraction's (an ``index_add`` with
    ``alpha=-1`` instead), and keeps no per-row graph nodes. The violator rows dominate a step's
    non-GEMM time (up to 16 per row of 2 · batch_size rows; ``docs/warca.md``, "Speed").
    """

    @staticmethod
    def forward(ctx, everything, anchors, positives, negatives, row_slot, margin):
        e_a = everything.index_select(0, anchors)
        diff_ap = e_a - everything.index_select(0, positives)
        sq_ap = squared_norms(diff_ap)
        d_ap = sq_ap.clamp_min(DISTANCE_EPS).sqrt()
        # the rows' anchors gathered straight from E (the values of e_a[row_slot]), the
        # difference and the square written into those two buffers: no third (V, r) tensor
        diff_an = everything.index_select(0, anchors.index_select(0, row_slot))
        buffer = everything.index_select(0, negatives)
        diff_an.sub_(buffer)
        sq_an = squared_norms(diff_an, out=buffer)
        d_an = sq_an.clamp_min(DISTANCE_EPS).sqrt()
        hinge = torch.relu(margin + d_ap.index_select(0, row_slot) - d_an)
        hinge_sum = torch.zeros(anchors.numel(), dtype=hinge.dtype, device=hinge.device)
        hinge_sum.index_add_(0, row_slot, hinge)
        ctx.save_for_backward(
            anchors,
            positives,
            negatives,
            row_slot,
            diff_ap,
            sq_ap,
            d_ap,
            diff_an,
            sq_an,
            d_an,
            hinge,
        )
        ctx.n_samples = everything.shape[0]
        return hinge_sum

    @staticmethod
    @once_differentiable  # its saved differences carry no graph: no silent wrong 2nd derivative
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        anchors, positives, negatives, row_slot = saved[:4]
        diff_ap, sq_ap, d_ap, diff_an, sq_an, d_an, hinge = saved[4:]
        g_hinge = grad.index_select(0, row_slot)  # backward of the index_add into hinge_sum
        g_hinge = torch.where(hinge <= 0, torch.zeros_like(g_hinge), g_hinge)  # of the relu
        g_d_ap = torch.zeros_like(d_ap).index_add_(0, row_slot, g_hinge)
        g_rows = _distance_backward(g_hinge.neg(), sq_an, d_an, diff_an)  # e_a rows; e_n: −
        g_pair = _distance_backward(g_d_ap, sq_ap, d_ap, diff_ap)  # e_a; e_p: −
        g_e_a = g_pair + torch.zeros_like(g_pair).index_add_(0, row_slot, g_rows)
        shape = (ctx.n_samples, diff_an.shape[1])
        g_n = g_rows.new_zeros(shape).index_add_(0, negatives, g_rows, alpha=-1)
        g_p = g_rows.new_zeros(shape).index_add_(0, positives, g_pair, alpha=-1)
        g_a = g_rows.new_zeros(shape).index_add_(0, anchors, g_e_a)
        # the engine sums the three index_select gradients of E in this order: (p + n) + a
        return (g_p + g_n) + g_a, None, None, None, None, None


def _distance_backward(grad, sq, distance, diff):
    """The gradient wrt ``a`` of ``sqrt(clamp_min(Σ (a − b)², ε))`` given the one wrt its value:
    autograd's ``sqrt``, ``clamp_min``, ``sum`` and ``pow`` backward formulas, in their order
    (``grad / (2 d)``, masked where clamped, times ``2 (a − b)``); the one wrt ``b`` is its
    negative."""
    grad = grad / (2 * distance)
    grad = torch.where(sq >= DISTANCE_EPS, grad, torch.zeros_like(grad))
    return (2.0 * diff).mul_(grad[:, None])
