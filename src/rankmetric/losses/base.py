"""The thin base every loss of :mod:`rankmetric.losses` shares: torch's ``reduction=`` argument.

A loss computes its *terms* — one per anchor, per (anchor, positive) pair, per sample or per pair,
whichever unit its formula averages over — and :meth:`MetricLoss.reduce` turns them into the
result, as ``torch.nn`` losses do:

* ``"mean"`` (default): the loss of the paper, ``Σ terms / count``, where ``count`` is the number
  of terms unless the loss states otherwise (e.g. the triplet loss divides per-anchor sums by the
  number of triplets);
* ``"sum"``: ``Σ terms``;
* ``"none"``: the terms themselves (each loss documents their shape and order).

The distance and the mining stay injected as constructor arguments: the base adds no hook and no
state besides ``reduction``.
"""

from __future__ import annotations

import torch
from torch import nn

from .precision import is_compiling

__all__ = ["MetricLoss", "REDUCTIONS", "check_reduction", "as_count"]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction: str) -> str:
    """``reduction`` itself when it is one of :data:`REDUCTIONS`, else a ``ValueError``."""
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}.")
    return reduction


def as_count(count: torch.Tensor) -> int | torch.Tensor:
    """A count tensor as a Python int in eager mode; kept a tensor inside ``torch.compile``.

    ``int()`` syncs with the device and breaks a compiled graph; :meth:`MetricLoss.reduce`
    accepts both (the same value, a zero count giving 0 either way).
    """
    return count if is_compiling() else int(count)


class MetricLoss(nn.Module):
    """Base of the metric-learning losses: stores and applies ``reduction``.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}, default="mean"
        How the loss's terms are combined (see the module docstring).
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = check_reduction(reduction)

    def reduce(self, terms: torch.Tensor, count: int | torch.Tensor | None = None) -> torch.Tensor:
        """Apply ``reduction`` to ``terms``.

        Parameters
        ----------
        terms : tensor of shape (n_terms,)
            The loss's terms, attached to the graph.
        count : int or scalar tensor, optional
            Divisor of ``"mean"``; default ``terms.numel()``. A zero count gives a 0 still
            attached to the graph (a batch without a valid term).

        Returns
        -------
        scalar tensor, or ``terms`` with ``reduction="none"``
        """
        if self.reduction == "none":
            return terms
        total = terms.sum()
        if self.reduction == "sum":
            return total
        count = terms.numel() if count is None else count
        if isinstance(count, torch.Tensor):  # e.g. a sum of weights; 0 / tiny = 0
            return total / count.to(total.dtype).clamp_min(torch.finfo(total.dtype).tiny)
        return total / count if count else total * 0.0

    def reduce_masked(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``reduce(values[mask])``; inside ``torch.compile`` without the data-dependent shape.

        A boolean selection has a data-dependent size, which a ``fullgraph`` compile cannot
        trace, so there ``"mean"`` and ``"sum"`` become masked sums over ``values`` (the same
        value up to summation order); ``"none"`` keeps the selection.
        """
        if is_compiling() and self.reduction != "none":
            total = torch.where(mask, values, 0.0).sum()
            if self.reduction == "sum":
                return total
            return self.reduce(total.reshape(1), mask.sum())
        return self.reduce(values[mask])

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
