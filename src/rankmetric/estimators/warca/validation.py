"""WARCA's validation: the early-stopping set, its scorer, and the check against Euclidean.

The validation convention of ``docs/architecture.md`` ("Validation") for linear and kernel WARCA:
``fit(X, y, X_val, y_val)`` or ``validation_fraction`` / ``validation_split``
(:func:`split_training_set`), scored by leave-one-out retrieval among the validation items (or,
``validation_metric="knn"``, k-NN accuracy against training points; :func:`make_validator`),
and the comparison of the fitted metric with the Euclidean distance of the inputs
(:func:`compare_with_euclidean`, ``reference_scores_``,
:class:`~rankmetric.training.UntrainedModelWarning`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from sklearn.utils.validation import validate_data

from ..._utils import to_tensor
from ..._validation import check_labels
from ...evaluate.knn import knn_accuracy
from ...training import (
    RETRIEVAL_METRICS,
    retrieval_score,
    retrieval_validator,
    sample_retrieval_items,
    split_validation,
)
from .._early_stopping import MAX_REFERENCE_ITEMS, warn_if_below_reference

__all__ = ["VALIDATION_K", "VALIDATION_METRICS", "VALIDATION_REFERENCE_SIZE"]

#: Training points the validation k-NN searches (a fixed random subset when there are more).
VALIDATION_REFERENCE_SIZE = 5000
#: Neighbours of the validation k-NN vote.
VALIDATION_K = 3
#: ``validation_metric``: leave-one-out retrieval among the validation items, or (``"knn"``, the
#: only score before 0.2) k-NN accuracy of the validation items against training points.
VALIDATION_METRICS = (*RETRIEVAL_METRICS, "knn")


def _fraction(est) -> float:
    """``validation_fraction``, 0 for KernelWARCA's deprecated ``"auto"`` (no early stopping;
    its check on unseen identities is now every learner's ``held_out_check``)."""
    return 0.0 if est.validation_fraction == "auto" else float(est.validation_fraction)


def _check_validation_set(est, X_val, y_val, classes: np.ndarray):
    """The given early-stopping set, validated: ``(X_val, val_codes)``.

    ``val_codes`` index ``classes`` for ``validation_metric="knn"``; otherwise they are the
    validation set's own label codes (its identities need not occur in training).
    """
    if X_val is None or y_val is None:
        raise ValueError("early stopping needs both X_val and y_val.")
    if _fraction(est) > 0:
        raise ValueError(
            f"validation_fraction={est.validation_fraction} holds a validation set out of "
            "(X, y): give either it or X_val, y_val, not both."
        )
    X_val = validate_data(est, X_val, reset=False, dtype=[np.float32, np.float64])
    y_val = np.asarray(y_val)
    val_codes = check_labels(y_val, X_val.shape[0], min_classes=1)[1]
    if est.validation_metric == "knn":
        unknown = np.setdiff1d(y_val, classes)
        if unknown.size:
            raise ValueError(
                f"y_val has labels not seen in y: {unknown[:5].tolist()}; "
                "validation_metric='knn' votes among training points, so it needs them. "
                "validation_metric='recall@1' or 'map' scores held-out identities."
            )
        return X_val, np.searchsorted(classes, y_val)
    _check_retrieval_codes(val_codes, "y_val")
    return X_val, val_codes


def split_training_set(
    est, X, codes, classes, X_val, y_val, rng, *, precomputed=False, cameras=None
):
    """``(X, codes, X_val, val_codes, cameras)``: the training rows and the validation set.

    The validation set is ``(X_val, y_val)`` when given (validated against ``est``), else
    ``validation_fraction`` of ``(X, y)`` held out by ``validation_split`` (for ``precomputed``
    kernels, the rows and columns of the training kernel are split alike), else none
    (``None, None``). ``cameras`` (per-row camera codes, or None) come back for the training
    rows.
    """
    if X_val is not None or y_val is not None:
        return (X, codes, *_check_validation_set(est, X_val, y_val, classes), cameras)
    if _fraction(est) == 0:
        return X, codes, None, None, cameras
    if est.validation_metric == "knn" and est.validation_split == "groups":
        raise ValueError(
            "validation_metric='knn' votes among training points of the validation classes: "
            "it cannot score the unseen classes of validation_split='groups'; use "
            "validation_metric='recall@1' or 'map'."
        )
    train_idx, val_idx = split_validation(codes, _fraction(est), est.validation_split, rng)
    if val_idx.size == 0:
        return X, codes, None, None, cameras
    train_classes, train_codes = np.unique(codes[train_idx], return_inverse=True)
    if est.validation_metric == "knn":
        val_codes = np.searchsorted(train_classes, codes[val_idx])
    else:
        val_codes = codes[val_idx]
        _check_retrieval_codes(val_codes, "the held-out validation set")
    cameras = None if cameras is None else cameras[train_idx]
    if precomputed:  # kernel rows against the training columns
        X_train, X_val = X[np.ix_(train_idx, train_idx)], X[np.ix_(val_idx, train_idx)]
    else:
        X_train, X_val = X[train_idx], X[val_idx]
    return X_train, train_codes, X_val, val_codes, cameras


def make_validator(
    metric: str,
    embed: Callable[[torch.Tensor], torch.Tensor],
    embed_val: Callable[[torch.Tensor | None], torch.Tensor],
    codes: np.ndarray,
    val_codes: np.ndarray,
    rng: np.random.Generator,
    device: torch.device,
) -> Callable[[], float]:
    """The validation score ``metric`` (a ``validation_metric``).

    Retrieval metrics rank at most ``MAX_VALIDATION_ITEMS`` validation items (every class its
    share) leave-one-out among themselves; ``"knn"`` is the k-NN accuracy (k=3) of the
    validation set against a fixed subset of training points. ``embed(indices)`` embeds
    training rows, ``embed_val(indices)`` validation rows (``None``: all).
    """
    if metric != "knn":
        items = sample_retrieval_items(val_codes, rng)
        index = torch.as_tensor(items, device=device)
        return retrieval_validator(
            lambda: embed_val(index), torch.as_tensor(val_codes[items], device=device), metric
        )
    n = codes.shape[0]
    ref = (
        np.sort(rng.choice(n, VALIDATION_REFERENCE_SIZE, replace=False))
        if (n > VALIDATION_REFERENCE_SIZE)
        else np.arange(n)
    )
    ref_index = torch.as_tensor(ref, device=device)

    def validate() -> float:
        with torch.no_grad():
            ref_emb, val_emb = embed(ref_index), embed_val(None)
        return knn_accuracy(ref_emb, codes[ref], val_emb, val_codes, k=VALIDATION_K)

    return validate


def compare_with_euclidean(
    est,
    embed_rows: Callable[[np.ndarray], torch.Tensor],
    X: np.ndarray,
    codes: np.ndarray | None,
    X_val: np.ndarray | None,
    val_codes: np.ndarray | None,
    rng: np.random.Generator,
    device: torch.device,
) -> None:
    """Set ``est.reference_scores_``: the fitted metric against the inputs' Euclidean distance.

    Leave-one-out recall@1 (or, ``validation_metric="map"``, mAP) of ``embed_rows(rows)`` and of
    the rows themselves on at most ``MAX_REFERENCE_ITEMS`` items (every class its share): validation
    items when there are (``X_val``), else training items; a learned score below the Euclidean
    one issues an :class:`~rankmetric.training.UntrainedModelWarning` (the class name and its
    ``_untrained_hint`` in its text). None when there are no labels (fitted from pairs or
    triplets) or no label has two items. The draws come after training: the fitted model does
    not depend on them.
    """
    on_validation = X_val is not None
    rows_X, rows_codes = (X_val, val_codes) if on_validation else (X, codes)
    est.reference_scores_ = None
    if rows_codes is None or np.bincount(rows_codes).max() < 2:
        return
    items = sample_retrieval_items(rows_codes, rng, MAX_REFERENCE_ITEMS)
    rows = rows_X[items]
    item_codes = torch.as_tensor(rows_codes[items], device=device)
    metric = "map" if est.validation_metric == "map" else "recall@1"
    with torch.no_grad():
        learned = retrieval_score(embed_rows(rows), item_codes, metric)
        reference = retrieval_score(to_tensor(rows, device), item_codes, metric)
    warn_if_below_reference(
        learned,
        reference,
        desc=type(est).__name__,
        where="the validation items" if on_validation else "training items",
        metric=metric,
        hint=est._untrained_hint,
        n_items=int(items.size),
    )
    est.reference_scores_ = {
        "metric": metric,
        "items": "validation" if on_validation else "training",
        "learned": learned,
        "euclidean": reference,
    }


def _check_retrieval_codes(val_codes: np.ndarray, what: str) -> None:
    """Raise unless some validation label has two items (a leave-one-out query needs a match)."""
    if np.bincount(val_codes).max() < 2:
        raise ValueError(
            f"{what} has no label with two items, so no validation item has a match to "
            "retrieve; give each validation identity two items or more."
        )
