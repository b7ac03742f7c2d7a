"""``set_output`` for transformers whose output is a stack of matrices (n, c, c)."""

from __future__ import annotations

__all__ = ["MatrixOutputMixin"]

CONTAINERS = ("default", "pandas", "polars")


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
        if transform is not None and transform not in CONTAINERS:
            raise ValueError(
                f"transform must be 'default', 'pandas', 'polars' or None, got {transform!r}."
            )
        if transform is not None:
            self._output_container = transform
        return self
