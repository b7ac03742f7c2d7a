"""What an index needs from a model: its transform, its metric, and whether it is linear."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import numpy as np

from ..estimators.base import MahalanobisMixin
from ..estimators.ssne import SSNE

#: Rows embedded at once when a catalogue is added (bounded memory: the chunk, not the whole).
EMBED_CHUNK = 65_536


def implied_metric(model) -> str:
    """The metric a model's embedding is compared with: cosine on SSNE's sphere, else Euclidean."""
    return "cosine" if isinstance(model, SSNE) else "euclidean"


def linear_map(model) -> np.ndarray | None:
    """``L`` (r, D) when ``transform(X) = X @ L.T`` (the Mahalanobis learners), else None."""
    if isinstance(model, MahalanobisMixin) and getattr(model, "components_", None) is not None:
        return np.asarray(model.components_, dtype=np.float32)
    return None


def transform_of(model) -> Callable[[np.ndarray], np.ndarray] | None:
    """The callable that embeds raw rows: ``model.transform``, a plain callable, or None."""
    if model is None:
        return None
    if hasattr(model, "transform") and callable(model.transform):
        return model.transform
    if callable(model):
        return model
    raise ValueError(
        "model must be a fitted estimator with transform(X), a callable X -> embeddings, or "
        f"None for precomputed embeddings; got {type(model).__name__}."
    )


def as_float32_rows(E, name: str) -> np.ndarray:
    """``E`` as a C-contiguous float32 (n, d) array of finite values (no copy if it is one)."""
    if hasattr(E, "detach"):  # a torch tensor
        E = E.detach().cpu().numpy()
    E = np.asarray(E)
    if E.dtype.kind not in "fiub":
        raise ValueError(f"{name} must hold real numbers, got dtype {E.dtype}.")
    if E.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, n_features), got {E.shape}.")
    E = np.ascontiguousarray(E, dtype=np.float32)
    if E.size and not np.isfinite(E).all():
        raise ValueError(f"{name} contains NaN or infinity (or values too large for float32).")
    return E


def embedded_chunks(
    transform: Callable | None, X, chunk: int = EMBED_CHUNK
) -> Iterator[tuple[slice, np.ndarray]]:
    """``(rows, embeddings)`` of successive chunks of ``X``: never the whole catalogue at once.

    ``X`` may be memory-mapped; each chunk is read, embedded and handed on before the next.
    """
    n = len(X)
    for start in range(0, n, chunk):  # loop over chunks of rows, not samples
        rows = slice(start, min(start + chunk, n))
        block = X[rows]
        if transform is not None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*not writable.*")
                block = transform(np.asarray(block))
        yield rows, as_float32_rows(block, "the embeddings" if transform else "X")
