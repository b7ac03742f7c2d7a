r"""The terms of the WARP loss (Jose & Fleuret, ECCV 2016, eq. 5–7), written once.

The WARP weight :func:`harmonic_number`, the hinge :func:`warp_hinge`, one term of eq. 5 per
(anchor, positive) row (:func:`warp_loss_from_violations`), the three rank estimates (batched,
sequential, exact) and the Euclidean distances ``F`` of WARCA. :mod:`rankmetric.losses.warp`
(the in-batch :class:`~rankmetric.losses.warp.WARPLoss`) and the sampled engine
(:mod:`rankmetric.losses._warp_sampling`) both build on them; the public names are re-exported
by :mod:`rankmetric.losses.warp`.
"""

from __future__ import annotations

import torch

from .._distances import floored_squared_euclidean, paired_squared_euclidean

EULER_GAMMA = 0.5772156649015329
#: Squared distances are clamped at this value before the square root (finite gradients).
DISTANCE_EPS = 1e-12


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


def paired_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a, b) = ||a − b||₂`` row by row (broadcasting), with a finite gradient at 0."""
    return paired_squared_euclidean(a, b).clamp_min(DISTANCE_EPS).sqrt()


def cross_sq_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a_i, b_j)²`` for every row pair (one matrix product), floored at ``DISTANCE_EPS``."""
    return floored_squared_euclidean(a, b, DISTANCE_EPS)


def cross_euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F(a_i, b_j)`` for every row pair (the square root of :func:`cross_sq_euclidean`)."""
    return cross_sq_euclidean(a, b).sqrt()
