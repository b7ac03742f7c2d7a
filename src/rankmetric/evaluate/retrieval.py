r"""Retrieval metrics: Recall@K, precision@1 and mAP@R, in one chunked pass.

Definitions (:math:`R` = number of gallery items sharing the query's label, the query itself
excluded; the gallery is ranked by distance, ties by the lower gallery index):

* Recall@K: fraction of *all* queries with at least one same-class item among their K nearest
  (RPL's R@K; a query whose class has no other item counts as a miss);
* precision@1: fraction of the queries with :math:`R \ge 1` whose nearest item shares their
  label;
* mAP@R (Musgrave et al. 2020, "A metric learning reality check"): mean over the queries with
  :math:`R \ge 1` of :math:`\frac1R \sum_{i=1}^{R} P(i)\, \mathrm{rel}(i)`, with
  :math:`\mathrm{rel}(i) = 1` when the :math:`i`-th nearest item shares the label and
  :math:`P(i)` the precision of the first :math:`i` items.

The last two match pytorch-metric-learning's ``AccuracyCalculator`` (which also skips queries
with :math:`R = 0`); without such queries, Recall@1 equals precision@1.
"""

from __future__ import annotations

import numpy as np
import torch

from .._threads import thread_limit, threads_for
from .._utils import resolve_device
from ..neighbors import Gallery, check_metric, nearest_chunks
from ._inputs import as_embeddings, check_ks, check_same_width, compute_dtype, encode_labels
from ._precision import average_precision

__all__ = ["retrieval_scores", "recall_at_k", "precision_at_1", "map_at_r"]


def _average_precision_at_r(relevant: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """AP@R of each row of a ranked relevance matrix.

    Parameters
    ----------
    relevant : bool tensor of shape (n, K)
        ``relevant[q, i]``: the (i+1)-th nearest item shares query q's label; ``K >= max(R)``.
    R : int tensor of shape (n,)
        Relevant items per query (rows with ``R = 0`` give 0).

    Returns
    -------
    float64 tensor of shape (n,)
    """
    position = torch.arange(1, relevant.shape[1] + 1, device=relevant.device)
    hits = relevant & (position <= R.unsqueeze(1))
    hits_so_far = torch.cumsum(hits, dim=1, dtype=torch.float64)
    return average_precision(hits_so_far, position, hits, R)


def _prepare(embeddings, labels, query_embeddings, query_labels, metric, device):
    """Validated gallery/query tensors, label codes and the leave-one-out flag."""
    check_metric(metric)
    if (query_embeddings is None) != (query_labels is None):
        raise ValueError("query_embeddings and query_labels must be given together.")
    dev = resolve_device(device)
    dtype = compute_dtype(embeddings, query_embeddings)
    G = as_embeddings(embeddings, "embeddings", dev, dtype)
    if query_embeddings is None:
        _, (g_codes,) = encode_labels(labels, lengths=[G.shape[0]], names=["labels"])
        return G, G, g_codes, g_codes, True
    Q = as_embeddings(query_embeddings, "query_embeddings", dev, dtype)
    check_same_width(Q, G, "query_embeddings", "embeddings")
    _, (g_codes, q_codes) = encode_labels(
        labels, query_labels, lengths=[G.shape[0], Q.shape[0]], names=["labels", "query_labels"]
    )
    return Q, G, q_codes, g_codes, False


def _retrieval_pass(
    embeddings,
    labels,
    ks,
    query_embeddings,
    query_labels,
    *,
    metric: str,
    chunk_size,
    device,
    need_map: bool,
) -> dict[str, float]:
    """One chunked pass over the queries computing Recall@ks, P@1 and (optionally) mAP@R."""
    Q, G, q_codes, g_codes, leave_one_out = _prepare(
        embeddings, labels, query_embeddings, query_labels, metric, device
    )
    if np.unique(g_codes).shape[0] < 2:
        raise ValueError(
            "the gallery holds a single class: every item is relevant, so retrieval scores "
            "are meaningless."
        )
    ks = check_ks(ks, G.shape[0] - int(leave_one_out), "ks")
    R = np.bincount(g_codes, minlength=q_codes.max() + 1)[q_codes] - int(leave_one_out)
    if not np.any(R > 0):
        raise ValueError("no query has a same-class item in the gallery.")

    dev = Q.device
    R_t = torch.as_tensor(R, device=dev)
    q_codes_t, g_codes_t = (
        torch.as_tensor(q_codes, device=dev),
        torch.as_tensor(g_codes, device=dev),
    )
    order = torch.argsort(R_t, stable=True) if need_map else None
    k_query = R_t.clamp(min=ks[-1]) if need_map else ks[-1]

    first_hit = torch.full((Q.shape[0],), G.shape[0], dtype=torch.int64, device=dev)
    ap = torch.zeros(Q.shape[0], dtype=torch.float64, device=dev)
    chunks = nearest_chunks(
        Q,
        Gallery.build(G, metric),
        k_query,
        exclude_self=leave_one_out,
        order=order,
        chunk_size=chunk_size,
    )
    with thread_limit(threads_for(Q.shape[0] * G.numel())):
        for rows, _, nearest, _ in chunks:  # loop over query chunks
            relevant = g_codes_t[nearest] == q_codes_t[rows].unsqueeze(1)
            first = torch.argmax(relevant.to(torch.uint8), dim=1)
            first_hit[rows] = torch.where(relevant.any(dim=1), first, G.shape[0])
            if need_map:
                ap[rows] = _average_precision_at_r(relevant, R_t[rows])

    first_hit, ap, scored = first_hit.cpu().numpy(), ap.cpu().numpy(), R > 0
    result = {f"recall@{k}": float(np.mean(first_hit < k)) for k in ks}
    result["precision@1"] = float(np.mean(first_hit[scored] == 0))
    if need_map:
        result["map@r"] = float(np.mean(ap[scored]))
    return result


def retrieval_scores(
    embeddings,
    labels,
    ks=(1, 3),
    query_embeddings=None,
    query_labels=None,
    *,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
) -> dict[str, float]:
    """Recall@K for every K in ``ks``, precision@1 and mAP@R in one memory-bounded pass.

    Parameters
    ----------
    embeddings : array-like or tensor of shape (n_samples, n_features)
        The gallery; without ``query_embeddings`` every item is also a query, ranked against
        all the others (leave-one-out).
    labels : array-like of shape (n_samples,)
    ks : int or iterable of int, default=(1, 3)
        Each at most the number of gallery items a query ranks.
    query_embeddings : array-like or tensor of shape (n_queries, n_features), optional
        Separate queries, ranked against the whole gallery.
    query_labels : array-like of shape (n_queries,), optional
        Required with ``query_embeddings``.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
    chunk_size : int, optional
        Queries per chunk (None: chosen for about 256 MB of temporaries).
    device : str or torch.device, optional
        None uses CUDA when available.

    Returns
    -------
    dict
        ``"recall@K"`` for each K, ``"precision@1"`` and ``"map@r"``, all floats in [0, 1].
        Definitions in the module docstring and ``docs/evaluation.md``.

    Notes
    -----
    Memory is ``O(chunk × (n_gallery + max R))`` beyond the inputs: each chunk's ranked
    top-``max(K, R)`` lists are reduced to per-query numbers at once; ``n_queries × R`` is
    never held. Queries are visited in order of ``R`` so that each chunk ranks only as deep
    as its own largest ``R``.
    """
    return _retrieval_pass(
        embeddings,
        labels,
        ks,
        query_embeddings,
        query_labels,
        metric=metric,
        chunk_size=chunk_size,
        device=device,
        need_map=True,
    )


def recall_at_k(
    embeddings,
    labels,
    ks=(1,),
    *,
    query_embeddings=None,
    query_labels=None,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
) -> dict[int, float]:
    """Recall@K: fraction of queries with at least one same-class item among their K nearest.

    Parameters are those of :func:`retrieval_scores`; without ``query_embeddings`` the search
    is leave-one-out within ``embeddings``. Queries whose class has no other gallery item count
    as misses.

    Returns
    -------
    dict[int, float]
        ``{K: recall}`` for each K in ``ks``.
    """
    scores = _retrieval_pass(
        embeddings,
        labels,
        ks,
        query_embeddings,
        query_labels,
        metric=metric,
        chunk_size=chunk_size,
        device=device,
        need_map=False,
    )
    return {int(key.split("@")[1]): v for key, v in scores.items() if key.startswith("recall@")}


def precision_at_1(
    embeddings,
    labels,
    *,
    query_embeddings=None,
    query_labels=None,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
) -> float:
    r"""Fraction of queries (with :math:`R \ge 1`) whose nearest gallery item shares their label.

    Parameters are those of :func:`retrieval_scores`.
    """
    return _retrieval_pass(
        embeddings,
        labels,
        (1,),
        query_embeddings,
        query_labels,
        metric=metric,
        chunk_size=chunk_size,
        device=device,
        need_map=False,
    )["precision@1"]


def map_at_r(
    embeddings,
    labels,
    *,
    query_embeddings=None,
    query_labels=None,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
) -> float:
    r"""Mean average precision at R (Musgrave et al. 2020) over the queries with :math:`R \ge 1`.

    :math:`\mathrm{AP@R}(q) = \frac1R \sum_{i=1}^{R} P(i)\, \mathrm{rel}(i)`, :math:`R` the
    number of other same-class items.
    Parameters are those of :func:`retrieval_scores`.
    """
    return _retrieval_pass(
        embeddings,
        labels,
        (1,),
        query_embeddings,
        query_labels,
        metric=metric,
        chunk_size=chunk_size,
        device=device,
        need_map=True,
    )["map@r"]
