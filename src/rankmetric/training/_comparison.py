"""Paired comparison of a learned distance with a reference on the same held-out data.

The statistics of the held-out check (:mod:`rankmetric.estimators._held_out`): the per-query
scores of both distances from the one validation scorer (:func:`per_query_retrieval`), their
paired difference, and its standard error counted over the held-out **groups** (classes,
identities), not the items: the question is whether the learned distance is better on classes
it has not seen, and which classes happen to be held out moves the difference far more than the
items' noise does (``docs/reliability.md``). Each query (each pair, for the ROC AUC) has its
influence on the difference — its per-query difference, or DeLong's placement values for two
correlated AUCs; the influences are summed per group (a pair between two groups counts in both,
once: the dyadic sum) and the variance is that of the group sums (CR1, ``G / (G - 1)``), with
``G - 1`` degrees of freedom: :func:`critical_value` turns a normal bound into Student's t.
The folds of the check pool by their queries (:func:`pooled`), with the folds' own differences
in the group sums (a probe fitted on other classes is part of the noise).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import norm, rankdata, t

from ._scoring import per_query_retrieval

__all__ = ["compare_with_reference", "critical_value", "pooled", "verdict"]


def pooled(results: list[dict]) -> dict:
    """One comparison from those of several folds (each from :func:`compare_with_reference`).

    The means are weighted by the folds' queries; the standard error is counted over the groups
    of every fold together (the folds hold out disjoint groups), each fold's difference from the
    pooled one included, with ``G - 1`` degrees of freedom (``dof``). ``item_standard_error`` is
    the standard error that counts the queries only (the folds' own, combined).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> folds = []
    >>> for fold in range(3):
    ...     groups = np.repeat([2 * fold, 2 * fold + 1], 10)
    ...     X = rng.normal(size=(20, 4)) + 3 * groups[:, None] * (np.arange(4) < 2)
    ...     folds.append(compare_with_reference(X[:, :2], X, groups, metric="map"))
    >>> out = pooled(folds)
    >>> out["n_queries"], out["n_groups"], out["dof"]
    (60, 6, 5)
    """
    n = np.array([r["n_queries"] for r in results], dtype=np.float64)
    w = n / n.sum()
    learned = float(sum(wi * r["learned"] for wi, r in zip(w, results, strict=True)))
    reference = float(sum(wi * r["reference"] for wi, r in zip(w, results, strict=True)))
    items = np.sqrt(
        sum((wi * r["item_standard_error"]) ** 2 for wi, r in zip(w, results, strict=True))
    )
    difference = learned - reference
    terms = [
        _shifted(r["_clusters"], wi, r["difference"] - difference, k)
        for k, (wi, r) in enumerate(zip(w, results, strict=True))
    ]
    se, n_groups = _group_standard_error(terms)
    out = _summary(results[0]["metric"], learned, reference, se, int(n.sum()))
    out.update(item_standard_error=float(items), n_groups=n_groups, dof=max(n_groups - 1, 1))
    return out


def critical_value(z_bound: float, dof: float) -> float:
    """The bound in standard errors with ``dof`` degrees of freedom that has the one-sided tail
    of ``z_bound`` under the normal distribution (Student's t quantile).

    Examples
    --------
    >>> round(critical_value(1.645, 5), 3), round(critical_value(1.645, 10**9), 3)
    (2.015, 1.645)
    """
    return float(t.isf(norm.sf(z_bound), dof))


#: The check's verdicts: significantly below or above the reference, below within the noise
#: (``"not better"``), or level-or-above within the noise (``"level"``).
VERDICTS = ("below", "not better", "level", "better")


def verdict(result: dict, bound: float) -> str:
    """``"below"`` or ``"better"`` when the difference is beyond ``bound`` standard errors (after
    :func:`critical_value`), else ``"not better"`` (a negative difference) or ``"level"``.

    Examples
    --------
    >>> verdict({"difference": -0.03, "standard_error": 0.01}, 2.0)
    'below'
    >>> verdict({"difference": -0.01, "standard_error": 0.01}, 2.0)
    'not better'
    """
    difference, se = result["difference"], result["standard_error"]
    if difference < -bound * se:
        return "below"
    if difference > bound * se:
        return "better"
    return "not better" if difference < 0 else "level"


def _clusters(influence: np.ndarray, first, second=None, *, shared: bool = True) -> dict:
    """Per-group sums of the per-unit ``influence`` (units: queries or pairs; a unit's groups
    ``first`` and, for pairs, ``second``): ``nodes`` (group ids), their sums and unit counts,
    and the same for the ``dyads`` (unit between two groups, both ids). ``shared``: the ids
    name the same groups in other folds (else they are the fold's own)."""
    first = np.asarray(first).ravel()
    second = first if second is None else np.asarray(second).ravel()
    nodes, inverse = np.unique(np.concatenate([first, second]), return_inverse=True)
    ia, ib = inverse[: first.shape[0]], inverse[first.shape[0] :]
    cross = ia != ib
    ones = np.ones_like(influence)
    node_sum = np.bincount(ia, influence, len(nodes)) + np.bincount(
        ib[cross], influence[cross], len(nodes)
    )
    node_count = np.bincount(ia, ones, len(nodes)) + np.bincount(ib[cross], ones[cross], len(nodes))
    low, high = np.minimum(ia, ib)[cross], np.maximum(ia, ib)[cross]
    keys, which = np.unique(low * len(nodes) + high, return_inverse=True)
    dyads = nodes[np.stack([keys // len(nodes), keys % len(nodes)], axis=1)]
    return {
        "nodes": nodes, "node_sum": node_sum, "node_count": node_count,
        "dyads": dyads, "dyad_sum": np.bincount(which, influence[cross], len(keys)),
        "dyad_count": np.bincount(which, ones[cross], len(keys)),
        "n_units": influence.shape[0], "shared": shared,
    }  # fmt: skip


def _shifted(clusters: dict, weight: float, shift: float, fold: int) -> dict:
    """One fold's group sums in the pooled estimate: weighted, with the fold's difference from
    the pooled one spread evenly over its units."""
    per_unit = shift / clusters["n_units"]
    ids = (
        (lambda v: v) if clusters["shared"] else (lambda v: np.char.add(f"{fold}:", v.astype(str)))
    )
    return {
        "nodes": ids(clusters["nodes"]),
        "node_sum": weight * (clusters["node_sum"] + per_unit * clusters["node_count"]),
        "dyads": ids(clusters["dyads"]),
        "dyad_sum": weight * (clusters["dyad_sum"] + per_unit * clusters["dyad_count"]),
    }


def _group_standard_error(terms: list[dict]) -> tuple[float, int]:
    """The dyadic cluster-robust standard error of a sum of unit influences and the number of
    groups: ``G / (G - 1) · (Σ_g S_g² − Σ_{g<h} T_gh²)`` (``S_g``: units touching group ``g``;
    ``T_gh``: units between ``g`` and ``h``, counted in both ``S``)."""
    nodes, node_index = np.unique(np.concatenate([t["nodes"] for t in terms]), return_inverse=True)
    sums = np.bincount(node_index, np.concatenate([t["node_sum"] for t in terms]), len(nodes))
    variance = float(np.sum(sums**2))
    dyads = np.concatenate([t["dyads"] for t in terms]).reshape(-1, 2)
    if dyads.shape[0]:
        keys, dyad_index = np.unique(dyads, axis=0, return_inverse=True)
        dyad_sums = np.bincount(
            dyad_index.ravel(), np.concatenate([t["dyad_sum"] for t in terms]), len(keys)
        )
        variance -= float(np.sum(dyad_sums**2))
    n_groups = len(nodes)
    if n_groups < 2:
        return 0.0, n_groups
    return float(np.sqrt(max(variance, 0.0) * n_groups / (n_groups - 1))), n_groups


def _paired_auc(scores_l: np.ndarray, scores_r: np.ndarray, similar: np.ndarray):
    """ROC AUCs of two scorings of the same pairs, DeLong's standard error of their difference
    (from the placement values, midranks for ties) and each pair's influence on the difference
    (its placement-value difference from the mean, over the pairs of its kind)."""
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
    difference = l10.mean() - r10.mean()
    influence = np.empty(similar.shape[0])
    influence[pos] = (l10 - r10 - difference) / m
    influence[neg] = (l01 - r01 - difference) / n
    return float(l10.mean()), float(r10.mean()), float(np.sqrt(max(var, 0.0))), influence


#: One look's bound, one-sided 5 %, before Student's t (the held-out check's ``Z_BELOW``).
Z_ONE_LOOK = 1.645


def compare_with_reference(
    learned, reference, labels, *, metric: str = "recall@1", cameras=None, pair_groups=None
) -> dict:
    """Compare a learned distance with a reference on the same held-out queries or pairs.

    Its ``verdict`` is what the estimators' held-out check would say of this one comparison, so
    a network trained in your own loop is judged in the same words (``docs/reliability.md``).

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
    pair_groups : tuple of two array-likes of shape (n_pairs,), optional
        ``"roc_auc"``: the group of each pair's two members, over which the standard error is
        counted (a pair between two groups counts in both); without them each pair is its own.

    Returns
    -------
    dict
        ``metric``, ``learned``, ``reference``, ``difference`` (learned − reference),
        ``standard_error`` (paired, counted over the groups — ``labels`` for retrieval,
        ``pair_groups`` for pairs, the queries for ``"accuracy"``), ``dof`` (its degrees of
        freedom: groups − 1), ``n_groups``, ``item_standard_error`` (of the mean per-query
        difference, or DeLong's: the queries' noise only), ``n_queries`` (items with a match,
        or pairs), ``verdict`` (one of :data:`VERDICTS`: the difference against
        ``critical_value(1.645, dof)`` standard errors, :func:`verdict`) and ``_clusters`` (the
        group sums, for :func:`pooled`).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(4), 5)
    >>> X = rng.normal(size=(20, 3)) + groups[:, None]
    >>> out = compare_with_reference(X[:, :1], X, groups)
    >>> out["metric"], out["n_queries"], out["n_groups"], out["difference"] <= 0
    ('recall@1', 20, 4, True)
    >>> out["verdict"] in VERDICTS
    True
    """
    out = _compared(learned, reference, labels, metric, cameras, pair_groups)
    out["verdict"] = verdict(out, critical_value(Z_ONE_LOOK, out["dof"]))
    return out


def _compared(learned, reference, labels, metric: str, cameras, pair_groups) -> dict:
    """:func:`compare_with_reference` without its verdict."""
    if metric == "roc_auc":
        similar = np.asarray(labels, dtype=bool)
        d_l, d_r = np.asarray(learned, np.float64), np.asarray(reference, np.float64)
        if similar.all() or not similar.any():
            raise ValueError("roc_auc needs similar and dissimilar pairs.")
        auc_l, auc_r, se, influence = _paired_auc(-d_l, -d_r, similar)
        if pair_groups is None:
            clusters = _clusters(influence, np.arange(similar.shape[0]), shared=False)
        else:
            clusters = _clusters(influence, *pair_groups)
        return _with_groups(_summary(metric, auc_l, auc_r, se, similar.shape[0]), clusters)
    if metric == "accuracy":
        q_l, q_r = (np.asarray(v, dtype=np.float64).ravel() for v in (learned, reference))
        own = np.arange(q_l.shape[0])  # the samples of the training classes: each its own unit
        return _paired_result(metric, q_l, q_r, own, shared=False)
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
    return _paired_result(metric, q_l, q_r, np.asarray(labels).ravel()[valid.numpy()], shared=True)


def _paired_result(metric: str, q_l, q_r, groups, *, shared: bool) -> dict:
    """The comparison of paired per-query scores, with their group sums."""
    out = _summary(metric, *_paired_mean(q_l, q_r))
    d = q_l - q_r
    return _with_groups(out, _clusters((d - d.mean()) / d.shape[0], groups, shared=shared))


def _with_groups(raw: dict, clusters: dict) -> dict:
    """``raw`` (one comparison, the queries' standard error) with the group-counted one."""
    raw.update(item_standard_error=raw["standard_error"], _clusters=clusters)
    out = pooled([raw])
    out["_clusters"] = clusters
    return out


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
