r"""LOMO-like stripe histograms for person re-identification crops (Liao et al., CVPR 2015).

An image (H × W, optionally with C channels) is cut into overlapping horizontal stripes; each
stripe into overlapping windows. Every window gets three histograms, each normalised to sum 1:

* **intensity**: ``n_intensity_bins`` bins per channel over [0, 1], after a per-image robust
  contrast stretch (1st and 99th percentiles mapped to 0 and 1, then clipped) — a cheap stand-in
  for LOMO's Retinex, it removes a camera's gain and offset;
* **local binary patterns**: the 8 neighbours at radius 1 of the grey (channel-mean) image, a bit
  set where :math:`\text{neighbour} \ge \text{centre} + \mathtt{lbp\_threshold}` (the tolerance
  plays the role of LOMO's SILTP, so that pixel noise on flat regions does not flip bits),
  codes mapped to the 10 rotation-invariant uniform patterns (``riu2``: the count of set bits
  for patterns with at most two 0/1 transitions around the circle, 9 for all others);
* **gradient orientation**: unsigned orientation of the central-difference gradient in
  ``n_orientations`` bins over :math:`[0, \pi)`, weighted by the gradient magnitude.

Windows of one stripe are max-pooled bin by bin (``pooling="max"``, LOMO's choice, robust to
horizontal shifts and view changes) or concatenated (``pooling="concat"``). Each histogram type
is then square-rooted (Hellinger map), L2-normalised over all stripes, and the three blocks are
scaled by :math:`1/\sqrt 3` so that every output row has unit norm and is non-negative (the
χ²-RBF kernel of :mod:`rankmetric.kernels` applies).

Everything is vectorised: per-pixel bin indices are one-hot encoded, and the window sums come
from an integral image, so no Python loop runs over pixels or windows (only over chunks of rows).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_option

__all__ = ["StripeHistograms", "lbp_codes", "riu2_table", "window_starts"]

#: Number of rotation-invariant uniform LBP patterns of 8 neighbours (0..8 set bits, and "other").
N_LBP_BINS = 10
#: Neighbour offsets (dy, dx) around the circle, in order.
NEIGHBOURS = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))
#: Rows transformed at once (bounds the one-hot integral images).
CHUNK_ROWS = 256
POOLINGS = ("max", "concat")
#: Window-histogram entries below this fraction of the window's total are rounding residue.
ROUNDING = 1e-10


def riu2_table() -> np.ndarray:
    """The 256 → 10 map of 8-bit LBP codes to rotation-invariant uniform patterns.

    Returns
    -------
    ndarray of shape (256,), int
        Number of set bits for codes with at most two circular 0/1 transitions, else 9.
    """
    codes = np.arange(256)
    bits = (codes[:, None] >> np.arange(8)) & 1
    transitions = (bits != np.roll(bits, 1, axis=1)).sum(axis=1)
    return np.where(transitions <= 2, bits.sum(axis=1), N_LBP_BINS - 1)


def lbp_codes(grey: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """8-neighbour LBP codes (0..255) of images, edges replicated.

    Parameters
    ----------
    grey : ndarray of shape (n, H, W)
    threshold : float
        Bit ``k`` is set where ``neighbour_k ≥ centre + threshold``.

    Returns
    -------
    ndarray of shape (n, H, W), int
    """
    _, H, W = grey.shape
    padded = np.pad(grey, ((0, 0), (1, 1), (1, 1)), mode="edge")
    codes = np.zeros(grey.shape, dtype=np.int64)
    for bit, (dy, dx) in enumerate(NEIGHBOURS):  # 8 shifted copies, not a loop over pixels
        neighbour = padded[:, 1 + dy : 1 + dy + H, 1 + dx : 1 + dx + W]
        codes |= (neighbour >= grey + threshold).astype(np.int64) << bit
    return codes


def window_starts(length: int, size: int, step: int) -> np.ndarray:
    """Start offsets of windows of ``size`` every ``step`` that fit in ``length`` (≥ 1 window)."""
    if size >= length:
        return np.zeros(1, dtype=np.int64)
    starts = np.arange(0, length - size + 1, step)
    if starts[-1] != length - size:  # cover the last pixels too
        starts = np.append(starts, length - size)
    return starts


def _stretch(images: np.ndarray) -> np.ndarray:
    """Per image and channel, map the 1st/99th percentiles to 0/1 and clip (n, H, W, C)."""
    low, high = np.percentile(images, [1.0, 99.0], axis=(1, 2), keepdims=True)
    return np.clip((images - low) / np.maximum(high - low, 1e-12), 0.0, 1.0)


def _orientation_bins(grey: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned gradient orientation bin and magnitude per pixel (central differences)."""
    padded = np.pad(grey, ((0, 0), (1, 1), (1, 1)), mode="edge")
    gy = 0.5 * (padded[:, 2:, 1:-1] - padded[:, :-2, 1:-1])
    gx = 0.5 * (padded[:, 1:-1, 2:] - padded[:, 1:-1, :-2])
    angle = np.mod(np.arctan2(gy, gx), np.pi)
    bins = np.minimum((angle / np.pi * n_bins).astype(np.int64), n_bins - 1)
    return bins, np.hypot(gx, gy)


def _window_histograms(bins, weights, n_bins, rows, cols, height, width) -> np.ndarray:
    """Histograms of every (stripe, window): shape (n, n_stripes, n_windows, n_bins).

    ``bins``/``weights`` are (n, H, W); window sums come from an integral image of the one-hot
    encoding, so the cost is O(n·H·W·n_bins) whatever the number of windows.
    """
    n, H, W = bins.shape
    onehot = np.zeros((n, H + 1, W + 1, n_bins))
    np.put_along_axis(onehot[:, 1:, 1:], bins[..., None], weights[..., None], axis=-1)
    integral = onehot.cumsum(axis=1).cumsum(axis=2)
    r0, c0 = rows[:, None], cols[None, :]
    r1, c1 = r0 + height, c0 + width
    sums = integral[:, r1, c1] - integral[:, r0, c1] - integral[:, r1, c0] + integral[:, r0, c0]
    total = sums.sum(axis=-1, keepdims=True)
    # differences of cumulative sums leave rounding residue (±1e-16 of the total) in empty bins;
    # zero it, or the square root would turn it into 1e-8
    sums = np.where(sums > ROUNDING * total, sums, 0.0)
    return sums / np.where(total > 0, total, 1.0)


class StripeHistograms(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""LOMO-like colour/texture histograms over horizontal stripes of image crops.

    See the module docstring for the exact features. The transformer learns nothing: ``fit``
    only checks the input and records its shape, so it can be used on any crops of one size.

    Parameters
    ----------
    image_shape : tuple of int, optional
        ``(H, W)`` for grey images or ``(H, W, C)`` for C channels, the layout of each row of
        ``X`` (row-major, channels last). ``None``: square grey images, ``H = W = √n_features``.
    stripe_height : int, default=8
        Height of a horizontal stripe (pixels); stripes start every ``stripe_step`` rows.
    stripe_step : int, default=4
    window_width : int, default=8
        Width of a window inside a stripe; windows start every ``window_step`` columns.
    window_step : int, default=4
    n_intensity_bins : int, default=8
        Intensity bins per channel.
    n_orientations : int, default=8
        Gradient orientation bins over [0, π); 0 leaves the orientation histograms out.
    lbp : bool, default=True
        Whether to include the LBP (riu2, 10 bins) histograms.
    lbp_threshold : float, default=0.05
        LBP tolerance on the contrast-stretched [0, 1] grey values.
    pooling : {"max", "concat"}, default="max"
        How the windows of a stripe are combined.

    Attributes
    ----------
    image_shape_ : tuple of int
        ``(H, W, C)`` actually used.
    n_features_in_ : int
        Number of features seen by ``fit``, ``H · W · C``.
    n_features_out_ : int
        Length of a feature vector:
        :math:`n_{\text{stripes}}\, n_{\text{pooled}}\, (C\, n_{\mathtt{intensity\_bins}}
        + 10\, \text{lbp} + n_{\text{orientations}})` with :math:`n_{\text{pooled}} = 1` (max)
        or the number of windows (concat).

    See Also
    --------
    rankmetric.XQDA : The metric that LOMO features were designed for.
    rankmetric.preprocessing.RegionCovariances : Another hand-made image descriptor (SPD).

    References
    ----------
    .. [1] S. Liao, Y. Hu, X. Zhu and S. Z. Li. Person Re-identification by Local Maximal
       Occurrence Representation and Metric Learning. CVPR 2015.
    .. [2] T. Ojala, M. Pietikäinen and T. Mäenpää. Multiresolution Gray-Scale and Rotation
       Invariant Texture Classification with Local Binary Patterns. IEEE TPAMI 24(7), 2002.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.preprocessing import StripeHistograms
    >>> X = np.random.default_rng(0).random((5, 28 * 28))
    >>> StripeHistograms().fit_transform(X).shape
    (5, 156)
    """

    # alike: its integer window sizes are shaped like the keyword defaults of make_synthetic_reid
    # (datasets/synthetic.py) and stored like TunedMetricLearner's (tuning/_search.py): the
    # scikit-learn constructor convention, no shared values
    def __init__(
        self,
        image_shape: tuple[int, ...] | None = None,
        *,
        stripe_height: int = 8,
        stripe_step: int = 4,
        window_width: int = 8,
        window_step: int = 4,
        n_intensity_bins: int = 8,
        n_orientations: int = 8,
        lbp: bool = True,
        lbp_threshold: float = 0.05,
        pooling: str = "max",
    ) -> None:
        self.image_shape = image_shape
        self.stripe_height = stripe_height
        self.stripe_step = stripe_step
        self.window_width = window_width
        self.window_step = window_step
        self.n_intensity_bins = n_intensity_bins
        self.n_orientations = n_orientations
        self.lbp = lbp
        self.lbp_threshold = lbp_threshold
        self.pooling = pooling

    def _check_params(self, n_features: int) -> tuple[int, int, int]:
        for name in ("stripe_height", "stripe_step", "window_width", "window_step",
                     "n_intensity_bins"):  # fmt: skip
            _check_int(name, getattr(self, name), 1)
        _check_int("n_orientations", self.n_orientations, 0)
        if not isinstance(self.lbp, (bool, np.bool_)):
            raise ValueError(f"lbp must be a bool, got {self.lbp!r}.")
        t = self.lbp_threshold
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not np.isfinite(t):
            raise ValueError(f"lbp_threshold must be a finite number, got {t!r}.")
        check_option("pooling", self.pooling, POOLINGS)
        return _image_shape(self.image_shape, n_features)

    def fit(self, X, y=None) -> StripeHistograms:
        """Check ``X`` (n_samples, H·W·C) against the parameters; nothing is learned.

        Parameters
        ----------
        X : array-like of shape (n_samples, H · W · C)
            Flattened image crops (row-major, channels last).
        y : None
            Ignored.

        Returns
        -------
        self : StripeHistograms
            The fitted transformer.
        """
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        self.image_shape_ = self._check_params(X.shape[1])
        H, W, C = self.image_shape_
        n_stripes = window_starts(H, self.stripe_height, self.stripe_step).shape[0]
        n_windows = window_starts(W, self.window_width, self.window_step).shape[0]
        pooled = 1 if self.pooling == "max" else n_windows
        per_window = C * self.n_intensity_bins + N_LBP_BINS * bool(self.lbp) + self.n_orientations
        self.n_features_out_ = n_stripes * pooled * per_window
        return self

    @property
    def _n_features_out(self) -> int:
        return self.n_features_out_

    def transform(self, X) -> np.ndarray:
        """Stripe histograms of each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, H · W · C)
            Flattened image crops of the shape seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_out_``), non-negative, rows of unit norm
            (float64, or float32 for float32 input).
        """
        check_is_fitted(self, "image_shape_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        out = np.empty((X.shape[0], self.n_features_out_), dtype=X.dtype)
        for start in range(0, X.shape[0], CHUNK_ROWS):
            out[start : start + CHUNK_ROWS] = self._features(X[start : start + CHUNK_ROWS])
        return out

    def _features(self, X: np.ndarray) -> np.ndarray:
        images = _stretch(X.astype(np.float64).reshape(-1, *self.image_shape_))
        grey = images.mean(axis=3)
        H, W, C = self.image_shape_
        rows = window_starts(H, self.stripe_height, self.stripe_step)
        cols = window_starts(W, self.window_width, self.window_step)
        size = (rows, cols, min(self.stripe_height, H), min(self.window_width, W))
        ones = np.ones_like(grey)
        blocks = []
        intensity = np.minimum((images * self.n_intensity_bins).astype(np.int64),
                               self.n_intensity_bins - 1)  # fmt: skip
        blocks.append(np.concatenate(
            [_window_histograms(intensity[..., c], ones, self.n_intensity_bins, *size)
             for c in range(C)], axis=-1,
        ))  # fmt: skip
        if self.lbp:
            codes = riu2_table()[lbp_codes(grey, float(self.lbp_threshold))]
            blocks.append(_window_histograms(codes, ones, N_LBP_BINS, *size))
        if self.n_orientations:
            bins, magnitude = _orientation_bins(grey, self.n_orientations)
            blocks.append(_window_histograms(bins, magnitude, self.n_orientations, *size))
        return np.concatenate([self._finish(b) for b in blocks], axis=1) / np.sqrt(len(blocks))

    def _finish(self, hist: np.ndarray) -> np.ndarray:
        """Pool windows, square-root, flatten and L2-normalise one histogram type (n, ...)."""
        pooled = hist.max(axis=2) if self.pooling == "max" else hist
        flat = np.sqrt(pooled).reshape(hist.shape[0], -1)
        norm = np.linalg.norm(flat, axis=1, keepdims=True)
        return flat / np.where(norm > 0, norm, 1.0)


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def _image_shape(shape, n_features: int) -> tuple[int, int, int]:
    """``(H, W, C)`` from ``image_shape`` (or a square grey image), checked against the rows."""
    if shape is None:
        side = int(round(np.sqrt(n_features)))
        if side * side != n_features:
            raise ValueError(
                f"image_shape=None needs square grey images, but rows have {n_features} values; "
                "pass image_shape=(H, W) or (H, W, C)."
            )
        return side, side, 1
    shape = tuple(shape)
    if len(shape) not in (2, 3) or not all(
        isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise ValueError(f"image_shape must be (H, W) or (H, W, C) of positive ints, got {shape}.")
    H, W, C = (*shape, 1) if len(shape) == 2 else shape
    if H * W * C != n_features:
        raise ValueError(
            f"image_shape {shape} holds {H * W * C} values but rows of X have {n_features}."
        )
    return int(H), int(W), int(C)
