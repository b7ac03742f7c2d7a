"""Input validation shared by every estimator, loss and metric.

Each check raises a ``ValueError`` whose message names the problem, so that bad input never
turns into a silent wrong answer.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import type_of_target

__all__ = [
    "check_labels",
    "check_finite",
    "check_min_per_class",
    "check_spd_array",
]


def check_finite(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Raise if ``X`` holds NaN or infinity."""
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return X


def check_labels(
    y, n_samples: int | None = None, *, min_classes: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Validate class labels and encode them as integers ``0..Q-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (integers or strings).
    n_samples : int, optional
        Expected number of labels (the number of rows of ``X``).
    min_classes : int, default=2
        Fewest distinct classes the caller can learn from.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels.
    codes : ndarray of shape (n_samples,), dtype int64
        ``classes[codes] == y``.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different lengths: {n_samples} samples but {y.shape[0]} labels."
        )
    if y.shape[0] == 0:
        raise ValueError("y is empty.")
    kind = type_of_target(y, input_name="y", raise_unknown=True)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"y must hold class labels, got target type {kind!r}.")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.shape[0] < min_classes:
        raise ValueError(
            f"y has {classes.shape[0]} class(es); at least {min_classes} are needed "
            "to learn a metric."
        )
    return classes, codes.astype(np.int64)


def check_min_per_class(codes: np.ndarray, minimum: int = 2, what: str = "positive pairs") -> None:
    """Raise unless at least one class has ``minimum`` samples (needed to form ``what``)."""
    counts = np.bincount(codes)
    if counts.max() < minimum:
        raise ValueError(
            f"every class has fewer than {minimum} samples, so no {what} can be formed."
        )


def check_spd_array(X, name: str = "X", *, rtol: float = 1e-6) -> np.ndarray:
    """Validate a stack of symmetric positive-definite matrices of shape (n, c, c)."""
    X = np.asarray(X)
    if X.ndim != 3 or X.shape[1] != X.shape[2]:
        raise ValueError(f"{name} must have shape (n_matrices, c, c), got {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    check_finite(X, name)
    asym = np.abs(X - np.swapaxes(X, 1, 2)).max(axis=(1, 2))
    scale = np.abs(X).max(axis=(1, 2)) + np.finfo(X.dtype).tiny
    if np.any(asym > rtol * scale * 10 + 1e-12):
        bad = int(np.argmax(asym / scale))
        raise ValueError(f"{name}[{bad}] is not symmetric.")
    eig_min = np.linalg.eigvalsh(X).min(axis=1)
    if np.any(eig_min <= 0):
        bad = int(np.argmin(eig_min))
        raise ValueError(
            f"{name}[{bad}] is not positive definite (smallest eigenvalue {eig_min[bad]:.3g})."
        )
    return X
