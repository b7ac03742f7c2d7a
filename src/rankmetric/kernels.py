"""Kernel functions and the Nyström feature map used by kernel WARCA.

Every kernel is computed in torch, in float32 by default, on the device of its inputs, and in
row chunks so that no intermediate is larger than ``chunk_elements`` numbers (the output itself,
``n_x × n_y``, is of course allocated). The formulas follow scikit-learn's
``sklearn.metrics.pairwise`` (the tests compare against it):

=============  ======================================================  ==========================
kernel         ``k(a, b)``                                             default ``gamma``
=============  ======================================================  ==========================
``linear``     ``aᵀb``                                                 —
``rbf``        ``exp(−γ ||a − b||²)``                                  ``1 / (D · Var(X))``
``poly``       ``(γ aᵀb + coef0)^degree``                              ``1 / D``
``chi2_rbf``   ``exp(−γ Σ_d (a_d − b_d)² / (a_d + b_d))`` (0/0 := 0)   ``1 / mean χ²(a, b)``
=============  ======================================================  ==========================

``"precomputed"`` is accepted by :func:`check_kernel` for estimators that take a kernel matrix
instead of features.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
import torch

from ._distances import squared_euclidean_in_place
from ._docstrings import doc_filler
from ._utils import to_tensor
from ._validation import NONE, POSITIVE_INT, Interval, Options, check_param

__all__ = [
    "KERNELS",
    "KERNEL_PARAMETER_CONSTRAINTS",
    "check_kernel",
    "default_gamma",
    "pairwise_kernel",
    "linear_kernel",
    "rbf_kernel",
    "polynomial_kernel",
    "chi2_rbf_kernel",
    "NystroemMap",
]

KERNELS = ("linear", "rbf", "poly", "chi2_rbf", "precomputed")

#: Largest intermediate (numbers) a block of the χ² kernel may allocate: 2^19 = 2 MiB float32,
#: about a core's L2 cache. The χ² terms are elementwise (no matrix product), so the work is
#: bound by memory traffic: blocks that stay in cache ran 9× faster than 64 MiB row chunks
#: (1264 × 1264 × 4000 and 632 × 632 × 156, one thread; docs/warca.md, "Speed at VIPeR scale").
CHUNK_ELEMENTS = 1 << 19
#: Random pairs used to estimate the mean χ² distance for the default ``gamma``.
GAMMA_PAIRS = 4096
#: Relative eigenvalue floor of the landmark kernel in the Nyström map (pseudo-inverse cut-off).
NYSTROEM_RCOND = 1e-6


#: The kernel hyper-parameters of an estimator, declared once (``check_kernel`` checks them).
KERNEL_PARAMETER_CONSTRAINTS = {
    "kernel": [Options(*KERNELS)],
    "gamma": [NONE, Interval(Real, 0, None, closed="neither")],
    "degree": [POSITIVE_INT],
    "coef0": [Interval(Real, None, None, closed="neither")],
}


# alike: numpydoc See Also / Examples skeleton alike in resources.format_bytes; the functions differ
def check_kernel(kernel: str, gamma=None, degree=3, coef0=1.0) -> None:
    """Validate a kernel name and its parameters; raise ``ValueError`` naming the problem.

    Parameters
    ----------
    kernel : {"linear", "rbf", "poly", "chi2_rbf"}
        The kernel name.
    gamma : float, optional
        Its width (``> 0``); None is resolved later by :func:`default_gamma`.
    degree : int, default=3
        Degree of ``"poly"`` (``>= 1``).
    coef0 : float, default=1.0
        Constant of ``"poly"``.

    Returns
    -------
    None
        Raises ``ValueError`` instead when something is wrong.

    See Also
    --------
    rankmetric.kernels.pairwise_kernel : Computes the kernel.

    Examples
    --------
    >>> from rankmetric.kernels import check_kernel
    >>> check_kernel("rbf", gamma=0.5)
    >>> check_kernel("rbf", gamma=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    values = {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}
    for name, value in values.items():
        check_param(name, value, KERNEL_PARAMETER_CONSTRAINTS[name])


def _check_non_negative(X: torch.Tensor, name: str) -> None:
    if bool((X < 0).any()):
        raise ValueError(
            f"Negative values in data passed to the chi2_rbf kernel ({name}): it needs "
            "non-negative features such as histograms. Use kernel='rbf' for signed features."
        )


#: The numpydoc blocks the elementwise kernels share (:func:`rankmetric._docstrings.doc_filler`).
_fill_doc = doc_filler(
    {
        "kernel_rows": """\
X : tensor of shape (n_x, n_features)
    Rows ``x_i``.
Y : tensor of shape (n_y, n_features)
    Rows ``y_j``.""",
        "see_also_and_example_start": """\
See Also
--------
rankmetric.kernels.pairwise_kernel : Any kernel by name, on arrays.

Examples
--------
>>> import torch
>>> from rankmetric import kernels""",
    }
)


def _row_chunks(n_rows: int, row_cost: int, chunk_elements: int):
    """Slices of at most ``chunk_elements // row_cost`` rows covering ``range(n_rows)``."""
    step = max(1, chunk_elements // max(row_cost, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


# alike: numpydoc Parameters / Returns skeleton of a pairwise function, alike in _distances.py; the
# formulas differ
@_fill_doc
def linear_kernel(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``K = X Yᵀ``.

    Parameters
    ----------
    X : tensor of shape (n_x, n_features)
    Y : tensor of shape (n_y, n_features)

    Returns
    -------
    tensor of shape (n_x, n_y)

    %(see_also_and_example_start)s
    >>> kernels.linear_kernel(torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]]))
    tensor([[11.]])
    """
    return X @ Y.T


@_fill_doc
def rbf_kernel(X: torch.Tensor, Y: torch.Tensor, gamma: float) -> torch.Tensor:
    r"""Gaussian kernel :math:`K_{ij} = \exp(-\gamma \lVert x_i - y_j \rVert^2)`.

    Shapes as :func:`linear_kernel`.

    Parameters
    ----------
    %(kernel_rows)s
    gamma : float
        Width, ``> 0``.

    Returns
    -------
    tensor of shape (n_x, n_y)
        The kernel values, in ``(0, 1]``.

    %(see_also_and_example_start)s
    >>> x, y = torch.tensor([[0.0], [1.0]]), torch.tensor([[0.0]])
    >>> kernels.rbf_kernel(x, y, gamma=1.0).round(decimals=4)
    tensor([[1.0000],
            [0.3679]])
    """
    # the in-place order of operations, the one the kernels were fitted with
    return torch.exp_(squared_euclidean_in_place(X, Y).mul_(-gamma))


@_fill_doc
def polynomial_kernel(
    X: torch.Tensor, Y: torch.Tensor, gamma: float, degree: int = 3, coef0: float = 1.0
) -> torch.Tensor:
    r"""Polynomial kernel :math:`K_{ij} = (\gamma\, x_i^\top y_j + c_0)^p`.

    :math:`c_0` is ``coef0`` and :math:`p` is ``degree``; shapes as :func:`linear_kernel`.

    Parameters
    ----------
    %(kernel_rows)s
    gamma : float
        Scale of the inner product.
    degree : int, default=3
        Power ``p``.
    coef0 : float, default=1.0
        Constant ``c_0``.

    Returns
    -------
    tensor of shape (n_x, n_y)
        The kernel values.

    %(see_also_and_example_start)s
    >>> x, y = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]])
    >>> kernels.polynomial_kernel(x, y, gamma=1.0, degree=2)  # (11 + 1)²
    tensor([[144.]])
    """
    return (X @ Y.T).mul_(gamma).add_(coef0).pow_(degree)


def chi2_distances(
    X: torch.Tensor, Y: torch.Tensor, chunk_elements: int = CHUNK_ELEMENTS
) -> torch.Tensor:
    r"""The :math:`\chi^2` distance of every row of ``X`` to every row of ``Y``.

    .. math::

        \chi^2(x_i, y_j) = \sum_d \frac{(x_{id} - y_{jd})^2}{x_{id} + y_{jd}}

    Terms with :math:`x_{id} + y_{jd} = 0` are 0.

    Computed in blocks of rows of ``X`` (and, when one row against all of ``Y`` is too large, of
    rows of ``Y``) so that the ``(rows, cols, n_features)`` intermediates hold at most
    ``chunk_elements`` numbers (at least one row pair). Inputs must be non-negative (not checked
    here).

    Returns
    -------
    tensor of shape (n_x, n_y)
    """
    # (a − b)²/(a + b) = (a + b) − 4ab/(a + b): row sums plus one elementwise ratio per pair
    tiny = torch.finfo(X.dtype).tiny
    out = X.sum(1)[:, None] + Y.sum(1)[None, :]
    n_features = max(X.shape[1], 1)
    col_step = min(Y.shape[0], max(1, chunk_elements // n_features))
    for rows in _row_chunks(X.shape[0], col_step * n_features, chunk_elements):
        a = X[rows, None, :]
        for start in range(0, Y.shape[0], col_step):
            cols = slice(start, start + col_step)
            b = Y[None, cols, :]
            product = a * b
            out[rows, cols] -= 4.0 * product.div_((a + b).clamp_min_(tiny)).sum(-1)
    return out.clamp_min_(0.0)


def chi2_rbf_kernel(
    X: torch.Tensor, Y: torch.Tensor, gamma: float, chunk_elements: int = CHUNK_ELEMENTS
) -> torch.Tensor:
    r"""χ²-RBF kernel :math:`K_{ij} = \exp(-\gamma\, \chi^2(x_i, y_j))` (sklearn's ``chi2_kernel``).

    Parameters
    ----------
    X : tensor of shape (n_x, n_features)
        Non-negative rows (histograms).
    Y : tensor of shape (n_y, n_features)
        Non-negative rows.
    gamma : float
        Width, ``> 0``.
    chunk_elements : int, default=524288
        Elements of the (chunk, n_y, n_features) temporary computed at once.

    Returns
    -------
    tensor of shape (n_x, n_y)
        The kernel values, in ``(0, 1]``.

    Raises
    ------
    ValueError
        If ``X`` or ``Y`` has a negative entry.

    See Also
    --------
    rankmetric.kernels.pairwise_kernel : Any kernel by name, on arrays.
    rankmetric.preprocessing.StripeHistograms : Histogram features this kernel suits.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.kernels import chi2_rbf_kernel
    >>> h = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> chi2_rbf_kernel(h, h, gamma=1.0).round(decimals=4)  # χ² = 2 between the two
    tensor([[1.0000, 0.1353],
            [0.1353, 1.0000]])
    """
    _check_non_negative(X, "X")
    _check_non_negative(Y, "Y")
    return torch.exp_(chi2_distances(X, Y, chunk_elements).mul_(-gamma))


def default_gamma(
    X, kernel: str, rng: np.random.Generator | None = None, n_pairs: int = GAMMA_PAIRS
) -> float:
    r"""The ``gamma`` used when none is given.

    * ``rbf``: :math:`1 / (D \operatorname{Var}(X))` (scikit-learn's ``gamma="scale"``):
      :math:`1/D` on standardised data, the reference code's default, and invariant to the
      scale of ``X`` otherwise.
    * ``chi2_rbf``: :math:`1 / \operatorname{mean} \chi^2` over ``n_pairs`` random pairs of
      rows, so that a typical kernel value is :math:`e^{-1}` whatever the histograms' scale
      (the reference's :math:`1/D` makes the kernel nearly constant on long histograms).
    * ``poly``: :math:`1 / D`; ``linear`` and ``precomputed``: not used (returns 1.0).

    Parameters
    ----------
    X : array or tensor of shape (n_samples, n_features)
    kernel : str
    rng : numpy Generator, optional
        Draws the random pairs of the χ² estimate.
    n_pairs : int, default=4096
        Random pairs of rows of the χ² estimate.

    Returns
    -------
    float
        The kernel width ``gamma``.

    See Also
    --------
    rankmetric.KernelWARCA : Uses it when ``gamma=None``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.kernels import default_gamma
    >>> X = np.array([[0.0, 0.0], [2.0, 2.0]])  # D = 2, variance of the entries 1
    >>> default_gamma(X, "rbf"), default_gamma(X, "poly")
    (0.5, 0.5)
    """
    X = to_tensor(X, device=X.device if isinstance(X, torch.Tensor) else "cpu")
    n_features = X.shape[1]
    if kernel == "rbf":
        var = float(X.double().var(unbiased=False))
        return 1.0 / (n_features * var) if var > 0 else 1.0
    if kernel == "poly":
        return 1.0 / n_features
    if kernel == "chi2_rbf":
        rng = np.random.default_rng(0) if rng is None else rng
        n = X.shape[0]
        first = torch.as_tensor(rng.integers(0, n, n_pairs), device=X.device)
        second = torch.as_tensor(rng.integers(0, n, n_pairs), device=X.device)
        a, b = X[first], X[second]
        total = a + b
        terms = torch.where(total > 0, (a - b) ** 2 / torch.where(total > 0, total, 1.0), 0.0)
        mean = float(terms.sum(1).double().mean())
        return 1.0 / mean if mean > 0 else 1.0
    return 1.0


def pairwise_kernel(
    X,
    Y=None,
    kernel: str = "rbf",
    *,
    gamma: float | None = None,
    degree: int = 3,
    coef0: float = 1.0,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> torch.Tensor:
    """Kernel matrix between the rows of ``X`` and ``Y``.

    Parameters
    ----------
    X : array or tensor of shape (n_x, n_features)
    Y : array or tensor of shape (n_y, n_features), optional
        Defaults to ``X``.
    kernel : {"linear", "rbf", "poly", "chi2_rbf"}
    gamma : float, optional
        Kernel width; ``None`` uses :func:`default_gamma` of ``X``.
    degree, coef0 : int, float
        Polynomial kernel parameters.
    device : str or torch.device, optional
        Where to compute; defaults to the device of ``X`` (CPU for arrays).
    dtype : torch dtype, default=torch.float32
    chunk_elements : int
        Bound on the intermediate of the χ² kernel.

    Returns
    -------
    tensor of shape (n_x, n_y)

    Raises
    ------
    ValueError
        Unknown kernel, bad parameters, mismatched feature counts, or negative values for
        ``chi2_rbf``.

    See Also
    --------
    rankmetric.kernels.NystroemMap : A low-rank feature map of the same kernels.
    rankmetric.KernelWARCA : The estimator on these kernels.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.kernels import pairwise_kernel
    >>> K = pairwise_kernel(np.array([[0.0], [1.0]]), kernel="rbf", gamma=1.0)
    >>> K.round(decimals=4)
    tensor([[1.0000, 0.3679],
            [0.3679, 1.0000]])
    """
    check_kernel(kernel, gamma, degree, coef0)
    if kernel == "precomputed":
        raise ValueError("kernel='precomputed' has no formula: pass the kernel matrix itself.")
    if device is None:
        device = X.device if isinstance(X, torch.Tensor) else "cpu"
    X = to_tensor(X, device, dtype)
    Y = X if Y is None else to_tensor(Y, device, dtype)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(
            f"X and Y must be 2-D with as many features, got shapes {tuple(X.shape)} and "
            f"{tuple(Y.shape)}."
        )
    if gamma is None:
        gamma = default_gamma(X, kernel)
    if kernel == "linear":
        return linear_kernel(X, Y)
    if kernel == "rbf":
        return rbf_kernel(X, Y, gamma)
    if kernel == "poly":
        return polynomial_kernel(X, Y, gamma, degree, coef0)
    return chi2_rbf_kernel(X, Y, gamma, chunk_elements)


@dataclass
class NystroemMap:
    """Nyström feature map ``φ(x) = K_mm^{−1/2} k_m(x)`` with ``φ(a)ᵀφ(b) ≈ k(a, b)``.

    With ``Φ = φ(X)`` of shape (N, m), ``Φ Φᵀ`` is the rank-m Nyström approximation of the
    N×N kernel, so kernel WARCA runs on Φ in O(N·m) memory.

    Attributes
    ----------
    landmarks : tensor of shape (m, n_features)
    normalizer : tensor of shape (m, m)
        The symmetric pseudo-inverse square root ``K_mm^{−1/2}`` (eigenvalues below
        ``NYSTROEM_RCOND`` times the largest are dropped).
    kernel, gamma, degree, coef0 :
        The kernel, as in :func:`pairwise_kernel`.

    See Also
    --------
    rankmetric.KernelWARCA : Uses it with ``approximation="nystroem"``.
    rankmetric.kernels.pairwise_kernel : The exact kernel it approximates.

    References
    ----------
    .. [1] C. K. I. Williams and M. Seeger. Using the Nyström Method to Speed Up Kernel
       Machines. NeurIPS 2000.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.kernels import NystroemMap, pairwise_kernel
    >>> X = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    >>> phi = NystroemMap.fit(X, "rbf", gamma=1.0).transform(X)  # every point a landmark: exact
    >>> K = pairwise_kernel(X, kernel="rbf", gamma=1.0, dtype=torch.float64)
    >>> bool(torch.allclose(phi @ phi.T, K))
    True
    """

    landmarks: torch.Tensor
    normalizer: torch.Tensor
    kernel: str
    gamma: float
    degree: int = 3
    coef0: float = 1.0

    @classmethod
    def fit(
        cls, landmarks: torch.Tensor, kernel: str, gamma: float, degree: int = 3, coef0: float = 1.0
    ) -> NystroemMap:
        """Build the map from landmark rows (computes ``K_mm^{−1/2}`` in float64)."""
        K_mm = pairwise_kernel(
            landmarks, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, dtype=torch.float64
        )
        eigval, eigvec = torch.linalg.eigh(K_mm)
        keep = eigval > NYSTROEM_RCOND * eigval.max().clamp_min(1e-300)
        inv_sqrt = torch.where(keep, eigval.clamp_min(1e-300).rsqrt(), 0.0)
        normalizer = (eigvec * inv_sqrt) @ eigvec.T
        return cls(landmarks, normalizer.to(landmarks.dtype), kernel, gamma, degree, coef0)

    def kernel_to_landmarks(self, X: torch.Tensor) -> torch.Tensor:
        """``k(X, landmarks)`` of shape (n, m)."""
        return pairwise_kernel(
            X,
            self.landmarks,
            self.kernel,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            dtype=self.landmarks.dtype,
        )

    def transform(self, X: torch.Tensor) -> torch.Tensor:
        """``Φ = k(X, landmarks) K_mm^{−1/2}`` of shape (n, m)."""
        return self.kernel_to_landmarks(X) @ self.normalizer
