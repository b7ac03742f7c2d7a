"""Region covariance descriptors against a pixel-by-pixel reading of Tuzel, Porikli & Meer."""

import numpy as np
import pytest

from rankmetric.geometry import check_spd as check_spd_array
from rankmetric.preprocessing import RegionCovariances, region_covariances


def _brute_force(image: np.ndarray, scale: float, reg: float) -> np.ndarray:
    """One image, one pixel at a time: finite differences written out, then the covariance."""
    image = image / scale
    H, W = image.shape

    def dx(a, y, x):  # central difference along columns, one-sided at the border
        if x == 0:
            return a[y, 1] - a[y, 0]
        if x == W - 1:
            return a[y, W - 1] - a[y, W - 2]
        return (a[y, x + 1] - a[y, x - 1]) / 2

    def dy(a, y, x):
        if y == 0:
            return a[1, x] - a[0, x]
        if y == H - 1:
            return a[H - 1, x] - a[H - 2, x]
        return (a[y + 1, x] - a[y - 1, x]) / 2

    Ix = np.array([[dx(image, y, x) for x in range(W)] for y in range(H)])
    Iy = np.array([[dy(image, y, x) for x in range(W)] for y in range(H)])
    Ixx = np.array([[dx(Ix, y, x) for x in range(W)] for y in range(H)])
    Iyy = np.array([[dy(Iy, y, x) for x in range(W)] for y in range(H)])
    rows = []
    for y in range(H):
        for x in range(W):
            rows.append([x / (W - 1), y / (H - 1), image[y, x], abs(Ix[y, x]), abs(Iy[y, x]),
                         np.hypot(Ix[y, x], Iy[y, x]), abs(Ixx[y, x]), abs(Iyy[y, x])])  # fmt: skip
    C = np.cov(np.array(rows).T)  # unbiased, 1 / (S - 1)
    return C + reg * np.trace(C) / 8 * np.eye(8)


def test_matches_pixel_by_pixel_definition():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(3, 6, 7)).astype(float)
    C = region_covariances(images, chunk_size=2)
    assert C.shape == (3, 8, 8)
    for image, c in zip(images, C, strict=True):
        np.testing.assert_allclose(c, _brute_force(image, 255.0, 1e-4), rtol=1e-10, atol=1e-14)


def test_transformer_on_flat_rows_and_blank_images_is_spd():
    rng = np.random.default_rng(1)
    images = rng.random((4, 5, 5)) * 255
    images[0] = 0.0  # blank: only the coordinates vary
    flat = images.reshape(4, 25)
    C = RegionCovariances().fit_transform(flat)
    np.testing.assert_allclose(C, region_covariances(images), atol=0)
    check_spd_array(C)
    rect = RegionCovariances(image_shape=(5, 5)).fit(flat)
    assert rect.image_shape_ == (5, 5)
    np.testing.assert_allclose(RegionCovariances().fit(images).transform(images), C)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: RegionCovariances().fit(np.zeros((2, 10))), "not a square image"),
        (lambda: RegionCovariances(image_shape=(3, 4)).fit(np.zeros((2, 10))), "does not match"),
        (lambda: region_covariances(np.zeros((2, 2, 5))), "H, W >= 3"),
        (lambda: region_covariances(np.full((1, 4, 4), np.nan)), "NaN"),
        (lambda: region_covariances(np.zeros((1, 4, 4)), regularization=0), "regularization"),
        (lambda: RegionCovariances().fit(np.zeros((2, 16))).transform(np.zeros((2, 25))), "16"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.data
@pytest.mark.slow
def test_load_spd_fmnist_regcov_subsample_is_stratified_and_official():
    from rankmetric.datasets import load_spd

    data = load_spd("FMNIST_RegCov", n_train=200, n_test=100, random_state=3)
    assert data.X.shape == (200, 8, 8) and data.X_test.shape == (100, 8, 8)
    assert np.bincount(data.y).tolist() == [20] * 10
    assert np.bincount(data.y_test).tolist() == [10] * 10
    check_spd_array(data.X)
    again = load_spd("fmnist-regcov", n_train=200, n_test=100, random_state=3)
    np.testing.assert_array_equal(again.X, data.X)
    with pytest.raises(ValueError, match="n_train"):
        load_spd("fmnist-regcov", n_train=0)
