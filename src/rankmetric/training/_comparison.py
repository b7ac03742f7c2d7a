"""Paired comparison of a learned distance with a reference on the same held-out data.

The statistics of the held-out check (:mod:`rankmetric.estimators._held_out`): the per-query
scores of both distances from the one validation scorer (:func:`per_query_retrieval`), their
paired difference and its standard error (DeLong's for two correlated ROC AUCs), and the pooling
of independent folds.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import rankdata

from ._scoring import per_query_retrieval

__all__ = ["compare_with_reference", "pooled"]


def pooled(results: list[dict]) -> dict:
    """One comparison from those of several folds: means weighted by their queries, and the
    standard error of the weighted mean difference (the folds are independent)."""
    n = np.array([r["n_queries"] for r in results], dtype=np.float64)
    w = n / n.sum()
    out = _summary(
        results[0]["metric"],
        float(sum(wi * r["learned"] for wi, r in zip(w, results, strict=True))),
        float(sum(wi * r["reference"] for wi, r in zip(w, results, strict=True))),
        float(
            np.sqrt(sum((wi * r["standard_error"]) ** 2 for wi, r in zip(w, results, strict=True)))
        ),
        int(n.sum()),
    )
    return out


def _paired_auc(scores_l: np.ndarray, scores_r: np.ndarray, similar: np.ndarray):
    """ROC AUCs of two scorings of the same pairs and DeLong's standard error of their
    difference (from the placement values, midranks for ties)."""
    pos, neg = similar, ~similar
    m, n = int(pos.sum()), int(neg.sum())
    placements = []
    for s in (scores_l, scores_r):
        r_all = rankdata(s)
        v10 = (r_all[pos] - rankdata(s[pos])) / n  # share of negatives below each positive
        v01 = 1.0 - (r_all[neg] - rankdata(s[neg])) / m
        placements.append((v10, v01))
    (l10, l01), (r10, r01) = placements
    var = np.var(l10 - r10, ddof=1) / m if m > 1 else 0.0
    var += np.var(l01 - r01, ddof=1) / n if n > 1 else 0.0
    return float(l10.mean()), float(r10.mean()), float(np.sqrt(max(var, 0.0)))


def compare_with_reference(
    learned, reference, labels, *, metric: str = "recall@1", cameras=None
) -> dict:
    """Compare a learned distance with a reference on the same held-out queries or pairs.

    Parameters
    ----------
    learned, reference : array-like
        For ``metric="roc_auc"``: the two distances of each pair, shape (n_pairs,); for
        ``"accuracy"``: whether each query was classified right, shape (n_queries,). Otherwise
        the two embeddings of the held-out items, shapes (n_items, d₁) and (n_items, d₂)
        (compared by the Euclidean distance).
    labels : array-like
        ``"roc_auc"``: whether each pair is similar (bool); otherwise the group of each item.
    metric : {"recall@1", "map", "roc_auc", "accuracy"}, default="recall@1"
        Leave-one-out rank-1 or average precision of each item among the others, the ROC AUC
        of the pairs, or (``"accuracy"``: ``learned`` and ``reference`` are then whether each
        query was classified right) the accuracy.
    cameras : array-like of shape (n_items,), optional
        Camera of each item: same-identity same-camera items leave the gallery.

    Returns
    -------
    dict
        ``metric``, ``learned``, ``reference``, ``difference`` (learned − reference),
        ``standard_error`` (paired: of the mean per-query difference, or DeLong's) and
        ``n_queries`` (items with a match, or pairs).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(4), 5)
    >>> X = rng.normal(size=(20, 3)) + groups[:, None]
    >>> out = compare_with_reference(X[:, :1], X, groups)
    >>> out["metric"], out["n_queries"], out["difference"] <= 0
    ('recall@1', 20, True)
    """
    if metric == "roc_auc":
        similar = np.asarray(labels, dtype=bool)
        d_l, d_r = np.asarray(learned, np.float64), np.asarray(reference, np.float64)
        if similar.all() or not similar.any():
            raise ValueError("roc_auc needs similar and dissimilar pairs.")
        auc_l, auc_r, se = _paired_auc(-d_l, -d_r, similar)
        return _summary(metric, auc_l, auc_r, se, similar.shape[0])
    if metric == "accuracy":
        q_l, q_r = (np.asarray(v, dtype=np.float64).ravel() for v in (learned, reference))
        return _summary(metric, *_paired_mean(q_l, q_r))
    if metric not in ("recall@1", "map"):
        raise ValueError(f"metric must be 'recall@1', 'map' or 'roc_auc', got {metric!r}.")
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    codes_t = torch.as_tensor(codes.ravel())
    cams = None
    if cameras is not None:
        cams = torch.as_tensor(np.unique(np.asarray(cameras), return_inverse=True)[1].ravel())
    per_query = [
        per_query_retrieval(torch.as_tensor(np.asarray(Z, np.float64)), codes_t, metric, cams)
        for Z in (learned, reference)
    ]
    valid = ~torch.isnan(per_query[0])
    if not bool(valid.any()):
        raise ValueError("no held-out item has a match to retrieve.")
    q_l, q_r = (s[valid].numpy() for s in per_query)
    return _summary(metric, *_paired_mean(q_l, q_r))


def _paired_mean(q_l: np.ndarray, q_r: np.ndarray) -> tuple[float, float, float, int]:
    """Means of paired per-query scores and the standard error of their mean difference."""
    n = q_l.shape[0]
    se = float(np.std(q_l - q_r, ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    return float(q_l.mean()), float(q_r.mean()), se, n


def _summary(metric: str, learned: float, reference: float, se: float, n: int) -> dict:
    return {
        "metric": metric,
        "learned": learned,
        "reference": reference,
        "difference": learned - reference,
        "standard_error": se,
        "n_queries": int(n),
    }
