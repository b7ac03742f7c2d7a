"""The LMNN objective on an active set, and its gradient in matrix (Laplacian) form.

Every pair ``(a, b)`` with weight ``w_ab`` (pull weights ``1 − μ + μ·#active triplets``, push
weights ``−μ·#active triplets``) contributes ``w_ab (x_a − x_b)(x_a − x_b)ᵀ`` to the gradient, so
``∇ε = 2 Zᵀ (C X)`` with ``Z = X Lᵀ`` and ``C`` the sparse weighted Laplacian
``Σ w_ab (e_a − e_b)(e_a − e_b)ᵀ``; ``C X`` is formed by scatter-adds, never as an (n × n) matrix.
"""

from __future__ import annotations

import torch

from .search import ActiveSet, pair_sq_distances, row_chunk, target_distances

__all__ = [
    "fixed_triplet_loss_and_grad",
    "laplacian_gradient",
    "laplacian_product",
    "lmnn_loss_and_grad",
    "triplet_terms",
]


def laplacian_product(
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
    step = row_chunk(X.shape[1])
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

    ``C`` is the weighted Laplacian of the pairs (see :func:`laplacian_product`).

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
    return 2.0 * Z.T @ laplacian_product(X, a, b, w)


def lmnn_loss_and_grad(
    L: torch.Tensor,
    X: torch.Tensor,
    active: ActiveSet,
    regularization: float,
    groups: torch.Tensor | None = None,
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

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of the shape of ``L``
    """
    Z = X @ L.mT
    d_target = target_distances(Z, active.targets, groups)  # (n, k)
    d_impostor = pair_sq_distances(Z, active.anchors, active.impostors, groups)  # (m,)
    loss, a, b, w = triplet_terms(d_target, d_impostor, active, regularization)
    if groups is None:
        return loss, laplacian_gradient(Z, X, a, b, w)
    reference = groups[b]
    grad = torch.empty_like(L)
    for g in range(L.shape[0]):  # loop over the (few) groups: the pairs measured in g's metric
        sel = reference == g
        grad[g] = laplacian_gradient(Z[g], X, a[sel], b[sel], w[sel])
    return loss, grad


def fixed_triplet_loss_and_grad(
    L: torch.Tensor,
    X: torch.Tensor,
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negative: torch.Tensor,
    regularization: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The LMNN objective on given triplets, and its gradient with respect to ``L``.

    ``ε(L) = (1 − μ) Σ_{(a, p)} ||L(x_a − x_p)||² + μ Σ_{(a, p, n)} [1 + ||L(x_a − x_p)||²
    − ||L(x_a − x_n)||²]₊``: the pull term over the distinct (anchor, positive) pairs, the push
    term over every triplet. The gradient is ``2 Zᵀ (C X)`` as in :func:`laplacian_gradient`.

    Parameters
    ----------
    L : Tensor of shape (r, n_features)
    X : Tensor of shape (n_samples, n_features)
    anchor, positive, negative : LongTensor of shape (n_triplets,)
    regularization : float
        μ in [0, 1].

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of shape (r, n_features)
    """
    mu = float(regularization)
    n = X.shape[0]
    Z = X @ L.T
    keys = torch.unique(anchor * n + positive)
    ta, tp = keys // n, keys % n
    d_target = pair_sq_distances(Z, ta, tp)
    d_ap = pair_sq_distances(Z, anchor, positive)
    d_an = pair_sq_distances(Z, anchor, negative)
    hinge = 1.0 + d_ap - d_an
    violated = (hinge > 0).to(Z.dtype)
    loss = (1.0 - mu) * d_target.sum() + mu * (hinge * violated).sum()
    a = torch.cat([ta, anchor, anchor])
    b = torch.cat([tp, positive, negative])
    w = torch.cat([torch.full_like(d_target, 1.0 - mu), mu * violated, -mu * violated])
    return loss, laplacian_gradient(Z, X, a, b, w)
