"""Every fetched set loads with its documented shape; the loaders' quirk fixes hold."""

from functools import lru_cache

import numpy as np
import pytest

from rankmetric.datasets import list_datasets, load_spd
from rankmetric.datasets import load_dataset as _load_dataset
from rankmetric.geometry import check_spd as check_spd_array

from .test_registry import DOCUMENTED

pytestmark = pytest.mark.data

FETCHED = [info.name for info in list_datasets() if info.needs_fetch]


@lru_cache(maxsize=4)
def load_dataset(name):
    """Load once per test session (Fashion-MNIST and the EEG sets take seconds)."""
    return _load_dataset(name)


def _expected_shape(features):
    return features if isinstance(features, tuple) else (features,)


@pytest.mark.parametrize("name", FETCHED)
def test_fetched_set_has_documented_shape(name):
    n, features, n_classes, n_test = DOCUMENTED[name]
    data = load_dataset(name)
    assert data.X.shape == (n - n_test, *_expected_shape(features))
    assert data.X.dtype == np.float64 and np.isfinite(data.X).all()
    assert data.y.shape == (n - n_test,) and data.y.dtype == np.int64
    assert data.n_classes == n_classes
    labels = data.y if data.y_test is None else np.concatenate([data.y, data.y_test])
    np.testing.assert_array_equal(np.unique(labels), np.arange(n_classes))
    if n_test:
        assert data.X_test.shape == (n_test, *_expected_shape(features))
        assert data.y_test.shape == (n_test,)
    else:
        assert data.X_test is None and data.y_test is None


def test_ionosphere_factor_columns_are_floats():
    X = load_dataset("ionosphere").X
    assert set(np.unique(X[:, 0])) == {0.0, 1.0}
    assert np.all(X[:, 1] == 0.0)  # V2 is constant in the source; kept
    assert X[:, 2:].min() >= -1 and X[:, 2:].max() <= 1


def test_heart_oldpeak_is_rescaled():
    oldpeak = load_dataset("heart").X[:, 9]
    assert oldpeak.max() == pytest.approx(6.2)  # UCI Statlog: 0 .. 6.2, one decimal
    np.testing.assert_allclose(oldpeak * 10, np.round(oldpeak * 10))


def test_images_are_pixel_values():
    fashion = load_dataset("fashion-mnist")
    assert fashion.X.min() == 0 and fashion.X.max() == 255
    np.testing.assert_array_equal(np.bincount(fashion.y), np.full(10, 6000))
    np.testing.assert_array_equal(np.bincount(fashion.y_test), np.full(10, 1000))
    mnist = load_dataset("mnist-5k")
    assert mnist.X.max() == 255 and np.array_equal(mnist.X, np.round(mnist.X))


def test_vowel_split_is_the_original():
    data = load_dataset("vowel")
    np.testing.assert_array_equal(np.bincount(data.y), np.full(11, 48))  # 8 speakers x 6
    np.testing.assert_array_equal(np.bincount(data.y_test), np.full(11, 42))  # 7 speakers x 6


def test_japanese_vowels_keeps_true_lengths():
    data = load_dataset("JapaneseVowels")
    assert data.lengths.min() == 7 and max(data.lengths.max(), data.lengths_test.max()) == 29
    assert data.lengths.shape == (270,) and data.lengths_test.shape == (370,)


def test_equal_length_sets_have_no_lengths():
    data = load_dataset("BasicMotions")
    assert data.lengths is None
    assert data.target_names == ("Badminton", "Running", "Standing", "Walking")


@pytest.mark.parametrize("estimator", ["oas", "lw", "scm"])
def test_load_spd_gives_spd_matrices(estimator):
    data = load_spd("JapaneseVowels", estimator=estimator)  # trials shorter than channels too
    assert data.kind == "spd"
    assert data.X.shape == (270, 12, 12) and data.X_test.shape == (370, 12, 12)
    check_spd_array(data.X)
    check_spd_array(data.X_test)
    np.testing.assert_array_equal(data.y, load_dataset("JapaneseVowels").y)


def test_load_spd_rejects_tabular_sets():
    with pytest.raises(ValueError, match="multichannel"):
        load_spd("iris")
