"""Early stopping on held-out data: the split, the validation score and their parameters.

The one convention of every iteratively trained estimator (``docs/architecture.md``,
"Validation"):

* ``fit(X, y, X_val, y_val)`` takes a validation set; or ``validation_fraction`` holds one out of
  ``(X, y)`` inside ``fit`` (so early stopping works in a ``Pipeline`` and ``GridSearchCV``);
* ``validation_split="stratified"`` holds out a share of each class's samples,
  ``validation_split="groups"`` holds out a share of the classes (identities) whole, so the
  validation identities are never seen in training — the only valid validation in
  re-identification;
* validation scores **retrieval among the validation items**, leave-one-out: each item queries
  the other validation items (``validation_metric="recall@1"``: whether its nearest one shares
  its label; ``"map"``: average precision), so held-out identities can be scored.

Also here: the check that a fitted metric ranks above its untrained reference (the Euclidean
distance of the inputs), which turns a useless model into an
:class:`~rankmetric.training.UntrainedModelWarning` rather than a silent result.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from numbers import Real

import numpy as np
import torch

from .._distances import squared_euclidean
from .._validation import Interval, Options
from ..evaluate._precision import average_precision
from ..training import UntrainedModelWarning

__all__ = [
    "VALIDATION_SPLITS",
    "RETRIEVAL_METRICS",
    "MAX_VALIDATION_ITEMS",
    "MAX_REFERENCE_ITEMS",
    "VALIDATION_PARAMETER_CONSTRAINTS",
    "split_validation",
    "per_query_retrieval",
    "retrieval_score",
    "sample_retrieval_items",
    "warn_if_below_reference",
    "retrieval_validator",
]

#: How ``validation_fraction`` holds data out: a share of each class, or whole classes.
VALIDATION_SPLITS = ("stratified", "groups")
#: Leave-one-out retrieval scores among the validation items.
RETRIEVAL_METRICS = ("recall@1", "map")
#: Most validation items a validation ranks (a fixed random subset, whole classes, beyond).
MAX_VALIDATION_ITEMS = 2000
#: Most items the check against the Euclidean reference ranks (raw inputs can be wide).
MAX_REFERENCE_ITEMS = 500
#: Rows of the distance matrix computed at once.
_CHUNK_ROWS = 512

#: The parameters of the convention, declared once for every estimator that offers them.
VALIDATION_PARAMETER_CONSTRAINTS = {
    "validation_fraction": [Interval(Real, 0, 1, closed="left")],
    "validation_split": [Options(*VALIDATION_SPLITS)],
}


def split_validation(
    codes: np.ndarray, fraction: float, split: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random (train, validation) row indices holding out ``fraction`` of the data.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,), int
        Class (identity) codes ``0..Q-1``.
    fraction : float in [0, 1)
        Share held out; 0 returns every row for training and none for validation.
    split : {"stratified", "groups"}
        ``"stratified"``: ``round(fraction · n_c)`` samples of each class ``c``, every class
        keeping two training samples (no validation set when fewer than two would be held out).
        ``"groups"``: ``round(fraction · Q)`` whole classes (at least two), drawn among the
        classes with two samples or more so that every validation item can have a match.

    Returns
    -------
    train_idx, val_idx : ndarrays of int64, sorted

    Raises
    ------
    ValueError
        For ``"groups"`` when holding out two classes would leave fewer than two training
        classes, or fewer than two classes have two samples.
    """
    n = codes.shape[0]
    if fraction == 0:
        return np.arange(n), np.empty(0, dtype=np.int64)
    counts = np.bincount(codes)
    if split == "groups":
        eligible = np.flatnonzero(counts >= 2)
        n_val = max(2, int(round(fraction * counts.shape[0])))
        if eligible.shape[0] < 2 or counts.shape[0] - n_val < 2:
            raise ValueError(
                f"validation_split='groups' holds out whole classes: validation_fraction="
                f"{fraction} of {counts.shape[0]} classes ({eligible.shape[0]} with two samples "
                "or more) leaves no two classes with two samples to validate on and two to train "
                "on; use more classes, another fraction, or validation_split='stratified'."
            )
        held = rng.choice(eligible, min(n_val, eligible.shape[0]), replace=False)
        is_val = np.isin(codes, held)
        if np.bincount(codes[~is_val]).max() < 2:
            raise ValueError(
                "validation_split='groups' left no training class with two samples; use a "
                "smaller validation_fraction."
            )
        return np.flatnonzero(~is_val), np.flatnonzero(is_val)
    n_held = np.clip(np.round(fraction * counts).astype(np.int64), 0, np.maximum(counts - 2, 0))
    if n_held.sum() < 2:
        return np.arange(n), np.empty(0, dtype=np.int64)
    order = np.lexsort((rng.random(n), codes))  # random order within each class
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty_like(order)
    rank[order] = np.arange(n) - starts[codes[order]]
    is_val = rank < n_held[codes]
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


def sample_retrieval_items(
    codes: np.ndarray, rng: np.random.Generator, max_items: int = MAX_VALIDATION_ITEMS
) -> np.ndarray:
    """Indices of at most ``max_items`` items for a leave-one-out ranking, drawn by whole class
    (so the items keep their matches); all items when there are no more than ``max_items``."""
    n = codes.shape[0]
    if n <= max_items:
        return np.arange(n)
    classes = rng.permutation(np.unique(codes))
    counts = np.bincount(codes)[classes]
    keep = classes[: max(1, int(np.searchsorted(np.cumsum(counts), max_items, side="right")))]
    return np.flatnonzero(np.isin(codes, keep))


@torch.no_grad()
def per_query_retrieval(
    Z: torch.Tensor, codes: torch.Tensor, metric: str, cameras: torch.Tensor | None = None
) -> torch.Tensor:
    """Leave-one-out retrieval score of every item of ``Z`` among the others.

    Parameters
    ----------
    Z : tensor of shape (n, d)
        Embeddings; compared with the squared Euclidean distance, in their dtype.
    codes : int tensor of shape (n,)
    metric : {"recall@1", "map"}
        Whether the nearest other item shares the query's label (ties: the lowest index), or the
        average precision of the ranking of the others.
    cameras : int tensor of shape (n,), optional
        Camera of each item: a query's own identity seen by its own camera is left out of its
        gallery too (the Market-1501 protocol), so only cross-camera matches count.

    Returns
    -------
    float64 tensor of shape (n,)
        NaN for an item without another of its label (seen by another camera).
    """
    sq = (Z * Z).sum(dim=1)
    out = torch.empty(Z.shape[0], dtype=torch.float64, device=Z.device)
    for start in range(0, Z.shape[0], _CHUNK_ROWS):
        rows = slice(start, min(start + _CHUNK_ROWS, Z.shape[0]))
        dist = squared_euclidean(Z[rows], Z, X_sq=sq[rows], Y_sq=sq)
        local = torch.arange(dist.shape[0], device=Z.device)
        dist[local, local + start] = torch.inf  # leave the query out
        relevant = codes[rows, None] == codes[None, :]
        relevant[local, local + start] = False
        if cameras is not None:  # same identity, same camera: not in the gallery
            junk = (codes[rows, None] == codes[None, :]) & (cameras[rows, None] == cameras[None, :])
            dist[junk] = torch.inf
            relevant &= ~junk
        n_rel = relevant.sum(dim=1)
        if metric == "recall@1":
            score = relevant.gather(1, dist.argmin(dim=1, keepdim=True))[:, 0].double()
        else:
            order = torch.argsort(dist, dim=1, stable=True)
            hits = relevant.gather(1, order).double()
            ranks = torch.arange(1, hits.shape[1] + 1, dtype=torch.float64, device=Z.device)
            score = average_precision(hits.cumsum(dim=1), ranks, hits.bool(), n_rel)
        out[rows] = torch.where(n_rel > 0, score, torch.nan)
    return out


def retrieval_score(Z: torch.Tensor, codes: torch.Tensor, metric: str) -> float:
    """Mean of :func:`per_query_retrieval` over the items that have a match (0 when none has)."""
    scores = per_query_retrieval(Z, codes, metric)
    valid = ~torch.isnan(scores)
    return float(scores[valid].mean()) if bool(valid.any()) else 0.0


def warn_if_below_reference(
    learned: float,
    reference: float,
    *,
    desc: str,
    where: str,
    metric: str,
    hint: str | None,
    n_items: int | None = None,
) -> bool:
    r"""Issue an :class:`UntrainedModelWarning` when ``learned`` is below ``reference`` by more
    than the noise of ``n_items`` queries; return whether.

    The noise is one binomial standard error of the reference score,
    :math:`\sqrt{p (1 - p) / n}`, and at least one query (:math:`1 / n`): a learned metric that
    misses one more of 1,000 items than a perfect Euclidean ranking is not "worse than no metric
    learning". Without ``n_items`` any deficit warns.

    Parameters
    ----------
    learned, reference : float
        The fitted metric's and the reference's (the Euclidean distance's) retrieval scores.
    desc : str
        The estimator's name.
    where : str
        Which items were ranked (``"the validation items"``).
    metric : str
        The score's name.
    hint : str or None
        What to try, appended to the message.
    n_items : int, optional
        Number of queries the two scores average over.
    """
    noise = 0.0
    if n_items:
        p = min(max(reference, 0.0), 1.0)
        noise = max((p * (1 - p) / n_items) ** 0.5, 1.0 / n_items)
    if not learned < reference - noise:
        return False
    warnings.warn(
        f"{desc}: the fitted metric ranks below the Euclidean distance of the inputs on {where} "
        f"(leave-one-out {metric} {learned:.4g} against {reference:.4g}): it is worse than no "
        f"metric learning.{f' {hint}' if hint else ''}",
        UntrainedModelWarning,
        stacklevel=3,
    )
    return True


def retrieval_validator(
    embed: Callable[[], torch.Tensor], codes: torch.Tensor, metric: str
) -> Callable[[], float]:
    """The ``validate`` closure of :func:`rankmetric.training.train`: the mean leave-one-out
    ``metric`` of ``embed()`` (the validation items' embeddings) among themselves."""

    def validate() -> float:
        with torch.no_grad():
            return retrieval_score(embed(), codes, metric)

    return validate
