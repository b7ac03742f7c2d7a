"""Optimisation on the Stiefel manifold St(n, p) = {W in R^{n x p} : WᵀW = I_p}.

Weights are stored tall (``n >= p``, orthonormal columns), as the BiMap layers of SPDNet use them
(Huang & Van Gool, "A Riemannian Network for SPD Matrix Learning", AAAI 2017). A step is:

1. Riemannian gradient: the Euclidean gradient ``G`` projected onto the tangent space at ``W``,
   ``ξ = G − W sym(WᵀG)`` (Edelman, Arias & Smith 1998, for the embedded metric);
2. a Euclidean-style update direction built from ``ξ`` (plain, momentum or Adam moments; the moment
   buffers are projected onto the new tangent space after each step, a cheap vector transport as
   in Bécigneul & Ganea 2019 / geoopt);
3. a QR retraction ``R_W(−η d) = qf(W − η d)`` with the sign fix ``diag(R) > 0`` so that the
   retraction is a smooth map (Absil, Mahony & Sepulchre 2008, eq. 4.8).

Both optimisers take ordinary parameter groups; a group with ``"stiefel": True`` is treated as
Stiefel-constrained, the others get the plain Euclidean update (SGD / Adam), so one optimiser
drives a whole SPDNet (BiMap weights and an optional linear head). :meth:`SPDNet.parameter_groups
<rankmetric.models.spdnet.SPDNet.parameter_groups>` builds such groups.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..geometry.matrix_functions import symmetrize
from ._docstrings import fill_doc

__all__ = [
    "sym",
    "stiefel_tangent_projection",
    "qr_retraction",
    "random_stiefel",
    "orthonormality_error",
    "StiefelSGD",
    "StiefelAdam",
]


#: The symmetric part ``(A + Aᵀ) / 2`` of the Stiefel formulas: geometry's one ``symmetrize``.
sym = symmetrize


def stiefel_tangent_projection(W: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Project ``G`` onto the tangent space of the Stiefel manifold at ``W``.

    Parameters
    ----------
    W : tensor of shape (..., n, p)
        A point on St(n, p) (``WᵀW = I``).
    G : tensor of shape (..., n, p)
        An ambient (Euclidean) vector, e.g. the Euclidean gradient.

    Returns
    -------
    tensor of shape (..., n, p)
        ``G − W sym(WᵀG)``; for a Euclidean gradient this is the Riemannian gradient under the
        metric inherited from the embedding space.
    """
    return G - W @ sym(W.transpose(-1, -2) @ G)


def qr_retraction(A: torch.Tensor) -> torch.Tensor:
    """Q factor of the QR decomposition of ``A`` with the sign fix ``diag(R) > 0``.

    Computed in float64 and cast back, so that the result is orthonormal to the precision of
    ``A``'s dtype.

    Parameters
    ----------
    A : tensor of shape (..., n, p), n >= p
        Full column rank (``W − η ξ`` for a small step always is).

    Returns
    -------
    tensor of shape (..., n, p)
        A point on St(n, p).
    """
    Q, R = torch.linalg.qr(A.to(torch.float64), mode="reduced")
    signs = torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    return (Q * signs.unsqueeze(-2)).to(A.dtype)


def random_stiefel(
    n: int,
    p: int,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """A random point of St(n, p): the sign-fixed Q factor of a Gaussian matrix (Haar-distributed).

    Parameters
    ----------
    n, p : int
        Shape, ``n >= p >= 1``.
    generator : torch.Generator, optional
        Source of randomness (on the CPU); seed it from the estimator's NumPy generator with
        :func:`rankmetric._utils.torch_generator` for reproducible runs.
    dtype, device
        Of the returned tensor.

    Returns
    -------
    tensor of shape (n, p)
    """
    if not (isinstance(n, int) and isinstance(p, int)) or p < 1 or n < p:
        raise ValueError(f"a Stiefel matrix needs integers n >= p >= 1, got n={n!r}, p={p!r}.")
    gauss = torch.randn(n, p, generator=generator, dtype=torch.float64)
    return qr_retraction(gauss).to(dtype=dtype, device=device)


def orthonormality_error(W: torch.Tensor) -> float:
    """``max |WᵀW − I|``, the distance of ``W`` (n, p) from the Stiefel manifold, as a float."""
    W = W.detach().to(torch.float64)
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
    return float((W.transpose(-1, -2) @ W - eye).abs().max())


def _check_stiefel_shape(p: torch.Tensor) -> None:
    if p.ndim != 2 or p.shape[0] < p.shape[1]:
        raise ValueError(
            f"a Stiefel parameter must be a tall matrix (n >= p), got shape {tuple(p.shape)}."
        )


class _StiefelOptimizer(torch.optim.Optimizer):
    """The step both Stiefel optimisers share: Riemannian gradient, then the subclass's update."""

    def __init__(self, params: Iterable, defaults: dict) -> None:
        if defaults["lr"] <= 0:
            raise ValueError(f"lr must be > 0, got {defaults['lr']}.")
        if defaults["weight_decay"] < 0:
            raise ValueError(f"weight_decay must be >= 0, got {defaults['weight_decay']}.")
        super().__init__(params, {**defaults, "stiefel": False})
        for group in self.param_groups:
            if group["stiefel"]:
                for p in group["params"]:
                    _check_stiefel_shape(p)

    @torch.no_grad()
    def step(self, closure=None):
        """Take one step; ``closure`` (re-evaluating the loss) is optional."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["stiefel"]:
                    grad = stiefel_tangent_projection(p, grad)
                elif group["weight_decay"]:
                    grad = grad + group["weight_decay"] * p
                self._update(group, p, grad, self.state[p])
        return loss

    @staticmethod
    def _move(group: dict, p, direction, step_size: float, moment=None) -> None:
        """``p ← qf(p − step·d)`` on a Stiefel group (``moment`` transported to the new point by
        projection), else ``p ← p − step·d``."""
        if group["stiefel"]:
            p.copy_(qr_retraction(p - step_size * direction))
            if moment is not None:
                moment.copy_(stiefel_tangent_projection(p, moment))
        else:
            p.add_(direction, alpha=-step_size)


# alike: the orthonormality check of the example and the torch.optim constructor (params, lr, ...)
# are alike in StiefelAdam; the optimisers differ
@fill_doc
class StiefelSGD(_StiefelOptimizer):
    r"""SGD (with optional momentum) that keeps ``"stiefel": True`` parameter groups orthonormal.

    Parameters
    ----------
    params : iterable of tensors or of dicts
        Parameters or parameter groups. A group with ``"stiefel": True`` holds tall matrices
        (n, p) with orthonormal columns; other groups are updated by plain SGD.
    lr : float
        Step size.
    momentum : float, default=0
        Heavy-ball momentum; on Stiefel groups the buffer is re-projected onto the tangent space
        at the new point after every step.
    weight_decay : float, default=0
        L2 penalty, applied to Euclidean groups only (it is meaningless on the Stiefel manifold,
        where :math:`\lVert W \rVert_F^2 = p` is constant).

    See Also
    --------
    rankmetric.models.StiefelAdam : The same constraint with Adam.

    %(huang_van_gool)s

    %(spd_example_batch)s
    >>> net = models.SPDNet([4, 3], dtype=torch.float64)
    >>> optimiser = models.StiefelSGD(net.parameter_groups(), lr=1e-2)
    >>> net(X).diagonal(dim1=1, dim2=2).sum().backward()
    >>> optimiser.step()
    >>> W = net.parameter_groups()[0]["params"][0]
    >>> bool(torch.allclose(W.T @ W, torch.eye(3, dtype=torch.float64)))
    True
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
    ) -> None:
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}.")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def _update(self, group: dict, p, grad, state: dict) -> None:
        direction = grad
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            direction = grad.clone() if buf is None else buf.mul_(group["momentum"]).add_(grad)
            state["momentum_buffer"] = direction
        self._move(group, p, direction, group["lr"], direction if group["momentum"] else None)


class StiefelAdam(_StiefelOptimizer):
    """Adam that keeps ``"stiefel": True`` parameter groups orthonormal (Riemannian Adam).

    On a Stiefel group the first moment is accumulated from the Riemannian gradient and the second
    moment from its squared entries, the update direction is projected onto the tangent space and
    retracted with :func:`qr_retraction`, and the first moment is transported to the new point by
    projection (as geoopt's ``RiemannianAdam`` does for embedded manifolds). Other groups get plain
    Adam (Kingma & Ba 2015).

    Parameters
    ----------
    params : iterable of tensors or of dicts
        Parameters or parameter groups (``"stiefel": True`` marks tall orthonormal matrices).
    lr : float, default=1e-3
    betas : (float, float), default=(0.9, 0.999)
    eps : float, default=1e-8
    weight_decay : float, default=0
        L2 penalty on Euclidean groups only.

    See Also
    --------
    rankmetric.models.StiefelSGD : The same constraint with SGD.
    rankmetric.models.SPDNet : Its ``parameter_groups()`` mark the Stiefel weights.

    References
    ----------
    .. [1] G. Bécigneul and O.-E. Ganea. Riemannian Adaptive Optimization Methods. ICLR 2019.
    .. [2] D. P. Kingma and J. Ba. Adam: A Method for Stochastic Optimization. ICLR 2015.

    Examples
    --------
    A bare parameter group: the 2-dimensional subspace of largest variance of ``C``.

    >>> import torch
    >>> from rankmetric.models import StiefelAdam
    >>> _ = torch.manual_seed(0)
    >>> C = torch.diag(torch.tensor([4.0, 3.0, 1.0, 0.5], dtype=torch.float64))
    >>> W = torch.nn.Parameter(torch.linalg.qr(torch.randn(4, 2, dtype=torch.float64))[0])
    >>> optimiser = StiefelAdam([{"params": [W], "stiefel": True}], lr=0.1)
    >>> for _ in range(200):
    ...     optimiser.zero_grad()
    ...     (-torch.trace(W.T @ C @ W)).backward()
    ...     optimiser.step()
    >>> round(torch.trace(W.T @ C @ W).item(), 2)  # the two largest eigenvalues: 4 + 3
    7.0
    >>> bool(torch.allclose(W.T @ W, torch.eye(2, dtype=torch.float64)))
    True
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must lie in [0, 1), got {betas}.")
        if eps <= 0:
            raise ValueError(f"eps must be > 0, got {eps}.")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update(self, group: dict, p, grad, state: dict) -> None:
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = group["lr"] / (1 - beta1 ** state["step"])
        denom = (exp_avg_sq / (1 - beta2 ** state["step"])).sqrt_().add_(group["eps"])
        direction = exp_avg / denom
        if group["stiefel"]:
            direction = stiefel_tangent_projection(p, direction)
        self._move(group, p, direction, step_size, exp_avg)
