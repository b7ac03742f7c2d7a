"""Synthetic generators: reproducible, balanced, with the structure they promise."""

import numpy as np
import pytest

from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters
from rankmetric.geometry import check_spd as check_spd_array


@pytest.mark.parametrize("make", [make_gaussian_clusters, make_spd_clusters])
def test_same_seed_same_data(make):
    X1, y1 = make(random_state=3)
    X2, y2 = make(random_state=np.random.default_rng(3))
    X3, _ = make(random_state=4)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.allclose(X1, X3)


def test_gaussian_clusters_shape_balance_and_signal():
    X, y = make_gaussian_clusters(3000, n_features=6, n_classes=4, class_sep=2.0, random_state=0)
    assert X.shape == (3000, 6) and X.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(y), [750] * 4)
    means = np.stack([X[y == c].mean(axis=0) for c in range(4)])
    informative = 2  # ceil(log2(4))
    # informative features: class means at +-class_sep, all distinct
    np.testing.assert_allclose(np.abs(means[:, :informative]), 2.0, atol=0.15)
    assert len(np.unique(np.sign(means[:, :informative]), axis=0)) == 4
    # noise features: no class signal, unit variance
    np.testing.assert_allclose(means[:, informative:], 0.0, atol=0.15)
    np.testing.assert_allclose(X[:, informative:].std(axis=0), 1.0, atol=0.05)


def test_gaussian_clusters_many_classes_on_few_features():
    X, y = make_gaussian_clusters(64, n_features=4, n_classes=16, n_informative=4, random_state=0)
    assert np.bincount(y).tolist() == [4] * 16


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_classes": 1}, "n_classes"),
        ({"n_samples": 0}, "n_samples"),
        ({"n_informative": 11}, "n_informative"),
        ({"n_classes": 5, "n_informative": 2}, "distinct class means"),
        ({"class_sep": -1.0}, "class_sep"),
    ],
)
def test_gaussian_clusters_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_gaussian_clusters(**kwargs)


def test_spd_clusters_are_spd_and_separated():
    X, y = make_spd_clusters(150, n_channels=3, n_classes=3, class_sep=3.0, random_state=1)
    assert X.shape == (150, 3, 3) and y.shape == (150,)
    check_spd_array(X)
    np.testing.assert_array_equal(np.bincount(y), [50] * 3)
    logs = np.stack([_logm(x) for x in X])  # log-Euclidean class means
    centres = np.stack([logs[y == c].mean(axis=0) for c in range(3)])
    within = np.mean([np.linalg.norm(logs[i] - centres[y[i]]) for i in range(150)])
    between = min(np.linalg.norm(centres[a] - centres[b]) for a in range(3) for b in range(a))
    assert between > 2 * within


def test_spd_clusters_bad_input():
    with pytest.raises(ValueError, match="n_channels"):
        make_spd_clusters(n_channels=0)


def _logm(matrix):
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.log(values)) @ vectors.T


def test_reid_generators_live_in_datasets_and_keep_their_bench_names():
    from rankmetric.bench import reid_data
    from rankmetric.datasets import ReidData, make_camera_views, make_synthetic_reid

    assert reid_data.make_synthetic_reid is make_synthetic_reid
    assert reid_data.make_image_views is make_camera_views
    assert reid_data.ReidData is ReidData


def test_synthetic_reid_is_viper_shaped_and_seeded():
    from rankmetric.datasets import make_synthetic_reid

    data = make_synthetic_reid()
    assert data.X.shape == (2 * 632, 64) and data.n_identities == 632
    train, test = data.split(0)
    assert len(train) == len(test) == 316
    np.testing.assert_array_equal(make_synthetic_reid().X, data.X)


def test_camera_views_of_images(rng):
    from rankmetric.datasets import make_camera_views

    images = rng.random((5, 9, 9))
    views = make_camera_views(images, random_state=0)
    assert views.X.shape == (10, 81) and views.n_identities == 5
    np.testing.assert_array_equal(views.camera, np.repeat([0, 1], 5))
    np.testing.assert_array_equal(views.ids, np.tile(np.arange(5), 2))
    assert not np.allclose(views.X[:5], views.X[5:])  # two different cameras
    np.testing.assert_array_equal(make_camera_views(images, random_state=0).X, views.X)


def test_multicamera_reid_layout_and_camera_effect():
    from rankmetric.datasets import make_multicamera_reid
    from rankmetric.evaluate import query_gallery_split, reid_scores

    d = make_multicamera_reid(n_identities=80, n_cameras=4, images_per_camera=2, random_state=3)
    assert d.X.shape[1] == 64 and d.n_identities == 80
    tracks = {}
    for i, c in zip(d.ids, d.camera, strict=True):
        tracks[(i, c)] = tracks.get((i, c), 0) + 1
    assert set(tracks.values()) == {2}  # two images per (identity, camera) track
    per_id = np.bincount([i for i, _ in tracks])
    assert per_id.min() >= 2 and per_id.max() <= 4  # every identity in 2..4 cameras
    again = make_multicamera_reid(n_identities=80, n_cameras=4, random_state=3)
    np.testing.assert_array_equal(again.X, d.X)
    q, g = query_gallery_split(d.ids, d.camera)
    args = (d.X[q], d.ids[q], d.camera[q], d.X[g], d.ids[g], d.camera[g])
    market = reid_scores(*args, ranks=1)
    kept = reid_scores(*args, ranks=1, protocol="single-view")
    assert kept["cmc"][1] > market["cmc"][1] + 0.15  # same-camera matches are the easy ones
    with pytest.raises(ValueError, match="n_cameras must be at least 2"):
        make_multicamera_reid(n_cameras=1)
