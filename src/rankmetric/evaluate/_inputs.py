"""Input checks shared by the evaluation functions (embeddings, labels, neighbour counts)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from numbers import Integral

import numpy as np
import torch

from .._validation import as_label_array, encode_labels
from ..neighbors import squared_norms

__all__ = [
    "as_embeddings",
    "as_label_array",
    "encode_labels",
    "check_same_width",
    "check_ks",
    "compute_dtype",
]


def compute_dtype(*arrays) -> torch.dtype:
    """``torch.float64`` if any input is double precision, else ``torch.float32``."""
    for a in arrays:
        if a is not None and getattr(a, "dtype", None) in (np.float64, torch.float64):
            return torch.float64
    return torch.float32


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
    T = X.to(device=device, dtype=dtype) if isinstance(X, torch.Tensor) else None
    if T is None:
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


def check_same_width(A: torch.Tensor, B: torch.Tensor, a: str, b: str) -> None:
    """Raise unless ``A`` and ``B`` have the same number of columns."""
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"{a} has {A.shape[1]} features but {b} has {B.shape[1]}.")


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
