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

Finite results: every loss's ``forward`` carries :func:`finite_loss`, the last-resort guard that
turns a non-finite result of finite embeddings (a value that overflows the dtype, e.g. the squared
inner products of embeddings scaled by 1e10 in float32) into a ``ValueError`` naming the
embeddings' scale, instead of returning ``inf`` or ``nan``. The losses compute in forms that stay
finite wherever the value is representable (rescaled distances, log-sum-exp), so the guard fires
only when the loss itself is beyond the dtype's range. Like the input check, it is one device
sync in eager mode and left out of a graph traced by ``torch.compile``.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable

import torch
from torch import nn

from .pair_distances import check_batch
from .precision import is_compiling, mixed_precision

__all__ = [
    "BatchMetricLoss",
    "MetricLoss",
    "REDUCTIONS",
    "check_reduction",
    "as_count",
    "finite_loss",
]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction: str) -> str:
    """``reduction`` itself when it is one of :data:`REDUCTIONS`, else a ``ValueError``."""
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}.")
    return reduction


def non_negative(name: str, value) -> float:
    """``float(value)``, or a ``ValueError`` naming ``name`` unless ``value >= 0`` (NaN too)."""
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value}.")
    return float(value)


def as_count(count: torch.Tensor) -> int | torch.Tensor:
    """A count tensor as a Python int in eager mode; kept a tensor inside ``torch.compile``.

    ``int()`` syncs with the device and breaks a compiled graph; :meth:`MetricLoss.reduce`
    accepts both (the same value, a zero count giving 0 either way).
    """
    return count if is_compiling() else int(count)


def finite_loss(forward: Callable) -> Callable:
    """Decorate a loss's ``forward(self, embeddings, ...)``: a non-finite result raises.

    In eager mode the result is checked with one ``torch.isfinite(result).all()`` (a scalar for
    ``"mean"`` and ``"sum"``); inside ``torch.compile`` the check is left out, as the input check
    is (:func:`~rankmetric.losses.pair_distances.check_batch`). Put it above
    :func:`~rankmetric.losses.precision.mixed_precision`, so that a half-precision result that
    overflows when cast back is caught too.

    Raises
    ------
    ValueError
        The result holds inf or NaN although the embeddings are finite (the input check refuses
        non-finite embeddings first): the message names the embeddings' largest magnitude and
        dtype, and says to normalise them.
    """

    @functools.wraps(forward)
    def wrapper(self, embeddings, *args, **kwargs):
        out = forward(self, embeddings, *args, **kwargs)
        if not is_compiling() and isinstance(out, torch.Tensor) and not _all_finite(out):
            raise ValueError(_non_finite_message(type(self).__name__, out, embeddings))
        return out

    return wrapper


def _all_finite(out: torch.Tensor) -> bool:
    """Whether every entry of ``out`` is finite: one host sync (``item`` for a scalar)."""
    if out.numel() == 1:
        return math.isfinite(out.detach().item())
    return bool(torch.isfinite(out.detach()).all())


def _non_finite_message(name: str, out: torch.Tensor, embeddings) -> str:
    """What :func:`finite_loss` says: the value, the embeddings' scale and dtype, the remedy."""
    value = "NaN" if bool(torch.isnan(out).any()) else "inf"
    if isinstance(embeddings, torch.Tensor) and embeddings.numel():
        dtype = str(embeddings.dtype).removeprefix("torch.")
        out_dtype = str(out.dtype).removeprefix("torch.")
        largest = float(embeddings.detach().abs().amax())
        limit = torch.finfo(out.dtype).max
        return (
            f"{name} is {value} for finite embeddings of magnitude up to {largest:.3g} "
            f"({dtype}): at this scale its arithmetic overflows {out_dtype} (largest "
            f"{limit:.3g}). Normalise the embeddings (e.g. torch.nn.functional.normalize(x, "
            "dim=1)), scale them down or compute in float64; if their scale is ordinary, check "
            "the loss's parameters and injected distance."
        )
    return f"{name} is {value} for finite inputs; check their scale and the loss's parameters."


def check_reference_arguments(name: str, ref_emb, ref_labels) -> None:
    """Refuse ``ref_labels`` without ``ref_emb``: labels of a reference set that is not there
    (every loss, so that none ignores them silently)."""
    if ref_emb is None and ref_labels is not None:
        raise ValueError(
            f"{name}: ref_labels were given without ref_emb (the reference set they label); "
            "pass both, or neither."
        )


class MetricLoss(nn.Module):
    """Base of the metric-learning losses: stores and applies ``reduction``.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}, default="mean"
        How the loss's terms are combined (see the module docstring).

    See Also
    --------
    rankmetric.losses.WARPLoss : The WARCA loss, a subclass.
    rankmetric.losses.TripletLoss : The triplet margin loss, a subclass.
    rankmetric.losses.Miner : The base of the miners that choose pairs or triplets for a loss.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import TripletLoss
    >>> loss_fn = TripletLoss(reduction="none")
    >>> loss_fn.reduction
    'none'
    >>> loss_fn.reduce(torch.tensor([1.0, 3.0])).tolist()
    [1.0, 3.0]
    """

    _repr_fields: tuple[str, ...] = ()  # shown by extra_repr, before the reduction

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

        Parameters
        ----------
        values : tensor
            The candidate terms, attached to the graph.
        mask : bool tensor of the shape of ``values``
            Which terms count.

        Returns
        -------
        tensor
            :meth:`reduce` of the selected terms (``"none"``: the selected terms,
            ``values[mask]``).
        """
        if is_compiling() and self.reduction != "none":
            total = torch.where(mask, values, 0.0).sum()
            if self.reduction == "sum":
                return total
            return self.reduce(total.reshape(1), mask.sum())
        return self.reduce(values[mask])

    def extra_repr(self) -> str:
        """``name=value`` of the attributes named in ``_repr_fields`` (strings quoted), then the
        reduction."""
        values = {name: getattr(self, name) for name in self._repr_fields}
        shown = [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in values.items()]
        return ", ".join([*shown, f"reduction={self.reduction!r}"])


class BatchMetricLoss(MetricLoss, metaclass=abc.ABCMeta):
    """Base of the losses of a labelled batch, with pytorch-metric-learning's call.

    The one ``forward(embeddings, labels, indices_tuple=None, ref_emb=None, ref_labels=None)``:
    the result guard (:func:`finite_loss`), half precision
    (:func:`~rankmetric.losses.precision.mixed_precision`) and the batch check
    (:func:`~rankmetric.losses.pair_distances.check_batch`) are applied here, then the subclass's
    :meth:`batch_loss` computes the loss; the loss's Notes say how it reads ``indices_tuple``
    and ``ref_emb`` and what ``reduction="none"`` returns.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}, default="mean"

    See Also
    --------
    MetricLoss : the base that applies ``reduction``.

    Examples
    --------
    >>> import torch
    >>> class MeanNorm(BatchMetricLoss):
    ...     def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
    ...         return self.reduce(embeddings.norm(dim=1))
    >>> MeanNorm()(torch.ones(2, 4), torch.tensor([0, 1]))
    tensor(2.)
    """

    #: Whether the batch may be SPD matrices ``(B, c, c)`` (a loss over an SPD metric).
    accepts_matrices: bool = False

    @finite_loss
    @mixed_precision
    def forward(
        self,
        embeddings: torch.Tensor,
        labels: torch.Tensor,
        indices_tuple: tuple[torch.Tensor, ...] | None = None,
        ref_emb: torch.Tensor | None = None,
        ref_labels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The loss of a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, d), or (B, c, c) for a loss over an SPD metric
        labels : integer tensor of shape (B,)
        indices_tuple : tuple of int64 tensors, optional
            Mined pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` (from a
            :mod:`~rankmetric.losses.miners` miner or a pytorch-metric-learning one), in place of
            the loss's own choice of terms; how each loss reads them: its Notes.
        ref_emb : tensor of shape (M, d) or (M, c, c), optional
            Reference set the pairs' second members come from (default: the batch).
        ref_labels : integer tensor of shape (M,), optional
            Labels of ``ref_emb``.

        Returns
        -------
        scalar tensor, or the terms with ``reduction="none"`` (shape: the loss's Notes); 0,
        still attached to the graph, when the batch has no term.
        """
        labels = check_batch(embeddings, labels, allow_matrices=self.accepts_matrices)
        check_reference_arguments(type(self).__name__, ref_emb, ref_labels)
        return self.batch_loss(embeddings, labels, indices_tuple, ref_emb, ref_labels)

    @abc.abstractmethod
    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels) -> torch.Tensor:
        """The loss of a checked batch (``labels`` int64 on the embeddings' device).

        Parameters
        ----------
        embeddings : tensor of shape (B, d), or (B, c, c) when :attr:`accepts_matrices`
            The batch, checked by :meth:`forward`.
        labels : int64 tensor of shape (B,)
            Their class labels.
        indices_tuple : tuple of tensors or None
            Mined pairs or triplets (PML's shapes), or None for every pair of the batch.
        ref_emb, ref_labels : tensor or None
            A reference set the batch is compared with (e.g. a cross-batch memory), or None.

        Returns
        -------
        tensor
            The loss, reduced by the loss's ``reduction``.
        """
