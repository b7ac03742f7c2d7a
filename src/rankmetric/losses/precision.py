"""Mixed precision for the losses: half-precision inputs are computed in float32.

float16 and bfloat16 lack the range and the kernels (``eigh`` on the CPU, exact prefix sums of
distances, log-sum-exp over large batches) that the losses need, so :func:`mixed_precision`
runs a loss's ``forward`` on float32 copies of its half-precision tensors, with autocast off, and
returns the result in the input's dtype — what torch's own losses do for a half tensor. Under
``torch.autocast`` the result is float32, as for the losses on autocast's float32 list
(``cross_entropy``, ``nll_loss``, ...). float32 and float64 inputs outside autocast take the loss
unchanged (no copy).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

__all__ = ["HALF_DTYPES", "compute_dtype", "mixed_precision", "is_compiling", "autocast_enabled"]

HALF_DTYPES = (torch.float16, torch.bfloat16)


def is_compiling() -> bool:
    """Whether the code is being traced by ``torch.compile`` (torch ≥ 2.2)."""
    check = getattr(torch.compiler, "is_compiling", None)  # torch >= 2.3
    if check is not None:
        return check()
    from torch._dynamo import is_compiling as dynamo_is_compiling  # torch 2.2

    return dynamo_is_compiling()


def autocast_enabled(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` (torch ≥ 2.2)."""
    try:
        return torch.is_autocast_enabled(device_type)  # torch >= 2.4
    except TypeError:
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return device_type == "cuda" and torch.is_autocast_enabled()


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for float16 / bfloat16, else ``dtype`` itself."""
    return torch.float32 if dtype in HALF_DTYPES else dtype


def _up(value):
    if isinstance(value, torch.Tensor) and value.dtype in HALF_DTYPES:
        return value.float()
    return value


def mixed_precision(forward: Callable) -> Callable:
    """Decorate a loss's ``forward(self, embeddings, labels, ...)`` for half precision.

    The embeddings and a ``ref_emb`` keyword in float16 / bfloat16 are cast to float32, autocast
    is disabled inside, and the result is cast back to the embeddings' dtype (kept float32 under
    autocast).
    """

    @functools.wraps(forward)
    def wrapper(self, embeddings, *args, **kwargs):
        if not isinstance(embeddings, torch.Tensor):
            return forward(self, embeddings, *args, **kwargs)
        device_type = embeddings.device.type
        autocast = autocast_enabled(device_type)
        dtype = embeddings.dtype
        if dtype not in HALF_DTYPES and not autocast:
            return forward(self, embeddings, *args, **kwargs)
        kwargs = {key: _up(value) if key == "ref_emb" else value for key, value in kwargs.items()}
        with torch.autocast(device_type, enabled=False):
            out = forward(self, _up(embeddings), *args, **kwargs)
        if autocast or dtype not in HALF_DTYPES:
            return out
        return out.to(dtype)

    return wrapper
