"""The linear map of Mahalanobis metric learners: ``x ↦ W ((x − μ) / σ)``.

WARCA learns ``W`` of shape (r, D) so that ``F_W(a, b) = ||W(a − b)||₂``. The optional input
standardisation ``(μ, σ)`` lives in buffers so that raw data never has to be copied (a 1M × 128
float32 matrix stays where it is; only gathered rows are standardised). :meth:`LinearMap.folded`
returns the single matrix ``L = W / σ`` with ``||L(a − b)|| = ||W(â − b̂)||`` on raw inputs.

Kernel WARCA uses the same module on kernel rows ``κ_i = K(X, x_i)`` (``W`` is then ``A`` of shape
(r, N)) or on Nyström features.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._utils import torch_generator
from .._validation import check_finite, check_option
from ..geometry.eigen import orient_columns
from ._docstrings import fill_doc

__all__ = ["LinearMap", "pca_components"]

INITS = ("random", "pca")


def pca_components(X: torch.Tensor, n_components: int, max_rows: int = 100_000) -> torch.Tensor:
    """Top principal axes of (already standardised) ``X`` as orthonormal rows.

    Parameters
    ----------
    X : tensor of shape (n_samples, n_features)
    n_components : int
        Number of axes ``r ≤ n_features``.
    max_rows : int
        The covariance is estimated on at most this many leading rows.

    Returns
    -------
    tensor of shape (n_components, n_features)
        Rows are the eigenvectors of the covariance with the largest eigenvalues, each with its
        largest-magnitude entry positive (a sign that does not depend on the CPU).
    """
    rows = X[:max_rows].double()
    rows = rows - rows.mean(0)
    cov = rows.T @ rows / max(rows.shape[0] - 1, 1)
    _, eigvec = torch.linalg.eigh(cov)
    leading = orient_columns(eigvec[:, -n_components:].flip(1))  # signs the same on any CPU
    return leading.T.to(X.dtype).contiguous()


@fill_doc
class LinearMap(nn.Module):
    """``x ↦ W ((x − μ) / σ)`` with a trainable ``W`` of shape (out_features, in_features).

    Parameters
    ----------
    in_features : int
        Input dimension ``D``.
    out_features : int
        Embedding dimension ``r``.
    mean, scale : array or tensor of shape (in_features,), optional
        Standardisation applied to inputs before ``W`` (kept as buffers, not trained); without
        them the map is plain ``x @ W.T``.
    dtype : torch dtype, default=torch.float32
    device : str or torch.device, optional

    Attributes
    ----------
    weight : Parameter of shape (out_features, in_features)

    See Also
    --------
    rankmetric.WARCA : The estimator that trains this map.
    rankmetric.losses.WARPLoss : The loss WARCA trains it with.

    %(jose_fleuret)s

    Examples
    --------
    >>> import torch
    >>> from rankmetric.models import LinearMap
    >>> LinearMap(4, 2)(torch.zeros(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        mean: torch.Tensor | None = None,
        scale: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device | None = None,
    ) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(
                f"in_features and out_features must be positive, got {in_features} and "
                f"{out_features}."
            )
        self.weight = nn.Parameter(
            torch.zeros(out_features, in_features, dtype=dtype, device=device)
        )
        self.standardize = mean is not None or scale is not None
        self.register_buffer("mean", self._buffer(mean, in_features, 0.0, dtype, device))
        self.register_buffer("scale", self._buffer(scale, in_features, 1.0, dtype, device))

    @staticmethod
    def _buffer(value, n: int, fill: float, dtype, device) -> torch.Tensor:
        if value is None:
            return torch.full((n,), fill, dtype=dtype, device=device)
        value = torch.as_tensor(value, dtype=dtype, device=device)
        if value.shape != (n,):
            raise ValueError(
                f"standardisation vectors must have shape ({n},), got {tuple(value.shape)}."
            )
        return value

    # alike: nn.Linear's in_features / out_features, alike in BiMap (models/spdnet.py), whose weight
    # is stored transposed: (in, out) there, (out, in) here
    @property
    def in_features(self) -> int:
        return self.weight.shape[1]

    @property
    def out_features(self) -> int:
        return self.weight.shape[0]

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed ``x`` of shape (..., in_features) into (..., out_features).

        No temporary copy of ``x`` is made: the standardisation is folded into the weight,
        ``W((x − μ)/σ) = x Lᵀ − L μ`` with ``L = W / σ`` (an (r, D) product instead of two passes
        over an (n, D) batch; kernel WARCA passes its whole N × N kernel here). The subtraction
        after the product costs ``log10(max |μ|/σ)`` of float32's ~7 digits, which only matters
        for features whose offset dwarfs their spread by several orders of magnitude.

        Parameters
        ----------
        x : tensor of shape (..., in_features)
            Raw inputs.

        Returns
        -------
        tensor of shape (..., out_features)
            The embeddings.
        """
        if not self.standardize:
            return x @ self.weight.T
        folded = self.weight / self.scale
        shift = folded @ self.mean
        if x.dim() == 2:
            return torch.addmm(shift.neg()[None, :], x, folded.T)
        return x @ folded.T - shift

    @torch.no_grad()
    def reset_parameters(
        self,
        rng: np.random.Generator,
        init: str | np.ndarray = "random",
        data: torch.Tensor | None = None,
    ) -> None:
        """Initialise ``W``.

        Parameters
        ----------
        rng : numpy Generator
            Seeds the torch generator (one seed drives the whole fit).
        init : {"random", "pca"} or ndarray of shape (out_features, in_features)
            ``"random"``: ``W ~ N(0, 1/in_features)`` (the reference code's ``N(0, 1/n)`` with ``n``
            the input dimension of the map), whose rows are nearly orthonormal.
            ``"pca"``: the top principal axes of the standardised ``data`` (``W Wᵀ = I``).
            An array: the starting map ``L`` on raw inputs (a warm start, e.g. another
            learner's ``components_``), so ``W = L σ`` and :meth:`folded` returns ``L``.
        data : tensor of shape (n_samples, in_features)
            Raw inputs, needed for ``"pca"``.

        Returns
        -------
        None
            ``weight`` is set in place.
        """
        out_features, in_features = self.weight.shape
        if isinstance(init, np.ndarray):
            if init.shape != (out_features, in_features):
                raise ValueError(
                    f"init has shape {init.shape}, expected (n_components, n_features) = "
                    f"{(out_features, in_features)}."
                )
            check_finite(init, "init")
            start = torch.as_tensor(init, dtype=self.weight.dtype, device=self.weight.device)
            self.weight.copy_(start * self.scale)  # scale is 1 without standardisation
            return
        check_option("init", init, INITS)
        if init == "pca":
            if data is None:
                raise ValueError("init='pca' needs the training data.")
            standardised = (data[:100_000] - self.mean) / self.scale
            self.weight.copy_(pca_components(standardised, out_features))
            return
        gen = torch_generator(rng, "cpu")
        weight = torch.randn(out_features, in_features, generator=gen, dtype=torch.float64)
        self.weight.copy_(weight / np.sqrt(in_features))

    @torch.no_grad()
    def folded(self) -> torch.Tensor:
        """``L = W / σ`` (out_features, in_features): the map on raw inputs, up to a shift.

        Returns
        -------
        tensor of shape (out_features, in_features)
            ``L`` with ``forward(x) = x Lᵀ − L μ``.
        """
        return self.weight / self.scale
