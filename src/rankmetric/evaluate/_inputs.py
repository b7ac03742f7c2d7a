"""Input checks shared by the evaluation functions (embeddings, labels, neighbour counts)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from numbers import Integral

import numpy as np
import torch

from .._utils import resolve_device
from .._validation import Interval, as_label_array, check_param, encode_labels
from ..neighbors import squared_norms

__all__ = [
    "as_embeddings",
    "as_label_array",
    "check_int",
    "check_ks",
    "embedding_tensors",
    "encode_labels",
]


def check_int(value, name: str, low: int = 1) -> int:
    """``value`` as an int if it is an integer (not a bool) ``>= low``, else ``ValueError``."""
    check_param(name, value, [Interval(Integral, low, None, closed="left")])
    return int(value)


def embedding_tensors(first, second, names: tuple[str, str], device) -> tuple:
    """``first`` and ``second`` (None stays None) checked by :func:`as_embeddings`, on the
    resolved ``device``, in one precision (float64 if either input is double, else float32),
    with the same number of features."""
    double = (np.float64, torch.float64)
    dtype = (
        torch.float64
        if any(getattr(a, "dtype", None) in double for a in (first, second))
        else torch.float32
    )
    dev = resolve_device(device)
    A = as_embeddings(first, names[0], dev, dtype)
    if second is None:
        return A, None
    B = as_embeddings(second, names[1], dev, dtype)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"{names[0]} has {A.shape[1]} features but {names[1]} has {B.shape[1]}.")
    return A, B


def as_embeddings(X, name: str, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Validate a 2-D array of embeddings and return it as a detached tensor on ``device``.

    Parameters
    ----------
    X : array-like or tensor of shape (n_samples, n_features)
    name : str
        Used in error messages.
    device, dtype
        Where and in which precision the tensor is returned.

    Returns
    -------
    tensor of shape (n_samples, n_features)
    """
    if isinstance(X, torch.Tensor):
        X = X.detach()
        if X.is_complex():
            raise ValueError(f"{name} must be real-valued, got {X.dtype}.")
    else:
        X = np.asarray(X)
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.iscomplexobj(X):
            raise ValueError(f"{name} must hold real numbers, got dtype {X.dtype}.")
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, n_features), got {tuple(X.shape)}.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(X.shape)}).")
    if isinstance(X, torch.Tensor):
        T = X.to(device=device, dtype=dtype)
    else:
        with warnings.catch_warnings():  # a read-only (memory-mapped) array: never written to
            warnings.filterwarnings("ignore", message=".*not writable.*", category=UserWarning)
            T = torch.as_tensor(np.ascontiguousarray(X), dtype=dtype, device=device)
    # one pass: a NaN or infinite entry makes its row's squared norm NaN or infinite too
    if bool(torch.isfinite(squared_norms(T)).all()):
        return T.contiguous()
    if not bool(torch.isfinite(T).all()):
        raise ValueError(f"{name} contains NaN or infinity.")
    raise ValueError(
        f"{name} has values too large for {dtype} distances (squared norms overflow): rescale it."
    )


def check_ks(ks, n_candidates: int, name: str = "k") -> tuple[int, ...]:
    """Validate neighbour counts: positive integers no larger than ``n_candidates``.

    ``ks`` may be one integer or an iterable; the result is a sorted tuple without duplicates.
    """
    if isinstance(ks, Integral):
        values = (ks,)
    elif isinstance(ks, Iterable) and not isinstance(ks, (str, bytes)):
        values = tuple(ks)
    else:
        raise ValueError(f"{name} must be a positive integer or a list of them, got {ks!r}.")
    if not values:
        raise ValueError(f"{name} is empty.")
    for k in values:
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"{name} must hold positive integers, got {k!r}.")
        if k > n_candidates:
            raise ValueError(
                f"{name}={k} is larger than the {n_candidates} gallery item(s) that can be ranked."
            )
    return tuple(sorted({int(k) for k in values}))
