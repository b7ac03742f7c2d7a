"""Half-precision input for the public SPD functions: computed in float32, returned as given.

``torch.linalg.eigh``/``cholesky`` have no float16/bfloat16 kernels on the CPU, and half
precision could not resolve the eigenvalue gaps of an SPD matrix anyway, so the public entry
points of :mod:`rankmetric.geometry` (wrapped once, in its ``__init__``) cast float16/bfloat16
tensors to float32, call the function, and cast the tensors they return back to the input's
dtype. Other dtypes pass through untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

__all__ = ["half_as_float32"]

_HALF = (torch.float16, torch.bfloat16)


def half_as_float32(fn: Callable) -> Callable:
    """Wrap ``fn`` so that float16/bfloat16 tensor arguments are computed in float32."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        half = [t.dtype for t in tensors if t.dtype in _HALF]
        if not half:
            return fn(*args, **kwargs)

        def up(a):
            return a.float() if isinstance(a, torch.Tensor) and a.dtype in _HALF else a

        out = fn(*(up(a) for a in args), **{k: up(v) for k, v in kwargs.items()})
        dtype = half[0]
        if isinstance(out, tuple):
            return tuple(o.to(dtype) if isinstance(o, torch.Tensor) else o for o in out)
        return out.to(dtype) if isinstance(out, torch.Tensor) else out

    return wrapper
