"""WARCA's validation: the early-stopping set, its scorer, and the check against Euclidean.

:class:`WARCAValidationMixin` gives :class:`~rankmetric.estimators.warca.BaseWARCA` the
validation convention of ``docs/architecture.md`` ("Validation"): ``fit(X, y, X_val, y_val)`` or
``validation_fraction`` / ``validation_split``, scored by leave-one-out retrieval among the
validation items (or, ``validation_metric="knn"``, k-NN accuracy against training points), and
the comparison of the fitted metric with the Euclidean distance of the inputs
(``reference_scores_``, :class:`~rankmetric.training.UntrainedModelWarning`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from sklearn.utils.validation import validate_data

from .._utils import to_tensor
from .._validation import check_labels
from ..training import (
    RETRIEVAL_METRICS,
    retrieval_score,
    retrieval_validator,
    sample_retrieval_items,
    split_validation,
)
from ._early_stopping import MAX_REFERENCE_ITEMS, warn_if_below_reference

__all__ = [
    "VALIDATION_K",
    "VALIDATION_METRICS",
    "VALIDATION_REFERENCE_SIZE",
    "WARCAValidationMixin",
]

#: Training points the validation k-NN searches (a fixed random subset when there are more).
VALIDATION_REFERENCE_SIZE = 5000
#: Neighbours of the validation k-NN vote.
VALIDATION_K = 3
#: ``validation_metric``: leave-one-out retrieval among the validation items, or (``"knn"``, the
#: only score before 0.2) k-NN accuracy of the validation items against training points.
VALIDATION_METRICS = (*RETRIEVAL_METRICS, "knn")


class WARCAValidationMixin:
    """The validation set, validation score and Euclidean check of WARCA estimators.

    Reads ``validation_fraction``, ``validation_split``, ``validation_metric`` and the
    estimator's ``_untrained_hint``; sets ``reference_scores_``.
    """

    def _validation_fraction(self) -> float:
        """``validation_fraction``, 0 for KernelWARCA's deprecated ``"auto"`` (no early stopping;
        its check on unseen identities is now every learner's ``held_out_check``)."""
        return 0.0 if self.validation_fraction == "auto" else float(self.validation_fraction)

    def _check_validation_set(self, X_val, y_val, classes: np.ndarray, *, reset_features=False):
        """Validate the optional early-stopping set: ``(X_val, val_codes)`` or ``(None, None)``.

        ``val_codes`` index ``classes`` for ``validation_metric="knn"``; otherwise they are the
        validation set's own label codes (its identities need not occur in training).
        """
        if X_val is None and y_val is None:
            return None, None
        if X_val is None or y_val is None:
            raise ValueError("early stopping needs both X_val and y_val.")
        if self._validation_fraction() > 0:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} holds a validation set out of "
                "(X, y): give either it or X_val, y_val, not both."
            )
        X_val = validate_data(self, X_val, reset=False, dtype=[np.float32, np.float64])
        y_val = np.asarray(y_val)
        val_classes, val_codes = check_labels(y_val, X_val.shape[0], min_classes=1)
        if self.validation_metric == "knn":
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

    def _validation_data(
        self, X, codes, classes, X_val, y_val, rng, *, precomputed=False, cameras=None
    ):
        """``(X, codes, X_val, val_codes)``: the training rows and the validation set.

        The validation set is ``(X_val, y_val)`` when given, else ``validation_fraction`` of
        ``(X, y)`` held out by ``validation_split`` (for ``precomputed`` kernels, the rows and
        columns of the training kernel are split alike), else none. With ``cameras`` (per-row
        camera codes), their training rows are appended: ``(X, codes, X_val, val_codes,
        cameras)``.
        """
        kept = (cameras,) if cameras is not None else ()
        if X_val is not None or y_val is not None:
            return (X, codes, *self._check_validation_set(X_val, y_val, classes), *kept)
        if self._validation_fraction() == 0:
            return X, codes, None, None, *kept
        if self.validation_metric == "knn" and self.validation_split == "groups":
            raise ValueError(
                "validation_metric='knn' votes among training points of the validation classes: "
                "it cannot score the unseen classes of validation_split='groups'; use "
                "validation_metric='recall@1' or 'map'."
            )
        train_idx, val_idx = split_validation(
            codes, self._validation_fraction(), self.validation_split, rng
        )
        if val_idx.size == 0:
            return X, codes, None, None, *kept
        if cameras is not None:
            kept = (cameras[train_idx],)
        train_classes, train_codes = np.unique(codes[train_idx], return_inverse=True)
        if self.validation_metric == "knn":
            val_codes = np.searchsorted(train_classes, codes[val_idx])
        else:
            val_codes = codes[val_idx]
            _check_retrieval_codes(val_codes, "the held-out validation set")
        if precomputed:
            return (
                X[np.ix_(train_idx, train_idx)],
                train_codes,
                X[np.ix_(val_idx, train_idx)],
                val_codes,
                *kept,
            )
        return X[train_idx], train_codes, X[val_idx], val_codes, *kept

    def _make_validator(
        self,
        embed: Callable[[torch.Tensor], torch.Tensor],
        embed_val: Callable[[torch.Tensor | None], torch.Tensor],
        codes: np.ndarray,
        y_val_codes: np.ndarray,
        rng: np.random.Generator,
        device: torch.device,
    ) -> Callable[[], float]:
        """The validation score of ``validation_metric``.

        Retrieval metrics rank at most ``MAX_VALIDATION_ITEMS`` validation items (whole classes)
        leave-one-out among themselves; ``"knn"`` is the k-NN accuracy (k=3) of the validation
        set against a fixed subset of training points. ``embed_val(indices)`` embeds validation
        rows (``None``: all).
        """
        if self.validation_metric != "knn":
            items = sample_retrieval_items(y_val_codes, rng)
            index = torch.as_tensor(items, device=device)
            return retrieval_validator(
                lambda: embed_val(index),
                torch.as_tensor(y_val_codes[items], device=device),
                self.validation_metric,
            )
        n = codes.shape[0]
        ref = (
            np.sort(rng.choice(n, VALIDATION_REFERENCE_SIZE, replace=False))
            if (n > VALIDATION_REFERENCE_SIZE)
            else np.arange(n)
        )
        ref_index = torch.as_tensor(ref, device=device)

        def validate() -> float:
            from ..evaluate.knn import knn_accuracy  # imported lazily: evaluate sits above us

            with torch.no_grad():
                ref_emb, val_emb = embed(ref_index), embed_val(None)
            return knn_accuracy(ref_emb, codes[ref], val_emb, y_val_codes, k=VALIDATION_K)

        return validate

    def _check_against_euclidean(
        self,
        embed_rows: Callable[[np.ndarray], torch.Tensor],
        X: np.ndarray,
        codes: np.ndarray | None,
        X_val: np.ndarray | None,
        val_codes: np.ndarray | None,
        rng: np.random.Generator,
        device: torch.device,
    ) -> None:
        """Warn (:class:`~rankmetric.training.UntrainedModelWarning`) when the fitted metric
        ranks below the Euclidean distance of the inputs.

        Leave-one-out recall@1 (or the validation mAP) on at most ``MAX_REFERENCE_ITEMS``
        validation items (whole classes), or, without a validation set, training items.
        ``embed_rows(rows)`` embeds rows of the inputs. The draws come after training: the
        fitted model does not depend on them.
        """
        self.reference_scores_ = None
        on_validation = X_val is not None
        if not on_validation and codes is None:
            return  # fitted from pairs or triplets: no labels to rank the training items by
        rows_X, rows_codes = (X_val, val_codes) if on_validation else (X, codes)
        if np.bincount(rows_codes).max() < 2:
            return
        items = sample_retrieval_items(rows_codes, rng, MAX_REFERENCE_ITEMS)
        rows = rows_X[items]
        item_codes = torch.as_tensor(rows_codes[items], device=device)
        metric = "map" if self.validation_metric == "map" else "recall@1"
        with torch.no_grad():
            learned = retrieval_score(embed_rows(rows), item_codes, metric)
            reference = retrieval_score(to_tensor(rows, device), item_codes, metric)
        self.reference_scores_ = {
            "metric": metric,
            "items": "validation" if on_validation else "training",
            "learned": learned,
            "euclidean": reference,
        }
        warn_if_below_reference(
            learned,
            reference,
            desc=type(self).__name__,
            where="the validation items" if on_validation else "training items",
            metric=metric,
            hint=self._untrained_hint,
            n_items=int(items.size),
        )


def _check_retrieval_codes(val_codes: np.ndarray, what: str) -> None:
    """Raise unless some validation label has two items (a leave-one-out query needs a match)."""
    if np.bincount(val_codes).max() < 2:
        raise ValueError(
            f"{what} has no label with two items, so no validation item has a match to "
            "retrieve; give each validation identity two items or more."
        )
