"""The LMNN objective on an active set, and its gradient in matrix (Laplacian) form.

Every pair ``(a, b)`` with weight ``w_ab`` (pull weights ``1 − μ + μ·#active triplets``, push
weights ``−μ·#active triplets``) contributes ``w_ab (x_a − x_b)(x_a − x_b)ᵀ`` to the gradient, so
``∇ε = 2 Zᵀ C X = 2 (C Z)ᵀ X`` with ``Z = X Lᵀ`` and ``C`` the sparse weighted Laplacian
``Σ w_ab (e_a − e_b)(e_a − e_b)ᵀ = diag(W1 + Wᵀ1) − W − Wᵀ``; ``C Z`` is formed by two
sparse × dense products over index structures built once per active set
(:class:`PairLaplacian`), never as an (n × n) matrix.
"""

from __future__ import annotations

import warnings

import torch

from .search import ActiveSet, pair_chunks, pair_sq_distances, target_distances

__all__ = [
    "ActivePairs",
    "FixedTriplets",
    "PairLaplacian",
    "fixed_triplet_loss_and_grad",
    "laplacian_gradient",
    "lmnn_loss_and_grad",
    "triplet_terms",
]


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, n: int) -> torch.Tensor:
    """An (n × n) CSR matrix on given (valid, sorted) index arrays, without checks or warnings."""
    with warnings.catch_warnings():  # torch calls its CSR layout "beta" (once per process)
        warnings.filterwarnings("ignore", "Sparse CSR tensor support", UserWarning)
        # torch 2.11 also warns that check_invariants=False skips the checks: asked for here
        warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, (n, n), check_invariants=False)


def _row_pointers(rows: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    """CSR row pointers (n + 1,) of sorted row indices."""
    crow = torch.zeros(n + 1, dtype=torch.int64, device=rows.device)
    torch.cumsum(torch.bincount(rows, minlength=n), 0, out=crow[1:])
    return crow.to(dtype)


class PairLaplacian:
    """The weighted Laplacian ``C = Σ_p w_p (e_{a_p} − e_{b_p})(e_{a_p} − e_{b_p})ᵀ`` of fixed
    pairs, for many weight vectors ``w``.

    The index structures (the pairs as an (n × n) CSR matrix ``W`` by ``a`` and its transpose
    by ``b``) are built once, with one sort of the pairs; :meth:`times` then costs
    ``O(P·r + n·r)`` per call: ``C Z = diag(W1 + Wᵀ1) Z − W Z − Wᵀ Z``, two sparse × dense
    products, with no sort, no (n × n) matrix and no (pairs × r) temporary.

    Parameters
    ----------
    a, b : LongTensor of shape (n_pairs,)
        The pairs (any order).
    n_samples : int
    merge : bool, optional
        Store each distinct pair once, its weight the sum of its repeats' (default: on CUDA,
        whose sparse library refuses more than ``n²`` entries; the CPU takes repeats as they
        are, in the order that the recorded fits were made with).

    Examples
    --------
    >>> import torch
    >>> C = PairLaplacian(torch.tensor([0, 1]), torch.tensor([1, 2]), 3)
    >>> C.times(torch.tensor([1.0, 2.0]), torch.tensor([[0.0], [1.0], [3.0]]))
    tensor([[-1.],
            [-3.],
            [ 4.]])
    """

    def __init__(self, a: torch.Tensor, b: torch.Tensor, n_samples: int, merge: bool | None = None):
        n = int(n_samples)
        index = torch.int32 if max(n, a.numel()) < 2**31 - 1 else torch.int64
        self.n_samples = n
        #: Each pair's entry among the distinct pairs (None: the pairs are kept as given).
        self.merged = None
        if a.is_cuda if merge is None else merge:  # cuSPARSE takes at most n² entries: sum repeats
            distinct, self.merged = torch.unique(a * n + b, return_inverse=True)
            a, b = distinct // n, distinct % n
        #: Positions of the pairs in ``a``-order (None: ``a`` is sorted already).
        self.order = None if bool((a[1:] >= a[:-1]).all()) else torch.argsort(a, stable=True)
        if self.order is not None:
            a, b = a[self.order], b[self.order]
        self.crow, self.col = _row_pointers(a, n, index), b.to(index)
        #: Positions (in ``a``-order) of the pairs in ``b``-order: the transpose's values.
        transpose = torch.argsort(b, stable=True)
        self.crow_t = _row_pointers(b.index_select(0, transpose), n, index)
        self.col_t = a.index_select(0, transpose).to(index)
        self.transpose = transpose.to(index)
        self._values_t = None  # the transpose's values, a buffer reused by every call

    def times(self, w: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
        """``C Z`` for pair weights ``w`` (n_pairs,) and ``Z`` (n_samples, r)."""
        if self.merged is not None:
            w = w.new_zeros(self.col.numel()).index_add_(0, self.merged, w)
        if self.order is not None:
            w = w.index_select(0, self.order)
        n = self.n_samples
        Z1 = torch.cat([Z, Z.new_ones(n, 1)], 1)  # the last column gives the degrees
        forward = _csr(self.crow, self.col, w, n) @ Z1
        if self._values_t is None or self._values_t.dtype != w.dtype:
            self._values_t = torch.empty_like(w)
        values_t = torch.index_select(w, 0, self.transpose, out=self._values_t)
        backward = _csr(self.crow_t, self.col_t, values_t, n) @ Z1
        degree = forward[:, -1:] + backward[:, -1:]
        return degree * Z - forward[:, :-1] - backward[:, :-1]


def _margins(d_target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``1 + d_target`` (n, k); −inf at padded targets, whose hinges are then never violated."""
    return (d_target + 1.0).masked_fill_(~mask, -torch.inf)


def _hinges(
    margins: torch.Tensor, d: torch.Tensor, anchors: torch.Tensor, pull_counts: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The hinges ``[1 + d(i, j) − d(i, l)]₊`` of the impostor pairs ``(anchors, ·)`` at squared
    distances ``d``: adds each pair's violated triplets to ``pull_counts`` (n, k) of its anchor
    and returns ``(Σ hinges, violated triplets per pair)``. O(pairs · k), no sort."""
    hinge = margins.index_select(0, anchors).sub_(d[:, None])  # (m, k)
    violated = hinge > 0
    counts = violated.to(d.dtype)
    pull_counts.index_add_(0, anchors, counts)
    # A product with ones, not counts.sum(1): exact (small integers) and far faster than a
    # reduction over the short last dimension.
    return hinge.clamp_min_(0.0).sum(), counts @ counts.new_ones(counts.shape[1])


def _loss_and_weights(d_target, mask, mu: float, hinge_sum, pull_counts, push_counts):
    """``(loss, pull (n, k), push (n_pairs,))`` of :func:`triplet_terms` from the hinges."""
    maskf = mask.to(d_target.dtype)
    loss = (1.0 - mu) * (d_target * maskf).sum() + mu * hinge_sum
    return loss, (1.0 - mu) * maskf + mu * pull_counts, -mu * push_counts


def _triplet_weights(
    d_target: torch.Tensor, d_impostor: torch.Tensor, active: ActiveSet, mu: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The LMNN objective and the pair weights of its gradient: ``(loss, pull (n, k), push
    (n_pairs,))``, as :func:`triplet_terms`."""
    pull_counts = torch.zeros_like(d_target)
    margins = _margins(d_target, active.target_mask)
    hinge_sum, push_counts = _hinges(margins, d_impostor, active.anchors, pull_counts)
    return _loss_and_weights(d_target, active.target_mask, mu, hinge_sum, pull_counts, push_counts)


def triplet_terms(
    d_target: torch.Tensor, d_impostor: torch.Tensor, active: ActiveSet, regularization: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The LMNN objective from pair distances, and the pair weights of its gradient.

    Parameters
    ----------
    d_target : Tensor of shape (n_samples, k)
        Squared distance of every sample to each of its target neighbours.
    d_impostor : Tensor of shape (n_pairs,)
        Squared distance of each candidate impostor pair ``(anchors[p], impostors[p])``.
    active : ActiveSet
    regularization : float
        μ in [0, 1].

    Returns
    -------
    loss : Tensor of shape ()
        ``(1 − μ) Σ d_target + μ Σ [1 + d_target − d_impostor]₊`` over the real targets.
    a, b, w : Tensors of shape (n_samples·k + n_pairs,)
        Pairs and weights: ``∂loss/∂d(a_p, b_p)² = w_p`` (pull weights ``1 − μ + μ·#violated
        triplets`` on the target pairs, ``−μ·#violated triplets`` on the impostor pairs).
    """
    loss, pull, push = _triplet_weights(d_target, d_impostor, active, float(regularization))
    n, k = active.targets.shape
    rows = torch.arange(n, device=d_target.device).repeat_interleave(k)
    a = torch.cat([rows, active.anchors])
    b = torch.cat([active.targets.reshape(-1), active.impostors])
    return loss, a, b, torch.cat([pull.reshape(-1), push])


def laplacian_gradient(
    Z: torch.Tensor, X: torch.Tensor, a: torch.Tensor, b: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    """``∂/∂L Σ_p w_p ||L(x_{a_p} − x_{b_p})||² = 2 Zᵀ C X = 2 (C Z)ᵀ X`` with ``Z = X Lᵀ``.

    ``C`` is the weighted Laplacian of the pairs (see :class:`PairLaplacian`).

    Parameters
    ----------
    Z : Tensor of shape (n_samples, r)
    X : Tensor of shape (n_samples, n_features)
    a, b : LongTensor of shape (n_pairs,)
    w : Tensor of shape (n_pairs,)

    Returns
    -------
    Tensor of shape (r, n_features)
    """
    return _gradient(Z, X, [(PairLaplacian(a, b, Z.shape[0]), w)])


def _gradient(Z: torch.Tensor, X: torch.Tensor, terms) -> torch.Tensor:
    """``2 (C Z)ᵀ X`` with ``C Z = Σ laplacian.times(w, Z)`` over ``terms`` of ``(laplacian,
    w)``, taken on the centred ``Z`` (equal, as ``C 1 = 0``): the degree term ``deg · z_i`` and
    the neighbour sums then cancel on smaller numbers."""
    Zc = Z - Z.mean(0)
    CZ = sum(laplacian.times(w, Zc) for laplacian, w in terms)
    return 2.0 * CZ.T @ X


class ActivePairs:
    """The index structures of an active set's pairs for :func:`lmnn_loss_and_grad`, built once
    per active set (one sort of its pairs) and reused by every evaluation on it.

    Parameters
    ----------
    active : ActiveSet
    groups : LongTensor of shape (n_samples,), optional
        As in :func:`lmnn_loss_and_grad`: the pairs are split by the group of their reference
        point (the target, or the impostor).
    n_groups : int, optional
        Number of groups (default: ``groups.max() + 1``).

    Attributes
    ----------
    blocks : list of tuples ``(target positions, target Laplacian, impostor positions,
        impostor Laplacian)``
        One per group (one in all without groups, with positions None: every pair).

    Examples
    --------
    >>> import torch
    >>> active = ActiveSet(
    ...     torch.tensor([[1], [0], [3], [2]]),
    ...     torch.ones(4, 1, dtype=torch.bool),
    ...     torch.tensor([0, 1]),
    ...     torch.tensor([2, 3]),
    ... )
    >>> len(ActivePairs(active).blocks)
    1
    """

    def __init__(
        self, active: ActiveSet, groups: torch.Tensor | None = None, n_groups: int | None = None
    ):
        n, k = active.targets.shape
        self.n_pairs = active.anchors.numel()
        self._push_counts = None
        rows = torch.arange(n, device=active.targets.device).repeat_interleave(k)
        ends = (rows, active.targets.reshape(-1)), (active.anchors, active.impostors)
        self.blocks = []
        if groups is None:
            self.blocks.append(tuple(v for a, b in ends for v in (None, PairLaplacian(a, b, n))))
            return
        n_groups = int(groups.max()) + 1 if n_groups is None else int(n_groups)
        for g in range(n_groups):  # loop over the (few) groups
            block = []
            for a, b in ends:
                where = torch.nonzero(groups[b] == g).flatten()
                block += [where, PairLaplacian(a[where], b[where], n)]
            self.blocks.append(tuple(block))

    def push_counts(self, dtype: torch.dtype) -> torch.Tensor:
        """A buffer (n_pairs,) for the violated triplets of each impostor pair, allocated once
        per active set (a fresh one per evaluation costs page faults at millions of pairs)."""
        if self._push_counts is None or self._push_counts.dtype != dtype:
            device = self.blocks[0][1].crow.device
            self._push_counts = torch.empty(self.n_pairs, dtype=dtype, device=device)
        return self._push_counts


def lmnn_loss_and_grad(
    L: torch.Tensor,
    X: torch.Tensor,
    active: ActiveSet,
    regularization: float,
    groups: torch.Tensor | None = None,
    pairs: ActivePairs | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """LMNN objective ε(L) on an active set, and its (sub)gradient with respect to ``L``.

    Parameters
    ----------
    L : Tensor of shape (n_components, n_features), or (n_groups, n_components, n_features)
        One linear map, or one per group with ``groups`` (multiple-metric LMNN).
    X : Tensor of shape (n_samples, n_features)
    active : ActiveSet
        Target neighbours and the impostor pairs over which the push term is summed (pass
        every differently labelled pair to get the exact objective).
    regularization : float
        μ in [0, 1]: weight of the push term; the pull term has weight 1 − μ.
    groups : LongTensor of shape (n_samples,), optional
        Group of each sample: a distance to sample ``j`` is measured in ``L[groups[j]]``.
    pairs : ActivePairs, optional
        ``ActivePairs(active, groups, n_groups)`` when evaluating many times on one active set
        (built here when None).

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of the shape of ``L``

    Notes
    -----
    One evaluation costs O(P·(r + k)) for P impostor pairs (gathers of embedded rows, and two
    sparse × dense products: :class:`PairLaplacian`), plus O(n·r·D) for ``Z = X Lᵀ`` and the
    gradient ``2 (C Z)ᵀ X``: no sort, no (n × n) matrix, no D-sized work per pair.
    """
    if pairs is None:
        pairs = ActivePairs(active, groups, None if groups is None else L.shape[0])
    Z = X @ L.mT
    d_target = target_distances(Z, active.targets, groups)  # (n, k)
    margins = _margins(d_target, active.target_mask)
    pull_counts = torch.zeros_like(d_target)
    push_counts = pairs.push_counts(d_target.dtype)
    hinge_sum = d_target.new_zeros(())
    # Distances and hinges a chunk of pairs at a time: every temporary stays in the cache.
    for sl, d in pair_chunks(Z, active.anchors, active.impostors, groups):
        chunk_sum, push_counts[sl] = _hinges(margins, d, active.anchors[sl], pull_counts)
        hinge_sum += chunk_sum
    mu = float(regularization)
    loss, pull, push = _loss_and_weights(
        d_target, active.target_mask, mu, hinge_sum, pull_counts, push_counts
    )
    weights = pull.reshape(-1), push
    grads = []
    for g, block in enumerate(pairs.blocks):  # one block, or one per (few) group
        terms = [
            (laplacian, w if where is None else w.index_select(0, where))
            for where, laplacian, w in zip(block[::2], block[1::2], weights, strict=True)
        ]
        grads.append(_gradient(Z if groups is None else Z[g], X, terms))
    return loss, grads[0] if groups is None else torch.stack(grads)


class FixedTriplets:
    """Given triplets (anchor, positive, negative) of :meth:`LMNN.fit_triplets`, prepared once
    for :func:`fixed_triplet_loss_and_grad`: the distinct (anchor, positive) pairs (one
    ``unique``) and the pairs' :class:`PairLaplacian` (one sort), so that an evaluation sorts
    nothing.

    Parameters
    ----------
    anchor, positive, negative : LongTensor of shape (n_triplets,)
    n_samples : int

    Examples
    --------
    >>> import torch
    >>> t = FixedTriplets(torch.tensor([0, 0]), torch.tensor([1, 1]), torch.tensor([2, 3]), 4)
    >>> t.target_anchor.tolist(), t.target_positive.tolist()
    ([0], [1])
    """

    def __init__(
        self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, n_samples
    ):
        n = int(n_samples)
        keys = torch.unique(anchor * n + positive)
        self.target_anchor, self.target_positive = keys // n, keys % n
        self.anchor, self.positive, self.negative = anchor, positive, negative
        a = torch.cat([self.target_anchor, anchor, anchor])
        b = torch.cat([self.target_positive, positive, negative])
        self.laplacian = PairLaplacian(a, b, n)


def fixed_triplet_loss_and_grad(
    L: torch.Tensor,
    X: torch.Tensor,
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negative: torch.Tensor,
    regularization: float,
    triplets: FixedTriplets | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The LMNN objective on given triplets, and its gradient with respect to ``L``.

    ``ε(L) = (1 − μ) Σ_{(a, p)} ||L(x_a − x_p)||² + μ Σ_{(a, p, n)} [1 + ||L(x_a − x_p)||²
    − ||L(x_a − x_n)||²]₊``: the pull term over the distinct (anchor, positive) pairs, the push
    term over every triplet. The gradient is ``2 (C Z)ᵀ X`` as in :func:`laplacian_gradient`.

    Parameters
    ----------
    L : Tensor of shape (r, n_features)
    X : Tensor of shape (n_samples, n_features)
    anchor, positive, negative : LongTensor of shape (n_triplets,)
    regularization : float
        μ in [0, 1].
    triplets : FixedTriplets, optional
        ``FixedTriplets(anchor, positive, negative, n_samples)`` when evaluating many times
        (built here when None).

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of shape (r, n_features)
    """
    mu = float(regularization)
    t = FixedTriplets(anchor, positive, negative, X.shape[0]) if triplets is None else triplets
    Z = X @ L.T
    d_target = pair_sq_distances(Z, t.target_anchor, t.target_positive)
    d_ap = pair_sq_distances(Z, t.anchor, t.positive)
    d_an = pair_sq_distances(Z, t.anchor, t.negative)
    hinge = 1.0 + d_ap - d_an
    violated = (hinge > 0).to(Z.dtype)
    loss = (1.0 - mu) * d_target.sum() + mu * (hinge * violated).sum()
    w = torch.cat([torch.full_like(d_target, 1.0 - mu), mu * violated, -mu * violated])
    return loss, _gradient(Z, X, [(t.laplacian, w)])
