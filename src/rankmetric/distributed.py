"""Data-parallel training on ``torch.distributed`` (started by ``torchrun``), exact by design.

Every rank holds the whole training set and the same NumPy generator. Each step, every rank
draws the *same global batch* from that generator and keeps its own contiguous slice of it
(:func:`shard`), so the generators stay in step and a run on ``W`` processes computes what one
process computes on the global batch — only the work is split. Two kinds of loss occur:

* **decomposable** (a mean over pairs or rows: WARCA's sampled pairs, SSNE's pairs): each rank
  sums the terms of its slice and :func:`global_mean` turns that into the global mean, whose
  value is the same on every rank and whose gradient, once the training loop has averaged it
  over ranks (``_distributed.average_gradients``), is the single-process gradient;
* **batch-coupled** (RPL's potato loss, triplets: every sample meets every other): each rank
  embeds its slice, :func:`all_gather_with_grad` assembles the global batch of embeddings on
  every rank and the whole loss is computed on it. Its backward sums the embeddings' gradients
  over ranks before returning each rank its own slice, so again the averaged gradient is the
  single-process gradient.

Neither case leaves a ``world_size`` factor to the user; ``docs/scaling.md`` derives both.

The collective primitives (:func:`is_distributed`, :func:`rank`, :func:`world_size`,
:func:`all_reduce_mean`, and the sum / max all-reduces and gradient averaging that the training
loop and the losses use) live in the bottom-layer module ``rankmetric._distributed`` and are
re-exported here.
"""

from __future__ import annotations

import os
from typing import TypeVar

import numpy as np
import torch
import torch.distributed as dist

from ._distributed import all_reduce_mean, all_reduce_sum_, is_distributed, rank, world_size
from .sampling import LabelIndex

__all__ = [
    "BACKENDS",
    "is_distributed",
    "rank",
    "world_size",
    "init_from_env",
    "shard_bounds",
    "shard",
    "all_reduce_mean",
    "all_gather_with_grad",
    "global_mean",
    "GatheredLoss",
    "ShardedLabelIndex",
]

BACKENDS = ("gloo", "nccl")
#: Environment variables ``torchrun`` sets and :func:`init_from_env` needs.
_ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")

Sliceable = TypeVar("Sliceable", np.ndarray, torch.Tensor)


def init_from_env(backend: str | None = None) -> bool:
    """Join the process group described by ``torchrun``'s environment variables.

    A no-op returning ``False`` when ``WORLD_SIZE`` is unset or 1, and ``True`` without doing
    anything when a group is already running. Under ``torchrun --nproc_per_node N`` every
    estimator's ``fit`` calls this, so ``rankmetric fit ...`` needs no change.

    Parameters
    ----------
    backend : {"gloo", "nccl"} or None
        ``None`` picks NCCL when CUDA is available (and binds the process to the GPU
        ``LOCAL_RANK``), gloo otherwise.

    Returns
    -------
    bool
        Whether a multi-process group is running afterwards.

    Raises
    ------
    ValueError
        On an unknown backend, a missing ``RANK``/``MASTER_ADDR``/``MASTER_PORT``, or NCCL
        without CUDA.
    """
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}.")
    if dist.is_available() and dist.is_initialized():
        return is_distributed()
    text = os.environ.get("WORLD_SIZE", "1")
    try:
        if int(text) <= 1:
            return False
    except ValueError as exc:
        raise ValueError(f"WORLD_SIZE must be an integer, got {text!r}.") from exc
    missing = [name for name in _ENV_VARS if name not in os.environ]
    if missing:
        raise ValueError(
            f"WORLD_SIZE > 1 but {', '.join(missing)} is not set; start the processes with "
            "torchrun (or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)."
        )
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise ValueError("backend='nccl' needs CUDA; use backend='gloo' on CPUs.")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend, init_method="env://")
    return is_distributed()


def shard_bounds(
    n: int, rank_: int | None = None, world_size_: int | None = None
) -> tuple[int, int]:
    """``(start, stop)`` of a rank's contiguous slice of ``n`` items.

    Slices differ in length by at most one and cover ``0..n`` in rank order.

    Parameters
    ----------
    n : int
        Items in the global batch.
    rank_, world_size_ : int, optional
        Default: this process's rank and the world size.
    """
    r = rank() if rank_ is None else rank_
    w = world_size() if world_size_ is None else world_size_
    if n < 0 or w < 1 or not 0 <= r < w:
        raise ValueError(f"need n >= 0 and 0 <= rank < world_size, got {n}, {r}, {w}.")
    return n * r // w, n * (r + 1) // w


def shard(items: Sliceable) -> Sliceable:
    """This rank's contiguous slice (along the first axis) of a globally drawn batch.

    Parameters
    ----------
    items : ndarray or tensor of shape (n, ...)
        The global batch, identical on every rank.

    Returns
    -------
    ndarray or tensor of shape (n_local, ...)
        A view; the whole input when not distributed.
    """
    start, stop = shard_bounds(len(items))
    return items[start:stop]


def _gather_lengths(n_local: int, device: torch.device) -> list[int]:
    """First-axis length of every rank's tensor."""
    lengths = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world_size())]
    dist.all_gather(lengths, torch.tensor([n_local], dtype=torch.int64, device=device))
    return [int(n) for n in lengths]


class _AllGatherWithGrad(torch.autograd.Function):
    """Concatenate every rank's tensor; backward: this rank's slice of the rank-summed gradient."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        lengths = _gather_lengths(x.shape[0], x.device)
        longest = max(lengths)
        padded = x.new_zeros((longest, *x.shape[1:]))
        padded[: x.shape[0]] = x
        parts = [torch.empty_like(padded) for _ in lengths]
        dist.all_gather(parts, padded.contiguous())
        ends = np.cumsum([0, *lengths])
        ctx.bounds = (int(ends[rank()]), int(ends[rank() + 1]))
        return torch.cat([part[:n] for part, n in zip(parts, lengths, strict=True)])

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = all_reduce_sum_(grad.contiguous().clone())
        start, stop = ctx.bounds
        return grad[start:stop]


def all_gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Every rank's ``x`` concatenated in rank order, differentiable.

    Backward returns to each rank its slice of the gradient *summed over ranks*. When every
    rank computes the same loss ``L`` on the gathered tensor, rank ``k``'s parameters thus get
    ``W · ∂L/∂θ`` through its own rows only, and the training loop's average over ranks is
    exactly ``∂L/∂θ``: no ``world_size`` factor is needed. (This is what
    ``torch.distributed.nn.functional.all_gather`` does with a reduce-scatter; gloo has no
    reduce-scatter, hence an all-reduce here.)

    Parameters
    ----------
    x : tensor of shape (n_local, ...)
        This rank's rows; ``n_local`` may differ between ranks, the other axes may not.

    Returns
    -------
    tensor of shape (sum of n_local over ranks, ...)
        ``x`` itself when not distributed.
    """
    if not is_distributed():
        return x
    return _AllGatherWithGrad.apply(x)


class GatheredLoss(torch.nn.Module):
    """A batch loss on the global batch of your own ``DistributedDataParallel`` loop.

    Each rank embeds its own shard; ``GatheredLoss(loss)(embeddings, labels)`` gathers every
    rank's embeddings (:func:`all_gather_with_grad`) and labels in rank order and returns
    ``loss`` of the global batch, the same value on every rank. After ``backward()`` and DDP's
    average of the parameter gradients over ranks, the gradient is exactly that of one process
    computing ``loss`` on the global batch (``tests/distributed`` checks it with two gloo
    processes). Without a process group it is ``loss`` itself.

    Parameters
    ----------
    loss : callable
        ``loss(embeddings, labels, *args, **kwargs)``, e.g. any loss of
        :mod:`rankmetric.losses` (a mined ``indices_tuple`` must then index the global batch).

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import MultiSimilarityLoss
    >>> loss_fn = GatheredLoss(MultiSimilarityLoss())
    >>> emb = torch.randn(8, 4, requires_grad=True)  # ddp_model(x) on each rank
    >>> loss_fn(emb, torch.arange(8) % 2).backward()
    """

    def __init__(self, loss) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, embeddings: torch.Tensor, labels, *args, **kwargs) -> torch.Tensor:
        labels = torch.as_tensor(labels, device=embeddings.device)
        gathered = all_gather_with_grad(embeddings)
        return self.loss(gathered, all_gather_with_grad(labels), *args, **kwargs)


class _SumOverRanks(torch.autograd.Function):
    """Forward: the sum over ranks; backward: ``world_size ×`` the incoming gradient."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return all_reduce_sum_(x.detach().clone())

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad * world_size()


def global_mean(local_sum: torch.Tensor, n_total: int) -> torch.Tensor:
    """Mean over a sharded global batch, from this rank's sum of its terms.

    The value, ``Σ_ranks local_sum / n_total``, is the same on every rank (one scalar
    all-reduce), so logging and early stopping agree across ranks. The gradient reaching
    ``local_sum`` is ``world_size / n_total``: after the training loop averages gradients
    over ranks, the parameters get ``∂/∂θ (Σ_all terms / n_total)``, the single-process
    gradient, whatever the sizes of the slices.

    Parameters
    ----------
    local_sum : scalar tensor
        Sum of the loss terms of this rank's slice.
    n_total : int
        Number of terms in the global batch.

    Returns
    -------
    scalar tensor
    """
    if n_total < 1:
        raise ValueError(f"n_total must be a positive integer, got {n_total!r}.")
    if not is_distributed():
        return local_sum / n_total
    return _SumOverRanks.apply(local_sum) / n_total


class ShardedLabelIndex:
    """A :class:`~rankmetric.sampling.LabelIndex` whose draws are global and whose rows are local.

    :meth:`positive_pairs` draws the global batch of pairs from the shared generator and
    returns this rank's slice; :meth:`negatives`, asked for the negatives of that slice's
    anchors, draws them for the *global* anchors (consuming the generator exactly as one
    process would) and returns this rank's rows. Every other attribute is the wrapped index's.
    So a sampler written for one process (``losses.warp.sampled_warp_loss`` with
    ``sampling="batched"`` or ``"exact"``) runs on a shard unchanged, and every rank's
    generator stays in step with the single-process run.

    Parameters
    ----------
    index : LabelIndex
        The training labels (the same on every rank).
    """

    def __init__(self, index: LabelIndex) -> None:
        self.index = index
        self._global_anchors: np.ndarray | None = None
        self._local_anchors: np.ndarray | None = None

    def __getattr__(self, name: str):
        return getattr(self.index, name)

    def positive_pairs(
        self, n_pairs: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """This rank's slice of ``n_pairs`` globally drawn positive pairs ``(i, j)``."""
        first, second = self.index.positive_pairs(n_pairs, rng)
        self._global_anchors, self._local_anchors = first, shard(first)
        return self._local_anchors, shard(second)

    def negatives(
        self, anchors: np.ndarray, n_per_anchor: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Negatives of the global anchors of the last :meth:`positive_pairs`, this rank's rows.

        Returns an array of shape (len(anchors), n_per_anchor).

        Raises
        ------
        ValueError
            When ``anchors`` are not this rank's anchors of the last draw (a sampler that
            asks for negatives of other anchors cannot be sharded this way).
        """
        if self._local_anchors is None or not np.array_equal(anchors, self._local_anchors):
            raise ValueError(
                "ShardedLabelIndex.negatives serves the anchors of the last positive_pairs draw "
                "only; this sampler cannot be sharded (use it on every rank unsharded)."
            )
        return shard(self.index.negatives(self._global_anchors, n_per_anchor, rng))
