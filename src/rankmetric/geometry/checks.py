"""Validation of stacks of symmetric (positive-definite) matrices, for NumPy and torch input.

Two levels:

- :func:`check_spd` is the full, public check (shape, finite, symmetric, positive definite), the
  one SPD check of the package: NumPy input is viewed as a tensor (no copy) and checked by the
  same code as torch input, on the CPU; torch input is checked on its own device.
- :func:`as_symmetric_tensor` is the cheap check every geometry function runs on its input: shape,
  finiteness and symmetry, O(c²) per matrix. Positive definiteness is read off the
  eigen-decomposition or Cholesky factorisation the function computes anyway
  (:func:`raise_if_not_positive`), so no function pays for a second decomposition.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "check_spd",
    "as_symmetric_tensor",
    "is_symmetric_stack",
    "as_matrix_stack",
    "working_dtype",
    "raise_if_not_positive",
    "raise_if_singular",
    "singular_limit",
]

#: Relative asymmetry an SPD matrix may have: ``|X − Xᵀ| ≤ SYMMETRY_RTOL · max|X| + 1e-12``.
SYMMETRY_RTOL = 1e-5


def check_spd(X, name: str = "X"):
    """Validate symmetric positive-definite matrices of shape ``(..., c, c)``.

    Parameters
    ----------
    X : ndarray or Tensor of shape (..., c, c)
        Matrices to check. Leading dimensions are flattened for the error message index.
    name : str, default="X"
        Name used in error messages.

    Returns
    -------
    X : ndarray or Tensor of shape (..., c, c)
        The input (NumPy integer input is converted to float64).

    Raises
    ------
    ValueError
        If ``X`` is not a stack of square matrices, is empty, holds NaN or infinity, is not
        symmetric (relative tolerance ``1e-5``) or not positive definite.

    See Also
    --------
    rankmetric.geometry.spd_clamp : Floor the eigenvalues of nearly singular matrices.
    rankmetric.geometry.symmetrize : The symmetric part of a nearly symmetric matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.geometry import check_spd
    >>> check_spd(np.eye(2)).shape
    (2, 2)
    >>> check_spd(np.array([[1.0, 2.0], [2.0, 1.0]]))
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    if isinstance(X, torch.Tensor):
        _raise_if_not_spd(as_symmetric_tensor(X, name), name)
        return X
    X = np.asarray(X)
    if X.dtype != object and not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    tensor = as_symmetric_tensor(X, name)  # shares the memory of X
    _raise_if_not_spd(tensor.float() if tensor.dtype == torch.float16 else tensor, name)
    return X


def _raise_if_not_spd(X: torch.Tensor, name: str) -> None:
    """``ValueError`` naming the first matrix of ``X`` whose smallest eigenvalue is ≤ 0."""
    raise_if_not_positive(torch.linalg.eigvalsh(_flat(X))[..., 0], name)


def as_symmetric_tensor(X, name: str = "X") -> torch.Tensor:
    """Return ``X`` as a floating tensor after checking shape, finiteness and symmetry.

    Parameters
    ----------
    X : Tensor or array-like of shape (..., c, c)
        Symmetric matrices. NumPy arrays keep their floating dtype; integer input becomes
        ``torch.get_default_dtype()``.
    name : str, default="X"
        Name used in error messages.

    Returns
    -------
    X : Tensor of shape (..., c, c)
        Floating tensor on the input's device (no copy when ``X`` already is one).

    Raises
    ------
    ValueError
        If the shape is not ``(..., c, c)``, ``X`` is empty, holds NaN/infinity or is not symmetric.
    """
    if not isinstance(X, torch.Tensor):
        X = np.asarray(X)
        if X.dtype == object or not np.issubdtype(X.dtype, np.number):
            raise ValueError(f"{name} must hold numbers, got dtype {X.dtype}.")
        X = torch.as_tensor(X)
    if X.is_complex():
        raise ValueError(f"{name} must be real, got dtype {X.dtype}.")
    if not X.is_floating_point():
        X = X.to(torch.get_default_dtype())
    _check_square_shape(tuple(X.shape), name)
    finite, symmetric, asym = _finite_and_symmetric(_flat(X).detach())
    if bool((finite & symmetric).all()):
        return X
    bad = int(torch.argmin(finite.to(torch.int8)))
    if not finite[bad]:
        raise ValueError(f"{name} contains NaN or infinity (matrix {bad}).")
    bad = int(torch.argmin(symmetric.to(torch.int8)))
    raise ValueError(
        f"{name}[{bad}] is not symmetric (largest |X - X^T| = {float(asym[bad]):.3g})."
    )


def is_symmetric_stack(X) -> bool:
    """Whether ``X`` is a non-empty stack of square, finite, symmetric matrices, by the same
    tolerance as :func:`as_symmetric_tensor` (raw signals, channels × time, are not): how a
    user's file of SPD matrices is told from one of raw trials.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.geometry.checks import is_symmetric_stack
    >>> is_symmetric_stack(np.stack([np.eye(3)] * 4)), is_symmetric_stack(np.ones((4, 3, 50)))
    (True, False)
    """
    X = torch.as_tensor(np.asarray(X)) if not isinstance(X, torch.Tensor) else X
    if X.ndim < 2 or X.shape[-1] != X.shape[-2] or X.numel() == 0 or X.is_complex():
        return False
    X = X if X.is_floating_point() else X.to(torch.float64)
    finite, symmetric, _ = _finite_and_symmetric(_flat(X).detach())
    return bool((finite & symmetric).all())


def as_matrix_stack(
    X, name: str = "X", *, n_channels: int | None = None, fitted_by: str | None = None
) -> torch.Tensor:
    """:func:`as_symmetric_tensor` for a stack of shape (n, c, c): the input check of the
    pairwise functions and of the SPD transformers.

    Parameters
    ----------
    X : Tensor or array-like of shape (n_matrices, c, c)
    name : str, default="X"
        Name used in error messages.
    n_channels : int, optional
        The size ``c`` the matrices must have (a transformer's ``n_channels_``).
    fitted_by : str, optional
        The transformer that saw ``n_channels`` in ``fit``, named in that error.

    Returns
    -------
    Tensor of shape (n_matrices, c, c)

    Raises
    ------
    ValueError
        As :func:`as_symmetric_tensor`, or if ``X`` is not 3-D or its matrices are not
        ``n_channels × n_channels``.
    """
    X = as_symmetric_tensor(X, name)
    if X.ndim != 3:
        raise ValueError(f"{name} must have shape (n_matrices, c, c), got {tuple(X.shape)}.")
    c = X.shape[-1]
    if n_channels is not None and c != n_channels:
        raise ValueError(
            f"{name} holds {c} x {c} matrices, but {fitted_by} was fitted on "
            f"{n_channels} x {n_channels}."
        )
    return X


def working_dtype(dtype: str | None, X) -> torch.dtype:
    """The precision an SPD transformer computes in: its ``dtype`` parameter (``"float32"`` /
    ``"float64"``), or, when ``None``, float32 for float32 input and float64 otherwise
    (pyRiemann's numbers need float64)."""
    if dtype is not None:
        return getattr(torch, dtype)
    single = (torch.float32, np.float32)
    return torch.float32 if getattr(X, "dtype", None) in single else torch.float64


def raise_if_not_positive(smallest_eigenvalue: torch.Tensor, name: str = "X") -> None:
    """Raise if any matrix has a non-positive smallest eigenvalue.

    Parameters
    ----------
    smallest_eigenvalue : Tensor of shape (...,)
        Smallest eigenvalue of each matrix.
    name : str, default="X"
        Name used in error messages.
    """
    flat = smallest_eigenvalue.detach().reshape(-1)
    if flat.numel() == 0 or bool((flat > 0).all()):
        return
    non_positive = torch.nonzero(flat <= 0)
    bad = int(non_positive[0, 0]) if non_positive.numel() else int(torch.argmin(flat))
    raise ValueError(
        f"{name}[{bad}] is not positive definite (smallest eigenvalue {float(flat[bad]):.3g})."
    )


def singular_limit(size: int, dtype: torch.dtype) -> float:
    """Largest condition number of a full-rank ``size × size`` matrix in ``dtype``:
    ``1 / (size · eps)``, NumPy's ``matrix_rank`` tolerance."""
    return 1.0 / (max(size, 1) * torch.finfo(dtype).eps)


def raise_if_singular(condition: torch.Tensor, size: int, name: str = "X") -> None:
    """Raise if any matrix is singular to working precision (numerically rank-deficient).

    The tolerance is NumPy's ``matrix_rank``: a matrix of size ``c`` whose condition number
    exceeds ``1 / (c · eps)`` of its dtype has a smallest eigenvalue indistinguishable from
    zero, so a distance computed from it would be finite but meaningless.

    Parameters
    ----------
    condition : Tensor of shape (...,)
        Condition number (or a lower bound of it) of each matrix, in the dtype computed in.
    size : int
        The matrices' size ``c``.
    name : str, default="X"
        Name used in error messages.
    """
    flat = condition.detach().reshape(-1)
    limit = singular_limit(size, flat.dtype)
    singular = ~(flat <= limit)  # NaN counts as singular
    if flat.numel() == 0 or not bool(singular.any()):
        return
    bad = int(torch.nonzero(singular)[0, 0])
    raise ValueError(
        f"{name}[{bad}] is singular to working precision (condition number "
        f"{float(flat[bad]):.3g} > 1 / (c · eps) = {limit:.3g}): SPD matrices must have full "
        "rank; regularise them (e.g. add a small multiple of the identity, or use shrinkage)."
    )


def raise_if_cholesky_failed(info: torch.Tensor, name: str = "X") -> None:
    """Raise if ``torch.linalg.cholesky_ex`` reported a non-positive-definite matrix.

    Parameters
    ----------
    info : Tensor of shape (...,), int
        The ``info`` output of ``cholesky_ex``: 0 where the factorisation succeeded.
    name : str, default="X"
        Name used in error messages.
    """
    flat = info.reshape(-1)
    if flat.numel() == 0 or not bool(flat.any()):
        return
    bad = int(torch.nonzero(flat)[0, 0])
    raise ValueError(f"{name}[{bad}] is not positive definite (Cholesky factorisation failed).")


def _check_square_shape(shape: tuple[int, ...], name: str) -> None:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name} must have shape (..., c, c) (square matrices), got {shape}.")
    if 0 in shape:
        raise ValueError(f"{name} is empty (shape {shape}).")


#: Elements of a stack checked at once by :func:`as_symmetric_tensor` (bounded temporaries).
CHECK_CHUNK_ELEMENTS = 1 << 22


def _scale_and_asymmetry(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``max |X_i|`` and ``max |X_i − X_iᵀ|`` per matrix, a bounded chunk of matrices at a time
    (temporaries of about 32 MiB, not copies of the stack)."""
    step = max(1, CHECK_CHUNK_ELEMENTS // max(flat.shape[-1] ** 2, 1))
    if flat.shape[0] <= step:
        return flat.abs().amax(dim=(-2, -1)), (flat - flat.mT).abs().amax(dim=(-2, -1))
    scale = torch.empty(flat.shape[0], dtype=flat.dtype, device=flat.device)
    asym = torch.empty_like(scale)
    for start in range(0, flat.shape[0], step):  # chunks of matrices, vectorised inside
        chunk = flat[start : start + step]
        scale[start : start + step] = chunk.abs().amax(dim=(-2, -1))
        asym[start : start + step] = (chunk - chunk.mT).abs().amax(dim=(-2, -1))
    return scale, asym


def _finite_and_symmetric(flat: torch.Tensor):
    """``(finite, symmetric, largest asymmetry)`` per matrix of an ``(n, c, c)`` stack:
    ``|X − Xᵀ| ≤ SYMMETRY_RTOL · max|X| + 1e-12``."""
    scale, asym = _scale_and_asymmetry(flat)
    finite = torch.isfinite(scale)  # amax propagates NaN and infinity
    return finite, asym <= SYMMETRY_RTOL * scale + 1e-12, asym


def _flat(X: torch.Tensor) -> torch.Tensor:
    """View ``(..., c, c)`` as ``(n, c, c)``."""
    return X.reshape(-1, *X.shape[-2:])
