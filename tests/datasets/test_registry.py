"""The table of data sets, name lookup, and the sets that need no download."""

import numpy as np
import pytest

from rankmetric.datasets import DatasetInfo, get_info, list_datasets, load_dataset
from rankmetric.datasets._loaders import balance_scale

# name: (n_samples train+test, features or (channels, length), classes, n_test) (documented sizes)
DOCUMENTED = {
    "iris": (150, 4, 3, 0),
    "wine": (178, 13, 3, 0),
    "wdbc": (569, 30, 2, 0),
    "sonar": (208, 60, 2, 0),
    "ionosphere": (351, 34, 2, 0),
    "glass": (214, 9, 6, 0),
    "pima": (768, 8, 2, 0),
    "heart": (270, 13, 2, 0),
    "balance-scale": (625, 4, 3, 0),
    "digits": (1797, 64, 10, 0),
    "mnist-5k": (5000, 784, 10, 0),
    "fashion-mnist": (70000, 784, 10, 10000),
    "BasicMotions": (80, (6, 100), 4, 40),
    "HandMovementDirection": (234, (10, 400), 4, 74),
    "FingerMovements": (416, (28, 50), 2, 100),
    "SelfRegulationSCP1": (561, (6, 896), 2, 293),
    "SelfRegulationSCP2": (380, (7, 1152), 2, 180),
    "EyesOpenShut": (98, (14, 128), 2, 42),
    "JapaneseVowels": (640, (12, 29), 9, 370),
    "vehicle": (846, 18, 4, 0),
    "vowel": (990, 10, 11, 462),
    "satellite": (6435, 36, 6, 0),
    "letter-recognition": (20000, 16, 26, 0),
}
UNAVAILABLE = ["protein", "cifar-10", "osc", "DEAP", "AFEW", "HDM05", "VIPeR", "Market-1501"]
BUNDLED = ["iris", "wine", "wdbc", "digits", "balance-scale"]


def test_every_documented_set_is_listed_with_its_shape():
    infos = {info.name: info for info in list_datasets()}
    for name, (n, features, classes, n_test) in DOCUMENTED.items():
        info = infos[name]
        assert (info.n_samples, info.n_features, info.n_classes, info.n_test) == (
            n,
            features,
            classes,
            n_test,
        ), name
        assert info.available and info.split == (n_test > 0)
        assert info.needs_fetch == (name not in BUNDLED)


def test_unavailable_sets_are_listed_and_refuse_to_load():
    infos = {info.name: info for info in list_datasets()}
    for name in UNAVAILABLE:
        assert not infos[name].available and not infos[name].needs_fetch
        with pytest.raises(ValueError, match="not available"):
            load_dataset(name)


def test_kinds_and_types():
    for info in list_datasets():
        assert isinstance(info, DatasetInfo)
        assert info.kind in ("tabular", "image", "multichannel")
        if info.kind == "multichannel" and info.available:
            assert isinstance(info.n_features, tuple) and len(info.n_features) == 2


@pytest.mark.parametrize("alias", ["BasicMotions", "basic_motions", "BASIC-MOTIONS", "basic mot"])
def test_names_match_loosely(alias):
    if alias == "basic mot":
        with pytest.raises(ValueError, match="unknown"):
            get_info(alias)
    else:
        assert get_info(alias).name == "BasicMotions"


def test_unknown_name_lists_known_names():
    with pytest.raises(ValueError, match="unknown data set 'nope'.*iris"):
        load_dataset("nope")


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_sets_load_without_fetch(name, tmp_path):
    data = load_dataset(name, data_home=tmp_path)  # an empty cache is fine
    n, d, q, _ = DOCUMENTED[name]
    assert data.X.shape == (n, d) and data.X.dtype == np.float64
    assert data.y.shape == (n,) and data.y.dtype == np.int64
    assert data.n_classes == q and set(np.unique(data.y)) == set(range(q))
    assert data.X_test is None and data.name == name and data.info.name == name
    assert not any(tmp_path.iterdir())


def test_balance_scale_is_the_uci_file():
    X, labels = balance_scale()
    # brute force: the UCI file lists LW, LD, RW, RD in lexicographic order
    values = range(1, 6)
    rows = [(a, b, c, d) for a in values for b in values for c in values for d in values]
    expected = ["L" if a * b > c * d else "R" if a * b < c * d else "B" for a, b, c, d in rows]
    np.testing.assert_array_equal(X, np.array(rows, dtype=float))
    np.testing.assert_array_equal(labels, expected)
    data = load_dataset("balance-scale")
    assert data.target_names == ("B", "L", "R")
    np.testing.assert_array_equal(np.bincount(data.y), [49, 288, 288])


def test_digits_pixels_are_counts_to_16():
    X = load_dataset("digits").X
    assert X.min() == 0 and X.max() == 16
