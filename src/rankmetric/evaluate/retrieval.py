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

import sys

import numpy as np
import torch
from sklearn.metrics import adjusted_mutual_info_score

from .._threads import call_threads, search_work
from .._utils import progress
from .._validation import check_option
from ..neighbors import check_metric
from ._inputs import check_ks, embedding_tensors, encode_labels
from ._kmeans import check_backend, kmeans_labels
from ._precision import average_precision
from ._ranking import first_places_and_ap, for_each_ranked_chunk
from .clustering import nmi_score

__all__ = [
    "retrieval_scores",
    "retrieval_report",
    "recall_at_k",
    "precision_at_1",
    "map_at_r",
]


def _ranked_pass(
    Q, G, q_codes, g_codes, leave_one_out, metric, chunk_size, depth_of=None, bar=None
) -> dict:
    """Per-query place of the first hit (0: none), AP, AP@R and R-precision, in one pass.

    Each chunk of queries scores the whole gallery once; the places of the relevant items come
    from :func:`~rankmetric.neighbors.relevant_places` (ties: the lower gallery index), and are
    reduced to per-query numbers at once. ``depth_of`` (n_queries,): the deepest place each
    query needs (a chunk ranks only as deep as its own deepest query); None: every place.
    """
    names = ("first", "map", "map@r", "r_precision")  # first: place of the first hit (0: none)
    found = torch.zeros((len(names), Q.shape[0]), dtype=torch.float64, device=Q.device)

    def visit(rows, scores, columns, counted, places, r):
        first, ap, j, counted = first_places_and_ap(places, r)
        within_r = counted & (places <= r.unsqueeze(1))
        map_at_r = average_precision(j + 1, places, within_r, r)
        r_precision = within_r.sum(dim=1) / r.clamp(min=1).to(torch.float64)
        for per_query, value in zip(found, (first, ap, map_at_r, r_precision), strict=True):
            per_query[rows] = value.to(torch.float64)
        if bar is not None:
            bar.update(len(rows))

    for_each_ranked_chunk(
        Q, G, metric, q_codes, g_codes, visit, chunk_size=chunk_size,
        exclude_self=leave_one_out, depth=depth_of,
    )  # fmt: skip
    out = dict(zip(names, found.cpu().numpy(), strict=True))
    out["first"] = out["first"].astype(np.int64)
    return out


def _checked(embeddings, labels, ks, query_embeddings, query_labels, device):
    """Validated inputs of a ranking score: tensors, codes, the leave-one-out flag, ks, R."""
    if (query_embeddings is None) != (query_labels is None):
        raise ValueError("query_embeddings and query_labels must be given together.")
    G, Q = embedding_tensors(
        embeddings, query_embeddings, ("embeddings", "query_embeddings"), device
    )
    leave_one_out = Q is None
    if leave_one_out:
        _, (g_codes,) = encode_labels(labels, lengths=[G.shape[0]], names=["labels"])
        Q, q_codes = G, g_codes
    else:
        _, (g_codes, q_codes) = encode_labels(
            labels, query_labels, lengths=[G.shape[0], Q.shape[0]], names=["labels", "query_labels"]
        )
    if np.unique(g_codes).shape[0] < 2:
        raise ValueError(
            "the gallery holds a single class: every item is relevant, so retrieval scores "
            "are meaningless."
        )
    ks = check_ks(ks, G.shape[0] - int(leave_one_out), "ks")
    n_classes = int(max(q_codes.max(), g_codes.max())) + 1
    R = np.bincount(g_codes, minlength=n_classes)[q_codes] - int(leave_one_out)
    if not np.any(R > 0):
        raise ValueError("no query has a same-class item in the gallery.")
    return Q, G, q_codes, g_codes, leave_one_out, ks, R


def _announce(n_queries: int, n_gallery: int, width: int, depth: int, verbose):
    """With ``verbose``: the work up front on stderr (distances, ranking depth, the chunks'
    bounded memory), then a progress bar over the queries with its time estimate."""
    if verbose:
        print(
            f"retrieval: {n_queries:,} queries x {n_gallery:,} gallery items of {width} features "
            f"({n_queries * n_gallery:,} distances), ranked {depth:,} deep; memory bounded by "
            "the query chunks (about 256 MB); the bar below estimates the time.",
            file=sys.stderr,
        )
    return progress(total=n_queries, desc="queries", unit="query", verbose=verbose)


#: The parameter entries shared by the retrieval scores' docstrings.
_DATA_PARAMETERS = """\
embeddings : array-like or tensor of shape (n_samples, n_features)
        The gallery; without ``query_embeddings`` every item is also a query, ranked against
        all the others (leave-one-out).
    labels : array-like of shape (n_samples,)
        Class of each gallery item."""
_SEARCH_PARAMETERS = """\
query_embeddings : array-like or tensor of shape (n_queries, n_features), optional
        Separate queries, ranked against the whole gallery.
    query_labels : array-like of shape (n_queries,), optional
        Required with ``query_embeddings``.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
        Distance of the search.
    chunk_size : int, optional
        Queries per chunk (None: chosen for about 256 MB of temporaries).
    device : str or torch.device, optional
        None uses CUDA when available."""
#: The five points of the docstrings' examples and their labels.
_EXAMPLE_DATA = """\
>>> import numpy as np
    >>> X = np.array([[0.0], [0.1], [5.0], [5.2], [0.3]])
    >>> y = np.array([0, 0, 1, 1, 1])"""


def _shared_docs(fn):
    """Fill the shared parameter entries and example data into ``fn``'s docstring."""
    for marker, text in (
        ("DATA_PARAMETERS", _DATA_PARAMETERS),
        ("SEARCH_PARAMETERS", _SEARCH_PARAMETERS),
        ("EXAMPLE_DATA", _EXAMPLE_DATA),
    ):
        fn.__doc__ = fn.__doc__.replace(f"<{marker}>", text)
    return fn


@_shared_docs
@call_threads(lambda a: search_work(a["embeddings"], a["query_embeddings"]))
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
    verbose: bool | int = False,
) -> dict[str, float]:
    """Recall@K for every K in ``ks``, precision@1 and mAP@R in one memory-bounded pass.

    Parameters
    ----------
    <DATA_PARAMETERS>
    ks : int or iterable of int, default=(1, 3)
        Each at most the number of gallery items a query ranks.
    <SEARCH_PARAMETERS>
    verbose : bool, default=False
        Print the work up front (distances, ranking depth) and show a progress bar with its
        time estimate (on a terminal).

    Returns
    -------
    dict
        ``"recall@K"`` for each K, ``"precision@1"`` and ``"map@r"``, all floats in [0, 1].
        Definitions in the module docstring and ``docs/evaluation.md``.

    See Also
    --------
    rankmetric.evaluate.retrieval_report : More rank and clustering scores in one pass.
    rankmetric.evaluate.recall_at_k : Recall@K alone.
    rankmetric.evaluate.map_at_r : mAP@R alone.

    Notes
    -----
    Memory is ``O(chunk × (n_gallery + max R))`` beyond the inputs: each chunk's ranked
    top-``max(K, R)`` lists are reduced to per-query numbers at once; ``n_queries × R`` is
    never held. Queries are visited in order of ``R`` so that each chunk ranks only as deep
    as its own largest ``R``.

    Examples
    --------
    <EXAMPLE_DATA>
    >>> from rankmetric.evaluate import retrieval_scores
    >>> scores = retrieval_scores(X, y, ks=(1, 2))
    >>> {key: round(value, 4) for key, value in scores.items()}
    {'recall@1': 0.8, 'recall@2': 0.8, 'precision@1': 0.8, 'map@r': 0.8}
    """
    metric = check_metric(metric)
    Q, G, q_codes, g_codes, leave_one_out, ks, R = _checked(
        embeddings, labels, ks, query_embeddings, query_labels, device
    )
    depth_of = np.maximum(R, ks[-1])  # mAP@R looks R places deep, Recall@K K places
    with _announce(Q.shape[0], G.shape[0], G.shape[1], int(depth_of.max()), verbose) as bar:
        found = _ranked_pass(
            Q, G, q_codes, g_codes, leave_one_out, metric, chunk_size, depth_of, bar
        )
    result = _summarise(found, R, q_codes, ks, {"recall@k", "precision@1", "map@r"}, "micro")
    return {key: result[key] for key in (*(f"recall@{k}" for k in ks), "precision@1", "map@r")}


@_shared_docs
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

    Without ``query_embeddings`` the search is leave-one-out within ``embeddings``. Queries
    whose class has no other gallery item count as misses.

    Parameters
    ----------
    <DATA_PARAMETERS>
    ks : int or iterable of int, default=(1,)
        Each at most the number of gallery items a query ranks.
    <SEARCH_PARAMETERS>

    Returns
    -------
    dict[int, float]
        ``{K: recall}`` for each K in ``ks``.

    See Also
    --------
    rankmetric.evaluate.retrieval_scores : Recall@K with precision@1 and mAP@R in one pass.
    rankmetric.evaluate.cmc_curve : The re-identification counterpart (probe against gallery).

    Examples
    --------
    <EXAMPLE_DATA>
    >>> from rankmetric.evaluate import recall_at_k
    >>> recall_at_k(X, y, ks=(1, 2))
    {1: 0.8, 2: 0.8}
    """
    scores = retrieval_scores(
        embeddings, labels, ks, query_embeddings, query_labels,
        metric=metric, chunk_size=chunk_size, device=device,
    )  # fmt: skip
    return {int(key.split("@")[1]): v for key, v in scores.items() if key.startswith("recall@")}


# alike: recall_at_k's keywords on purpose: each is one score of retrieval_scores
@_shared_docs
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

    Parameters
    ----------
    <DATA_PARAMETERS>
    <SEARCH_PARAMETERS>

    Returns
    -------
    float in [0, 1]
        Precision@1 over the queries that have at least one relevant gallery item.

    See Also
    --------
    rankmetric.evaluate.retrieval_scores : Precision@1 with Recall@K and mAP@R in one pass.
    rankmetric.evaluate.recall_at_k : Recall at any K.

    Examples
    --------
    <EXAMPLE_DATA>
    >>> from rankmetric.evaluate import precision_at_1
    >>> precision_at_1(X, y)  # the item at 0.3 finds a class-0 neighbour
    0.8
    """
    return retrieval_scores(
        embeddings, labels, (1,), query_embeddings, query_labels,
        metric=metric, chunk_size=chunk_size, device=device,
    )["precision@1"]  # fmt: skip


# alike: precision_at_1's signature on purpose: both are one score of retrieval_scores
@_shared_docs
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

    Parameters
    ----------
    <DATA_PARAMETERS>
    <SEARCH_PARAMETERS>

    Returns
    -------
    float in [0, 1]
        The mean of AP@R over the queries with :math:`R \ge 1`.

    See Also
    --------
    rankmetric.evaluate.retrieval_scores : mAP@R with Recall@K and precision@1 in one pass.
    rankmetric.evaluate.retrieval_report : Full mAP, MRR and R-precision too.

    References
    ----------
    .. [1] K. Musgrave, S. Belongie and S.-N. Lim. A Metric Learning Reality Check. ECCV 2020.

    Examples
    --------
    <EXAMPLE_DATA>
    >>> from rankmetric.evaluate import map_at_r
    >>> round(map_at_r(X, y), 4)
    0.8
    """
    return retrieval_scores(
        embeddings, labels, (1,), query_embeddings, query_labels,
        metric=metric, chunk_size=chunk_size, device=device,
    )["map@r"]  # fmt: skip


AVERAGES = ("micro", "macro")


def _class_mean(values: np.ndarray, codes: np.ndarray, mask: np.ndarray, average: str) -> float:
    """Mean of ``values[mask]``: over queries (micro) or of the per-class means (macro)."""
    if average == "micro":
        return float(np.mean(values[mask]))
    codes = codes[mask]
    sums = np.bincount(codes, weights=values[mask])
    counts = np.bincount(codes)
    present = counts > 0
    return float(np.mean(sums[present] / counts[present]))


@_shared_docs
@call_threads(lambda a: search_work(a["embeddings"], a["query_embeddings"]))
def retrieval_report(
    embeddings,
    labels,
    ks=(1,),
    query_embeddings=None,
    query_labels=None,
    *,
    average: str = "micro",
    clustering: bool = True,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
    random_state=0,
    n_init: int = 1,
    kmeans: str = "torch",
    include=None,
) -> dict[str, float]:
    r"""mAP, MRR, R-precision, mAP@R, P@1, Recall@K, NMI and AMI in one memory-bounded pass.

    The full report of pytorch-metric-learning's ``AccuracyCalculator`` (see Notes): NMI and
    AMI score a k-means clustering of the queries against their labels.

    Parameters
    ----------
    embeddings : array-like or tensor of shape (n_samples, n_features)
        The reference set (gallery); without ``query_embeddings`` every item is also a query,
        ranked against all the others (leave-one-out: a query never retrieves itself).
    labels : array-like of shape (n_samples,)
        Class of each reference item.
    ks : int or iterable of int, default=(1,)
        The K of Recall@K, each at most the number of reference items a query ranks.
    query_embeddings : array-like or tensor of shape (n_queries, n_features), optional
        Queries separate from the reference set, ranked against all of it (no exclusion).
    query_labels : array-like of shape (n_queries,), optional
        Required with ``query_embeddings``.
    average : {"micro", "macro"}, default="micro"
        ``"micro"``: mean over queries; ``"macro"``: mean over the query classes of each class's
        mean (pytorch-metric-learning's ``avg_of_avgs=True``).
    clustering : bool, default=True
        Also cluster the queries with k-means (k = number of query classes) and report NMI and
        AMI against their labels.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
    chunk_size : int, optional
        Queries per chunk (None: chosen for about 256 MB of temporaries).
    device : str or torch.device, optional
        None uses CUDA when available.
    random_state : int, RandomState or None, default=0
        Seed of the k-means clustering.
    n_init : int, default=1
        k-means restarts (the best inertia is kept).
    kmeans : {"torch", "faiss", "sklearn"}, default="torch"
        The k-means of the clustering scores: the project's own on torch (chunked), faiss's,
        or scikit-learn's ``KMeans`` (with ``n_init=10``: the scores of earlier versions). See
        :func:`~rankmetric.evaluate.clustering_scores`; here the torch and faiss ones stop
        after at most 25 Lloyd iterations (faiss's default, as pytorch-metric-learning runs
        it), :func:`~rankmetric.evaluate.clustering_scores` runs them to convergence.
    include : iterable of str, optional
        The ranking scores to compute, among ``"map"``, ``"mrr"``, ``"r_precision"``,
        ``"map@r"``, ``"precision@1"`` and ``"recall@k"`` (every K of ``ks``); None: all.
        Without ``"map"`` each query's ranking is only followed ``max(R, K)`` places deep (a
        partial sort), which is faster; the others are exact either way.

    Returns
    -------
    dict
        ``"map"``, ``"mrr"``, ``"r_precision"``, ``"map@r"``, ``"precision@1"``,
        ``"recall@K"`` for each K, and with ``clustering`` ``"nmi"`` and ``"ami"``; floats.

    See Also
    --------
    rankmetric.evaluate.retrieval_scores : Recall@K, precision@1 and mAP@R only.
    rankmetric.evaluate.clustering_scores : NMI and pairwise F1 of a k-means clustering.

    Notes
    -----
    :math:`R` = reference items sharing the query's label (the query itself excluded). All the
    ranking scores but Recall@K average over the queries with :math:`R \ge 1` (as
    pytorch-metric-learning's ``AccuracyCalculator``); Recall@K averages over all queries,
    counting those with :math:`R = 0` as misses (as :func:`retrieval_scores`). Ties rank the lower
    reference index first. Memory is ``O(chunk × n_reference)`` beyond the inputs: each chunk's
    scores give the places of its relevant items without sorting a row and are reduced to
    per-query numbers at once. Equal to ``AccuracyCalculator(k=None, avg_of_avgs=average ==
    "macro")`` on the scores both compute. Definitions: ``docs/evaluation.md``.

    Examples
    --------
    <EXAMPLE_DATA>
    >>> report = retrieval_report(X, y, ks=(1, 2), clustering=False)
    >>> round(report["precision@1"], 4), round(report["mrr"], 4)
    (0.8, 0.8667)
    """
    check_option("average", average, AVERAGES)
    metric = check_metric(metric)
    Q, G, q_codes, g_codes, leave_one_out, ks, R = _checked(
        embeddings, labels, ks, query_embeddings, query_labels, device
    )
    include = _check_include(include)
    if clustering:
        kmeans = check_backend(kmeans)
    depth_of = None if "map" in include else np.maximum(R, ks[-1])
    found = _ranked_pass(Q, G, q_codes, g_codes, leave_one_out, metric, chunk_size, depth_of)
    result = _summarise(found, R, q_codes, ks, include, average)
    if clustering:
        result.update(_cluster_scores(Q, q_codes, random_state, n_init, kmeans))
    return result


def _summarise(found: dict, R, q_codes, ks, include, average: str) -> dict:
    """The scores of ``include`` from :func:`_ranked_pass`'s per-query numbers, averaged over
    the queries with ``R ≥ 1`` (Recall@K: over all queries), micro or macro."""
    first, scored, everyone = found.pop("first"), R > 0, np.ones(R.shape[0], dtype=bool)
    hit = first > 0
    mean = lambda values, mask: _class_mean(values, q_codes, mask, average)  # noqa: E731
    result = {name: mean(v, scored) for name, v in found.items() if name in include}
    if "mrr" in include:
        result["mrr"] = mean(np.where(hit, 1.0 / np.maximum(first, 1), 0.0), scored)
    if "precision@1" in include:
        result["precision@1"] = mean((first == 1).astype(np.float64), scored)
    if "recall@k" in include:
        for k in ks:
            result[f"recall@{k}"] = mean((hit & (first <= k)).astype(np.float64), everyone)
    return result


REPORT_SCORES = ("map", "mrr", "r_precision", "map@r", "precision@1", "recall@k")


def _check_include(include) -> frozenset:
    if include is None:
        return frozenset(REPORT_SCORES)
    names = [include] if isinstance(include, str) else list(include)
    unknown = sorted({str(n) for n in names} - set(REPORT_SCORES))
    if unknown or not names:
        raise ValueError(
            f"include must name some of {REPORT_SCORES}, got {include!r}"
            + (f" (unknown: {unknown})." if unknown else ".")
        )
    return frozenset(names)


#: Lloyd iterations of the report's k-means at most (torch and faiss; scikit-learn's ``KMeans``
#: keeps its own 300): faiss's default, which PML's ``AccuracyCalculator`` runs.
REPORT_KMEANS_ITERATIONS = 25


def _cluster_scores(Q: torch.Tensor, q_codes: np.ndarray, random_state, n_init, kmeans) -> dict:
    """NMI and AMI of k-means (k = number of query classes) on the queries against their labels,
    as pytorch-metric-learning's ``AccuracyCalculator`` defines them."""
    n_clusters = np.unique(q_codes).shape[0]
    if n_clusters < 2:
        raise ValueError(
            "the queries hold a single class, so NMI and AMI are undefined; pass clustering=False."
        )
    clusters = kmeans_labels(
        Q, n_clusters, n_init=n_init, random_state=random_state, backend=kmeans,
        max_iter=REPORT_KMEANS_ITERATIONS,
    )  # fmt: skip
    return {
        "nmi": nmi_score(q_codes, clusters),
        "ami": float(adjusted_mutual_info_score(q_codes, clusters)),
    }
