"""The SSNE embedding onto the unit sphere (Batra & Shakhnarovich, "Similarity Sensitive Nonlinear
Embeddings").

Each unit ``m`` is a tanh of an affine function of the input,
``h_m(x) = 2 / (1 + exp(w_mᵀ φ(x))) − 1 = −tanh(w_mᵀ φ(x) / 2)`` with ``φ(x) = [x; 1]``, and the
embedding is the unit vector ``H(x) = H̃(x) / ||H̃(x)||₂``. The similarity of two points is
``Ŝ(x, z) = H(x)ᵀ H(z)``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["SphereTanhEmbedding", "sphere_similarity"]

#: Norm below which ``H̃(x)`` is treated as zero (every unit dead): ``H(x)`` is then 0, not NaN.
NORM_EPS = 1e-12


def sphere_similarity(emb_a: torch.Tensor, emb_b: torch.Tensor) -> torch.Tensor:
    """Row-wise similarity ``Ŝ = H(a)ᵀ H(b)`` of paired embeddings.

    Parameters
    ----------
    emb_a, emb_b : Tensor of shape (n_pairs, n_components)
        Unit-norm embeddings (the output of :class:`SphereTanhEmbedding`).

    Returns
    -------
    Tensor of shape (n_pairs,)
        Similarities in ``[-1, 1]``.
    """
    if emb_a.shape != emb_b.shape:
        raise ValueError(
            f"paired embeddings must have the same shape, got {tuple(emb_a.shape)} and "
            f"{tuple(emb_b.shape)}."
        )
    return (emb_a * emb_b).sum(dim=-1)


class SphereTanhEmbedding(nn.Module):
    """``x ↦ H(x)``: tanh units on an affine map, normalised onto the unit sphere ``S^{M−1}``.

    Parameters
    ----------
    n_features : int
        Input dimension ``D``.
    n_components : int
        Number of units ``M`` (may exceed ``D``).
    bias : bool, default=True
        Append the constant 1 to the input (``φ(x) = [x; 1]``), as in the paper.

    Attributes
    ----------
    weight : Parameter of shape (n_features + bias, n_components)
        ``W = [w_1 … w_M]``: column ``m`` holds unit ``m``'s parameters, the bias in the last row.
        A column that is exactly zero (weights and bias) gives ``h_m ≡ 0``: the unit contributes
        nothing to any embedding, so it can be dropped without changing ``H`` or ``Ŝ``.

    Notes
    -----
    ``2 / (1 + exp(t)) − 1`` is evaluated as ``−tanh(t / 2)``, which is the same function but never
    overflows. When every unit is zero the norm guard returns ``H(x) = 0`` (with finite
    gradients) instead of dividing by zero.
    """

    def __init__(self, n_features: int, n_components: int, bias: bool = True) -> None:
        super().__init__()
        if n_features < 1 or n_components < 1:
            raise ValueError(
                "n_features and n_components must be positive, got "
                f"{n_features} and {n_components}."
            )
        self.n_features = int(n_features)
        self.n_components = int(n_components)
        self.bias = bool(bias)
        self.weight = nn.Parameter(torch.empty(self.n_features + self.bias, self.n_components))
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Draw ``W`` from ``N(0, 1 / (D + 1))``, so that ``w_mᵀ φ(x)`` has unit scale on
        standardised inputs; ``generator`` makes the draw reproducible."""
        std = 1.0 / math.sqrt(self.weight.shape[0])
        with torch.no_grad():
            self.weight.normal_(0.0, std, generator=generator)

    def unnormalized(self, x: torch.Tensor) -> torch.Tensor:
        """``H̃(x) = [h_1(x) … h_M(x)]`` with ``h_m = −tanh(w_mᵀ φ(x) / 2)``.

        Parameters
        ----------
        x : Tensor of shape (n_samples, n_features)

        Returns
        -------
        Tensor of shape (n_samples, n_components), values in ``(−1, 1)``.
        """
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(
                f"expected input of shape (n_samples, {self.n_features}), got {tuple(x.shape)}."
            )
        if self.bias:
            pre = torch.addmm(self.weight[-1], x, self.weight[:-1])
        else:
            pre = x @ self.weight
        return -torch.tanh(0.5 * pre)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``H(x) = H̃(x) / ||H̃(x)||₂`` (zero where every unit is zero).

        Parameters
        ----------
        x : Tensor of shape (n_samples, n_features)

        Returns
        -------
        Tensor of shape (n_samples, n_components), rows of unit norm.
        """
        return nn.functional.normalize(self.unnormalized(x), dim=1, eps=NORM_EPS)

    def active_components(self) -> torch.Tensor:
        """Boolean mask of shape (n_components,): units whose column ``w_m`` is not exactly zero."""
        return (self.weight != 0).any(dim=0)

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, n_components={self.n_components}, bias={self.bias}"
