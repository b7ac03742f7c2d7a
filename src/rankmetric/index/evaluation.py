"""What an approximate index costs: recall@k against exact search, and the scores through it."""

from __future__ import annotations

import time

import numpy as np
import torch

from .._validation import POSITIVE_INT, check_param, encode_labels
from ..evaluate import average_precision
from ._exact import exact_search
from ._filters import allowed_rows

__all__ = ["evaluate_index"]


def _item_labels(index, labels) -> np.ndarray:
    if labels is None or isinstance(labels, str):
        name = labels or "label"
        attributes = index.attributes
        if name not in attributes:
            raise ValueError(
                f"the index has no attribute {name!r} holding the items' labels; pass labels= "
                f"(one per item) or the attribute's name (it has {sorted(attributes)})."
            )
        return attributes[name]
    return np.asarray(labels)


def _check_ranks(ranks, k: int) -> tuple[int, ...]:
    ranks = tuple(ranks)
    if not ranks or not all(POSITIVE_INT.is_satisfied_by(r) for r in ranks):
        raise ValueError(f"ranks must be positive integers, got {ranks!r}.")
    check_param("k", k, [POSITIVE_INT])
    return tuple(sorted({int(r) for r in ranks}))


def _scores(found: np.ndarray, row_codes, q_codes, R: np.ndarray, ranks, seconds: float) -> dict:
    """CMC at ``ranks``, mAP@R and mAP over the list (relevant items past it count as missed),
    with the search's ``seconds`` per query."""
    valid = found >= 0
    match = valid & (row_codes[np.where(valid, found, 0)] == q_codes[:, None])
    hits = torch.from_numpy(match)
    position = torch.arange(1, found.shape[1] + 1).expand_as(hits)
    so_far = torch.cumsum(hits.to(torch.int64), dim=1)
    Rt = torch.from_numpy(R)
    at_r = average_precision(so_far, position, hits & (position <= Rt[:, None]), Rt)
    full = average_precision(so_far, position, hits, Rt)
    first = np.where(match.any(1), match.argmax(1) + 1, np.iinfo(np.int64).max)
    scored = R > 0  # queries with no relevant item are left out, as map_at_r does
    if not scored.any():
        raise ValueError("no query has a relevant item (same label) among the admissible items.")
    out = {f"cmc@{r}": float(np.mean(first[scored] <= r)) for r in ranks}
    out["map@r"] = float(at_r.numpy()[scored].mean())
    out["map"] = float(full.numpy()[scored].mean())
    out["seconds_per_query"] = seconds
    return out


def evaluate_index(
    index, Q, query_labels, labels=None, *, k: int = 10, ranks=(1, 5, 10), depth=None, filter=None
) -> dict:
    """Recall@k of an index's search against exact search, and CMC / mAP@R / mAP through both.

    The queries are searched twice, by the index's backend and exactly, to ``depth`` places;
    the scores are computed from both lists with the project's formulas (the average precision
    of :mod:`rankmetric.evaluate`; mAP@R as in :func:`rankmetric.evaluate.map_at_r`).

    Parameters
    ----------
    index : Index
        The index (any backend; an exact index reports recall 1).
    Q : array-like of shape (n_queries, n_features)
        Raw queries (embeddings for an index without a model). They are not catalogue items
        (a query present in the catalogue finds itself first).
    query_labels : array-like of shape (n_queries,)
        Each query's identity or class.
    labels : array-like of shape (n_items,) or str, optional
        The items' labels in :attr:`Index.ids` order, or the name of the attribute holding
        them; default: the attribute ``"label"``.
    k : int, default=10
        The recall@k of the approximate search: the fraction of the exact k nearest it finds.
    ranks : sequence of int, default=(1, 5, 10)
        CMC ranks.
    depth : int, optional
        Places retrieved per query; default: the largest of ``k``, ``ranks`` and the number of
        relevant items of any query (so mAP@R is exact). mAP counts relevant items beyond
        ``depth`` as missed (``depth=len(index)`` gives the full-ranking mAP).
    filter : optional
        As in :meth:`Index.search`: evaluate within the admissible items.

    Returns
    -------
    dict
        ``"recall@k"``; ``"exact"`` and ``"approximate"``: ``{"cmc@r": ..., "map@r": ...,
        "map": ..., "seconds_per_query": ...}`` over the queries with at least one relevant
        item (``"n_scored"`` of them); ``"depth"``, ``"n_queries"``, ``"backend"``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.index import Index, evaluate_index
    >>> rng = np.random.default_rng(0)
    >>> items, labels = rng.normal(size=(200, 4)), np.repeat(np.arange(20), 10)
    >>> index = Index.from_embeddings(items, attributes={"label": labels})
    >>> report = evaluate_index(index, items[:5] + 0.01, labels[:5], k=5, ranks=(1,))
    >>> report["recall@k"], report["exact"]["cmc@1"]
    (1.0, 1.0)
    """
    rows = index._nonempty()
    ranks = _check_ranks(ranks, k)
    E = index._queries(Q, embedded=False)
    item_labels = _item_labels(index, labels)
    _, (q_codes, item_codes) = encode_labels(
        query_labels,
        item_labels,
        lengths=[E.shape[0], len(index)],
        names=["query_labels", "labels"],
    )
    row_codes = np.full(rows.n, -1, dtype=np.int64)
    row_codes[rows.live_rows()] = item_codes
    allowed = allowed_rows(rows, filter)
    admissible = rows.alive[: rows.n] if allowed is None else allowed
    n_codes = max(int(q_codes.max()), int(item_codes.max())) + 1
    R = np.bincount(row_codes[admissible & (row_codes >= 0)], minlength=n_codes)[q_codes]
    n_admissible = int(admissible.sum())
    if depth is None:
        depth = max(k, ranks[-1], int(R.max(initial=0)))
    check_param("depth", depth, [POSITIVE_INT])
    depth = min(int(depth), n_admissible)
    report = {"backend": index.resolved_backend, "depth": depth, "n_queries": int(E.shape[0])}
    report["n_scored"] = int((R > 0).sum())
    start = time.perf_counter()
    _, exact = exact_search(rows, E, depth, allowed)
    exact_time = (time.perf_counter() - start) / E.shape[0]
    if index._ann is not None:
        raw = None if index._transform is None else Q
        start = time.perf_counter()
        _, approx = index._ann.search(rows, E, raw, depth, allowed)
        approx_time = (time.perf_counter() - start) / E.shape[0]
    else:
        approx, approx_time = exact, exact_time
    kk = min(k, depth)
    if index._ann is not None:  # what search(Q, k) returns: its own fetch of k * refine
        _, approx_k = index._ann.search(rows, E, raw, kk, allowed)
    else:
        approx_k = exact
    same = (approx_k[:, :kk, None] == exact[:, None, :kk]) & (exact[:, None, :kk] >= 0)
    report["recall@k"] = float(same.any(2).sum() / max(1, (exact[:, :kk] >= 0).sum()))
    report["k"] = kk
    report["exact"] = _scores(exact, row_codes, q_codes, R, ranks, exact_time)
    report["approximate"] = _scores(approx, row_codes, q_codes, R, ranks, approx_time)
    return report
