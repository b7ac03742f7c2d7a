"""Cumulative match characteristic (CMC) of a probe set against a gallery (re-identification)."""

from __future__ import annotations

import numpy as np
import torch

from .._threads import call_threads, search_work
from ..neighbors import check_metric
from ._inputs import check_ks, embedding_tensors, encode_labels
from ._ranking import for_each_ranked_chunk

__all__ = ["cmc_curve"]


@call_threads(lambda a: search_work(a["gallery"], a["probe"]))
def cmc_curve(
    probe,
    probe_ids,
    gallery,
    gallery_ids,
    ranks=(1, 5, 10, 15, 20),
    *,
    metric: str = "euclidean",
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
    return_curve: bool = False,
):
    """CMC(r): fraction of probes whose identity is among the r best-ranked gallery items.

    Each probe ranks every gallery item by distance (ties by the lower gallery index); its
    *match rank* is the position of the first gallery item of its own identity. A gallery
    may hold one item per identity (single-shot) or several (multi-shot: the best-ranked
    one counts); ranks count gallery items, not identities.

    **When to use which.** ``cmc_curve`` is the two-view (VIPeR / CUHK01) protocol: probes of
    one camera against a gallery of another, every probe identity in the gallery. For camera
    networks (Market-1501, DukeMTMC, MSMT17, CUHK03), use
    :func:`~rankmetric.evaluate.reid_scores`: it removes the gallery items of the query's own
    identity *and* camera (kept here, they inflate rank 1), ignores junk identities, skips and
    counts queries without a match, and reports the full mAP and mINP as well.
    ``reid_scores(..., protocol="single-view")`` gives this function's CMC.

    Parameters
    ----------
    probe : array-like or tensor of shape (n_probes, n_features)
    probe_ids : array-like of shape (n_probes,)
        Identities; each must occur in ``gallery_ids`` (closed-set identification).
    gallery : array-like or tensor of shape (n_gallery, n_features)
    gallery_ids : array-like of shape (n_gallery,)
        At least two identities.
    ranks : int or iterable of int, default=(1, 5, 10, 15, 20)
        Ranks to report, each at most ``n_gallery``.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
    chunk_size : int, optional
        Probes per chunk (None: chosen for about 256 MB of temporaries).
    device : str or torch.device, optional
    return_curve : bool, default=False
        Also return the whole curve.

    Returns
    -------
    scores : dict[int, float]
        ``{r: CMC(r)}``.
    curve : ndarray of shape (n_gallery,)
        Only with ``return_curve``: ``curve[r − 1] = CMC(r)`` for r = 1..n_gallery.

    See Also
    --------
    rankmetric.evaluate.reid_scores : CMC, mAP and mINP under the re-identification protocols.
    rankmetric.evaluate.recall_at_k : The leave-one-out counterpart within one set.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import cmc_curve
    >>> gallery, gallery_ids = np.array([[0.0], [1.0], [2.0]]), [0, 1, 2]
    >>> cmc_curve(np.array([[0.1], [1.6]]), [0, 1], gallery, gallery_ids, ranks=(1, 2))
    {1: 0.5, 2: 1.0}
    """
    metric = check_metric(metric)
    P, G = embedding_tensors(probe, gallery, ("probe", "gallery"), device)
    _, (p_codes, g_codes) = encode_labels(
        probe_ids, gallery_ids, lengths=[P.shape[0], G.shape[0]], names=["probe_ids", "gallery_ids"]
    )
    if np.unique(g_codes).shape[0] < 2:
        raise ValueError("gallery_ids hold a single identity; CMC needs at least two.")
    missing = ~np.isin(p_codes, g_codes)
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} probe(s) have an identity absent from the gallery; CMC is "
            "defined for closed-set identification: drop those probes first."
        )
    ranks = check_ks(ranks, G.shape[0], "ranks")
    match_rank = torch.empty(P.shape[0], dtype=torch.int64, device=P.device)

    def rank_first_match(rows, scores, columns, counted, places, R):
        match_rank[rows] = places[:, 0]  # the first match's place is exact at any depth

    for_each_ranked_chunk(
        P, G, metric, p_codes, g_codes, rank_first_match, chunk_size=chunk_size, depth=1
    )
    counts = np.bincount(match_rank.cpu().numpy() - 1, minlength=G.shape[0])
    curve = np.cumsum(counts) / P.shape[0]
    result = {r: float(curve[r - 1]) for r in ranks}
    return (result, curve) if return_curve else result
