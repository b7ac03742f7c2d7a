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
``multicam-reid``
    A camera network instead of two views (:func:`rankmetric.datasets.make_multicamera_reid`):
    600 identities, each seen by a random 2 to 6 of 6 cameras, two images per camera sharing a
    per-track "session" offset, so same-camera matches are easy. Its test identities are scored
    Market-1501-style (one query per (identity, camera) track, the rest gallery, same-identity
    same-camera gallery items removed), where the camera-aware protocol differs from the
    two-view one. A stand-in for Market-1501 / DukeMTMC, which are not available here.
``fmnist-hist``
    The same two views of the same 632 items, described by LOMO-like stripe histograms
    (:class:`rankmetric.preprocessing.StripeHistograms` with its defaults: 6 overlapping
    stripes × (8 intensity + 10 LBP + 8 gradient-orientation bins), max-pooled over windows,
    square-rooted and normalised; 156 non-negative features) — the kind of features WARCA's
    χ²-RBF kernel was written for.

The generators (``ReidData``, ``make_synthetic_reid``, ``make_camera_views``, imported here under
their old names) live in :mod:`rankmetric.datasets.synthetic`; this module names and loads the sets.

Why not (class, cluster) sub-groups of a labelled set: clusters found by k-means are defined by
the Euclidean distance itself, which would hand the Euclidean baseline its own answer.
"""

from __future__ import annotations

import numpy as np

from ..datasets.synthetic import N_IDENTITIES, ReidData, make_multicamera_reid, make_synthetic_reid
from ..datasets.synthetic import make_camera_views as make_image_views
from ..datasets.user_features import is_feature_file, load_features

__all__ = [
    "MULTI_CAMERA_SETS",
    "REID_SETS",
    "ReidData",
    "load_reid",
    "make_synthetic_reid",
    "make_image_views",
]

REID_SETS = {
    "synthetic-reid": "VIPeR-like synthetic identities (632 ids × 2 cameras, 64 features)",
    "fmnist-views": "Fashion-MNIST items as identities, two simulated camera views (632 ids)",
    "fmnist-hist": "the fmnist-views images as LOMO-like stripe histograms (632 ids, 156 bins)",
    "multicam-reid": "Market-like synthetic identities: 600 ids, each seen by 2-6 of 6 cameras, "
    "2 images per camera (64 features)",
}
#: Sets with more than two cameras or several images per (identity, camera): their test
#: identities are evaluated Market-1501-style (one query per track, the rest gallery).
MULTI_CAMERA_SETS = ("multicam-reid",)
IMAGE_SIDE = 28


def load_reid(name: str) -> ReidData:
    """A stand-in set by name (deterministic: the same arrays on every call), or a user's
    feature file (:func:`rankmetric.datasets.load_features`; without cameras, every item is
    its own camera, so evaluation is leave-one-out among the test identities)."""
    if is_feature_file(name):
        data = load_features(name)
        cameras = np.arange(len(data.y)) if data.cameras is None else data.cameras
        return ReidData(data.X, data.y, cameras)
    if name == "multicam-reid":
        return make_multicamera_reid(random_state=0)
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
