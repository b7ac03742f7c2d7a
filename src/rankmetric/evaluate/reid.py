"""Person re-identification scores: CMC, full mAP and mINP under the field's protocols.

For a query ``q`` every gallery item is ranked by distance (ties by the lower gallery index),
then the protocol removes items from that ranking:

``"market1501"`` (Market-1501, DukeMTMC, MSMT17; torchreid's ``eval_market1501``)
    gallery items of *junk* identities (``-1`` by default), and items of the query's identity
    taken by the query's camera. The relevant items are the remaining ones of its identity.
``"cuhk03"`` (single-gallery-shot)
    as ``"market1501"`` for mAP and mINP; CMC is averaged over ``n_draws`` seeded draws, each of
    which keeps one gallery item per identity (see :func:`reid_scores`).
``"single-view"`` / ``"closed-set"``
    only junk items: the two-view VIPeR / CUHK01 setting (probes of camera A against a gallery of
    camera B), where no gallery item shares the query's camera anyway; cameras are not needed.

With ``n`` the places of the remaining list and ``p_1 < … < p_R`` those of the ``R`` relevant
items: match rank ``p_1``; ``CMC(r)`` = fraction of valid queries with ``p_1 ≤ r``;
``AP = (1/R) Σ_j j / p_j`` (full mAP, every relevant item, not only the first ``R`` places);
``INP = R / p_R`` (Ye et al., 2021: mINP). A query without any relevant item is *skipped* and
counted; the means are over the valid queries.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from .._threads import call_threads, search_work
from .._utils import make_rng
from .._validation import check_option
from .._validation import encode_labels as encode_label_arrays
from ..neighbors import check_metric
from ._inputs import as_label_array, check_int, check_ks, embedding_tensors, encode_labels
from ._ranking import first_places_and_ap, for_each_ranked_chunk

__all__ = ["PROTOCOLS", "query_gallery_split", "reid_scores"]

PROTOCOLS = ("market1501", "cuhk03", "single-view", "closed-set")


def _camera_codes(query_cams, gallery_cams, n_query: int, n_gallery: int, protocol: str):
    """Camera codes (shared code book) or ``None`` when the protocol ignores cameras."""
    if protocol in ("single-view", "closed-set"):
        return None, None
    if query_cams is None or gallery_cams is None:
        raise ValueError(
            f"protocol {protocol!r} needs query_cams and gallery_cams (the camera of every "
            "item); without cameras use protocol='single-view'."
        )
    _, (q, g) = encode_labels(
        query_cams, gallery_cams, lengths=[n_query, n_gallery],
        names=["query_cams", "gallery_cams"],
    )  # fmt: skip
    return q, g


def _junk_mask(gallery_ids, junk_ids) -> np.ndarray:
    if junk_ids is None:
        junk_ids = ()
    elif isinstance(junk_ids, (str, bytes)) or not isinstance(junk_ids, Iterable):
        junk_ids = [junk_ids]
    junk, ids = list(junk_ids), as_label_array(gallery_ids, "gallery_ids")
    return np.isin(ids, _in_id_type(junk, ids)) if junk else np.zeros(len(ids), dtype=bool)


def _in_id_type(junk: list, ids: np.ndarray) -> np.ndarray:
    """The junk ids in the type of the gallery ids, so that a file's ``"-1"`` and the default
    ``-1`` mean the same thing: strings for string ids (``-1`` → ``"-1"``), numbers for numeric
    ids (``"-1"`` → ``-1``; a string that is not a number is a ``ValueError``)."""
    as_text = [j.decode() if isinstance(j, bytes) else str(j) for j in junk]
    if ids.dtype.kind in "US":
        return np.array(as_text)
    if ids.dtype.kind not in "iuf":  # objects (e.g. strings from pandas): as given or as text
        return np.array([*junk, *as_text], dtype=object)
    values = []
    for j in junk:
        if isinstance(j, (str, bytes)):
            try:
                j = float(j)
            except ValueError:
                raise ValueError(
                    f"junk_ids: {j!r} is not a number, but the gallery ids are numbers "
                    f"({ids.dtype}); give junk ids of the ids' own type, e.g. -1."
                ) from None
        values.append(j)
    return np.asarray(values, dtype=np.float64)


@call_threads(lambda a: search_work(a["gallery"], a["query"]))
def reid_scores(
    query,
    query_ids,
    query_cams,
    gallery,
    gallery_ids,
    gallery_cams,
    *,
    ranks=(1, 5, 10, 20),
    protocol: str = "market1501",
    metric: str = "euclidean",
    junk_ids=(-1,),
    n_draws: int = 10,
    random_state=0,
    chunk_size: int | None = None,
    device: str | torch.device | None = None,
    return_curve: bool = False,
):
    """CMC at ``ranks``, full mAP and mINP of a query set against a gallery (re-identification).

    Parameters
    ----------
    query : array-like or tensor of shape (n_query, n_features)
        Query embeddings; with ``metric="precomputed"`` the distance matrix of shape
        (n_query, n_gallery) itself (e.g. :func:`rerank_k_reciprocal`'s output).
    query_ids : array-like of shape (n_query,)
        Identities of the queries.
    query_cams : array-like of shape (n_query,) or None
        Camera of each query (needed by ``"market1501"`` and ``"cuhk03"``).
    gallery : array-like or tensor of shape (n_gallery, n_features) or None
        Gallery embeddings (None with ``metric="precomputed"``).
    gallery_ids : array-like of shape (n_gallery,)
    gallery_cams : array-like of shape (n_gallery,) or None
    ranks : int or iterable of int, default=(1, 5, 10, 20)
        CMC ranks to report (each at most the number of gallery items, or of gallery
        identities under ``"cuhk03"``).
    protocol : {"market1501", "cuhk03", "single-view", "closed-set"}, default="market1501"
        ``"market1501"``: for each query, the gallery items with its identity *and* camera are
        removed from the ranking. ``"cuhk03"``: the same, and CMC is single-gallery-shot: draw
        ``d`` (``u = default_rng(random_state).random((n_draws, n_gallery))[d]``) keeps, of
        every identity, its item with the largest ``u`` (for the query's own identity: among
        its items of other cameras), the same draw for every query; CMC is the mean over the
        draws, mAP and mINP use the whole ranking. ``"single-view"`` (alias
        ``"closed-set"``): no camera removal (two-view probe/gallery sets). Every protocol
        ignores gallery items of ``junk_ids``.
    metric : {"euclidean", "sqeuclidean", "cosine", "precomputed"}, default="euclidean"
        As the other functions of :mod:`rankmetric.evaluate`; ``"precomputed"``: ``query``
        holds distances (lower is nearer).
    junk_ids : iterable, default=(-1,)
        Gallery identities ignored in every ranking (Market-1501's distractors labelled -1);
        ``()`` ignores none. Compared in the type of the gallery ids: with string ids the
        default ignores ``"-1"``; with numeric ids ``"-1"`` (as read from a command line or a
        text file) ignores ``-1``, and a junk id that is not a number is a ``ValueError``.
    n_draws : int, default=10
        Single-gallery-shot draws of ``"cuhk03"``.
    random_state : int, Generator or None, default=0
        Seeds the ``"cuhk03"`` draws.
    chunk_size : int, optional
        Queries per chunk (None: about 256 MB of temporaries, ``10 × n_gallery`` bytes a query
        for float32).
    device : str or torch.device, optional
        None uses CUDA when available.
    return_curve : bool, default=False
        Also return the whole CMC curve.

    Returns
    -------
    scores : dict
        ``"cmc"``: ``{r: CMC(r)}``; ``"mAP"``, ``"mINP"``: means over the valid queries;
        ``"n_valid"``, ``"n_skipped"``: queries with and without a relevant gallery item
        (absent identity, or only same-camera / junk items). Raises ``ValueError`` when every
        query is skipped.
    curve : ndarray
        Only with ``return_curve``: ``curve[r − 1] = CMC(r)`` for every rank.

    See Also
    --------
    rankmetric.evaluate.query_gallery_split : The query and gallery rows of a test set.
    rankmetric.evaluate.rerank_k_reciprocal : Re-ranked distances (``metric="precomputed"``).
    rankmetric.evaluate.cmc_curve : CMC without the camera rules of the protocols.

    Notes
    -----
    Exact and chunked: each chunk of queries scores the whole gallery once; the removed items
    get the score ``+inf`` and each relevant item's place among the kept ones comes from
    :func:`~rankmetric.neighbors.relevant_places` (a vectorised sort of the row's float scores
    and a binary search of the relevant ones; ties by the lower gallery index). Memory beyond
    the inputs is about ``chunk × n_gallery × 10`` bytes for float32 (256 MB by default) plus a
    few numbers per query; no ``n_query × n_gallery`` matrix exists. Use
    :func:`~rankmetric.evaluate.cmc_curve` for a two-view probe/gallery split whose every probe
    identity is in the gallery; use this function for camera networks (Market-1501-style
    data), for mAP, or when some query identities may be absent.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import reid_scores
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(20, 8))
    >>> ids = np.repeat(np.arange(20), 4)
    >>> cams = np.tile(np.arange(4), 20)
    >>> X = centres[ids] + 0.3 * rng.normal(size=(80, 8))
    >>> query = cams == 0
    >>> s = reid_scores(X[query], ids[query], cams[query], X[~query], ids[~query], cams[~query])
    >>> s["cmc"][1], s["n_valid"], s["n_skipped"]
    (1.0, 20, 0)
    """
    protocol = check_option("protocol", protocol, PROTOCOLS)
    precomputed = metric == "precomputed"
    metric = metric if precomputed else check_metric(metric)
    n_draws = check_int(n_draws, "n_draws")
    if precomputed != (gallery is None):
        raise ValueError(
            "gallery is only omitted with metric='precomputed', where query is the distance "
            "matrix: pass gallery=None with it, and a gallery otherwise."
        )
    Q, G = embedding_tensors(
        query, gallery, ("query (precomputed distances)" if precomputed else "query", "gallery"),
        device,
    )  # fmt: skip
    n_query, n_gallery = Q.shape[0], Q.shape[1] if precomputed else G.shape[0]
    dev = Q.device
    _, (q_ids, g_ids) = encode_labels(
        query_ids, gallery_ids, lengths=[n_query, n_gallery], names=["query_ids", "gallery_ids"]
    )
    q_cams, g_cams = _camera_codes(query_cams, gallery_cams, n_query, n_gallery, protocol)
    junk = _junk_mask(gallery_ids, junk_ids)
    identities = np.unique(g_ids[~junk])
    if identities.shape[0] == 0:
        raise ValueError("every gallery item has a junk identity; nothing can be ranked.")
    cuhk03 = protocol == "cuhk03"
    ranks = check_ks(ranks, identities.shape[0] if cuhk03 else n_gallery, "ranks")
    as_t = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
    junk_t, is_junk = as_t(np.flatnonzero(junk)), as_t(junk)  # junk items leave every ranking
    q_ids_t, g_ids_t = as_t(q_ids), as_t(g_ids)
    q_cams_t, g_cams_t = (None, None) if q_cams is None else (as_t(q_cams), as_t(g_cams))
    if cuhk03:
        u = make_rng(random_state).random((n_draws, n_gallery))
        picks = as_t(_one_per_identity(u, g_ids, junk))  # (n_draws, n_gallery) bool
        u_t = as_t(u)
    first, ap, inp = torch.zeros((3, n_query), dtype=torch.float64, device=dev)  # first 0: skipped
    curve_counts = torch.zeros(n_gallery + 1, dtype=torch.float64, device=dev)

    def remove(rows, scores, columns, counted):  # junk, and the query's twins of its camera
        if junk_t.numel():
            scores.index_fill_(1, junk_t, torch.inf)
        counted &= ~is_junk[columns]
        if q_cams_t is not None:
            twin = counted & (g_cams_t[columns] == q_cams_t[rows].unsqueeze(1))
            at, k = twin.nonzero(as_tuple=True)
            scores[at, columns[at, k]] = torch.inf
            counted &= ~twin
        return counted

    def score_chunk(rows, scores, columns, counted, places, R):
        nonlocal curve_counts
        found, ap[rows], _, _ = first_places_and_ap(places, R)
        first[rows] = found.to(torch.float64)
        last = places.gather(1, (R - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
        inp[rows] = torch.where(R > 0, R / last, 0.0).to(torch.float64)
        if cuhk03:
            same_id = g_ids_t.unsqueeze(0) == q_ids_t[rows].unsqueeze(1)
            curve_counts += _single_shot_counts(
                scores, columns, counted, same_id, R > 0, picks, u_t, n_gallery
            )

    for_each_ranked_chunk(
        Q, G, metric, q_ids, g_ids, score_chunk, chunk_size=chunk_size, remove=remove
    )
    valid_q = (first > 0).cpu().numpy()
    n_valid = int(valid_q.sum())
    if n_valid == 0:
        raise ValueError(
            f"no query has a relevant gallery item under protocol {protocol!r} (absent "
            "identities, or only same-camera or junk items): nothing to score."
        )
    if cuhk03:
        counts = curve_counts.cpu().numpy()[1:] / n_draws
    else:
        counts = np.bincount(first.cpu().numpy().astype(np.int64), minlength=n_gallery + 1)[1:]
    curve = np.cumsum(counts) / n_valid
    if cuhk03:
        curve = curve[: identities.shape[0]]
    scores = {
        "cmc": {r: float(curve[r - 1]) for r in ranks},
        "mAP": float(ap.cpu().numpy()[valid_q].mean()),
        "mINP": float(inp.cpu().numpy()[valid_q].mean()),
        "n_valid": n_valid,
        "n_skipped": int(n_query - n_valid),
    }
    return (scores, curve) if return_curve else scores


def _one_per_identity(u: np.ndarray, g_ids: np.ndarray, junk: np.ndarray) -> np.ndarray:
    """For each draw (row of ``u``), the item of each non-junk identity with the largest ``u``."""
    picks = np.zeros(u.shape, dtype=bool)
    for d in range(u.shape[0]):  # loop over draws (few), vectorised over the gallery
        order = np.lexsort((u[d], g_ids))  # by identity, then u ascending
        last = np.r_[g_ids[order][1:] != g_ids[order][:-1], True]
        chosen = order[last]
        picks[d, chosen[~junk[chosen]]] = True
    return picks


def _single_shot_counts(scores, columns, counted, same_id, ok, picks, u, n_gallery):
    """Histogram (over ranks 0..n_gallery) of the single-gallery-shot match ranks, all draws.

    Per draw, the query's own identity is represented by its relevant item with the largest
    ``u``; every other identity by the draw's pick; the match rank is one plus the number of
    other picks ranked before the query's (by score, then the lower column).
    """
    counts = torch.zeros(n_gallery + 1, dtype=torch.float64, device=scores.device)
    column = torch.arange(scores.shape[1], device=scores.device)
    for d in range(picks.shape[0]):  # loop over draws
        own = torch.where(counted, u[d][columns], -1.0).argmax(dim=1, keepdim=True)
        own_col = columns.gather(1, own)
        own_score = scores.gather(1, own_col)
        before = (scores < own_score) | ((scores == own_score) & (column < own_col))
        others = picks[d].unsqueeze(0) & ~same_id
        rank = 1 + torch.count_nonzero(others & before, dim=1)
        counts += torch.bincount(rank[ok], minlength=n_gallery + 1).to(torch.float64)
    return counts


def query_gallery_split(ids, cameras=None, *, random_state=0) -> tuple[np.ndarray, np.ndarray]:
    """Query and gallery rows of a re-identification test set, as the field's protocols form them.

    Parameters
    ----------
    ids : array-like of shape (n,)
        Identities of the test items.
    cameras : array-like of shape (n,), optional
        Camera of each item; None treats every item as its own camera.
    random_state : int, Generator or None, default=0
        Picks the query of each (identity, camera) track.

    Returns
    -------
    query_rows, gallery_rows : ndarray of int
        * one item per (identity, camera) track and **two cameras** (VIPeR, CUHK01): the first
          camera's items are the queries (probes), the second camera's the gallery;
        * one item per track and more cameras, or no cameras: every item is a query against
          all items (under ``"market1501"`` the query itself and its same-camera twins are
          removed: leave-one-out);
        * several items per track (Market-1501, DukeMTMC): one random item per track is a
          query, every other item is in the gallery.

    See Also
    --------
    rankmetric.evaluate.reid_scores : Score the query rows against the gallery rows.
    rankmetric.sampling.CrossCameraLabelIndex : Training batches with cross-camera positives.

    Examples
    --------
    >>> from rankmetric.evaluate import query_gallery_split
    >>> q, g = query_gallery_split([0, 0, 1, 1], [0, 1, 0, 1])
    >>> q.tolist(), g.tolist()
    ([0, 2], [1, 3])
    """
    ids = as_label_array(ids, "ids")
    n = ids.shape[0]
    cams = np.arange(n) if cameras is None else as_label_array(cameras, "cameras")
    if cams.shape[0] != n:
        raise ValueError(f"cameras has {cams.shape[0]} values but there are {n} items.")
    _, (id_codes,) = encode_label_arrays(ids)
    cam_values, (cam_codes,) = encode_label_arrays(cams)
    _, (track_of,) = encode_label_arrays(id_codes * len(cam_values) + cam_codes)
    sizes = np.bincount(track_of)
    everything = np.arange(n)
    if sizes.max() == 1:
        if cameras is not None and len(cam_values) == 2:
            return np.flatnonzero(cam_codes == 0), np.flatnonzero(cam_codes == 1)
        return everything, everything
    u = make_rng(random_state).random(n)
    order = np.lexsort((u, track_of))  # by track, then u
    first = np.r_[True, track_of[order][1:] != track_of[order][:-1]]
    query = np.sort(order[first])
    return query, np.setdiff1d(everything, query)
