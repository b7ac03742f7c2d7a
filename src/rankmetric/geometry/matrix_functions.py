r"""Functions of symmetric matrices with an eigen-decomposition backward that is exact at ties.

For a symmetric matrix :math:`X = U \operatorname{diag}(\lambda) U^\top` and a scalar function
:math:`f`, :math:`f(X) = U \operatorname{diag}(f(\lambda)) U^\top`. Its derivative is the
Daleckii–Krein formula [1]_ [2]_

.. math::
    \frac{\partial \ell}{\partial X} = U \big(L \circ (U^\top \operatorname{sym}(G) U)\big) U^\top,
    \qquad L_{ij} = \frac{f(\lambda_i) - f(\lambda_j)}{\lambda_i - \lambda_j},
    \quad L_{ii} = f'(\lambda_i),

with :math:`G = \partial \ell / \partial f(X)`. Plain autograd through ``torch.linalg.eigh`` divides
by :math:`\lambda_i - \lambda_j` and returns NaN as soon as two eigenvalues coincide (e.g. at
:math:`X = I`); here the divided difference is replaced by :math:`f'` at the midpoint of the pair
when the two eigenvalues are (numerically) tied, which is its limit.

Precision: the decomposition runs in the input dtype. A float32 matrix whose eigenvalues span more
than float32 resolves (smallest :math:`|\lambda|` below :data:`FLOAT32_REFINE_RATIO` times the
largest, i.e. condition number above about :math:`10^5`) is decomposed again in float64, so that an
SPD float32 matrix of condition number :math:`10^8` keeps positive eigenvalues and a finite log.

References
----------
.. [1] Ju. L. Daleckii, S. G. Krein, "Integration and differentiation of functions of Hermitian
   operators and applications to the theory of perturbations", AMS Translations (2) 47, 1965.
.. [2] C. Ionescu, O. Vantzos, C. Sminchisescu, "Matrix backpropagation for deep networks with
   structured layers", ICCV 2015.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from numbers import Real

import torch
from torch.autograd.function import once_differentiable

from .._validation import Interval, check_param
from ._host_blas import host_matmul, use_host_blas
from .checks import as_symmetric_tensor, raise_if_not_positive
from .eigen import FLOAT32_REFINE_RATIO, eigh

__all__ = [
    "sym_to_vec",
    "vec_to_sym",
    "sym_function",
    "symmetrize",
    "spd_log",
    "spd_exp",
    "spd_sqrt",
    "spd_inv_sqrt",
    "spd_power",
    "spd_clamp",
    "FLOAT32_REFINE_RATIO",
]

ElementwiseFn = Callable[[torch.Tensor], torch.Tensor]


def symmetrize(X: torch.Tensor) -> torch.Tensor:
    r"""Symmetric part :math:`(X + X^\top) / 2`.

    Parameters
    ----------
    X : Tensor of shape (..., c, c)

    Returns
    -------
    Tensor of shape (..., c, c)

    See Also
    --------
    rankmetric.geometry.check_spd : Validate SPD input.
    rankmetric.geometry.sym_to_vec : Vectorise symmetric matrices.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import symmetrize
    >>> symmetrize(torch.tensor([[1.0, 2.0], [0.0, 1.0]]))
    tensor([[1., 1.],
            [1., 1.]])
    """
    return torch.add(X, X.mT).mul_(0.5)  # the same numbers as (X + Xᵀ) / 2, one buffer


def divided_differences(
    eigenvalues: torch.Tensor,
    f_values: torch.Tensor,
    f_prime: ElementwiseFn,
    tol: float | None = None,
) -> torch.Tensor:
    r"""First divided differences of ``f`` on pairs of eigenvalues (the Loewner matrix).

    .. math::
        L_{ij} = \begin{cases}
            \dfrac{f(\lambda_i) - f(\lambda_j)}{\lambda_i - \lambda_j}
                & |\lambda_i - \lambda_j| > \text{tol} \cdot \max(|\lambda_i|, |\lambda_j|) \\
            f'\big(\tfrac{\lambda_i + \lambda_j}{2}\big) & \text{otherwise (ties)}
        \end{cases}

    The tie test is relative to the pair, so that the close, small eigenvalues of an
    ill-conditioned matrix keep their exact divided difference. The midpoint keeps :math:`L`
    symmetric and makes the tie branch accurate to :math:`O(\text{tol}^2)`; the default
    ``tol = eps ** (1/3)`` balances that against rounding in the quotient.

    Parameters
    ----------
    eigenvalues : Tensor of shape (..., c)
    f_values : Tensor of shape (..., c)
        ``f(eigenvalues)``.
    f_prime : callable
        Derivative of ``f``, elementwise on a tensor.
    tol : float, optional
        Relative tie tolerance; ``torch.finfo(dtype).eps ** (1/3)`` by default.

    Returns
    -------
    L : Tensor of shape (..., c, c)
        Symmetric.
    """
    if tol is None:
        tol = torch.finfo(eigenvalues.dtype).eps ** (1 / 3)
    lam_i, lam_j = eigenvalues.unsqueeze(-1), eigenvalues.unsqueeze(-2)
    gap = lam_i - lam_j
    tied = gap.abs() <= tol * torch.maximum(lam_i.abs(), lam_j.abs())
    quotient = (f_values.unsqueeze(-1) - f_values.unsqueeze(-2)) / torch.where(tied, 1.0, gap)
    return torch.where(tied, f_prime((lam_i + lam_j) / 2), quotient)


def _apply_to_spectrum(X, f, positive_name, host: bool = False):
    """``(eigenvalues, eigenvectors, f(eigenvalues), f(X))`` of the symmetric part of ``X`` (with
    or without autograd the same function: gradcheck's numerical side runs without it);
    ``host``: the product ``U diag(f) Uᵀ`` in NumPy (:mod:`._host_blas`, inference only)."""
    eigenvalues, eigenvectors = eigh(symmetrize(X))
    if positive_name is not None:
        raise_if_not_positive(eigenvalues[..., 0], positive_name)
    f_values = f(eigenvalues)
    scaled = eigenvectors * f_values.unsqueeze(-2)
    product = host_matmul if host else torch.matmul
    return eigenvalues, eigenvectors, f_values, product(scaled, eigenvectors.mT)


class _SymFunction(torch.autograd.Function):
    """``U diag(f(λ)) Uᵀ`` with the Daleckii–Krein backward."""

    @staticmethod
    def forward(ctx, X, f, f_prime, tol, positive_name):
        eigenvalues, eigenvectors, f_values, out = _apply_to_spectrum(X, f, positive_name)
        ctx.save_for_backward(eigenvalues, eigenvectors, f_values)
        ctx.f_prime, ctx.tol = f_prime, tol
        return out

    @classmethod
    def apply(cls, X, f, f_prime, tol, positive_name):
        """The autograd function, or the bare forward when no gradient is needed (inference
        then skips autograd's bookkeeping and the saved decomposition)."""
        if torch.is_grad_enabled() and X.requires_grad:
            return super().apply(X, f, f_prime, tol, positive_name)
        return _apply_to_spectrum(X, f, positive_name, host=use_host_blas(X))[3]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        eigenvalues, eigenvectors, f_values = ctx.saved_tensors
        loewner = divided_differences(eigenvalues, f_values, ctx.f_prime, ctx.tol)
        inner = eigenvectors.mT @ symmetrize(grad_output) @ eigenvectors
        grad_input = eigenvectors @ (loewner * inner) @ eigenvectors.mT
        return grad_input, None, None, None, None


def sym_function(
    X: torch.Tensor,
    f: ElementwiseFn,
    f_prime: ElementwiseFn,
    *,
    tol: float | None = None,
) -> torch.Tensor:
    r"""Apply a scalar function to the eigenvalues of symmetric matrices.

    .. math::
        f(X) = U \operatorname{diag}(f(\lambda)) U^\top,
        \qquad X = U \operatorname{diag}(\lambda) U^\top

    Differentiable with the Daleckii–Krein backward
    :math:`U (L \circ (U^\top \operatorname{sym}(G) U)) U^\top` (see :func:`divided_differences`),
    which stays finite and exact when eigenvalues repeat. The input is symmetrised first, so the
    gradient is symmetric. Not twice differentiable.

    Parameters
    ----------
    X : Tensor of shape (..., c, c)
        Symmetric matrices, float32 or float64.
    f : callable
        Elementwise torch function of the eigenvalue tensor, e.g. ``torch.log``.
    f_prime : callable
        Its derivative, elementwise.
    tol : float, optional
        Relative tie tolerance of the divided differences (``eps ** (1/3)`` by default).

    Returns
    -------
    Tensor of shape (..., c, c)
        ``f(X)``, symmetric, in the dtype of ``X``.

    Raises
    ------
    ValueError
        If ``X`` is not ``(..., c, c)``, holds NaN/infinity or is not symmetric.

    See Also
    --------
    rankmetric.geometry.spd_log : ``sym_function`` with the logarithm.
    rankmetric.geometry.spd_power : ``sym_function`` with a real power.

    References
    ----------
    .. [1] C. Ionescu, O. Vantzos, C. Sminchisescu, "Matrix backpropagation for deep networks with
       structured layers", ICCV 2015, Prop. 2.

    Examples
    --------
    >>> import torch
    >>> X = torch.tensor([[4.0, 0.0], [0.0, 9.0]], dtype=torch.float64)
    >>> from rankmetric.geometry import sym_function
    >>> sym_function(X, torch.sqrt, lambda x: 0.5 / torch.sqrt(x))
    tensor([[2., 0.],
            [0., 3.]], dtype=torch.float64)
    """
    X = as_symmetric_tensor(X, "X")
    return _SymFunction.apply(X, f, f_prime, tol, None)


def _spd_function(X, f: ElementwiseFn, f_prime: ElementwiseFn, name: str = "X") -> torch.Tensor:
    """:func:`sym_function` for SPD input: also raises if ``X`` is not positive definite."""
    X = as_symmetric_tensor(X, name)
    return _SymFunction.apply(X, f, f_prime, None, name)


def log_unchecked(X: torch.Tensor, name: str = "X") -> torch.Tensor:
    """:func:`spd_log` for tensors built inside this package: no shape/symmetry check (``X`` is
    symmetrised), but a non-positive eigenvalue still raises a ``ValueError`` naming ``name``."""
    return _SymFunction.apply(X, torch.log, torch.reciprocal, None, name)


def exp_unchecked(X: torch.Tensor) -> torch.Tensor:
    """:func:`spd_exp` for tensors built inside this package (no input check)."""
    return _SymFunction.apply(X, torch.exp, torch.exp, None, None)


_SPECTRAL_DOC = """{summary}
{notes}
Parameters
----------
X : Tensor of shape (..., c, c)
    {takes}{params}

Returns
-------
Tensor of shape (..., c, c)
    {gives}

Raises
------
ValueError
    If ``X`` is not a stack of {kind} matrices{raises}.
{references}
Examples
--------
>>> import torch
>>> from rankmetric.geometry import {name}
>>> X = torch.tensor([[4.0, 0.0], [0.0, 9.0]], dtype=torch.float64)
{example}
"""


def _spectral_doc(
    summary: str,
    *,
    kind: str = "SPD",
    takes: str = "SPD matrices.",
    gives: str = "SPD matrices.",
    params: str = "",
    raises: str = "",
    notes: str = "",
    references: str = "",
    example: str = "",
) -> Callable:
    """Give a function ``f(X) = U diag(f(λ)) Uᵀ`` of this module its numpydoc docstring (one
    template for the parts they share: X in, a stack of matrices out, a ``ValueError``)."""

    def decorate(fn: Callable) -> Callable:
        fn.__doc__ = _SPECTRAL_DOC.format(
            summary=summary,
            notes=f"\n{notes}\n" if notes else "",
            kind=kind,
            takes=takes,
            gives=gives,
            params=params,
            raises=raises,
            references=f"\nReferences\n----------\n{references}\n" if references else "",
            name=fn.__name__,
            example=example,
        )
        return fn

    return decorate


@_spectral_doc(
    r"Principal matrix logarithm :math:`\log X = U \operatorname{diag}(\log \lambda) U^\top`.",
    gives="Symmetric matrices.",
    references='.. [1] N. J. Higham, "Functions of Matrices", SIAM 2008, ch. 11.',
    example=">>> spd_log(X).diagonal().round(decimals=4)\n"
    "tensor([1.3863, 2.1972], dtype=torch.float64)",
)
def spd_log(X: torch.Tensor) -> torch.Tensor:
    return log_unchecked(as_symmetric_tensor(X, "X"), "X")


@_spectral_doc(
    r"Matrix exponential :math:`\exp X = U \operatorname{diag}(e^\lambda) U^\top` (symmetric X).",
    kind="symmetric",
    takes="Symmetric matrices (any sign: tangent vectors).",
    raises=", or an eigenvalue is so large that its exponential overflows the dtype (above "
    "about 88.7 in float32, 709.8 in float64)",
    references='.. [1] N. J. Higham, "Functions of Matrices", SIAM 2008, ch. 10.',
    example=">>> from rankmetric.geometry import spd_log\n"
    ">>> torch.allclose(spd_exp(spd_log(X)), X)\nTrue",
)
def spd_exp(X: torch.Tensor) -> torch.Tensor:
    out = sym_function(X, torch.exp, torch.exp)
    if not bool(torch.isfinite(out).all()):
        limit = math.log(torch.finfo(out.dtype).max)
        raise ValueError(
            f"spd_exp overflows {out.dtype}: an eigenvalue of X exceeds {limit:.1f}, the "
            "largest whose exponential is finite (scale X down, or use float64)."
        )
    return out


@_spectral_doc(
    r"Principal square root :math:`X^{1/2} = U \operatorname{diag}(\sqrt{\lambda}) U^\top`.",
    example=">>> spd_sqrt(X)\ntensor([[2., 0.],\n        [0., 3.]], dtype=torch.float64)",
)
def spd_sqrt(X: torch.Tensor) -> torch.Tensor:
    return _spd_function(X, torch.sqrt, lambda lam: 0.5 * torch.rsqrt(lam))


@_spectral_doc(
    r"Inverse square root :math:`X^{-1/2} = U \operatorname{diag}(\lambda^{-1/2}) U^\top`.",
    example=">>> spd_inv_sqrt(X).diagonal()\ntensor([0.5000, 0.3333], dtype=torch.float64)",
)
def spd_inv_sqrt(X: torch.Tensor) -> torch.Tensor:
    return _spd_function(X, torch.rsqrt, lambda lam: -0.5 * torch.rsqrt(lam) / lam)


@_spectral_doc(
    r"Matrix power :math:`X^p = U \operatorname{diag}(\lambda^p) U^\top` for real ``p``.",
    params="\np : float\n    Exponent.",
    raises=" or ``p`` is not a finite real number",
    example=">>> spd_power(X, 1.5).diagonal()\ntensor([ 8., 27.], dtype=torch.float64)",
)
def spd_power(X: torch.Tensor, p: float) -> torch.Tensor:
    p = _check_exponent(p)
    return _spd_function(X, lambda lam: lam**p, lambda lam: p * lam ** (p - 1))


@_spectral_doc(
    r"Eigenvalue floor (ReEig) :math:`U \operatorname{diag}(\max(\lambda, \epsilon)) U^\top`.",
    kind="symmetric",
    takes="Symmetric matrices (positive semi-definite in SPDNet).",
    params="\neps : float, default=1e-4\n    Floor on the eigenvalues; must be positive.",
    gives="SPD matrices with eigenvalues ``>= eps``.",
    raises=" or ``eps <= 0``",
    notes=r"The derivative used on ties is :math:`f'(\lambda) = 1[\lambda > \epsilon]`; off ties "
    "the exact\ndivided difference, so the backward is the true Daleckii–Krein derivative (the "
    "SPDNet paper's\nformula differs from it off the diagonal).",
    references='.. [1] Z. Huang, L. Van Gool, "A Riemannian network for SPD matrix learning", '
    "AAAI 2017.",
    example=">>> spd_clamp(torch.diag(torch.tensor([1e-6, 2.0])), eps=1e-4).diagonal()\n"
    "tensor([1.0000e-04, 2.0000e+00])",
)
def spd_clamp(X: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    check_param("eps", eps, [Interval(Real, 0, None, closed="neither")])
    return sym_function(X, lambda lam: lam.clamp_min(eps), lambda lam: (lam > eps).to(lam.dtype))


def _check_exponent(p) -> float:
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"p must be a real number, got {p!r}.") from None
    if p != p or abs(p) == float("inf"):
        raise ValueError(f"p must be finite, got {p!r}.")
    return p


# alike: numpydoc See Also / Examples skeleton alike in log_map (tangent.py); the maps differ
def sym_to_vec(S: torch.Tensor) -> torch.Tensor:
    r"""Upper triangle of symmetric matrices, off-diagonal entries scaled by :math:`\sqrt 2`.

    The map is an isometry: :math:`\lVert \mathrm{sym\_to\_vec}(S) \rVert_2 = \lVert S \rVert_F`,
    so Euclidean distances between
    vectorised matrix logarithms equal log-Euclidean distances between the SPD matrices.

    Parameters
    ----------
    S : tensor of shape (..., c, c)
        Symmetric matrices.

    Returns
    -------
    tensor of shape (..., c (c + 1) / 2)

    See Also
    --------
    rankmetric.geometry.vec_to_sym : The inverse map.
    rankmetric.preprocessing.TangentSpace : Tangent vectors of SPD matrices built with it.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import sym_to_vec
    >>> S = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> v = sym_to_vec(S)  # [2, √2 · 1, 3]: norms are kept, ‖v‖ = ‖S‖_F
    >>> v.shape
    torch.Size([3])
    >>> bool(torch.isclose(v.norm(), torch.linalg.matrix_norm(S)))
    True
    """
    rows, cols, scale = _upper_triangle(S.shape[-1], S.dtype, S.device)
    return S[..., rows, cols] * scale


@functools.lru_cache(maxsize=64)
def _upper_triangle(c: int, dtype: torch.dtype, device: torch.device):
    """Row and column indices of the upper triangle of a c × c matrix (row by row), and the
    weights of :func:`sym_to_vec`: 1 on the diagonal, √2 off it (in ``dtype``'s own precision:
    a float32 √2 is off by 1e-8). Built once per size, dtype and device (read-only)."""
    rows, cols = torch.triu_indices(c, c, device=device)
    scale = torch.full(rows.shape, math.sqrt(2.0), dtype=dtype, device=device)
    scale[rows == cols] = 1.0
    return rows, cols, scale


# alike: numpydoc See Also / Examples skeleton alike in losses/indices.py and neighbors/_search.py;
# the functions differ
def vec_to_sym(v: torch.Tensor) -> torch.Tensor:
    r"""Symmetric matrices from their :func:`sym_to_vec` vectors (the inverse map).

    Parameters
    ----------
    v : tensor of shape (..., c (c + 1) / 2)
        Upper triangles in row-major order, off-diagonal entries scaled by :math:`\sqrt 2`
        (pyRiemann's ``upper`` layout).

    Returns
    -------
    tensor of shape (..., c, c)
        Symmetric matrices.

    Raises
    ------
    ValueError
        If the last dimension is not a triangular number ``c (c + 1) / 2``.

    See Also
    --------
    rankmetric.geometry.sym_to_vec : The forward map.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.geometry import sym_to_vec, vec_to_sym
    >>> S = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> torch.equal(vec_to_sym(sym_to_vec(S)), S)
    True
    """
    length = v.shape[-1] if v.ndim else 0
    c = int(round((math.sqrt(1 + 8 * length) - 1) / 2))
    if v.ndim == 0 or length == 0 or c * (c + 1) // 2 != length:
        raise ValueError(
            f"tangent vectors must have c (c + 1) / 2 entries for some c (1, 3, 6, 10, ...), "
            f"got shape {tuple(v.shape)}."
        )
    rows, cols, scale = _upper_triangle(c, v.dtype, v.device)
    values = v / scale
    S = v.new_zeros(*v.shape[:-1], c, c)
    S[..., rows, cols] = values
    S[..., cols, rows] = values
    return S
