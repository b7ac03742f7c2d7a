"""Region covariance descriptors of images (Tuzel, Porikli & Meer, ECCV 2006).

Each pixel ``(x, y)`` of an image ``I`` gets the feature vector

    f(x, y) = [x, y, I, |I_x|, |I_y|, sqrt(I_x² + I_y²), |I_xx|, |I_yy|]

(derivatives by central differences, one-sided at the border, as ``numpy.gradient``), and the image
is described by the 8 × 8 covariance of its pixels' features, ``C = Σ (f − μ)(f − μ)ᵀ / (S − 1)``
over its ``S`` pixels. A ridge ``regularization · trace(C) / 8 · I`` keeps every descriptor
positive definite (a blank image has constant intensity features). Coordinates are scaled to
[0, 1] and intensities divided by ``intensity_scale``, so that no feature dominates by its units.
"""

from __future__ import annotations

import numpy as np

__all__ = ["region_covariances", "FEATURES"]

FEATURES = ("x", "y", "I", "|Ix|", "|Iy|", "|grad I|", "|Ixx|", "|Iyy|")


def region_covariances(
    images: np.ndarray,
    *,
    intensity_scale: float = 255.0,
    regularization: float = 1e-4,
    chunk_size: int = 2048,
) -> np.ndarray:
    """Region covariance descriptor of each whole image.

    Parameters
    ----------
    images : ndarray of shape (n, H, W)
        Grey-level images, ``H, W >= 3``.
    intensity_scale : float, default=255
        Intensities are divided by it (255: 8-bit images to [0, 1]).
    regularization : float, default=1e-4
        Ridge relative to the mean eigenvalue, ``> 0``.
    chunk_size : int, default=2048
        Images processed at once (memory ``≈ chunk_size · 8 · H · W`` doubles).

    Returns
    -------
    ndarray of shape (n, 8, 8), float64
        SPD matrices; rows and columns in the order of :data:`FEATURES`.

    See Also
    --------
    rankmetric.preprocessing.RegionCovariances : The same descriptors as a transformer.
    rankmetric.datasets.load_spd : The ``fmnist-regcov`` set, made with this function.

    References
    ----------
    .. [1] O. Tuzel, F. Porikli and P. Meer. Region Covariance: A Fast Descriptor for Detection
       and Classification. ECCV 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.preprocessing import region_covariances
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 16, 16))
    >>> C = region_covariances(images)
    >>> C.shape
    (3, 8, 8)
    >>> bool((np.linalg.eigvalsh(C) > 0).all())
    True
    """
    images = np.asarray(images, dtype=np.float64)
    if images.ndim != 3 or min(images.shape[1:]) < 3:
        raise ValueError(f"images must have shape (n, H, W) with H, W >= 3, got {images.shape}.")
    if not np.isfinite(images).all():
        raise ValueError("images contain NaN or infinite values.")
    if not intensity_scale > 0:
        raise ValueError(f"intensity_scale must be > 0, got {intensity_scale!r}.")
    if not regularization > 0:
        raise ValueError(f"regularization must be > 0, got {regularization!r}.")
    out = np.empty((images.shape[0], len(FEATURES), len(FEATURES)))
    for start in range(0, images.shape[0], chunk_size):
        chunk = images[start : start + chunk_size] / intensity_scale
        out[start : start + chunk_size] = _covariance(_pixel_features(chunk), regularization)
    return out


def _pixel_features(images: np.ndarray) -> np.ndarray:
    """Per-pixel features (n, 8, H·W) of images (n, H, W); axis 2 is x (columns), 1 is y."""
    n, height, width = images.shape
    Iy, Ix = np.gradient(images, axis=(1, 2))
    Iyy = np.gradient(Iy, axis=1)
    Ixx = np.gradient(Ix, axis=2)
    y, x = np.meshgrid(np.linspace(0, 1, height), np.linspace(0, 1, width), indexing="ij")
    features = [
        np.broadcast_to(x, images.shape),
        np.broadcast_to(y, images.shape),
        images,
        np.abs(Ix),
        np.abs(Iy),
        np.hypot(Ix, Iy),
        np.abs(Ixx),
        np.abs(Iyy),
    ]
    return np.stack(features, axis=1).reshape(n, len(FEATURES), height * width)


def _covariance(F: np.ndarray, regularization: float) -> np.ndarray:
    """Unbiased covariance of the pixels' features (n, d, S) plus the relative ridge."""
    centered = F - F.mean(axis=2, keepdims=True)
    C = centered @ centered.transpose(0, 2, 1) / (F.shape[2] - 1)
    C = (C + C.transpose(0, 2, 1)) / 2
    ridge = regularization * np.trace(C, axis1=1, axis2=2) / C.shape[1]
    return C + ridge[:, None, None] * np.eye(C.shape[1])
