"""Target neighbours and impostor search of LMNN and multiple-metric LMNN (the active set).

Target neighbours are the ``k`` nearest same-class samples in the input space (exact search,
:mod:`rankmetric.neighbors`). Impostor pairs ``(i, l)`` (another class, inside ``i``'s margin
radius ``max_j ||L(x_i − x_j)||² + 1``) are found by a chunked search over (chunk × n) distance
blocks, so memory is O(chunk · n), never O(n²); the *active set* keeps them between searches.
The memory of an active set is bounded by the process's memory budget
(:func:`rankmetric.resources.memory_budget`: available memory, rlimits, cgroup limits, or the
user's override): each search first estimates the active set from a sample of anchors and refuses
one that cannot fit before searching, then checks the exact count as it goes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..._distances import paired_squared_euclidean, squared_euclidean
from ..._utils import to_tensor
from ...neighbors import Gallery, nearest_chunks
from ...resources import check_memory, memory_budget

__all__ = [
    "MAX_ACTIVE_SET_BYTES",
    "PAIR_BYTES",
    "PAIR_BYTES_PER_K",
    "ActiveSet",
    "find_impostors",
    "find_target_neighbors",
    "pair_sq_distances",
    "search_active_set",
]

# Elements of one (chunk × n) distance block; bounds the memory of every neighbour search.
_BLOCK_ELEMENTS = 1 << 22
# Elements of one (chunk × r) gather buffer of the pair distances (1 MiB in float32).
_GATHER_ELEMENTS = 1 << 18
# Relative slack of the impostor search, so that rounding in ``||a||² + ||b||² − 2ab`` never drops
# a violated triplet (extra candidates cost little: their hinge is zero).
_SEARCH_SLACK = 1e-4
# Previous impostor pairs within the margin radius + this much stay in the active set.
_HYSTERESIS = 1.0
#: An optional fixed ceiling (bytes) on the memory of an active set, on top of the process's
#: memory budget (:mod:`rankmetric.resources`), which alone bounds it when this is None. Without
#: any bound an active set at N = 60,000 passed 23 GB.
MAX_ACTIVE_SET_BYTES: int | None = None
#: Anchors sampled to estimate the size of an active set before searching it.
N_PROBE_ANCHORS = 512
#: Bytes one active pair really costs at the peak of a fit: ``PAIR_BYTES + PAIR_BYTES_PER_K · k``.
#: Measured (docs/reliability.md): the objective on 3M pairs peaked at 99 B/pair at k = 3 and 181
#: at k = 8, its two indices included (its (pairs × k) hinge terms; unchunked pair distances took
#: 258 B at rank 20); since the hinges run a chunk of pairs at a time, 79 B at k = 3 and 81 B at
#: k = 8, the index structures of ``_objective.PairLaplacian`` included
#: (``bench_lmnn_memory.py objective``); a full fit on 6,000 points peaked at 83 B per pair of
#: its largest active set (k = 3), 81 B now (``bench_lmnn_memory.py fit --n 6000 --k 3
#: --max-iter 8``: 21.3M pairs). The bound (124 B at k = 3, 224 B at k = 8) covers each.
PAIR_BYTES, PAIR_BYTES_PER_K = 64, 20
#: Factor on an active set *estimated* from sampled anchors before a search: the set keeps the
#: previous search's near pairs (hysteresis) and grows as the metric moves, so an estimate that
#: only just fits means a refusal (or an allocator failure) one long search later. Measured on
#: the 200,000-point case of docs/reliability.md: 11.9M pairs before the first search, 20.2M
#: before the second (×1.7). The exact checks made while searching use no factor.
ESTIMATE_GROWTH = 2.0


@dataclass(frozen=True)
class ActiveSet:
    """Target neighbours and candidate impostor pairs of an LMNN problem.

    Attributes
    ----------
    targets : LongTensor of shape (n_samples, k)
        Target neighbours of each sample; padded with the sample itself where a class holds
        fewer than ``k + 1`` samples.
    target_mask : BoolTensor of shape (n_samples, k)
        Which entries of ``targets`` are real neighbours.
    anchors, impostors : LongTensor of shape (n_pairs,)
        Candidate impostor pairs ``(i, l)``: ``l`` has another class than ``i``.
    """

    targets: torch.Tensor
    target_mask: torch.Tensor
    anchors: torch.Tensor
    impostors: torch.Tensor

    def pair_keys(self, n_samples: int) -> torch.Tensor:
        """Impostor pairs encoded as ``i * n_samples + l`` (for set comparisons)."""
        return self.anchors * n_samples + self.impostors


def row_chunk(n_columns: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(n_columns, 1))


def find_target_neighbors(
    X: torch.Tensor, codes: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest same-class neighbours of every sample, in the input space.

    Exact search (:mod:`rankmetric.neighbors`); equal distances go to the lower index.

    A class with ``n_c ≤ k`` samples gives its members ``n_c − 1`` target neighbours (none for
    a single sample); the missing slots point at the sample itself and are masked out.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    codes : LongTensor of shape (n_samples,)
        Class codes ``0..Q-1``.
    k : int
        Target neighbours per sample.

    Returns
    -------
    targets : LongTensor of shape (n_samples, k)
    target_mask : BoolTensor of shape (n_samples, k)
    """
    n = X.shape[0]
    targets = torch.arange(n, device=X.device)[:, None].repeat(1, k)
    mask = torch.zeros(n, k, dtype=torch.bool, device=X.device)
    for c in torch.unique(codes).tolist():  # loop over classes, each fully vectorised
        members = torch.nonzero(codes == c).flatten()
        k_c = min(k, members.numel() - 1)
        if k_c == 0:
            continue
        Xc = X[members]
        space = Gallery.build(Xc, "sqeuclidean")
        for rows, _, nearest, _ in nearest_chunks(Xc, space, k_c, exclude_self=True):
            targets[members[rows], :k_c] = members[nearest]
            mask[members[rows], :k_c] = True
    return targets, mask


def pair_sq_distances(
    Z: torch.Tensor, a: torch.Tensor, b: torch.Tensor, groups: torch.Tensor | None = None
) -> torch.Tensor:
    """Squared distances of the pairs ``(a_p, b_p)`` in the embedding of the reference ``b_p``.

    Parameters
    ----------
    Z : Tensor of shape (n_samples, r), or (n_groups, n_samples, r) with ``groups``
        One embedding ``X Lᵀ``, or one per group ``X L_gᵀ`` (multiple-metric LMNN).
    a, b : LongTensor of any (equal or broadcastable) shape
        Sample indices; ``b`` is the reference point of each pair.
    groups : LongTensor of shape (n_samples,), optional
        Group of each sample; pair ``(a, b)`` is measured in ``Z[groups[b]]``.

    Returns
    -------
    Tensor of the broadcast shape of ``a`` and ``b``
    """
    if a.ndim == 1 and b.ndim == 1 and a.numel() > _gather_rows(Z.shape[-1]):
        return _chunked_pair_sq_distances(Z, a, b, groups)
    if groups is None:
        return paired_squared_euclidean(Z[a], Z[b])
    g = groups[b]
    return paired_squared_euclidean(Z[g, a], Z[g, b])


def _gather_rows(n_columns: int) -> int:
    """Pairs per chunk of :func:`_chunked_pair_sq_distances`: two (chunk × r) buffers that stay
    in the CPU's cache."""
    return max(1, _GATHER_ELEMENTS // max(n_columns, 1))


def _chunked_pair_sq_distances(Z, a, b, groups) -> torch.Tensor:
    """:func:`pair_sq_distances` of many pairs, a chunk at a time (:func:`pair_chunks`)."""
    out = torch.empty(a.shape[0], dtype=Z.dtype, device=Z.device)
    for sl, d in pair_chunks(Z, a, b, groups):
        out[sl] = d
    return out


def pair_chunks(Z: torch.Tensor, a: torch.Tensor, b: torch.Tensor, groups=None):
    """``(slice, d)`` per chunk of the pairs ``(a, b)``: their squared distances as
    :func:`pair_sq_distances` gives them, bit for bit (the difference form), in O(P·r) gathers
    of embedded rows into two (chunk × r) buffers allocated once; ``d`` is a buffer too, valid
    until the next chunk.

    ``index_select`` into reused buffers that stay in the CPU's cache, not ``Z[a]``: advanced
    indexing and a fresh (pairs × r) temporary per chunk cost ≈ 130 ns per pair at r = 20,
    this ≈ 25 ns (one thread).
    """
    r, n = Z.shape[-1], Z.shape[-2]
    flat = Z.reshape(-1, r)  # with groups: row g·n + i is Z[g, i]
    step = _gather_rows(r)
    rows = max(1, min(step, a.shape[0]))
    A = torch.empty(rows, r, dtype=Z.dtype, device=Z.device)
    B = torch.empty_like(A)
    d = torch.empty(rows, dtype=Z.dtype, device=Z.device)
    for start in range(0, a.shape[0], step):  # loop over pair chunks
        ia, ib = a[start : start + step], b[start : start + step]
        if groups is not None:
            offset = groups.index_select(0, ib) * n
            ia, ib = ia + offset, ib + offset
        m = ia.shape[0]
        torch.index_select(flat, 0, ia, out=A[:m])
        torch.index_select(flat, 0, ib, out=B[:m])
        diff = A[:m].sub_(B[:m])
        torch.sum(diff.mul_(diff), 1, out=d[:m])
        yield slice(start, start + m), d[:m]


def target_distances(
    Z: torch.Tensor,
    targets: torch.Tensor,
    groups: torch.Tensor | None = None,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """``d(x_i, x_j)²`` for every sample ``i`` (or those of ``rows``, whose target neighbours
    ``targets`` then holds) and target ``j``: (n, k), in ``j``'s metric."""
    if groups is None:
        return paired_squared_euclidean((Z if rows is None else Z[rows])[:, None, :], Z[targets])
    if rows is None:
        rows = torch.arange(targets.shape[0], device=targets.device)
    return pair_sq_distances(Z, rows[:, None], targets, groups)


def margin_radii(
    Z: torch.Tensor,
    targets: torch.Tensor,
    target_mask: torch.Tensor,
    groups: torch.Tensor | None = None,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """``max_j d(x_i, x_j)² + 1`` over the target neighbours (−inf for samples without any)."""
    d = target_distances(Z, targets, groups, rows)
    d = d.masked_fill(~target_mask, -torch.inf)
    return d.max(1).values + 1.0


def find_impostors(
    Z: torch.Tensor,
    codes: torch.Tensor,
    targets: torch.Tensor,
    target_mask: torch.Tensor,
    slack: float = _SEARCH_SLACK,
    groups: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All differently labelled pairs ``(i, l)`` inside ``i``'s margin radius.

    The search runs over row chunks of a (chunk × n) distance block, so memory is
    O(chunk · n) rather than O(n²).

    Parameters
    ----------
    Z : Tensor of shape (n_samples, n_components), or (n_groups, n_samples, n_components)
        The samples in the current embedding ``X Lᵀ`` (or one embedding per group).
    codes : LongTensor of shape (n_samples,)
    targets, target_mask : Tensors of shape (n_samples, k)
        As returned by :func:`find_target_neighbors`.
    slack : float
        Relative enlargement of the radius (guards against rounding only).
    groups : LongTensor of shape (n_samples,), optional
        With stacked embeddings: the distance to a sample ``j`` (a target or a candidate
        impostor) is measured in ``Z[groups[j]]``; the search runs group by group over the
        candidates of each group.

    Returns
    -------
    anchors, impostors : LongTensor of shape (n_pairs,)
    """
    radii = margin_radii(Z, targets, target_mask, groups)
    n = codes.shape[0]
    found_a, found_l, n_pairs = [], [], 0
    budget = memory_budget().bytes
    for start, inside, members in _impostor_blocks(Z, codes, radii, groups, slack=slack):
        a, l = torch.nonzero(inside, as_tuple=True)
        found_a.append(a + start)
        found_l.append(l if members is None else members[l])
        n_pairs += a.numel()
        check_active_set_size(n_pairs, targets.shape[1], n, budget=budget)
    return torch.cat(found_a), torch.cat(found_l)


def _impostor_blocks(Z, codes, radii, groups, rows=None, slack=_SEARCH_SLACK):
    """``(start, inside, members)`` per chunk of anchors (all, or ``rows``) and per group:
    :func:`_inside_blocks` over the candidates of each group (``members``; None: every sample),
    with the radii enlarged by ``slack``."""
    radii = radii * (1.0 + slack) + slack
    for g in [None] if groups is None else range(Z.shape[0]):  # loop over the (few) groups
        Zg = Z if g is None else Z[g]
        members = None if g is None else torch.nonzero(groups == g).flatten()
        columns = Zg if members is None else Zg[members]
        column_codes = codes if members is None else codes[members]
        anchors = (Zg, codes) if rows is None else (Zg[rows], codes[rows])
        for start, inside in _inside_blocks(*anchors, radii, columns, column_codes):
            yield start, inside, members


def _inside_blocks(anchors_Z, anchor_codes, radii, columns, column_codes):
    """``(start, inside)`` for each chunk of anchor rows: ``inside[i, j]`` tells whether column
    ``j`` has another class than anchor ``start + i`` and lies inside its radius.

    The (chunk × n) blocks are written into buffers allocated once per call: a fresh
    16 MB block per chunk, freed while the small pair tensors of each chunk stay alive,
    fragments the C heap so that resident memory grew by up to the block size per chunk (one
    search on 20,000 points: 719 MiB of growth for 14 MiB of pairs; now 39 MiB).
    """
    step = row_chunk(columns.shape[0])
    rows = min(step, anchors_Z.shape[0])
    width = columns.shape[0]
    d_buf = torch.empty(rows, width, dtype=columns.dtype, device=columns.device)
    inside_buf = torch.empty(rows, width, dtype=torch.bool, device=columns.device)
    differ_buf = torch.empty(rows, width, dtype=torch.bool, device=columns.device)
    column_sq = (columns * columns).sum(1)
    for start in range(0, anchors_Z.shape[0], step):  # loop over row chunks
        A = anchors_Z[start : start + step]
        m = A.shape[0]
        d, inside, differ = d_buf[:m], inside_buf[:m], differ_buf[:m]
        squared_euclidean(A, columns, Y_sq=column_sq, out=d)
        torch.lt(d, radii[start : start + step, None], out=inside)
        torch.ne(anchor_codes[start : start + step, None], column_codes[None, :], out=differ)
        inside.logical_and_(differ)
        yield start, inside


def check_active_set_size(
    n_pairs: int, k: int, n_samples: int, *, budget: int | None = -1, estimated: bool = False
) -> None:
    """Raise before an active set of ``n_pairs`` pairs outgrows the memory this process may use.

    Parameters
    ----------
    n_pairs, k, n_samples : int
        Impostor pairs, target neighbours per sample, samples.
    budget : int or None, optional
        The budget in bytes, when the caller measured it once for many checks (None: no bound
        known); by default :func:`rankmetric.resources.memory_budget` now.
    estimated : bool, default=False
        Whether ``n_pairs`` is an estimate from sampled anchors (worded so in the message).
    """
    need = n_pairs * (PAIR_BYTES + PAIR_BYTES_PER_K * k)
    what = (
        f"LMNN's active set of {'about' if estimated else 'more than'} {n_pairs:,} impostor "
        f"pairs on {n_samples:,} samples (n_target_neighbors={k})"
    )
    if estimated:  # room for the growth of the set between searches (ESTIMATE_GROWTH)
        need = int(need * ESTIMATE_GROWTH)
        what += f", with room to grow ×{ESTIMATE_GROWTH:g} between searches,"
    advice = (
        "Fit on a subsample, lower n_target_neighbors, or use WARCA, whose memory does not grow "
        "with the number of samples."
    )
    if MAX_ACTIVE_SET_BYTES is not None and need > MAX_ACTIVE_SET_BYTES:
        raise ValueError(
            f"{what} would need about {need / 2**30:.1f} GiB (limit "
            f"rankmetric.estimators.lmnn.search.MAX_ACTIVE_SET_BYTES = "
            f"{MAX_ACTIVE_SET_BYTES / 2**30:.1f} GiB). {advice}"
        )
    if budget == -1 or (budget is not None and need > budget):
        check_memory(need, what, advice)


def estimate_impostor_pairs(
    Z: torch.Tensor,
    codes: torch.Tensor,
    targets: torch.Tensor | None = None,
    target_mask: torch.Tensor | None = None,
    groups: torch.Tensor | None = None,
    n_probe: int | None = None,
    *,
    X: torch.Tensor | None = None,
    k: int | None = None,
) -> int:
    """The impostor pairs :func:`find_impostors` would find, estimated from sampled anchors.

    ``n_probe`` evenly spaced anchors (default :data:`N_PROBE_ANCHORS`) are searched against
    every sample, in O(n_probe · n) time and O(chunk · n) memory; their count is scaled to
    ``n`` anchors (exact when ``n_probe >= n``). Without ``targets`` (before the target
    neighbours are known) the anchors' own ``k`` target neighbours are found in ``X``, the
    input space, as :func:`find_target_neighbors` would.
    """
    n = codes.shape[0]
    n_probe = min(n, N_PROBE_ANCHORS if n_probe is None else n_probe)
    rows = torch.linspace(0, n - 1, n_probe, device=codes.device).round().long().unique()
    if targets is None:
        targets, target_mask = _targets_of(X, codes, rows, k)
    else:
        targets, target_mask = targets[rows], target_mask[rows]
    radii = margin_radii(Z, targets, target_mask, groups, rows)
    blocks = _impostor_blocks(Z, codes, radii, groups, rows)
    count = sum(int(inside.sum()) for _, inside, _ in blocks)
    return int(round(count * n / rows.numel()))


def _targets_of(X, codes, rows, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest same-class neighbours of the anchors ``rows`` in ``X``, brute force."""
    found, mask = [], []
    step = row_chunk(X.shape[0])
    d_buf = torch.empty(min(step, rows.numel()), X.shape[0], dtype=X.dtype, device=X.device)
    x_sq = (X * X).sum(1)
    for start in range(0, rows.numel(), step):  # loop over row chunks (one buffer: see above)
        r = rows[start : start + step]
        d = squared_euclidean(X[r], X, X_sq=x_sq[r], Y_sq=x_sq, out=d_buf[: r.numel()])
        d[torch.arange(r.numel(), device=X.device), r] = torch.inf
        d.masked_fill_(codes[r, None] != codes, torch.inf)
        values, nearest = d.topk(min(k, X.shape[0]), dim=1, largest=False)
        found.append(nearest)
        mask.append(torch.isfinite(values))
    return torch.cat(found), torch.cat(mask)


def _check_estimate(Z, codes, k: int, *args, **kwargs) -> None:
    """Refuse an active set whose estimate (:func:`estimate_impostor_pairs` with these
    arguments) cannot fit in the memory budget, before searching it."""
    n = codes.shape[0]
    if n > N_PROBE_ANCHORS:
        estimate = estimate_impostor_pairs(Z, codes, *args, k=k, **kwargs)
        check_active_set_size(estimate, k, n, estimated=True)


def check_first_active_set(
    X: torch.Tensor, Z: torch.Tensor, codes: torch.Tensor, k: int, groups=None
) -> None:
    """Refuse, before any target-neighbour search, a problem whose first active set (at the
    starting embedding ``Z``) cannot fit in the memory budget; seconds even at N = 200,000."""
    _check_estimate(Z, codes, k, groups=groups, X=X)


def search_active_set(
    Z: torch.Tensor,
    codes: torch.Tensor,
    targets: torch.Tensor,
    target_mask: torch.Tensor,
    previous: ActiveSet | None = None,
    groups: torch.Tensor | None = None,
) -> ActiveSet:
    """The active set at ``Z``: every violating pair, plus those of ``previous`` still near.

    Keeping the previous pairs that lie within the margin radius + 1 (a hysteresis band) stops
    pairs from flickering in and out between two searches, which otherwise costs many restarts.
    ``Z`` and ``groups`` are as in :func:`find_impostors`. An active set that cannot fit in
    the memory budget is refused first, from an estimate on sampled anchors
    (:func:`estimate_impostor_pairs`), before the full search.
    """
    n, k = codes.shape[0], targets.shape[1]
    _check_estimate(Z, codes, k, targets, target_mask, groups)
    anchors, impostors = find_impostors(Z, codes, targets, target_mask, groups=groups)
    if previous is not None and previous.anchors.numel():
        radii = margin_radii(Z, targets, target_mask, groups)
        d = pair_sq_distances(Z, previous.anchors, previous.impostors, groups)
        near = d < radii[previous.anchors] + _HYSTERESIS
        check_active_set_size(int(near.sum()) + anchors.numel(), k, n)
        keys = torch.cat([previous.pair_keys(n)[near], anchors * n + impostors]).unique()
        anchors, impostors = keys // n, keys % n
    return ActiveSet(targets, target_mask, anchors, impostors)


def active_set_search(
    X: torch.Tensor,
    codes: torch.Tensor,
    targets: torch.Tensor,
    target_mask: torch.Tensor,
    groups: torch.Tensor | None = None,
):
    """``search(L, previous) -> ActiveSet`` at the map ``L`` (an ndarray), for the optimiser.

    ``L`` is one map (n_components, n_features) or, with ``groups``, one per group; the samples
    ``X`` are embedded as ``X Lᵀ`` and searched with :func:`search_active_set`.
    """

    def search(L, previous: ActiveSet | None) -> ActiveSet:
        Z = X @ to_tensor(L, X.device, X.dtype).mT
        return search_active_set(Z, codes, targets, target_mask, previous, groups)

    return search
