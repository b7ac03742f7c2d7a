"""SPDNet: a network on symmetric positive-definite matrices (Huang & Van Gool, AAAI 2017).

Layers:

- :class:`BiMap` ``Y = Wᵀ X W`` with ``W`` (in_features × out_features, out ≤ in) on the Stiefel
  manifold, stored tall and kept orthonormal by :class:`~rankmetric.models.stiefel.StiefelAdam` /
  :class:`~rankmetric.models.stiefel.StiefelSGD` (its parameter group carries ``"stiefel": True``);
- :class:`ReEig` ``Y = U max(εI, Λ) Uᵀ`` (eigenvalues clamped at ε, a ReLU for SPD matrices);
- :class:`LogEig` ``Y = U log(Λ) Uᵀ`` (the matrix logarithm, mapping to the flat space of
  symmetric matrices).

The eigen-decomposition layers call :mod:`rankmetric.geometry.matrix_functions`, whose backward is
the Daleckii–Krein divided-difference form, stable when eigenvalues repeat.

:class:`SPDNet` chains ``(BiMap → ReEig)`` blocks for a list of sizes, e.g. ``[93, 30]`` (HDM05)
or ``[400, 200, 100, 50]`` (AFEW). Every BiMap, the last included, is followed by a ReEig, as in
the original network, so the output is SPD with eigenvalues ≥ ε and Riemannian distances between
outputs are well defined. Optionally the output goes through LogEig (a symmetric matrix; the last
ReEig and the LogEig are then computed with one eigen-decomposition, :func:`rectified_log`) and
further through the vectorised upper triangle and a linear head (a Euclidean embedding for
baselines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from .._validation import check_option, renamed_keywords
from ..geometry.matrix_functions import (
    spd_clamp,
    spd_log,
    sym_function,
    sym_to_vec,
    symmetrize,
)
from ..geometry.means import riemannian_mean
from ._docstrings import fill_doc
from .batchnorm import SPDBatchNorm, batch_karcher_mean
from .stiefel import random_stiefel

__all__ = [
    "BiMap",
    "ReEig",
    "LogEig",
    "SPDBatchNorm",
    "SPDNet",
    "batch_karcher_mean",
    "sym_to_vec",
    "rectified_log",
]

BIMAP_MANIFOLDS = ("stiefel", "free")
INITS = ("random", "identity")
HEAD_INITS = ("glorot", "identity")


def rectified_log(X: torch.Tensor, eps: float) -> torch.Tensor:
    """``log(ReEig(X)) = U log(max(Λ, εI)) Uᵀ`` with one eigen-decomposition instead of two.

    Parameters
    ----------
    X : tensor of shape (..., c, c)
        Symmetric matrices.
    eps : float
        Eigenvalue floor ε > 0.

    Returns
    -------
    tensor of shape (..., c, c)
        Symmetric; equal to ``spd_log(spd_clamp(X, eps))``, with the Daleckii–Krein backward of
        the composed function (derivative ``1[λ > ε] / λ``).
    """
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}.")
    return sym_function(
        X,
        lambda lam: torch.log(lam.clamp_min(eps)),
        lambda lam: torch.where(lam > eps, 1.0 / lam.clamp_min(eps), 0.0),
    )


@fill_doc
class BiMap(nn.Module):
    r"""Bilinear map :math:`Y = W^\top X W` with :math:`W` of shape (in_features, out_features).

    Parameters
    ----------
    in_features, out_features : int
        Input and output sizes, ``in_features >= out_features >= 1`` (``d_in`` and ``d_out``
        before 0.2: still accepted as keywords, with a ``FutureWarning``).
    manifold : {"stiefel", "free"}, default="stiefel"
        ``"stiefel"``: ``W`` has orthonormal columns (kept so by the Stiefel optimisers; its
        parameter group carries ``"stiefel": True``). A square Stiefel BiMap is a rotation, which
        no Riemannian distance sees. ``"free"``: ``W`` is any matrix (plain Euclidean updates), so
        a square BiMap can re-weight directions; ``Wᵀ X W`` stays SPD while ``W`` has full column
        rank, and the ReEig that follows floors it anyway.
    init : {"random", "identity"}, default="random"
        ``"random"``: QR of a Gaussian matrix (drawn from ``generator``); ``"identity"``: the first
        ``out_features`` columns of the identity (a square identity BiMap is the identity map).
    generator : torch.Generator, optional
        Seeds the random initialisation.
    dtype, device
        Of the weight.

    See Also
    --------
    rankmetric.models.ReEig : The rectification that follows it.
    rankmetric.models.SPDNet : The network of BiMap and ReEig blocks.

    %(huang_van_gool)s

    %(spd_example_batch)s
    >>> models.BiMap(4, 2, dtype=torch.float64)(X).shape
    torch.Size([6, 2, 2])
    """

    @renamed_keywords(d_in="in_features", d_out="out_features")
    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        manifold: str = "stiefel",
        init: str = "random",
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if out_features > in_features:
            raise ValueError(
                f"BiMap reduces dimension: out_features={out_features} must be <= "
                f"in_features={in_features}."
            )
        check_option("manifold", manifold, BIMAP_MANIFOLDS)
        check_option("init", init, INITS)
        self.manifold = manifold
        if init == "identity":
            weight = torch.eye(in_features, out_features, dtype=dtype, device=device)
        else:
            weight = random_stiefel(
                in_features, out_features, generator=generator, dtype=dtype, device=device
            )
        self.weight = nn.Parameter(weight)

    @fill_doc
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Map SPD matrices (B, in_features, in_features) to (B, out_features, out_features).

        %(bimap_io)s
        """
        W = self.weight
        return symmetrize(W.transpose(-1, -2) @ X @ W)

    @property
    def in_features(self) -> int:
        return self.weight.shape[0]

    @property
    def out_features(self) -> int:
        return self.weight.shape[1]

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"manifold={self.manifold!r}"
        )


@fill_doc
class ReEig(nn.Module):
    r"""Eigenvalue rectification :math:`U \max(t I, \Lambda)\, U^\top` of SPD matrices (B, c, c).

    :math:`X = U \Lambda U^\top` is the eigendecomposition of each input matrix.

    Parameters
    ----------
    eps : float, default=1e-4
        Eigenvalue floor: :math:`t = \varepsilon` (absolute), or
        :math:`t = \varepsilon \operatorname{tr}(X) / c` (``relative``).
    relative : bool, default=False
        Floor relative to each matrix's spectrum (its mean eigenvalue), so that the layer clamps
        the same share of the spectrum whatever the scale of the data. An absolute floor of 1e-4
        never clamps anything on whitened covariances (their eigenvalues lie around 1), and the
        layer is then the identity. Computed as :math:`s \operatorname{clamp}(X / s, \varepsilon)`
        with :math:`s = \operatorname{tr}(X) / c`, so the gradient includes the floor's
        dependence on :math:`X`.

    See Also
    --------
    rankmetric.geometry.spd_clamp : The same eigenvalue floor as a function.
    rankmetric.models.BiMap : The layer before it.

    %(huang_van_gool)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import ReEig
    >>> ReEig(eps=0.1)(torch.diag(torch.tensor([0.01, 2.0]))[None]).diagonal(dim1=1, dim2=2)
    tensor([[0.1000, 2.0000]])
    """

    def __init__(self, eps: float = 1e-4, relative: bool = False) -> None:
        super().__init__()
        if eps <= 0:
            raise ValueError(f"ReEig needs eps > 0, got {eps}.")
        if relative and eps >= 1:
            raise ValueError(
                f"a relative ReEig floor must be < 1 (the mean eigenvalue), got {eps}."
            )
        self.eps = float(eps)
        self.relative = bool(relative)

    @fill_doc
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Floor the eigenvalues of each matrix.

        %(reeig_io)s
        """
        # Symmetrised so that outputs are exactly symmetric, not only up to rounding.
        if not self.relative:
            return symmetrize(spd_clamp(X, self.eps))
        scale = _mean_eigenvalue(X)
        return symmetrize(scale * spd_clamp(X / scale, self.eps))

    def extra_repr(self) -> str:
        return f"eps={self.eps}, relative={self.relative}"


@fill_doc
class LogEig(nn.Module):
    r"""Matrix logarithm :math:`U \log(\Lambda)\, U^\top` of SPD matrices (B, c, c).

    The output matrices are symmetric (B, c, c); :math:`X = U \Lambda U^\top` is the
    eigendecomposition of each input matrix.

    See Also
    --------
    rankmetric.geometry.spd_log : The same logarithm as a function.
    rankmetric.models.SPDNet : Ends with it when ``log_output=True``.

    %(huang_van_gool)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import LogEig
    >>> LogEig()(torch.eye(2)[None] * torch.e).diagonal(dim1=1, dim2=2).round(decimals=5)
    tensor([[1., 1.]])
    """

    @fill_doc
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Matrix logarithm of each SPD matrix.

        %(logeig_io)s
        """
        return spd_log(X)


class SPDNet(nn.Module):
    r"""A stack of ``BiMap → ReEig`` blocks, optionally followed by LogEig and a linear head.

    Parameters
    ----------
    sizes : sequence of int
        ``[c, h1, ..., hk]``: input size then the output size of each BiMap (non-increasing;
        equal sizes, e.g. ``[c, c, c // 2]``, give square re-weighting layers with
        ``bimap="free"``). ``[c]`` alone is the identity network (no BiMap).
    eps : float, default=1e-4
        ReEig eigenvalue floor (absolute, or relative to the mean eigenvalue).
    relative_eps : bool, default=False
        ReEig floors at :math:`\varepsilon \operatorname{tr}(X) / c` instead of
        :math:`\varepsilon` (see :class:`ReEig`).
    bimap : {"stiefel", "free"}, default="stiefel"
        Weight manifold of every BiMap (see :class:`BiMap`).
    init : {"random", "identity"}, default="random"
        BiMap initialisation; ``"identity"`` with square BiMaps (and a floor below the spectrum)
        makes the untrained network the identity map.
    log_output : bool, default=False
        Return ``log(Y)`` (symmetric, (B, hk, hk)) instead of the SPD output ``Y``.
    head_dim : int, optional
        If given, return ``Linear(sym_to_vec(log Y))`` of shape (B, head_dim), a Euclidean
        embedding (``log_output`` is then implied).
    head_init : {"glorot", "identity"}, default="glorot"
        Head weights: Glorot-uniform, or the identity (``head_dim = hk (hk + 1) / 2``; the
        untrained head then keeps log-Euclidean distances). The bias starts at 0.
    batchnorm : bool, default=False
        Riemannian batch normalisation (:class:`SPDBatchNorm`, learnable SPD bias) after every
        BiMap, before its ReEig (Brooks et al. 2019). Untrained and in ``eval()`` mode it is the
        identity, so the identity start is kept.
    n_domains : int, default=0
        With ``batchnorm``: domains (sessions, subjects) whose matrices every batch
        normalisation centres at their own running mean (TSMNet's domain-specific batch
        normalisation; see :class:`~rankmetric.models.batchnorm.SPDBatchNorm`), when
        :meth:`forward` is given ``domains``; :meth:`adapt_domain` sets a new domain's means.
    generator : torch.Generator, optional
        Seeds every random initialisation (Stiefel weights and the head).
    dtype, device
        Of the parameters.

    See Also
    --------
    rankmetric.SPDNetEmbedding : The estimator that trains it.
    rankmetric.models.StiefelAdam : The optimiser that keeps its BiMaps orthonormal.
    rankmetric.losses.RiemannianPotatoLoss : A loss on its SPD outputs.

    References
    ----------
    .. [1] Z. Huang and L. Van Gool. A Riemannian Network for SPD Matrix Learning. AAAI 2017.
    .. [2] D. Brooks, O. Schwander, F. Barbaresco, J.-Y. Schneider and M. Cord. Riemannian
       batch normalization for SPD neural networks. NeurIPS 2019 (``batchnorm``).

    Examples
    --------
    >>> net = SPDNet([93, 30])                  # HDM05-style
    >>> out = net(torch.eye(93).expand(8, 93, 93))   # 8 SPD matrices of 30 x 30
    >>> tuple(out.shape)
    (8, 30, 30)
    >>> net = SPDNet([400, 200, 100, 50])       # AFEW-style
    >>> net = SPDNet([12, 12, 12], bimap="free", init="identity", eps=0.05, relative_eps=True)
    """

    def __init__(
        self,
        sizes: Sequence[int],
        *,
        eps: float = 1e-4,
        relative_eps: bool = False,
        bimap: str = "stiefel",
        init: str = "random",
        log_output: bool = False,
        head_dim: int | None = None,
        head_init: str = "glorot",
        batchnorm: bool = False,
        n_domains: int = 0,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.sizes = check_sizes(sizes)
        check_option("head_init", head_init, HEAD_INITS)
        blocks: list[nn.Module] = []
        for d_in, d_out in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            factory = {"generator": generator, "dtype": dtype, "device": device}
            blocks.append(BiMap(d_in, d_out, manifold=bimap, init=init, **factory))
            if batchnorm:
                norm = SPDBatchNorm(d_out, n_domains=n_domains, dtype=dtype, device=device)
                blocks.append(norm)
            blocks.append(ReEig(eps, relative=relative_eps))
        self.layers = nn.Sequential(*blocks)
        self.log_output = bool(log_output) or head_dim is not None
        self.head = None
        if head_dim is not None:
            if int(head_dim) != head_dim or head_dim < 1:
                raise ValueError(f"head_dim must be a positive integer, got {head_dim!r}.")
            c = self.sizes[-1]
            n_in = c * (c + 1) // 2
            if head_init == "identity" and int(head_dim) != n_in:
                raise ValueError(
                    f"an identity head needs head_dim = {n_in} (the log-vector size), "
                    f"got {head_dim}."
                )
            self.head = nn.Linear(n_in, int(head_dim), dtype=dtype, device=device)
            _init_linear(self.head, generator, identity=head_init == "identity")

    @property
    def bimaps(self) -> list[BiMap]:
        """The BiMap layers, input side first."""
        return [m for m in self.layers if isinstance(m, BiMap)]

    @property
    def batchnorms(self) -> list[SPDBatchNorm]:
        """The Riemannian batch-normalisation layers, input side first (empty without)."""
        return [m for m in self.layers if isinstance(m, SPDBatchNorm)]

    def parameter_groups(self) -> list[dict]:
        """Parameter groups for the Stiefel optimisers (Stiefel BiMaps carry ``"stiefel": True``).

        Returns
        -------
        list of dict
            ``[{"params": [...], "stiefel": True}, {"params": [...]}]`` (empty groups left out).
        """
        stiefel = [m.weight for m in self.bimaps if m.manifold == "stiefel"]
        ids = {id(p) for p in stiefel}
        euclidean = [p for p in self.parameters() if id(p) not in ids]
        groups = [{"params": stiefel, "stiefel": True}] if stiefel else []
        return groups + ([{"params": euclidean}] if euclidean else [])

    def forward(self, X: torch.Tensor, domains: torch.Tensor | None = None) -> torch.Tensor:
        """Embed SPD matrices.

        Parameters
        ----------
        X : tensor of shape (B, c, c)
            SPD matrices, ``c = sizes[0]``.
        domains : int tensor of shape (B,), optional
            Domain of each matrix (in ``[0, n_domains)``), for the per-domain batch
            normalisation; ``None``: the shared statistics.

        Returns
        -------
        tensor of shape (B, hk, hk), or (B, head_dim) with a head
            SPD matrices (eigenvalues ≥ the floor after the first block), their logarithms when
            ``log_output``, or head vectors.
        """
        if X.ndim != 3 or X.shape[-1] != X.shape[-2] or X.shape[-1] != self.sizes[0]:
            raise ValueError(
                f"SPDNet expects matrices of shape (B, {self.sizes[0]}, {self.sizes[0]}), "
                f"got {tuple(X.shape)}."
            )
        if not self.log_output:
            return self._run(self.layers, X, domains)
        if len(self.layers) == 0:
            Y = spd_log(X)
        elif self.layers[-1].relative:
            Y = spd_log(self._run(self.layers, X, domains))
        else:  # the last ReEig and LogEig share one eigen-decomposition
            last_reeig = self.layers[-1]
            Y = rectified_log(self._run(self.layers[:-1], X, domains), last_reeig.eps)
        Y = symmetrize(Y)
        return Y if self.head is None else self.head(sym_to_vec(Y))

    @staticmethod
    def _run(layers: nn.Sequential, X: torch.Tensor, domains: torch.Tensor | None):
        """``layers(X)``, the batch normalisations given the domains when there are some."""
        if domains is None:
            return layers(X)
        for layer in layers:
            X = layer(X, domains) if isinstance(layer, SPDBatchNorm) else layer(X)
        return X

    @torch.no_grad()
    def adapt_domain(self, X: torch.Tensor, domain: int) -> None:
        """Set the per-domain statistics of ``domain`` from its own matrices ``X``.

        Layer by layer (in evaluation mode), every batch normalisation stores the Riemannian
        mean of its inputs over ``X`` (:func:`rankmetric.geometry.riemannian_mean`, converged)
        as the domain's mean, and centres ``X`` at it before the next layer: the unsupervised
        adaptation to a new session or subject.

        Parameters
        ----------
        X : tensor of shape (n, c, c)
            All the matrices of the domain (n ≥ 2).
        domain : int
            Its index, in ``[0, n_domains)``.

        Returns
        -------
        None
            The network's batch normalisations are updated in place.
        """
        if X.shape[0] < 2:
            raise ValueError(
                "a new domain needs at least 2 matrices to take its own mean, got "
                f"{X.shape[0]}: give a new domain's matrices together."
            )
        domains = torch.full((X.shape[0],), int(domain), device=X.device)
        was_training = self.training
        self.eval()
        for layer in self.layers:
            if isinstance(layer, SPDBatchNorm):
                layer.set_domain_mean(int(domain), riemannian_mean(X.double()))
                X = layer(X, domains)
            else:
                X = layer(X)
        self.train(was_training)


# alike: its Returns / Raises are alike in estimators/spd/_network.py's parse_hidden_sizes, which
# calls it and states its errors
def check_sizes(sizes: Sequence[int], name: str = "sizes") -> list[int]:
    """The BiMap sizes ``[c, h1, ..., hk]`` as a list of ints: non-empty, positive, non-increasing.

    Parameters
    ----------
    sizes : sequence of int
        Input size then the output size of each BiMap.
    name : str, default="sizes"
        The parameter's name, for the errors.

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Unless the sizes are integers, non-empty, positive and non-increasing.

    Examples
    --------
    >>> from rankmetric.models.spdnet import check_sizes
    >>> check_sizes((12, "12", 6))
    [12, 12, 6]
    """
    try:
        sizes = [int(s) for s in sizes]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of positive integers, got {sizes!r}.") from exc
    if not sizes or min(sizes) < 1:
        raise ValueError(f"{name} must be a non-empty sequence of positive integers, got {sizes}.")
    if any(b > a for a, b in zip(sizes[:-1], sizes[1:], strict=True)):
        raise ValueError(f"{name} must be non-increasing (BiMap reduces dimension), got {sizes}.")
    return sizes


def _mean_eigenvalue(X: torch.Tensor) -> torch.Tensor:
    """``trace(X) / c`` of a stack (..., c, c), shaped (..., 1, 1), floored at the dtype's tiny."""
    mean = torch.diagonal(X, dim1=-2, dim2=-1).mean(dim=-1)
    return mean.clamp_min(torch.finfo(X.dtype).tiny)[..., None, None]


@torch.no_grad()
def _init_linear(
    layer: nn.Linear, generator: torch.Generator | None, identity: bool = False
) -> None:
    """Glorot-uniform (or identity) weight and zero bias, drawn from ``generator``."""
    layer.bias.zero_()
    if identity:
        layer.weight.copy_(torch.eye(*layer.weight.shape))
        return
    fan_out, fan_in = layer.weight.shape
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    weight = torch.rand(layer.weight.shape, generator=generator, dtype=torch.float64)
    layer.weight.copy_((2 * weight - 1) * bound)
