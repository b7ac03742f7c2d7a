"""Riemannian batch normalisation of SPD matrices, with optional per-domain statistics.

:class:`SPDBatchNorm` is the layer of Brooks et al. (NeurIPS 2019): each batch is centred at its
Karcher mean (:func:`batch_karcher_mean`) and biased by a learnable SPD matrix. With
``n_domains > 0`` it also keeps one running mean per *domain* (session, subject) and centres the
matrices of each domain at that domain's own mean: the domain-specific batch normalisation of
TSMNet (SPDDSMBN, Kobler et al., NeurIPS 2022), the network-side form of re-centring each session
(:class:`~rankmetric.preprocessing.DomainRecentering`). A domain not seen in training gets its
statistics from its own matrices (:meth:`SPDBatchNorm.set_domain_mean`, called layer by layer by
:meth:`rankmetric.models.spdnet.SPDNet.adapt_domain`).
"""

from __future__ import annotations

import torch
from torch import nn

from ..geometry.matrix_functions import (
    exp_unchecked,
    log_unchecked,
    spd_inv_sqrt,
    spd_sqrt,
    symmetrize,
)
from ..geometry.means import geodesic
from ..geometry.tangent import congruence

__all__ = ["SPDBatchNorm", "batch_karcher_mean"]


def batch_karcher_mean(X: torch.Tensor, n_iter: int = 1) -> torch.Tensor:
    r"""Differentiable Karcher (AIRM) mean of a batch: fixed-point steps from the arithmetic mean.

    .. math::
        G_0 = \tfrac1B \sum_i X_i, \qquad
        G_{k+1} = G_k^{1/2} \exp\Big(\tfrac1B \sum_i \log(G_k^{-1/2} X_i G_k^{-1/2})\Big)
        G_k^{1/2},

    the batch mean of Brooks et al. (NeurIPS 2019), differentiated through every step (one step
    by default, as theirs). For the converged mean use
    :func:`rankmetric.geometry.riemannian_mean`.

    Parameters
    ----------
    X : tensor of shape (B, c, c)
        SPD matrices.
    n_iter : int, default=1
        Fixed-point steps.

    Returns
    -------
    tensor of shape (c, c)

    See Also
    --------
    rankmetric.geometry.riemannian_mean : The converged mean, with weights.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import batch_karcher_mean
    >>> X = torch.stack([torch.eye(2), 4 * torch.eye(2)]).double()
    >>> batch_karcher_mean(X, n_iter=5).diagonal().round(decimals=8)
    tensor([2., 2.], dtype=torch.float64)
    """
    G = symmetrize(X.mean(dim=0))
    for _ in range(n_iter):
        root, inv_root = spd_sqrt(G), spd_inv_sqrt(G)
        tangent = log_unchecked(congruence(X, inv_root), "X").mean(dim=0)
        G = symmetrize(root @ exp_unchecked(tangent) @ root)
    return G


class SPDBatchNorm(nn.Module):
    """Riemannian batch normalisation of SPD matrices (Brooks, Schwander, Barbaresco, Schneider
    & Cord, NeurIPS 2019), optionally with one running mean per domain (TSMNet's SPDDSMBN).

    Training: ``G`` the batch Karcher mean (:func:`batch_karcher_mean`, differentiated through),
    ``Y = B^{1/2} G^{-1/2} X G^{-1/2} B^{1/2}``, and the running mean moves along the geodesic
    towards ``G``: ``R ← R^{1/2} (R^{-1/2} G R^{-1/2})^momentum R^{1/2}``. Evaluation: ``G = R``.
    The optional learnable SPD bias is ``B = exp(S)`` with ``S`` symmetric (zero at the start:
    ``B = I``), so plain (Euclidean) optimisers keep it SPD. ``R`` starts at the identity, so an
    untrained layer in ``eval()`` mode is the identity map.

    **Per-domain statistics** (``n_domains > 0`` and ``forward(X, domains)``): the matrices of
    each domain ``d`` of the batch are centred at their own batch Karcher mean ``G_d`` in
    training, and the running mean ``R_d`` of that domain (``domain_means[d]``) moves towards
    ``G_d``; in evaluation each matrix is centred at its domain's ``R_d``. The bias ``B`` is
    shared by all domains (Kobler et al. 2022). Without ``domains`` the layer is the one above,
    whatever ``n_domains``.

    Parameters
    ----------
    size : int
        Matrix size ``c``.
    momentum : float, default=0.1
        Step of the running mean along the geodesic, in (0, 1].
    n_iter : int, default=1
        Karcher steps of the batch mean.
    bias : bool, default=True
        Learn the SPD bias ``B``.
    n_domains : int, default=0
        Number of domains with their own running mean (0: none).
    dtype, device
        Of the bias and the running means.

    Attributes
    ----------
    running_mean : tensor of shape (c, c)
        The running mean of the batches without domain labels.
    domain_means : tensor of shape (n_domains, c, c)
        The running mean of each domain (only with ``n_domains > 0``).

    See Also
    --------
    batch_karcher_mean : the batch mean, differentiated through.
    rankmetric.preprocessing.DomainRecentering : the same re-centring on the input matrices.

    References
    ----------
    .. [1] D. Brooks, O. Schwander, F. Barbaresco, J.-Y. Schneider and M. Cord, "Riemannian
       batch normalization for SPD neural networks", NeurIPS 2019.
    .. [2] R. Kobler, J. Hirayama, Q. Zhao and M. Kawanabe, "SPD domain-specific batch
       normalization to crack interpretable unsupervised domain adaptation in EEG", NeurIPS 2022.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import spd_exp
    >>> A = torch.randn(8, 3, 3, dtype=torch.float64)
    >>> X = spd_exp((A + A.transpose(1, 2)) / 4)
    >>> bn = SPDBatchNorm(3, n_domains=2, bias=False, dtype=torch.float64)
    >>> Y = bn(X, domains=torch.tensor([0, 0, 0, 0, 1, 1, 1, 1]))
    >>> tuple(Y.shape), tuple(bn.domain_means.shape)
    ((8, 3, 3), (2, 3, 3))
    """

    def __init__(
        self,
        size: int,
        *,
        momentum: float = 0.1,
        n_iter: int = 1,
        bias: bool = True,
        n_domains: int = 0,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not 0 < momentum <= 1:
            raise ValueError(f"momentum must be in (0, 1], got {momentum}.")
        if int(n_iter) != n_iter or n_iter < 1:
            raise ValueError(f"n_iter must be a positive integer, got {n_iter!r}.")
        if int(n_domains) != n_domains or n_domains < 0:
            raise ValueError(f"n_domains must be a non-negative integer, got {n_domains!r}.")
        self.momentum, self.n_iter, self.n_domains = float(momentum), int(n_iter), int(n_domains)
        self.register_buffer("running_mean", torch.eye(size, dtype=dtype, device=device))
        if self.n_domains:
            eye = torch.eye(size, dtype=dtype, device=device)
            self.register_buffer("domain_means", eye.repeat(self.n_domains, 1, 1))
        self.log_bias = None
        if bias:
            self.log_bias = nn.Parameter(torch.zeros(size, size, dtype=dtype, device=device))

    def forward(self, X: torch.Tensor, domains: torch.Tensor | None = None) -> torch.Tensor:
        """Centre (and bias) SPD matrices (B, c, c), each domain at its own mean if given.

        Parameters
        ----------
        X : tensor of shape (B, c, c)
            SPD matrices.
        domains : int tensor of shape (B,), optional
            Domain of each matrix, in ``[0, n_domains)``.

        Returns
        -------
        tensor of shape (B, c, c)
        """
        if domains is None:
            Y = self._centre(X)
        else:
            Y = self._centre_domains(X, self._check_domains(domains, X))
        if self.log_bias is None:
            return Y
        root_bias = exp_unchecked(0.5 * symmetrize(self.log_bias.to(X.dtype)))
        return congruence(Y, root_bias)

    def _centre(self, X: torch.Tensor) -> torch.Tensor:
        if self.training:
            G = batch_karcher_mean(X, self.n_iter)
            self._update(self.running_mean, G)
        else:
            G = self.running_mean.to(X.dtype)
        inv_root = spd_inv_sqrt(G)
        return congruence(X, inv_root)

    def _centre_domains(self, X: torch.Tensor, domains: torch.Tensor) -> torch.Tensor:
        """Each domain's matrices at its batch mean (training) or running mean (evaluation)."""
        if not self.training:
            inv_roots = spd_inv_sqrt(self.domain_means.to(X.dtype))[domains]
            return congruence(X, inv_roots)
        Y = torch.zeros_like(X)
        for d in torch.unique(domains).tolist():  # a loop over the batch's domains, not samples
            rows = torch.nonzero(domains == d)[:, 0]
            G = batch_karcher_mean(X[rows], self.n_iter)
            self._update(self.domain_means[d], G)
            inv_root = spd_inv_sqrt(G)
            Y = Y.index_put((rows,), congruence(X[rows], inv_root))
        return Y

    @torch.no_grad()
    def _update(self, mean: torch.Tensor, G: torch.Tensor) -> None:
        """Move a running mean (in place) along the geodesic towards the batch mean ``G``."""
        mean.copy_(geodesic(mean.to(G.dtype), G.detach(), self.momentum).to(mean.dtype))

    def _check_domains(self, domains: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        domains = torch.as_tensor(domains, device=X.device)
        if domains.shape != X.shape[:1] or domains.dtype in (torch.float32, torch.float64):
            raise ValueError(
                f"domains must be an integer tensor of shape ({X.shape[0]},), got "
                f"{tuple(domains.shape)} {domains.dtype}."
            )
        if domains.numel() and (int(domains.min()) < 0 or int(domains.max()) >= self.n_domains):
            raise ValueError(
                f"domains must lie in [0, n_domains={self.n_domains}), got "
                f"[{int(domains.min())}, {int(domains.max())}]."
            )
        return domains.long()

    @torch.no_grad()
    def set_domain_mean(self, domain: int, mean: torch.Tensor) -> None:
        """Store ``mean`` (c, c) as the statistics of ``domain`` (a new domain's own mean).

        Parameters
        ----------
        domain : int
            The domain's index, in ``[0, n_domains)``.
        mean : tensor of shape (c, c)
            Its SPD mean.

        Returns
        -------
        None
            ``domain_means[domain]`` is replaced in place.
        """
        if not 0 <= domain < self.n_domains:
            raise ValueError(f"domain must lie in [0, n_domains={self.n_domains}), got {domain}.")
        self.domain_means[domain] = mean.to(self.domain_means.dtype)

    def extra_repr(self) -> str:
        size = self.running_mean.shape[0]
        bias = self.log_bias is not None
        domains = f", n_domains={self.n_domains}" if self.n_domains else ""
        return f"{size}, momentum={self.momentum}, n_iter={self.n_iter}, bias={bias}{domains}"
