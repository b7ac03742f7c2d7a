"""SPDNet: a network on symmetric positive-definite matrices (Huang & Van Gool, AAAI 2017).

Layers:

- :class:`BiMap` ``Y = Wᵀ X W`` with ``W`` (d_in × d_out, d_out ≤ d_in) on the Stiefel manifold,
  stored tall and kept orthonormal by :class:`~rankmetric.models.stiefel.StiefelAdam` /
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

from ..geometry.matrix_functions import spd_clamp, spd_log, sym_function, sym_to_vec, symmetrize
from .stiefel import random_stiefel

__all__ = ["BiMap", "ReEig", "LogEig", "SPDNet", "sym_to_vec", "rectified_log"]


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


class BiMap(nn.Module):
    """Bilinear map ``Y = Wᵀ X W`` with ``W`` of shape (d_in, d_out) and orthonormal columns.

    Parameters
    ----------
    d_in, d_out : int
        Input and output sizes, ``d_in >= d_out >= 1``.
    generator : torch.Generator, optional
        Seeds the random orthonormal initialisation (QR of a Gaussian matrix).
    dtype, device
        Of the weight.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        *,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if d_out > d_in:
            raise ValueError(f"BiMap reduces dimension: d_out={d_out} must be <= d_in={d_in}.")
        self.weight = nn.Parameter(
            random_stiefel(d_in, d_out, generator=generator, dtype=dtype, device=device)
        )

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Map SPD matrices (B, d_in, d_in) to SPD matrices (B, d_out, d_out)."""
        W = self.weight
        return symmetrize(W.transpose(-1, -2) @ X @ W)

    def extra_repr(self) -> str:
        return f"d_in={self.weight.shape[0]}, d_out={self.weight.shape[1]}"


class ReEig(nn.Module):
    """Eigenvalue rectification ``U max(εI, Λ) Uᵀ`` of SPD matrices (B, c, c).

    Parameters
    ----------
    eps : float, default=1e-4
        Eigenvalue floor ε.
    """

    def __init__(self, eps: float = 1e-4) -> None:
        super().__init__()
        if eps <= 0:
            raise ValueError(f"ReEig needs eps > 0, got {eps}.")
        self.eps = float(eps)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        # Symmetrised so that outputs are exactly symmetric, not only up to rounding.
        return symmetrize(spd_clamp(X, self.eps))

    def extra_repr(self) -> str:
        return f"eps={self.eps}"


class LogEig(nn.Module):
    """Matrix logarithm ``U log(Λ) Uᵀ`` of SPD matrices (B, c, c) → symmetric matrices (B, c, c)."""

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return spd_log(X)


class SPDNet(nn.Module):
    """A stack of ``BiMap → ReEig`` blocks, optionally followed by LogEig and a linear head.

    Parameters
    ----------
    sizes : sequence of int
        ``[c, h1, ..., hk]``: input size then the output size of each BiMap (non-increasing).
        ``[c]`` alone is the identity network (no BiMap).
    eps : float, default=1e-4
        ReEig eigenvalue floor.
    log_output : bool, default=False
        Return ``log(Y)`` (symmetric, (B, hk, hk)) instead of the SPD output ``Y``.
    head_dim : int, optional
        If given, return ``Linear(sym_to_vec(log Y))`` of shape (B, head_dim), a Euclidean
        embedding (``log_output`` is then implied).
    generator : torch.Generator, optional
        Seeds every random initialisation (Stiefel weights and the head).
    dtype, device
        Of the parameters.

    Examples
    --------
    >>> net = SPDNet([93, 30])                  # HDM05-style
    >>> net = SPDNet([400, 200, 100, 50])       # AFEW-style
    >>> out = net(torch.eye(93).expand(8, 93, 93))   # (8, 30, 30), SPD
    """

    def __init__(
        self,
        sizes: Sequence[int],
        *,
        eps: float = 1e-4,
        log_output: bool = False,
        head_dim: int | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.sizes = _check_sizes(sizes)
        blocks: list[nn.Module] = []
        for d_in, d_out in zip(self.sizes[:-1], self.sizes[1:]):
            blocks.append(BiMap(d_in, d_out, generator=generator, dtype=dtype, device=device))
            blocks.append(ReEig(eps))
        self.layers = nn.Sequential(*blocks)
        self.log_output = bool(log_output) or head_dim is not None
        self.head = None
        if head_dim is not None:
            if int(head_dim) != head_dim or head_dim < 1:
                raise ValueError(f"head_dim must be a positive integer, got {head_dim!r}.")
            c = self.sizes[-1]
            self.head = nn.Linear(c * (c + 1) // 2, int(head_dim), dtype=dtype, device=device)
            _init_linear(self.head, generator)

    @property
    def bimaps(self) -> list[BiMap]:
        """The BiMap layers, input side first."""
        return [m for m in self.layers if isinstance(m, BiMap)]

    def parameter_groups(self) -> list[dict]:
        """Parameter groups for the Stiefel optimisers: BiMap weights with ``"stiefel": True``.

        Returns
        -------
        list of dict
            ``[{"params": [...], "stiefel": True}, {"params": [...]}]`` (empty groups left out).
        """
        stiefel = [m.weight for m in self.bimaps]
        ids = {id(p) for p in stiefel}
        euclidean = [p for p in self.parameters() if id(p) not in ids]
        groups = [{"params": stiefel, "stiefel": True}] if stiefel else []
        return groups + ([{"params": euclidean}] if euclidean else [])

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Embed SPD matrices.

        Parameters
        ----------
        X : tensor of shape (B, c, c)
            SPD matrices, ``c = sizes[0]``.

        Returns
        -------
        tensor of shape (B, hk, hk), or (B, head_dim) with a head
            SPD matrices (eigenvalues ≥ eps after the first block), their logarithms when
            ``log_output``, or head vectors.
        """
        if X.ndim != 3 or X.shape[-1] != X.shape[-2] or X.shape[-1] != self.sizes[0]:
            raise ValueError(
                f"SPDNet expects matrices of shape (B, {self.sizes[0]}, {self.sizes[0]}), "
                f"got {tuple(X.shape)}."
            )
        if not self.log_output:
            return self.layers(X)
        if len(self.layers) == 0:
            Y = spd_log(X)
        else:  # the last ReEig and LogEig share one eigen-decomposition
            last_reeig = self.layers[-1]
            Y = rectified_log(self.layers[:-1](X), last_reeig.eps)
        Y = symmetrize(Y)
        return Y if self.head is None else self.head(sym_to_vec(Y))


def _check_sizes(sizes: Sequence[int]) -> list[int]:
    try:
        sizes = [int(s) for s in sizes]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sizes must be a sequence of positive integers, got {sizes!r}.") from exc
    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes must be a non-empty sequence of positive integers, got {sizes}.")
    if any(b > a for a, b in zip(sizes[:-1], sizes[1:])):
        raise ValueError(f"sizes must be non-increasing (BiMap reduces dimension), got {sizes}.")
    return sizes


@torch.no_grad()
def _init_linear(layer: nn.Linear, generator: torch.Generator | None) -> None:
    """Glorot-uniform weight and zero bias, drawn from ``generator``."""
    fan_out, fan_in = layer.weight.shape
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    weight = torch.rand(layer.weight.shape, generator=generator, dtype=torch.float64)
    layer.weight.copy_((2 * weight - 1) * bound)
    layer.bias.zero_()
