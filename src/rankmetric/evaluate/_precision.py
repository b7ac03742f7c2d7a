"""Average precision of ranked lists: the one formula behind mAP@R and the re-id mAP."""

from __future__ import annotations

import torch

__all__ = ["average_precision"]


def average_precision(
    hits_so_far: torch.Tensor, position: torch.Tensor, is_hit: torch.Tensor, n_relevant
) -> torch.Tensor:
    """``AP = (1/R) Σ_hits P(position)``, the precision at each relevant item's place.

    Both forms of a ranked list reduce to it: a relevance matrix (``is_hit[q, i]``: the
    (i+1)-th item is relevant, ``position = i + 1``, ``hits_so_far`` its cumulative sum: mAP@R)
    and the sorted places of the relevant items (``position[q, j]`` = place of the (j+1)-th
    relevant item, ``hits_so_far = j + 1``: the full-ranking mAP of re-identification).

    Parameters
    ----------
    hits_so_far : tensor of shape (n, m) or broadcastable
        Relevant items up to and including each entry's place.
    position : tensor of shape (n, m) or broadcastable
        1-based place of each entry in the ranking.
    is_hit : bool tensor of shape (n, m)
        Which entries are relevant items that count.
    n_relevant : int tensor of shape (n,)
        ``R``, the denominator (rows with ``R = 0`` give 0).

    Returns
    -------
    float64 tensor of shape (n,)
    """
    precision = hits_so_far.to(torch.float64) / position.to(torch.float64)
    total = torch.where(is_hit, precision, 0.0).sum(dim=1)
    return total / n_relevant.clamp(min=1).to(torch.float64)
