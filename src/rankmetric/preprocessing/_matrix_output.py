"""The SPD transformers' matrices: their checked input, and ``set_output`` for a stack output."""

from __future__ import annotations

import torch

from .._utils import resolve_device
from .._validation import NONE, Options, check_param
from ..geometry.checks import as_matrix_stack, working_dtype

__all__ = ["MatrixInputMixin", "MatrixOutputMixin", "input_matrices"]

CONTAINERS = ("default", "pandas", "polars")


class MatrixInputMixin:
    """Tell scikit-learn that ``X`` is a stack of matrices (its 3-D input tag).

    ``_two_d_input``: whether flattened rows are accepted too; ``_requires_fit``: False for a
    stateless transformer.
    """

    _two_d_input = False
    _requires_fit = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = self._two_d_input
        tags.input_tags.three_d_array = True
        tags.requires_fit = self._requires_fit
        return tags


class MatrixOutputMixin:
    """Accept scikit-learn's ``set_output`` and keep the output an ndarray of matrices.

    A stack of matrices has no columns, so no container other than an ndarray can hold it; the
    call is accepted so that ``Pipeline.set_output(transform="pandas")`` can configure the
    steps after this one (e.g. a ``TangentSpace`` whose vectors become a frame).
    """

    def set_output(self, *, transform: str | None = None):
        """Accept a scikit-learn output container; the matrices stay an ndarray.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"}, optional
            ``None`` leaves the setting unchanged.

        Returns
        -------
        self
        """
        check_param("transform", transform, [NONE, Options(*CONTAINERS)])  # nothing to store
        return self


def input_matrices(estimator, X, n_channels: int | None) -> torch.Tensor:
    """``X`` as a checked (n, c, c) tensor in ``estimator``'s working dtype (its ``dtype``
    parameter, else float32 for float32 input and float64 otherwise), on its ``device``;
    ``n_channels``: the size the estimator was fitted on (None when fitting)."""
    dtype = working_dtype(estimator.dtype, X)
    X = X.detach() if isinstance(X, torch.Tensor) else X
    X = as_matrix_stack(X, n_channels=n_channels, fitted_by=type(estimator).__name__)
    return X.to(dtype=dtype, device=resolve_device(estimator.device))
