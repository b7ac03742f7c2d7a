"""Stand-in person re-identification data: many identities, two "cameras", few images each.

VIPeR, CUHK, Market-1501 and the other re-identification sets are not available here. Two
stand-ins keep the *protocol* of WARCA's experiments (disjoint train/test identities, camera-A
probes against a camera-B gallery, CMC over random identity splits), labelled as such in every
table:

``synthetic-reid``
    632 identities (VIPeR's count) seen once by each of two cameras, 64 features. An identity
    is a point of a 16-dimensional subspace; each camera adds its own offset (colour / lighting
    bias), every image adds a strong nuisance in 8 directions shared by all identities (pose,
    illumination) and isotropic noise. The nuisance dominates Euclidean distances; a metric that
    discards it finds identities again.
``fmnist-views``
    632 Fashion-MNIST test images as identities, each "photographed" twice: random translation
    (±2 px), contrast and brightness jitter and pixel noise for both cameras, and a 3×3 blur for
    camera B. Items of one class look alike, so telling two shirts apart needs a fine metric.
``fmnist-hist``
    The same two views of the same 632 items, described by LOMO-like stripe histograms
    (:class:`rankmetric.preprocessing.StripeHistograms` with its defaults: 6 overlapping
    stripes × (8 intensity + 10 LBP + 8 gradient-orientation bins), max-pooled over windows,
    square-rooted and normalised; 156 non-negative features) — the kind of features WARCA's
    χ²-RBF kernel was written for.

Why not (class, cluster) sub-groups of a labelled set: clusters found by k-means are defined by
the Euclidean distance itself, which would hand the Euclidean baseline its own answer.
"""

from __future__ import annotations

import numpy as np

from .._utils import make_rng

__all__ = ["REID_SETS", "ReidData", "load_reid", "make_synthetic_reid", "make_image_views"]

REID_SETS = {
    "synthetic-reid": "VIPeR-like synthetic identities (632 ids × 2 cameras, 64 features)",
    "fmnist-views": "Fashion-MNIST items as identities, two simulated camera views (632 ids)",
    "fmnist-hist": "the fmnist-views images as LOMO-like stripe histograms (632 ids, 156 bins)",
}
N_IDENTITIES = 632  # VIPeR's 632 pedestrians, split 316 / 316
IMAGE_SIDE = 28
MAX_SHIFT = 2


class ReidData:
    """Images of identities seen by two cameras.

    Attributes
    ----------
    X : ndarray of shape (2 * n_identities, n_features)
        Camera-A images first (rows ``0..n−1``), then camera-B images in the same identity order.
    ids : ndarray of shape (2 * n_identities,)
        Identity of each row.
    camera : ndarray of shape (2 * n_identities,)
        0 (probe camera) or 1 (gallery camera).
    """

    def __init__(self, X: np.ndarray, ids: np.ndarray, camera: np.ndarray) -> None:
        self.X, self.ids, self.camera = X, ids, camera

    @property
    def n_identities(self) -> int:
        return int(np.unique(self.ids).shape[0])

    def split(self, fold: int) -> tuple[np.ndarray, np.ndarray]:
        """Identities of random split ``fold``: ``(train_ids, test_ids)``, half each."""
        identities = np.unique(self.ids)
        perm = np.random.default_rng([fold, 2016]).permutation(identities)
        half = identities.shape[0] // 2
        return np.sort(perm[:half]), np.sort(perm[half : 2 * half])

    def rows(self, identities: np.ndarray, camera: int | None = None) -> np.ndarray:
        """Row indices of ``identities`` (one camera or both), in row order."""
        mask = np.isin(self.ids, identities)
        if camera is not None:
            mask &= self.camera == camera
        return np.flatnonzero(mask)


def make_synthetic_reid(
    n_identities: int = N_IDENTITIES,
    n_features: int = 64,
    n_latent: int = 16,
    n_nuisance: int = 8,
    nuisance_scale: float = 2.0,
    noise_scale: float = 1.2,
    camera_offset: float = 1.0,
    random_state=0,
) -> ReidData:
    """The ``synthetic-reid`` stand-in (see the module docstring).

    Parameters
    ----------
    n_identities, n_features : int
    n_latent : int
        Dimension of the identity subspace.
    n_nuisance : int
        Directions of per-image nuisance shared by all identities.
    nuisance_scale, noise_scale, camera_offset : float
        Standard deviations of the nuisance, of the isotropic noise and of each camera's offset.
    random_state : int, Generator or None

    Returns
    -------
    ReidData
    """
    rng = make_rng(random_state)
    identity_axes = rng.standard_normal((n_latent, n_features)) / np.sqrt(n_latent)
    nuisance_axes = rng.standard_normal((n_nuisance, n_features)) / np.sqrt(n_nuisance)
    identities = rng.standard_normal((n_identities, n_latent)) @ identity_axes
    views = []
    for _ in range(2):
        offset = camera_offset * rng.standard_normal(n_features)
        nuisance = nuisance_scale * rng.standard_normal((n_identities, n_nuisance)) @ nuisance_axes
        noise = noise_scale * rng.standard_normal((n_identities, n_features))
        views.append(identities + offset + nuisance + noise)
    ids = np.tile(np.arange(n_identities), 2)
    camera = np.repeat([0, 1], n_identities)
    return ReidData(np.vstack(views), ids, camera)


def _shift(images: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Translate each image (n, s, s) by (dy, dx) pixels, filling with zeros (vectorised)."""
    n, s, _ = images.shape
    padded = np.pad(images, ((0, 0), (MAX_SHIFT, MAX_SHIFT), (MAX_SHIFT, MAX_SHIFT)))
    r = np.arange(s)[None, :, None] - dy[:, None, None] + MAX_SHIFT
    c = np.arange(s)[None, None, :] - dx[:, None, None] + MAX_SHIFT
    return padded[np.arange(n)[:, None, None], r, c]


def _box_blur(images: np.ndarray) -> np.ndarray:
    """3×3 mean filter with zero padding, on (n, s, s)."""
    s = images.shape[1]
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    return sum(padded[:, i : i + s, j : j + s] for i in range(3) for j in range(3)) / 9.0


def make_image_views(images: np.ndarray, random_state=0) -> ReidData:
    """The ``fmnist-views`` stand-in from grey images (n, 28, 28) with values in [0, 1].

    Each image is an identity; camera A and camera B views get an independent random shift of up
    to ±2 pixels, contrast × U(0.6, 1.4), brightness + U(−0.2, 0.2) and N(0, 0.1²) pixel noise;
    camera B's view is also blurred (3×3 mean filter). Returns flattened views (784 features).
    """
    rng = make_rng(random_state)
    n = images.shape[0]
    views = []
    for camera in range(2):
        dy, dx = rng.integers(-MAX_SHIFT, MAX_SHIFT + 1, size=(2, n))
        view = _shift(images, dy, dx)
        if camera == 1:
            view = _box_blur(view)
        contrast = rng.uniform(0.6, 1.4, size=(n, 1, 1))
        brightness = rng.uniform(-0.2, 0.2, size=(n, 1, 1))
        view = contrast * view + brightness + 0.1 * rng.standard_normal(view.shape)
        views.append(view.reshape(n, -1))
    ids = np.tile(np.arange(n), 2)
    camera = np.repeat([0, 1], n)
    return ReidData(np.vstack(views), ids, camera)


def load_reid(name: str) -> ReidData:
    """A stand-in set by name (deterministic: the same arrays on every call)."""
    if name == "synthetic-reid":
        return make_synthetic_reid(random_state=0)
    if name == "fmnist-hist":
        from ..preprocessing import StripeHistograms

        views = load_reid("fmnist-views")
        shape = (IMAGE_SIDE, IMAGE_SIDE)
        features = StripeHistograms(image_shape=shape).fit_transform(views.X)
        return ReidData(features, views.ids, views.camera)
    if name == "fmnist-views":
        from ..datasets import load_dataset

        data = load_dataset("fashion-mnist")
        pick = np.sort(
            np.random.default_rng(0).choice(len(data.y_test), N_IDENTITIES, replace=False)
        )
        images = data.X_test[pick].reshape(-1, IMAGE_SIDE, IMAGE_SIDE) / 255.0
        return make_image_views(images, random_state=0)
    raise ValueError(f"unknown re-identification stand-in {name!r}; choose from {list(REID_SETS)}.")
