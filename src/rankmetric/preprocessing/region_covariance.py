"""``RegionCovariances``: images → region covariance descriptors, a scikit-learn transformer.

The descriptor itself (Tuzel, Porikli & Meer, ECCV 2006) is computed by
:func:`rankmetric.datasets.region_covariance.region_covariances`, which the ``fmnist-regcov`` set
of :func:`rankmetric.datasets.load_spd` uses too.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..datasets.region_covariance import FEATURES, region_covariances
from ._matrix_output import MatrixInputMixin

__all__ = ["RegionCovariances", "region_covariances", "FEATURES"]


class RegionCovariances(
    MatrixInputMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None
):
    r"""Images → region covariance descriptors (8 × 8 SPD matrices), a stateless transformer.

    Parameters
    ----------
    image_shape : tuple of int (H, W), optional
        Shape of each image when ``X`` holds flattened rows (n, H·W); ``None``: square images
        (:math:`H = W = \sqrt{n_{\text{features}}}`), or ``X`` given as (n, H, W).
    intensity_scale : float, default=255
        Intensities are divided by it.
    regularization : float, default=1e-4
        Ridge relative to each descriptor's mean eigenvalue.

    Attributes
    ----------
    image_shape_ : tuple of int
        ``(H, W)``.
    n_features_in_ : int
        ``H · W`` for flattened input.

    See Also
    --------
    rankmetric.preprocessing.region_covariances : The same descriptors as a function.
    rankmetric.preprocessing.TangentSpace : SPD matrices to vectors.
    rankmetric.SPDNetEmbedding : Learn an embedding of the descriptors.

    References
    ----------
    .. [1] O. Tuzel, F. Porikli and P. Meer, ECCV 2006 (see
       :func:`rankmetric.datasets.region_covariance.region_covariances`).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.preprocessing import RegionCovariances
    >>> images = np.random.default_rng(0).integers(0, 256, size=(5, 28, 28))
    >>> C = RegionCovariances().fit_transform(images)
    >>> C.shape
    (5, 8, 8)
    """

    def __init__(
        self,
        image_shape: tuple[int, int] | None = None,
        *,
        intensity_scale: float = 255.0,
        regularization: float = 1e-4,
    ) -> None:
        self.image_shape = image_shape
        self.intensity_scale = intensity_scale
        self.regularization = regularization

    _two_d_input = True  # flattened images are accepted too
    _requires_fit = False

    def fit(self, X, y=None) -> RegionCovariances:
        """Record the image shape; nothing is learned.

        Parameters
        ----------
        X : array-like of shape (n, H, W) or (n, H · W)
            Grey images, or their flattened rows.
        y : None
            Ignored.

        Returns
        -------
        self
        """
        X = self._images(X, reset=True)
        return self

    def transform(self, X) -> np.ndarray:
        """Descriptors of images ``X`` (n, H, W) or flattened (n, H·W).

        Parameters
        ----------
        X : array-like of shape (n, H, W) or (n, H · W)
            Grey images of the shape seen in ``fit``, or their flattened rows.

        Returns
        -------
        ndarray of shape (n, 8, 8), float64
        """
        check_is_fitted(self, "image_shape_")
        return region_covariances(
            self._images(X, reset=False),
            intensity_scale=self.intensity_scale,
            regularization=self.regularization,
        )

    def _images(self, X, *, reset: bool) -> np.ndarray:
        X = validate_data(self, X, allow_nd=True, dtype=np.float64, reset=reset)
        if X.ndim == 3:
            shape = X.shape[1:]
        elif X.ndim == 2:
            shape = self.image_shape if self.image_shape is not None else _square(X.shape[1])
            if len(shape) != 2 or int(shape[0]) * int(shape[1]) != X.shape[1]:
                raise ValueError(
                    f"image_shape {shape} does not match {X.shape[1]} features per row."
                )
        else:
            raise ValueError(f"X must have shape (n, H, W) or (n, H*W), got {X.shape}.")
        shape = (int(shape[0]), int(shape[1]))
        if reset:
            self.image_shape_ = shape
        elif shape != self.image_shape_:
            raise ValueError(f"images of shape {shape}; fitted on {self.image_shape_}.")
        return X.reshape(X.shape[0], *shape)


def _square(n_features: int) -> tuple[int, int]:
    side = int(round(np.sqrt(n_features)))
    if side * side != n_features:
        raise ValueError(
            f"{n_features} features per row are not a square image; pass image_shape=(H, W)."
        )
    return side, side
