"""The ``torch.distributed`` primitives every layer uses: rank, world size, all-reduces.

One home for the collective operations that the training loop (:mod:`rankmetric.training`),
the losses (:mod:`rankmetric.losses.potato`) and :mod:`rankmetric.distributed` need. Each is a
no-op (or returns its input) when no process group with more than one rank is running, so code
written for one process runs unchanged under ``torchrun``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.distributed as dist

__all__ = [
    "all_reduce_max",
    "all_reduce_mean",
    "all_reduce_sum_",
    "average_gradients",
    "is_distributed",
    "is_main_process",
    "rank",
    "world_size",
]


def _initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def is_distributed() -> bool:
    """Whether a ``torch.distributed`` process group with more than one rank is running."""
    return _initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This process's rank (0 when not distributed)."""
    return dist.get_rank() if _initialized() else 0


def world_size() -> int:
    """Number of processes (1 when not distributed)."""
    return dist.get_world_size() if _initialized() else 1


def is_main_process() -> bool:
    """Whether this process is rank 0 (always, when not distributed): the one that writes files."""
    return rank() == 0


def all_reduce_sum_(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` over ranks *in place* and return it (untouched when not distributed)."""
    if is_distributed():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def all_reduce_mean(tensor: torch.Tensor) -> torch.Tensor:
    """Mean of ``tensor`` over ranks, as a new tensor (``tensor`` itself is left untouched).

    Parameters
    ----------
    tensor : tensor of any shape
        Same shape on every rank (CPU tensors with gloo, CUDA tensors with NCCL).

    Returns
    -------
    tensor of the same shape (a copy of ``tensor`` when not distributed).
    """
    out = all_reduce_sum_(tensor.detach().clone())
    return out.div_(world_size()) if is_distributed() else out


def all_reduce_max(value: int, device: torch.device) -> int:
    """Largest integer ``value`` over ranks (``value`` itself when not distributed)."""
    if not is_distributed():
        return value
    t = torch.tensor([value], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def average_gradients(params: Iterable[torch.Tensor]) -> None:
    """Average the gradients of ``params`` over ranks, in place (a no-op when not distributed)."""
    if not is_distributed():
        return
    world = world_size()
    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world)
