"""Exact ranking within rows of scores: the k smallest, and the places of relevant items.

Every order here is (score, lower column): a float32 score and its column packed into one int64
*key* (order-preserving bits of the score in the high half, the column in the low half) are
unique and sort in that order; :func:`relevant_places` reaches the same order without keys
(a float sort and a binary search, ties counted by comparison).
"""

from __future__ import annotations

import numpy as np
import torch

from ._search import MEMORY_BUDGET

__all__ = ["exact_places", "ranking_keys", "relevant_places", "smallest_k"]


def _on_numpy(t: torch.Tensor) -> bool:
    """Whether ``t`` lives on the CPU, where NumPy's selection and sorting are faster."""
    return t.device.type == "cpu"


def _kth_smallest(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The k-th smallest value of each row (n,); introselect on the CPU, top-k elsewhere."""
    if _on_numpy(scores):
        part = np.partition(scores.numpy(), k - 1, axis=1)[:, k - 1]
        return torch.from_numpy(np.ascontiguousarray(part))
    return torch.topk(scores, k, dim=1, largest=False, sorted=True).values[:, -1]


def _first_ties_only(
    rows: torch.Tensor, values: torch.Tensor, kth: torch.Tensor, n_rows: int, k: int
) -> torch.Tensor:
    """Mask over candidates ``values <= kth[rows]`` keeping exactly ``k`` per row.

    Candidates strictly below the threshold are all kept; of those equal to it, only the
    first ``k − #below`` (lowest gallery index, since candidates are in index order).
    """
    at_kth = values == kth[rows]
    n_below = torch.bincount(rows[~at_kth], minlength=n_rows)
    ties_so_far = torch.cumsum(at_kth.to(torch.int64), dim=0)
    counts = torch.bincount(rows, minlength=n_rows)
    row_start = torch.cumsum(counts, dim=0) - counts
    ties_before_row = ties_so_far[row_start] - at_kth[row_start].to(torch.int64)
    tie_rank = ties_so_far - ties_before_row[rows]  # 1-based rank of a tie within its row
    return ~at_kth | (tie_rank <= (k - n_below)[rows])


def _flip(bits: torch.Tensor) -> torch.Tensor:
    """Flip the 31 low bits of negative int32 numbers: float32 bits ↔ integers of the same order
    (its own inverse)."""
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def _sort_by_value_then_index(
    values: torch.Tensor, cols: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reorder each row of ``(values, cols)`` by value, then by column index.

    ``cols`` must be ascending within each row. float32 rows are sorted as one int64 key per
    entry (value bits, then index; NumPy's vectorised sort on the CPU), which is much faster
    than an argsort; other dtypes use a stable sort on the values.
    """
    if values.dtype != torch.float32:
        values, order = torch.sort(values, dim=1, stable=True)
        return values, cols.gather(1, order)
    keys = pack_keys(values, cols)
    if _on_numpy(keys):
        return unpack_keys(torch.from_numpy(np.sort(keys.numpy(), axis=1)))
    return unpack_keys(torch.sort(keys, dim=1).values)


def pack_keys(values: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Unique int64 keys of float32 ``values`` at columns ``cols`` (same shape, ``< 2**32``):
    order-preserving bits of the value in the high half (−0.0 counts as +0.0), the column in the
    low half, so that integer order is (value, lower column) order."""
    return (_flip((values + 0.0).view(torch.int32)).to(torch.int64) << 32) | cols


def unpack_keys(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 values and int64 columns of :func:`pack_keys`' keys."""
    return _flip((keys >> 32).to(torch.int32)).view(torch.float32), keys & 0xFFFFFFFF


def ranking_keys(scores: torch.Tensor) -> torch.Tensor:
    """Unique int64 keys that order each row's entries by (score, lower column index).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Finite ranking scores (``m < 2**32``).

    Returns
    -------
    int64 tensor of shape (n, m)
        ``keys[i, a] < keys[i, b]`` exactly when entry ``a`` ranks before entry ``b`` in row
        ``i``. float32 scores are packed with their column (order-preserving bits of the score,
        then the index: no sort); other dtypes get each entry's position in a stable sort.

    See Also
    --------
    rankmetric.neighbors.smallest_k : The k smallest entries of each row in the same order.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import ranking_keys
    >>> keys = ranking_keys(torch.tensor([[0.5, 0.1, 0.5]]))
    >>> keys.argsort(dim=1).tolist()  # ties ordered by the lower column
    [[1, 0, 2]]
    """
    cols = torch.arange(scores.shape[1], device=scores.device)
    if scores.dtype == torch.float32:
        return pack_keys(scores, cols)
    order = torch.sort(scores, dim=1, stable=True).indices
    return torch.empty_like(order).scatter_(1, order, cols.expand_as(order).contiguous())


def smallest_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` smallest entries of each row, ordered by (value, column index).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Finite values, or ``+inf`` for excluded entries; ``k`` must not exceed the number of
        finite entries per row, and ``m < 2**32``.
    k : int

    Returns
    -------
    values : tensor of shape (n, k)
    indices : tensor of shape (n, k), dtype int64
        Column indices; among equal values the lower index comes first, and which of several
        equal values at the k-th place are kept is decided the same way.

    See Also
    --------
    rankmetric.neighbors.ranking_keys : The keys of the same order.
    rankmetric.neighbors.nearest_chunks : The search that uses it per chunk.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import smallest_k
    >>> values, indices = smallest_k(torch.tensor([[0.5, 0.1, 0.5, 0.9]]), 3)
    >>> values.tolist(), indices.tolist()
    ([[0.10000000149011612, 0.5, 0.5]], [[1, 0, 2]])
    """
    n = scores.shape[0]
    kth = _kth_smallest(scores, k).to(scores.device)
    rows, cols = (scores <= kth.unsqueeze(1)).nonzero(as_tuple=True)
    if rows.shape[0] != n * k:  # more than one candidate equal to some row's k-th value
        keep = _first_ties_only(rows, scores[rows, cols], kth, n, k)
        cols = cols[keep]
    cols = cols.view(n, k)
    return _sort_by_value_then_index(scores.gather(1, cols), cols)


NO_KEY = torch.iinfo(torch.int64).max  # sorts after every key
_FEW_TIES = 8  # tied relevant items of a row counted one by one; more: the row's keys
#: Bytes per (query, gallery item) of the exact fallback for rows with tied scores (int64 keys,
#: a masked copy, int64 buckets and masks; measured peak ≈ 43).
TIE_BYTES_PER_PAIR = 48


#: Bytes of score rows sorted and searched at once on the CPU: few enough rows that they stay in
#: the core's cache from their sort to the binary searches of their relevant values.
CACHED_ROWS_BYTES = 2**20


def _below_and_next(
    scores: torch.Tensor, values: torch.Tensor, depth: int, workspace: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank each row's ``values`` among the row's ``depth`` smallest scores.

    Returns ``below`` (n, w): the scores smaller than each value among those ``depth``, and
    ``following`` (n, w): the sorted row's entry at place ``below + 1`` (index clamped to
    ``depth − 1``), which equals the value when another entry ties with it.

    On the CPU the rows go through ``workspace`` a few at a time (:data:`CACHED_ROWS_BYTES`):
    copied, partitioned at ``depth`` when it is below the row length, sorted (NumPy's
    vectorised sort) and searched while still in cache; ``scores`` is left as it is.
    Elsewhere ``torch.sort`` / ``torch.topk`` of the whole chunk.
    """
    n, m = scores.shape
    if not _on_numpy(scores):
        if depth < m:
            ranked = torch.topk(scores, depth, dim=1, largest=False, sorted=True).values
        else:
            ranked = torch.sort(scores, dim=1).values
        below = torch.searchsorted(ranked, values)
        return below, ranked.gather(1, (below + 1).clamp_(max=depth - 1))
    step = max(1, min(n, CACHED_ROWS_BYTES // (scores.element_size() * max(m, 1))))
    if workspace is None or workspace.dtype != scores.dtype or workspace.shape[1] != m:
        workspace = torch.empty((step, m), dtype=scores.dtype)
    step = min(step, workspace.shape[0])
    buffer, rows = workspace.numpy(), scores.numpy()
    below = torch.empty(values.shape, dtype=torch.int64)
    following = torch.empty_like(values)
    for start in range(0, n, step):  # loop over blocks of a few rows (vectorised within)
        stop = min(start + step, n)
        block = buffer[: stop - start]
        np.copyto(block, rows[start:stop])
        if depth < m:
            block.partition(depth - 1, axis=1)
            block = np.sort(block[:, :depth], axis=1)
        else:
            block.sort(axis=1)
        ranked = torch.from_numpy(block)
        found = torch.searchsorted(ranked, values[start:stop])
        below[start:stop] = found
        following[start:stop] = ranked.gather(1, (found + 1).clamp_(max=depth - 1))
    return below, following


def _count_equal_before(
    block: torch.Tensor, values: torch.Tensor, columns: torch.Tensor
) -> torch.Tensor:
    """``#{g : block[i, g] == values[i], g < columns[i]}`` for each row ``i`` of ``block``."""
    if _on_numpy(block):
        equal = block.numpy() == values.numpy()[:, None]
        equal &= np.arange(block.shape[1]) < columns.numpy()[:, None]
        return torch.from_numpy(np.count_nonzero(equal, axis=1).astype(np.int64))
    column = torch.arange(block.shape[1], device=block.device)
    equal = (block == values.unsqueeze(1)) & (column < columns.unsqueeze(1))
    return torch.count_nonzero(equal, dim=1)


def exact_places(scores: torch.Tensor, values: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """``1 + #{g : s_g < v} + #{g : s_g = v, g < c}``: the 1-based place of the entry ``(v, c)``
    in each row's ranking by (score, lower column)."""
    smaller = torch.count_nonzero(scores < values.unsqueeze(1), dim=1)
    return 1 + smaller + _count_equal_before(scores, values, columns)


def _places_by_keys(scores: torch.Tensor, relevant: torch.Tensor, width: int) -> torch.Tensor:
    """Places of each row's relevant items with unique int64 keys: exact under any ties.

    ``O(m log R)`` a row (a binary search of every entry among the relevant keys and a
    histogram); :func:`relevant_places` uses it only for rows with many tied scores.
    Returns shape (n, width), ``width`` at least the most relevant items of a row.
    """
    n = scores.shape[0]
    keys = ranking_keys(scores)
    r_max = width
    rel_keys = keys.masked_fill(~relevant, NO_KEY).topk(r_max, dim=1, largest=False).values
    rel_keys = rel_keys.sort(dim=1).values.contiguous()
    bucket = torch.searchsorted(rel_keys, keys)  # relevant items ranked before each entry
    others = torch.isfinite(scores) & ~relevant
    bucket.masked_fill_(~others, r_max + 1)  # uncounted entries go to a spare bin
    bucket += (torch.arange(n, device=keys.device) * (r_max + 2)).unsqueeze(1)
    hist = torch.bincount(bucket.view(-1), minlength=n * (r_max + 2)).view(n, r_max + 2)
    del bucket, keys
    before = torch.cumsum(hist[:, :r_max], dim=1)  # other entries ranked before relevant j
    return torch.arange(1, r_max + 1, device=scores.device) + before


def relevant_places(
    scores: torch.Tensor,
    columns: torch.Tensor,
    counted: torch.Tensor,
    *,
    depth: int | None = None,
    tie_rows: int | None = None,
    workspace: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Places (1-based) of each row's relevant entries in the row's ranking, in order.

    A row ranks its finite entries by (score, lower column); ``+inf`` entries are out of the
    ranking (the caller writes ``+inf`` over what a protocol removes: the query itself, junk,
    same-camera twins).

    Parameters
    ----------
    scores : tensor of shape (n, m)
        Ranking scores (lower is nearer); finite, or ``+inf`` for entries outside the ranking.
        No NaN.
    columns : int64 tensor of shape (n, w)
        Candidate relevant columns of each row, ascending where ``counted``.
    counted : bool tensor of shape (n, w)
        Which candidates are relevant (their scores must be finite).
    depth : int, optional
        Only places up to ``depth`` are needed (mAP@R, Recall@K): a relevant entry ranked
        deeper gets the place ``depth + 1``, except the first one, whose place is always exact
        (MRR). The rows are then partitioned at ``depth`` rather than sorted. None: every
        place.
    tie_rows : int, optional
        Rows (or tied items) per block in the exact counting of ties (None: as many as 256 MB
        of temporaries allow; tied items: at most as many rows as fit in about 1 MB).
    workspace : tensor of shape (b, m), optional
        Scratch space of ``scores``' dtype for ``b`` rows at a time, reused across calls (CPU
        only; None: one of about 1 MB per call).

    Returns
    -------
    places : int64 tensor of shape (n, max(1, max R))
        ``places[q, j]`` = place of row ``q``'s (j+1)-th relevant entry among its finite
        entries (``depth + 1`` for those deeper than ``depth``); entries ``j ≥ R_q`` are
        meaningless.
    R : int64 tensor of shape (n,)
        Relevant entries per row.

    See Also
    --------
    rankmetric.neighbors.ranking_keys : The order it follows, as int64 keys.
    rankmetric.evaluate.retrieval_report : Average precision and more from these places.

    Notes
    -----
    The rows are sorted by value (vectorised float sort, no 64-bit keys, no index array) and
    each relevant value finds its place by binary search in its sorted row: ``O(m log m)`` a
    row in the sort, ``O(R log m)`` in the search. On the CPU a few rows at a time are copied,
    sorted and searched, so that the searches find the sorted rows in cache. Where a relevant
    value equals another entry's, the order among equals is the lower column: the equal
    entries of lower column are counted by one comparison of the row (a few such items a row,
    as float32 scores of distinct points give), or, for rows with more, the row is ranked
    again with unique (score, column) keys (:func:`ranking_keys`). The result is exact
    whatever the ties.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.neighbors import relevant_places
    >>> scores = torch.tensor([[0.3, 0.1, 0.2, 0.1], [0.5, float("inf"), 0.4, 0.9]])
    >>> columns = torch.tensor([[0, 3], [0, 3]])
    >>> counted = torch.tensor([[True, True], [True, True]])
    >>> places, R = relevant_places(scores, columns, counted)
    >>> places.tolist(), R.tolist()
    ([[2, 4], [2, 3]], [2, 2])
    """
    n = scores.shape[0]
    R = counted.sum(dim=1)
    width = max(int(R.max()) if n else 0, 1)
    if columns.shape[1] == 0:
        return torch.zeros((n, width), dtype=torch.int64, device=scores.device), R
    m = scores.shape[1]
    depth = m if depth is None else int(min(max(depth, 1), m))
    values = scores.gather(1, columns).masked_fill_(~counted, torch.inf)
    values, columns = _sort_by_value_then_index(values, columns)  # relevant first
    values, columns = values[:, :width].contiguous(), columns[:, :width]
    # below: entries with a smaller score (up to depth). The sorted row's entry at place
    # below + 1 is the relevant value itself; another entry ties with it when the next one
    # (following) equals it (at the depth itself the next one is not at hand: counted too).
    below, following = _below_and_next(scores, values, depth, workspace)
    places = below + 1
    is_rel = torch.arange(width, device=R.device) < R.unsqueeze(1)
    tied = ((following == values) & (places < depth) | (places == depth)) & is_rel
    if tie_rows is None:
        tie_rows = int(max(1, MEMORY_BUDGET // (TIE_BYTES_PER_PAIR * max(m, 1))))
    # tied pairs a block: as many rows as stay in cache (no fresh pages for a large block)
    pair_rows = min(tie_rows, max(1, CACHED_ROWS_BYTES // (scores.element_size() * max(m, 1))))
    if bool(tied.any()):
        many = tied.sum(dim=1) > _FEW_TIES  # rows of heavy ties: unique keys, O(m log R) a row
        at, j = (tied & ~many.unsqueeze(1)).nonzero(as_tuple=True)
        by_column = torch.argsort(columns[at, j])  # a block compares only up to its last column
        at, j = at[by_column], j[by_column]
        for block in _blocks(at.shape[0], pair_rows):  # blocks of tied (row, item) pairs
            a, k = at[block], j[block]
            before = int(columns[a, k].max())  # the equal entries counted lie left of it
            places[a, k] += _count_equal_before(scores[a, :before], values[a, k], columns[a, k])
        heavy = many.nonzero().squeeze(1)
        for block in _blocks(heavy.shape[0], tie_rows):  # blocks of rows with many ties
            rows = heavy[block]
            relevant = torch.zeros((rows.shape[0], m), dtype=torch.bool, device=scores.device)
            at_row, k = is_rel[rows].nonzero(as_tuple=True)
            relevant[at_row, columns[rows][at_row, k]] = True
            places[rows, :width] = _places_by_keys(scores[rows], relevant, width)
    if depth < m:
        places.clamp_(max=depth + 1)
        deep = ((places[:, 0] > depth) & (R > 0)).nonzero().squeeze(1)
        for block in _blocks(deep.shape[0], tie_rows):  # the first relevant place stays exact
            rows = deep[block]
            places[rows, 0] = exact_places(scores[rows], values[rows, 0], columns[rows, 0])
    return places, R


def _blocks(n: int, step: int):
    """Slices of ``range(n)`` of ``step`` items each."""
    return (slice(start, start + step) for start in range(0, n, step))
