"""Large Margin Nearest Neighbour metric learning (Weinberger & Saul, JMLR 2009).

The objective over a linear map ``L`` (``components_``, shape (r, D)) is

    ε(L) = (1 − μ) Σ_{i, j⇝i} ||L(x_i − x_j)||²
           + μ Σ_{i, j⇝i, l} (1 − y_il) [1 + ||L(x_i − x_j)||² − ||L(x_i − x_l)||²]₊

with ``j⇝i`` the ``k`` target neighbours of ``i`` (same class, nearest in the input space) and
``y_il = 1`` when ``i`` and ``l`` share a class. Impostor pairs ``(i, l)`` enter through an
*active set*: the pairs inside the margin radius ``max_j ||L(x_i − x_j)||² + 1`` found by a
chunked neighbour search, refreshed every ``active_set_update`` iterations of scipy's L-BFGS-B
(or of gradient descent with Weinberger's step adaptation). Fitting ends when the
optimiser has converged on the active set *and* a fresh search finds no violated triplet outside
it, so the result is a stationary point of the full objective.

The gradient is accumulated in matrix form: every pair ``(a, b)`` with weight ``w_ab`` (pull
weights ``1 − μ + μ·#active triplets``, push weights ``−μ·#active triplets``) contributes
``w_ab (x_a − x_b)(x_a − x_b)ᵀ``, so ``∇ε = 2 Zᵀ (C X)`` with ``Z = X Lᵀ`` and ``C`` the sparse
weighted Laplacian ``Σ w_ab (e_a − e_b)(e_a − e_b)ᵀ``; ``C X`` is formed by scatter-adds.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._utils import make_rng, progress, resolve_device, single_blas_thread, to_tensor
from .._validation import check_labels, check_min_per_class
from ..io import register_estimator
from ..neighbors import Gallery, nearest_chunks
from .base import MahalanobisMixin

__all__ = [
    "LMNN",
    "ActiveSet",
    "find_target_neighbors",
    "find_impostors",
    "optimise_with_progress",
    "pair_sq_distances",
    "search_active_set",
    "triplet_terms",
    "laplacian_gradient",
    "optimise_on_active_sets",
    "check_lmnn_params",
    "lmnn_loss_and_grad",
]

# Elements of one (chunk × n) distance block; bounds the memory of every neighbour search.
_BLOCK_ELEMENTS = 1 << 22
# Relative slack of the impostor search, so that rounding in ``||a||² + ||b||² − 2ab`` never drops
# a violated triplet (extra candidates cost little: their hinge is zero).
_SEARCH_SLACK = 1e-4
# Previous impostor pairs within the margin radius + this much stay in the active set.
_HYSTERESIS = 1.0
#: Most memory the impostor pairs of an active set may need; a larger active set raises a
#: ValueError instead of exhausting the machine's memory (at N = 60,000 it passed 23 GB).
MAX_ACTIVE_SET_BYTES = 4 << 30
#: Bytes one active pair really costs at the peak of a fit: ``PAIR_BYTES + PAIR_BYTES_PER_K · k``.
#: Measured (docs/reliability.md): the objective on 3M pairs peaks at 99 B/pair at k = 3 and 181
#: at k = 8, its two indices included (its (pairs × k) hinge terms; the pair distances are
#: chunked — unchunked they took 258 B at rank 20); a full fit on 6,000 points peaked at 83 B per
#: pair of its largest active set (k = 3). The bound (124 B at k = 3, 224 B at k = 8) covers each.
PAIR_BYTES, PAIR_BYTES_PER_K = 64, 20


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


def _row_chunk(n_columns: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(n_columns, 1))


def _squared_distances(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between the rows of ``A`` (m, d) and ``B`` (n, d) → (m, n)."""
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return sq.clamp_min_(0.0)


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
    if a.ndim == 1 and b.ndim == 1 and a.numel() > _row_chunk(Z.shape[-1]):
        return _chunked_pair_sq_distances(Z, a, b, groups)
    if groups is None:
        return ((Z[a] - Z[b]) ** 2).sum(-1)
    g = groups[b]
    return ((Z[g, a] - Z[g, b]) ** 2).sum(-1)


def _chunked_pair_sq_distances(Z, a, b, groups) -> torch.Tensor:
    """:func:`pair_sq_distances` of many pairs, a chunk at a time: the (pairs × r) gathers stay
    within ``_BLOCK_ELEMENTS`` numbers instead of growing with the active set."""
    out = torch.empty(a.shape[0], dtype=Z.dtype, device=Z.device)
    step = _row_chunk(Z.shape[-1])
    for start in range(0, a.shape[0], step):  # loop over pair chunks
        sl = slice(start, start + step)
        out[sl] = pair_sq_distances(Z, a[sl], b[sl], groups)
    return out


def _target_distances(
    Z: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor | None = None
) -> torch.Tensor:
    """``d(x_i, x_j)²`` for every sample ``i`` and target ``j`` (n, k), in ``j``'s metric."""
    if groups is None:
        return ((Z[:, None, :] - Z[targets]) ** 2).sum(-1)
    rows = torch.arange(targets.shape[0], device=targets.device)[:, None]
    return pair_sq_distances(Z, rows, targets, groups)


def _margin_radii(
    Z: torch.Tensor,
    targets: torch.Tensor,
    target_mask: torch.Tensor,
    groups: torch.Tensor | None = None,
) -> torch.Tensor:
    """``max_j d(x_i, x_j)² + 1`` over the target neighbours (−inf for samples without any)."""
    d = _target_distances(Z, targets, groups)
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
    radii = _margin_radii(Z, targets, target_mask, groups)
    radii = radii * (1.0 + slack) + slack
    if groups is None:
        blocks = [(Z, None)]
    else:  # loop over the (few) groups: each searches its own members as candidates
        blocks = [(Z[g], torch.nonzero(groups == g).flatten()) for g in range(Z.shape[0])]
    n = codes.shape[0]
    found_a, found_l, n_pairs = [], [], 0
    for Zg, members in blocks:
        columns = Zg if members is None else Zg[members]
        column_codes = codes if members is None else codes[members]
        step = _row_chunk(columns.shape[0])
        for start in range(0, n, step):  # loop over row chunks
            stop = min(start + step, n)
            d = _squared_distances(Zg[start:stop], columns)
            inside = (d < radii[start:stop, None]) & (codes[start:stop, None] != column_codes)
            a, l = torch.nonzero(inside, as_tuple=True)
            found_a.append(a + start)
            found_l.append(l if members is None else members[l])
            n_pairs += a.numel()
            _check_active_set_size(n_pairs, targets.shape[1], n)
    return torch.cat(found_a), torch.cat(found_l)


def _check_active_set_size(n_pairs: int, k: int, n_samples: int) -> None:
    """Raise before an active set of ``n_pairs`` pairs outgrows ``MAX_ACTIVE_SET_BYTES``."""
    need = n_pairs * (PAIR_BYTES + PAIR_BYTES_PER_K * k)
    if need > MAX_ACTIVE_SET_BYTES:
        raise ValueError(
            f"LMNN's active set holds more than {n_pairs:,} impostor pairs on {n_samples:,} "
            f"samples, which would need about {need / 2**30:.1f} GiB "
            f"(limit rankmetric.estimators.lmnn.MAX_ACTIVE_SET_BYTES = "
            f"{MAX_ACTIVE_SET_BYTES / 2**30:.0f} GiB). Fit on a subsample, lower k, "
            "or use WARCA, whose memory does not grow with the number of samples."
        )


def _laplacian_product(
    X: torch.Tensor, a: torch.Tensor, b: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    """``C X`` with ``C = Σ_p w_p (e_{a_p} − e_{b_p})(e_{a_p} − e_{b_p})ᵀ`` (n, n), never formed.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    a, b : LongTensor of shape (n_pairs,)
    w : Tensor of shape (n_pairs,)

    Returns
    -------
    Tensor of shape (n_samples, n_features)
    """
    out = torch.zeros_like(X)
    step = _row_chunk(X.shape[1])
    for start in range(0, a.numel(), step):  # loop over pair chunks
        sl = slice(start, start + step)
        contrib = w[sl, None] * (X[a[sl]] - X[b[sl]])
        out.index_add_(0, a[sl], contrib)
        out.index_add_(0, b[sl], -contrib)
    return out


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
    mu = float(regularization)
    n, k = active.targets.shape
    hinge = 1.0 + d_target[active.anchors] - d_impostor[:, None]  # (m, k)
    violated = (hinge > 0) & active.target_mask[active.anchors]
    mask = active.target_mask.to(d_target.dtype)
    loss = (1.0 - mu) * (d_target * mask).sum() + mu * hinge.clamp_min(0.0).mul(violated).sum()

    counts = violated.to(d_target.dtype)
    pull = (1.0 - mu) * mask + mu * torch.zeros_like(mask).index_add_(0, active.anchors, counts)
    push = -mu * counts.sum(1)
    rows = torch.arange(n, device=d_target.device).repeat_interleave(k)
    a = torch.cat([rows, active.anchors])
    b = torch.cat([active.targets.reshape(-1), active.impostors])
    w = torch.cat([pull.reshape(-1), push])
    return loss, a, b, w


def laplacian_gradient(
    Z: torch.Tensor, X: torch.Tensor, a: torch.Tensor, b: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    """``∂/∂L Σ_p w_p ||L(x_{a_p} − x_{b_p})||² = 2 Zᵀ C X`` with ``Z = X Lᵀ``.

    ``C`` is the weighted Laplacian of the pairs (see :func:`_laplacian_product`).

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
    return 2.0 * Z.T @ _laplacian_product(X, a, b, w)


def lmnn_loss_and_grad(
    L: torch.Tensor, X: torch.Tensor, active: ActiveSet, regularization: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """LMNN objective ε(L) on an active set, and its (sub)gradient with respect to ``L``.

    Parameters
    ----------
    L : Tensor of shape (n_components, n_features)
    X : Tensor of shape (n_samples, n_features)
    active : ActiveSet
        Target neighbours and the impostor pairs over which the push term is summed (pass
        every differently labelled pair to get the exact objective).
    regularization : float
        μ in [0, 1]: weight of the push term; the pull term has weight 1 − μ.

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of shape (n_components, n_features)
    """
    Z = X @ L.T
    d_target = _target_distances(Z, active.targets)  # (n, k)
    d_impostor = pair_sq_distances(Z, active.anchors, active.impostors)  # (m,)
    loss, a, b, w = triplet_terms(d_target, d_impostor, active, regularization)
    return loss, laplacian_gradient(Z, X, a, b, w)


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
    ``Z`` and ``groups`` are as in :func:`find_impostors`.
    """
    anchors, impostors = find_impostors(Z, codes, targets, target_mask, groups=groups)
    if previous is not None and previous.anchors.numel():
        radii = _margin_radii(Z, targets, target_mask, groups)
        d = pair_sq_distances(Z, previous.anchors, previous.impostors, groups)
        near = d < radii[previous.anchors] + _HYSTERESIS
        n = codes.shape[0]
        _check_active_set_size(int(near.sum()) + anchors.numel(), targets.shape[1], n)
        keys = torch.cat([previous.pair_keys(n)[near], anchors * n + impostors]).unique()
        anchors, impostors = keys // n, keys % n
    return ActiveSet(targets, target_mask, anchors, impostors)


def optimise_on_active_sets(
    search,
    objective,
    x0: np.ndarray,
    *,
    solver: str,
    max_iter: int,
    active_set_update: int,
    tol: float,
    learning_rate: float,
    on_round=None,
):
    """Alternate impostor searches and optimiser runs until neither changes anything.

    Parameters
    ----------
    search : callable ``(x, previous ActiveSet or None) -> ActiveSet``
        The active set at parameters ``x`` (an ndarray of ``x0``'s shape).
    objective : callable ``ActiveSet -> f``
        ``f(flat x) -> (loss, flat gradient)`` in float64 NumPy on that active set.
    x0 : ndarray
        Initial parameters.
    solver, max_iter, active_set_update, tol, learning_rate
        As the parameters of :class:`LMNN`.
    on_round : callable ``(n_iter, loss, n_new_pairs) -> None``, optional
        Called after every round (progress reports).

    Returns
    -------
    x, n_iter, loss, active, converged
        Final parameters, iterations run, objective on the last active set, that active set
        (which holds every violator when converged) and whether it converged.
    """
    x, n_iter, lr, rounds = x0, 0, float(learning_rate), 0
    active = search(x, None)
    n = active.targets.shape[0]
    while True:
        # Short first rounds: the initial active set is large and shrinks fast.
        budget = min(active_set_update, 2**rounds, max_iter - n_iter)
        fun = objective(active)
        if solver == "lbfgs":
            x, steps, loss, settled = _lbfgs(fun, x, budget, tol)
        else:
            x, steps, loss, settled, lr = _adaptive_descent(fun, x, budget, lr, tol)
        n_iter, rounds = n_iter + max(steps, 1), rounds + 1
        fresh = search(x, active)
        n_new = int((~torch.isin(fresh.pair_keys(n), active.pair_keys(n))).sum())
        if on_round is not None:
            on_round(n_iter, loss, n_new)
        if settled and n_new == 0:
            return x, n_iter, loss, active, True
        if n_iter >= max_iter:
            return x, n_iter, loss, active, False
        active = fresh


def optimise_with_progress(est, search, objective, x0: np.ndarray, desc: str):
    """:func:`optimise_on_active_sets` with ``est``'s solver settings and a progress bar.

    ``est`` has ``solver``, ``max_iter``, ``active_set_update``, ``tol``, ``learning_rate`` and
    ``verbose`` (LMNN and multiple-metric LMNN); the bar (on a terminal, when ``verbose``) shows
    the iterations, the objective and the new impostor pairs of the last search.
    """
    with progress(total=est.max_iter, desc=desc, verbose=est.verbose) as bar:

        def report(n_iter, loss, n_new):
            bar.update(n_iter - bar.n)
            bar.set_postfix(objective=f"{loss:.6g}", new_pairs=n_new)

        return optimise_on_active_sets(
            search,
            objective,
            x0,
            solver=est.solver,
            max_iter=est.max_iter,
            active_set_update=est.active_set_update,
            tol=est.tol,
            learning_rate=est.learning_rate,
            on_round=report,
        )


def _check_param(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def check_lmnn_params(est, n_features: int) -> int:
    """Check the LMNN hyper-parameters shared with multiple-metric LMNN; return ``r``.

    ``est`` has ``k``, ``regularization``, ``max_iter``, ``active_set_update``,
    ``learning_rate``, ``tol``, ``solver`` and ``n_components``; a bad value is a ``ValueError``
    naming it.
    """
    integral = (numbers.Integral,)
    _check_param(
        isinstance(est.k, integral) and est.k >= 1,
        f"k must be an integer ≥ 1, got {est.k!r}.",
    )
    _check_param(
        isinstance(est.regularization, numbers.Real) and 0.0 <= est.regularization <= 1.0,
        f"regularization must lie in [0, 1], got {est.regularization!r}.",
    )
    for name in ("max_iter", "active_set_update"):
        value = getattr(est, name)
        _check_param(
            isinstance(value, integral) and value >= 1,
            f"{name} must be an integer ≥ 1, got {value!r}.",
        )
    for name in ("learning_rate", "tol"):
        value = getattr(est, name)
        _check_param(
            isinstance(value, numbers.Real) and value > 0, f"{name} must be > 0, got {value!r}."
        )
    _check_param(
        est.solver in ("lbfgs", "gd"), f"solver must be 'lbfgs' or 'gd', got {est.solver!r}."
    )
    r = n_features if est.n_components is None else est.n_components
    _check_param(
        isinstance(r, integral) and 1 <= r <= n_features,
        f"n_components must be an integer in [1, n_features={n_features}], got {r!r}.",
    )
    return int(r)


@register_estimator
class LMNN(MahalanobisMixin, BaseEstimator):
    """Large Margin Nearest Neighbour (Weinberger & Saul 2009) Mahalanobis metric learning.

    Parameters
    ----------
    n_components : int, optional
        Rows ``r`` of the learned map (``None``: ``n_features``).
    k : int, default=3
        Target neighbours per sample. A class with ``n_c ≤ k`` samples falls back to ``n_c − 1``
        target neighbours (with a ``UserWarning``); a class of one sample then serves as
        impostor only.
    regularization : float, default=0.5
        μ in [0, 1], the push/pull mix: ``(1 − μ)·pull + μ·push``.
    max_iter : int, default=1000
        Cap on optimiser iterations (L-BFGS iterations or accepted gradient steps).
    learning_rate : float, default=1e-3
        Initial step of ``solver="gd"`` (then ×1.01 after an accepted step, ÷2 after a
        rejected one); unused by L-BFGS.
    init : {"pca", "identity", "random"} or ndarray of shape (n_components, n_features)
        Initial map: leading principal axes, the (truncated) identity, or a Gaussian matrix.
    active_set_update : int, default=10
        Iterations between two impostor searches (the first rounds, while the set shrinks
        fast, last 1, 2, 4, ... iterations). Previous pairs still within the margin radius + 1
        stay in the set, so pairs do not flicker in and out.
    tol : float, default=1e-5
        Relative objective decrease below which the optimiser stops on an active set.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        scipy's L-BFGS-B, or gradient descent with step adaptation (Weinberger's scheme).
    random_state : int, Generator or None
        Seed of ``init="random"``.
    device : str or torch.device, optional
        Where the objective is evaluated (``None``: CUDA when available).
    verbose : bool or int, default=False
        A progress bar over the optimiser iterations (on a terminal): objective and new impostor
        pairs of the last active-set search.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features), float32
        The learned map ``L``; ``d(a, b) = ||L(a − b)||``.
    n_iter_ : int
        Optimiser iterations run.
    objective_ : float
        ε(L) at the end of fitting (over the last active set, which holds every violator).
    n_active_pairs_ : int
        Candidate impostor pairs in the last active set.
    n_features_in_ : int

    References
    ----------
    K. Q. Weinberger and L. K. Saul. Distance Metric Learning for Large Margin Nearest
    Neighbor Classification. JMLR 10:207–244, 2009.
    """

    def __init__(
        self,
        n_components: int | None = None,
        k: int = 3,
        regularization: float = 0.5,
        max_iter: int = 1000,
        learning_rate: float = 1e-3,
        init="pca",
        active_set_update: int = 10,
        tol: float = 1e-5,
        solver: str = "lbfgs",
        random_state=None,
        device=None,
        verbose: bool | int = False,
    ):
        self.n_components = n_components
        self.k = k
        self.regularization = regularization
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.init = init
        self.active_set_update = active_set_update
        self.tol = tol
        self.solver = solver
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ validation
    def _validate_params(self, n_features: int) -> int:
        """Check the hyper-parameters; return the number of components."""
        return check_lmnn_params(self, n_features)

    def _initial_map(self, X: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
        """The starting ``L`` of shape (r, n_features), float64."""
        D = X.shape[1]
        if isinstance(self.init, np.ndarray):
            _check_param(
                self.init.shape == (r, D),
                f"init has shape {self.init.shape}, expected (n_components, n_features)={(r, D)}.",
            )
            return self.init.astype(np.float64)
        if isinstance(self.init, str) and self.init == "identity":
            return np.eye(r, D)
        if isinstance(self.init, str) and self.init == "random":
            return rng.standard_normal((r, D)) / np.sqrt(D)
        if isinstance(self.init, str) and self.init == "pca":
            centred = X - X.mean(0)
            _, vectors = np.linalg.eigh(centred.T @ centred)
            return vectors[:, ::-1][:, :r].T.copy()
        raise ValueError(
            f"init must be 'pca', 'identity', 'random' or an array, got {self.init!r}."
        )

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Learn ``components_`` from samples ``X`` (n_samples, n_features) and labels ``y``.

        Returns
        -------
        self : LMNN
        """
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_classification_targets(y)
        _, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2, what="target neighbours")
        r = self._validate_params(X.shape[1])
        self._warn_small_classes(codes)
        device = resolve_device(self.device)
        L0 = self._initial_map(X, r, make_rng(self.random_state))
        Xt = to_tensor(X.astype(np.float32), device)  # a writable float32 copy
        codes_t = torch.as_tensor(codes, device=device)
        targets, target_mask = find_target_neighbors(Xt, codes_t, self.k)
        L, n_iter, loss, active, converged = self._optimise(Xt, codes_t, targets, target_mask, L0)
        if not converged:
            warnings.warn(
                f"LMNN stopped at max_iter={self.max_iter} before converging; "
                "increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.components_ = L.astype(np.float32)
        self.n_iter_ = int(n_iter)
        self.objective_ = float(loss)
        self.n_active_pairs_ = int(active.anchors.numel())
        return self

    def _warn_small_classes(self, codes: np.ndarray) -> None:
        counts = np.bincount(codes)
        if counts.min() <= self.k:
            warnings.warn(
                f"a class has {counts.min()} sample(s), fewer than k + 1 = {self.k + 1}: its "
                "samples get fewer target neighbours.",
                UserWarning,
                stacklevel=3,
            )

    def _optimise(self, X, codes, targets, target_mask, L0):
        """Alternate impostor searches and optimiser runs until neither changes anything.

        Returns (L, iterations, objective, last active set, converged).
        """

        def search(L, previous):
            Z = X @ to_tensor(L, X.device, X.dtype).T
            return search_active_set(Z, codes, targets, target_mask, previous)

        objective = lambda active: self._objective(X, active, L0.shape)  # noqa: E731
        return optimise_with_progress(self, search, objective, L0, "LMNN")

    def _objective(self, X: torch.Tensor, active: ActiveSet, shape: tuple[int, int]):
        """``f(flat L) -> (loss, flat grad)`` in float64 NumPy, for the optimisers."""
        mu = float(self.regularization)

        def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
            L = to_tensor(flat.reshape(shape), X.device, X.dtype)
            loss, grad = lmnn_loss_and_grad(L, X, active, mu)
            return float(loss), grad.double().cpu().numpy().ravel()

        return fun


def _lbfgs(fun, L: np.ndarray, budget: int, tol: float):
    """At most ``budget`` L-BFGS-B iterations from ``L``; returns (L, steps, loss, settled)."""
    with single_blas_thread():  # tiny BLAS calls on r·D vectors: threads only hurt
        result = minimize(
            fun,
            L.ravel(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": budget, "ftol": tol, "gtol": 1e-10},
        )
    # Stopping before the budget means convergence (status 0) or a line search that cannot
    # progress in float32 (status 2): both leave nothing to gain on this active set.
    settled = result.nit < budget or result.status == 0
    return result.x.reshape(L.shape), int(result.nit), float(result.fun), settled


def _adaptive_descent(fun, L: np.ndarray, budget: int, lr: float, tol: float):
    """Gradient descent, step ×1.01 after a decrease and ÷2 after an increase (Weinberger).

    Returns (L, accepted steps, loss, settled, learning rate).
    """
    x = L.ravel()
    loss, grad = fun(x)
    steps, tries, settled, non_finite = 0, 0, False, 0
    while steps < budget and tries < 50 * budget:
        tries += 1
        with np.errstate(over="ignore", invalid="ignore"):
            candidate = x - lr * grad
        new_loss, new_grad = fun(candidate) if np.isfinite(candidate).all() else (np.inf, grad)
        if not np.isfinite(new_loss):  # an overflowing step is refused like an increase
            non_finite += 1
            lr /= 2.0
            continue
        if new_loss > loss:
            lr /= 2.0
            continue
        settled = loss - new_loss <= tol * max(abs(loss), 1.0)
        x, loss, grad, lr, steps = candidate, new_loss, new_grad, lr * 1.01, steps + 1
        if settled:
            break
    if steps == 0 and non_finite == tries > 0:
        raise ValueError(
            f"LMNN(solver='gd'): every step tried, down to learning_rate={lr * 2:.3g}, made the "
            "objective non-finite; lower learning_rate."
        )
    return x.reshape(L.shape), steps, loss, settled, lr
