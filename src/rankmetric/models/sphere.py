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

from .._validation import renamed_keywords
from ._docstrings import fill_doc

__all__ = ["SphereTanhEmbedding", "sphere_similarity"]

#: Norm below which ``H̃(x)`` is treated as zero (every unit dead): ``H(x)`` is then 0, not NaN.
NORM_EPS = 1e-12


# alike: numpydoc See Also / Examples skeleton alike in neighbors/_faiss.py; the functions differ
def sphere_similarity(emb_a: torch.Tensor, emb_b: torch.Tensor) -> torch.Tensor:
    r"""Row-wise similarity :math:`\hat S(a, b) = H(a)^\top H(b)` of paired embeddings.

    Parameters
    ----------
    emb_a, emb_b : Tensor of shape (n_pairs, n_components)
        Unit-norm embeddings (the output of :class:`SphereTanhEmbedding`).

    Returns
    -------
    Tensor of shape (n_pairs,)
        Similarities in ``[-1, 1]``.

    See Also
    --------
    rankmetric.models.SphereTanhEmbedding : The embedding it compares.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import sphere_similarity
    >>> a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> sphere_similarity(a, torch.tensor([[1.0, 0.0], [1.0, 0.0]]))
    tensor([1., 0.])
    """
    if emb_a.shape != emb_b.shape:
        raise ValueError(
            f"paired embeddings must have the same shape, got {tuple(emb_a.shape)} and "
            f"{tuple(emb_b.shape)}."
        )
    return (emb_a * emb_b).sum(dim=-1)


@fill_doc
class SphereTanhEmbedding(nn.Module):
    r""":math:`x \mapsto H(x)`: tanh units on an affine map, normalised onto the unit sphere.

    Unit :math:`m` is :math:`h_m(x) = 2 / (1 + \exp(w_m^\top \varphi(x))) - 1` with
    :math:`\varphi(x) = [x; 1]`, and the embedding is the unit vector

    .. math::

        H(x) = \tilde H(x) / \lVert \tilde H(x) \rVert_2, \qquad
        \tilde H(x) = [h_1(x), \dots, h_M(x)] \in (-1, 1)^M,

    a point of the sphere :math:`S^{M-1}`; the similarity of two points is
    :math:`\hat S(x, z) = H(x)^\top H(z)` (:func:`sphere_similarity`).

    Parameters
    ----------
    in_features : int
        Input dimension ``D`` (``n_features`` before 0.2: still accepted as a keyword, with a
        ``FutureWarning``).
    out_features : int
        Number of units ``M`` (may exceed ``D``; ``n_components`` before 0.2).
    bias : bool, default=True
        Append the constant 1 to the input (``φ(x) = [x; 1]``), as in the paper.

    Attributes
    ----------
    weight : Parameter of shape (in_features + bias, out_features)
        ``W = [w_1 … w_M]``: column ``m`` holds unit ``m``'s parameters, the bias in the last row.
        A column that is exactly zero (weights and bias) gives ``h_m ≡ 0``: the unit contributes
        nothing to any embedding, so it can be dropped without changing ``H`` or ``Ŝ``.
    n_features, n_components : int
        Read-only aliases of ``in_features`` and ``out_features`` (the names before 0.2).

    See Also
    --------
    rankmetric.SSNE : The estimator that trains this embedding.
    rankmetric.models.sphere_similarity : The similarity of two embeddings.
    rankmetric.losses.SimilarityRegressionLoss : The loss SSNE trains it with.

    Notes
    -----
    :math:`2 / (1 + e^t) - 1` is evaluated as :math:`-\tanh(t / 2)`, which is the same function
    but never overflows. When every unit is zero the norm guard returns ``H(x) = 0`` (with finite
    gradients) instead of dividing by zero.

    %(batra_shakhnarovich)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import SphereTanhEmbedding
    >>> _ = torch.manual_seed(0)
    >>> H = SphereTanhEmbedding(4, 3)(torch.randn(5, 4))
    >>> H.shape, bool(torch.allclose(H.norm(dim=1), torch.ones(5)))
    (torch.Size([5, 3]), True)
    """

    @renamed_keywords(n_features="in_features", n_components="out_features")
    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(
                "in_features and out_features must be positive, got "
                f"{in_features} and {out_features}."
            )
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.bias = bool(bias)
        self.weight = nn.Parameter(torch.empty(self.in_features + self.bias, self.out_features))
        self.reset_parameters()

    @property
    def n_features(self) -> int:
        """``in_features`` (its name before 0.2)."""
        return self.in_features

    @property
    def n_components(self) -> int:
        """``out_features`` (its name before 0.2)."""
        return self.out_features

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Draw ``W`` from ``N(0, 1 / (D + 1))``, so that ``w_mᵀ φ(x)`` has unit scale on
        standardised inputs; ``generator`` makes the draw reproducible.

        Parameters
        ----------
        generator : torch.Generator, optional
            Makes the draw reproducible.

        Returns
        -------
        None
            ``weight`` is set in place.
        """
        std = 1.0 / math.sqrt(self.weight.shape[0])
        with torch.no_grad():
            self.weight.normal_(0.0, std, generator=generator)

    def unnormalized(self, x: torch.Tensor) -> torch.Tensor:
        """``H̃(x) = [h_1(x) … h_M(x)]`` with ``h_m = −tanh(w_mᵀ φ(x) / 2)``.

        Parameters
        ----------
        x : Tensor of shape (n_samples, in_features)

        Returns
        -------
        Tensor of shape (n_samples, out_features), values in ``(−1, 1)``.
        """
        if x.ndim != 2 or x.shape[1] != self.in_features:
            raise ValueError(
                f"expected input of shape (n_samples, {self.in_features}), got {tuple(x.shape)}."
            )
        if self.bias:
            pre = torch.addmm(self.weight[-1], x, self.weight[:-1])
        else:
            pre = x @ self.weight
        return -torch.tanh(0.5 * pre)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`H(x) = \tilde H(x) / \lVert \tilde H(x) \rVert_2` (0 where every unit is 0).

        Parameters
        ----------
        x : Tensor of shape (n_samples, in_features)

        Returns
        -------
        Tensor of shape (n_samples, out_features), rows of unit norm.
        """
        return nn.functional.normalize(self.unnormalized(x), dim=1, eps=NORM_EPS)

    def active_components(self) -> torch.Tensor:
        """Boolean mask of shape (out_features,): units whose column ``w_m`` is not exactly zero.

        Returns
        -------
        tensor of shape (out_features,), bool
            The surviving units.
        """
        return (self.weight != 0).any(dim=0)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias}"
