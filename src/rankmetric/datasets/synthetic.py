"""Synthetic data with known structure: Gaussian clusters, SPD-matrix clusters, re-identification.

The re-identification generators (:func:`make_synthetic_reid`, the VIPeR stand-in, and
:func:`make_camera_views`, two simulated camera views of given images) return :class:`ReidData`;
``rankmetric.bench.reid_data`` names the sets built from them for ``rankmetric bench warca-reid``.
"""

from __future__ import annotations

import numpy as np

from .._utils import make_rng

__all__ = [
    "ReidData",
    "make_camera_views",
    "make_gaussian_clusters",
    "make_multicamera_reid",
    "make_spd_clusters",
    "make_synthetic_reid",
]

N_IDENTITIES = 632  # VIPeR's 632 pedestrians, split 316 / 316
MAX_SHIFT = 2  # largest translation (pixels) of a simulated camera view


def make_gaussian_clusters(
    n_samples: int = 300,
    n_features: int = 10,
    n_classes: int = 3,
    n_informative: int | None = None,
    class_sep: float = 1.5,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Gaussian classes that differ only in the first ``n_informative`` features.

    Class :math:`c` has mean :math:`s\, v_c` on the informative features (:math:`s` is
    ``class_sep``), where the :math:`v_c` are distinct random vertices of the hypercube
    :math:`\{-1, +1\}^k` (:math:`k` is ``n_informative``; two class means are at least
    :math:`2 s` apart), and 0 on the others; every feature has unit within-class
    variance. The remaining ``n_features - n_informative`` features are pure noise, which hurts
    the Euclidean distance and is what a learned metric should discard. Classes are balanced
    (sizes differ by at most one) and samples are shuffled.

    Parameters
    ----------
    n_samples : int, default=300
    n_features : int, default=10
    n_classes : int, default=3
    n_informative : int, optional
        Defaults to ``max(1, ceil(log2(n_classes)))``, the fewest that give distinct vertices.
    class_sep : float, default=1.5
        Half the smallest distance between two class means.
    random_state : None, int, RandomState or Generator
        Seed; the same seed gives the same data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int64
        Class codes ``0..n_classes-1``.

    See Also
    --------
    rankmetric.datasets.make_spd_clusters : Classes of SPD matrices.
    sklearn.datasets.make_classification : scikit-learn's more general generator.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_gaussian_clusters
    >>> X, y = make_gaussian_clusters(30, n_features=5, n_classes=3, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((30, 5), [10, 10, 10])
    """
    n_informative = _check_cluster_args(n_samples, n_features, n_classes, n_informative, class_sep)
    rng = make_rng(random_state)
    vertices = _distinct_sign_vectors(n_classes, n_informative, rng)
    y = rng.permutation(np.arange(n_samples) % n_classes)
    X = rng.standard_normal((n_samples, n_features))
    X[:, :n_informative] += class_sep * vertices[y]
    return X, y.astype(np.int64)


def _check_counts(n_samples, n_features, n_classes, class_sep, names=("n_samples", "n_features")):
    for name, value in zip(names, (n_samples, n_features), strict=True):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if not isinstance(n_classes, (int, np.integer)) or not 2 <= n_classes <= n_samples:
        raise ValueError(f"n_classes must be an integer in [2, {names[0]}], got {n_classes!r}.")
    if not np.isfinite(class_sep) or class_sep < 0:
        raise ValueError(f"class_sep must be a finite number >= 0, got {class_sep!r}.")


def _check_cluster_args(n_samples, n_features, n_classes, n_informative, class_sep) -> int:
    _check_counts(n_samples, n_features, n_classes, class_sep)
    if n_informative is None:
        n_informative = min(n_features, max(1, int(np.ceil(np.log2(n_classes)))))
    if not isinstance(n_informative, (int, np.integer)) or not 1 <= n_informative <= n_features:
        raise ValueError(f"n_informative must be in [1, n_features], got {n_informative!r}.")
    if n_informative < 63 and 2**n_informative < n_classes:
        raise ValueError(
            f"n_informative={n_informative} gives only {2**n_informative} distinct class means "
            f"for n_classes={n_classes}; raise n_informative."
        )
    return int(n_informative)


def _distinct_sign_vectors(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct random rows of {-1, +1}^dim, shape (n, dim)."""
    if dim < 63:
        codes = rng.choice(2**dim, size=n, replace=False)
        bits = (codes[:, None] >> np.arange(dim)) & 1
        return 2.0 * bits - 1.0
    while True:  # 2^dim is astronomically larger than n: a collision is practically impossible
        signs = rng.choice([-1.0, 1.0], size=(n, dim))
        if len(np.unique(signs, axis=0)) == n:
            return signs


def make_spd_clusters(
    n_matrices: int = 200,
    n_channels: int = 4,
    n_classes: int = 3,
    class_sep: float = 1.0,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Classes of SPD matrices scattered around class means (a wrapped Gaussian per class).

    Class means are :math:`M_c = \exp(s A_c)` (:math:`s` is ``class_sep``) and samples
    :math:`X = M_c^{1/2} \exp(T) M_c^{1/2}`, with :math:`A_c` and :math:`T` random symmetric
    matrices of expected squared Frobenius norm 1 (so the affine-invariant distance of a sample
    from its class mean is about 1, and class means lie about :math:`s \sqrt 2` apart in the
    log-Euclidean sense). Classes are balanced and samples
    shuffled.

    Parameters
    ----------
    n_matrices : int, default=200
    n_channels : int, default=4
        Size ``c`` of each matrix.
    n_classes : int, default=3
    class_sep : float, default=1.0
        Spread of the class means relative to the within-class spread.
    random_state : None, int, RandomState or Generator

    Returns
    -------
    X : ndarray of shape (n_matrices, n_channels, n_channels), float64 SPD
    y : ndarray of shape (n_matrices,), int64

    See Also
    --------
    rankmetric.datasets.make_gaussian_clusters : Classes of vectors.
    rankmetric.SPDNetEmbedding : Learn an embedding of such matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_spd_clusters
    >>> X, y = make_spd_clusters(30, n_channels=3, n_classes=3, random_state=0)
    >>> X.shape, np.bincount(y).tolist()
    ((30, 3, 3), [10, 10, 10])
    >>> bool((np.linalg.eigvalsh(X) > 0).all())
    True
    """
    _check_counts(n_matrices, n_channels, n_classes, class_sep, ("n_matrices", "n_channels"))
    rng = make_rng(random_state)
    means_sqrt = _spd_function(class_sep * _random_symmetric(rng, n_classes, n_channels), 0.5)
    y = rng.permutation(np.arange(n_matrices) % n_classes)
    noise = _spd_function(_random_symmetric(rng, n_matrices, n_channels), 1.0)
    root = means_sqrt[y]
    X = root @ noise @ root
    return (X + X.transpose(0, 2, 1)) / 2.0, y.astype(np.int64)


def _random_symmetric(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """(n, c, c) symmetric Gaussian matrices with E||A||²_F = 1."""
    G = rng.standard_normal((n, c, c))
    return (G + G.transpose(0, 2, 1)) / 2.0 / np.sqrt(c * (c + 1) / 2.0)


def _spd_function(A: np.ndarray, power: float) -> np.ndarray:
    """``expm(power · A)`` for a stack of symmetric matrices, via eigh."""
    eigenvalues, vectors = np.linalg.eigh(A)
    return (vectors * np.exp(power * eigenvalues)[:, None, :]) @ vectors.transpose(0, 2, 1)


class ReidData:
    """Images of identities seen by two cameras (or more: :func:`make_multicamera_reid`).

    Attributes
    ----------
    X : ndarray of shape (2 * n_identities, n_features)
        Camera-A images first (rows ``0..n−1``), then camera-B images in the same identity order.
    ids : ndarray of shape (2 * n_identities,)
        Identity of each row.
    camera : ndarray of shape (2 * n_identities,)
        0 (probe camera) or 1 (gallery camera).

    See Also
    --------
    rankmetric.datasets.make_synthetic_reid : A two-camera stand-in set.
    rankmetric.evaluate.query_gallery_split : Its query and gallery rows.

    Examples
    --------
    >>> from rankmetric.datasets import make_synthetic_reid
    >>> data = make_synthetic_reid(10, n_features=8, n_latent=4, n_nuisance=2)
    >>> data.X.shape, data.ids.shape, data.camera.shape
    ((20, 8), (20,), (20,))
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


# alike: a public generator's keywords, spelled out (make_multicamera_reid shares several)
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
    """The VIPeR stand-in: identities seen once by each of two cameras, with a shared nuisance.

    VIPeR's layout (632 identities, one image per camera, 316/316 identity splits) with 64
    synthetic features: an identity is a point of an ``n_latent``-dimensional subspace; each
    camera adds its own offset (colour / lighting bias), every image adds a strong nuisance in
    ``n_nuisance`` directions shared by all identities (pose, illumination) and isotropic noise.
    The nuisance dominates Euclidean distances; a metric that discards it finds identities again.
    This is the ``synthetic-reid`` set of ``rankmetric bench warca-reid`` (with the defaults and
    ``random_state=0``). It is a stand-in: no figure on it is a VIPeR figure.

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

    See Also
    --------
    rankmetric.datasets.make_multicamera_reid : A Market-1501-like stand-in (more cameras).
    rankmetric.evaluate.reid_scores : Score a metric on such a set.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_synthetic_reid
    >>> data = make_synthetic_reid(20, n_features=8, n_latent=4, n_nuisance=2)
    >>> data.X.shape, np.bincount(data.camera).tolist()
    ((40, 8), [20, 20])
    """
    rng = make_rng(random_state)
    identities, nuisance_axes = _identity_model(rng, n_identities, n_features, n_latent, n_nuisance)
    views = []
    for _ in range(2):
        offset = camera_offset * rng.standard_normal(n_features)
        nuisance = nuisance_scale * rng.standard_normal((n_identities, n_nuisance)) @ nuisance_axes
        noise = noise_scale * rng.standard_normal((n_identities, n_features))
        views.append(identities + offset + nuisance + noise)
    return _two_cameras(views)


def _two_cameras(views: list[np.ndarray]) -> ReidData:
    """Camera A's view of identities ``0..n-1``, then camera B's, as one :class:`ReidData`."""
    n = views[0].shape[0]
    return ReidData(np.vstack(views), np.tile(np.arange(n), 2), np.repeat([0, 1], n))


def _identity_model(rng, n_identities, n_features, n_latent, n_nuisance):
    """Identity points of a random ``n_latent``-dimensional subspace, and the nuisance axes."""
    identity_axes = rng.standard_normal((n_latent, n_features)) / np.sqrt(n_latent)
    nuisance_axes = rng.standard_normal((n_nuisance, n_features)) / np.sqrt(n_nuisance)
    return rng.standard_normal((n_identities, n_latent)) @ identity_axes, nuisance_axes


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


def make_camera_views(images: np.ndarray, random_state=0) -> ReidData:
    """Two simulated camera views of each of ``n`` grey images (n, s, s) with values in [0, 1].

    Not a model of pedestrians: each image is an identity (``rankmetric bench warca-reid`` builds
    its ``fmnist-views`` set from 632 Fashion-MNIST test images this way). Camera A and camera B
    views get an independent random shift of up
    to ±2 pixels, contrast × U(0.6, 1.4), brightness + U(−0.2, 0.2) and N(0, 0.1²) pixel noise;
    camera B's view is also blurred (3×3 mean filter). Returns flattened views (s² features).
    (Named ``make_image_views`` before 0.2; ``rankmetric.bench.reid_data`` keeps that name.)

    Parameters
    ----------
    images : ndarray of shape (n, s, s)
        Grey images with values in [0, 1]; each one is an identity.
    random_state : int, Generator or None, default=0
        Seeds the shifts, contrasts, brightness and noise.

    Returns
    -------
    ReidData
        ``X`` of shape (2 n, s²): camera A's views, then camera B's; ``ids`` and ``camera``
        (0 or 1) of shape (2 n,).

    See Also
    --------
    rankmetric.datasets.make_synthetic_reid : A VIPeR stand-in from latent features.
    rankmetric.evaluate.reid_scores : Score a metric on such a set.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_camera_views
    >>> data = make_camera_views(np.random.default_rng(0).random((3, 8, 8)))
    >>> data.X.shape, data.ids.tolist(), data.camera.tolist()
    ((6, 64), [0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1])
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
    return _two_cameras(views)


# alike: make_synthetic_reid's keywords and sections, spelled out: a public signature
def make_multicamera_reid(
    n_identities: int = 600,
    n_cameras: int = 6,
    images_per_camera: int = 2,
    n_features: int = 64,
    n_latent: int = 16,
    n_nuisance: int = 8,
    nuisance_scale: float = 1.0,
    session_scale: float = 0.7,
    noise_scale: float = 0.5,
    camera_offset: float = 0.3,
    random_state=0,
) -> ReidData:
    """A Market-1501-like stand-in: identities seen by 2 to ``n_cameras`` cameras, several images.

    :func:`make_synthetic_reid`'s model with a camera network: every identity is seen by a
    random subset of at least two of the ``n_cameras`` cameras, ``images_per_camera`` images in
    each. The images of one identity in one camera share a *session* offset (clothes,
    lighting, background and pose within a camera's track), so same-camera matches are much
    easier than cross-camera ones — the reason the Market-1501 protocol removes them
    (:func:`rankmetric.evaluate.reid_scores`): with the defaults, Euclidean rank 1 is 20 %
    under that protocol and 55 % if same-camera matches are kept. A stand-in: no figure on it
    is a Market-1501 figure.

    Parameters
    ----------
    n_identities, n_cameras, images_per_camera, n_features : int
    n_latent, n_nuisance : int
        Dimensions of the identity subspace and of the shared per-image nuisance.
    nuisance_scale, session_scale, noise_scale, camera_offset : float
        Standard deviations of the per-image nuisance, of the per-(identity, camera) session
        offset, of the isotropic noise and of each camera's offset.
    random_state : int, Generator or None

    Returns
    -------
    ReidData
        ``camera`` holds 0..n_cameras-1; rows are grouped by identity.

    See Also
    --------
    rankmetric.datasets.make_synthetic_reid : A VIPeR stand-in (two cameras, one image each).
    rankmetric.evaluate.query_gallery_split : The query and gallery rows of such a set.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_multicamera_reid
    >>> data = make_multicamera_reid(20, n_cameras=3, n_features=8, n_latent=4, n_nuisance=2)
    >>> data.X.shape, len(np.unique(data.ids))
    ((98, 8), 20)
    """
    if n_cameras < 2:
        raise ValueError(f"n_cameras must be at least 2, got {n_cameras}.")
    rng = make_rng(random_state)
    identities, nuisance_axes = _identity_model(rng, n_identities, n_features, n_latent, n_nuisance)
    offsets = camera_offset * rng.standard_normal((n_cameras, n_features))
    # each identity in a random subset of >= 2 cameras (a random count, then random cameras)
    counts = rng.integers(2, n_cameras + 1, n_identities)
    seen = np.argsort(rng.random((n_identities, n_cameras)), axis=1) < counts[:, None]
    ident, cam = np.nonzero(seen)  # one (identity, camera) track per pair
    session = session_scale * rng.standard_normal((ident.shape[0], n_features))
    track = np.repeat(np.arange(ident.shape[0]), images_per_camera)
    n = track.shape[0]
    nuisance = nuisance_scale * rng.standard_normal((n, n_nuisance)) @ nuisance_axes
    noise = noise_scale * rng.standard_normal((n, n_features))
    X = identities[ident[track]] + offsets[cam[track]] + session[track] + nuisance + noise
    return ReidData(X, ident[track], cam[track])
