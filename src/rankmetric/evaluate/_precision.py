"""Average precision of ranked lists: the one formula behind mAP@R and the re-id mAP.

Public as :func:`rankmetric.evaluate.average_precision`, so that the validation scorer
(``training``) and the index's evaluation use this formula rather than a copy.
"""

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
        Each row's average precision.

    See Also
    --------
    rankmetric.evaluate.map_at_r : mAP@R of embeddings, through this formula.
    rankmetric.evaluate.reid_scores : The full-ranking mAP of re-identification, through it too.

    Examples
    --------
    A ranking whose 1st and 3rd items are relevant, out of ``R = 2``:
    ``AP = (1/1 + 2/3) / 2``.

    >>> import torch
    >>> from rankmetric.evaluate import average_precision
    >>> is_hit = torch.tensor([[True, False, True]])
    >>> position = torch.arange(1, 4)[None]
    >>> average_precision(is_hit.cumsum(1), position, is_hit, torch.tensor([2]))
    tensor([0.8333], dtype=torch.float64)

    The same from the places of the relevant items (``hits_so_far = 1, 2``):

    >>> places = torch.tensor([[1, 3]])
    >>> average_precision(torch.arange(1, 3)[None], places, places > 0, torch.tensor([2]))
    tensor([0.8333], dtype=torch.float64)
    """
    precision = hits_so_far.to(torch.float64) / position.to(torch.float64)
    total = torch.where(is_hit, precision, 0.0).sum(dim=1)
    return total / n_relevant.clamp(min=1).to(torch.float64)
