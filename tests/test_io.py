import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from rankmetric.estimators.base import MahalanobisMixin
from rankmetric.io import load_model, register_estimator, save_model


@register_estimator
class _ScaledIdentity(MahalanobisMixin, TransformerMixin, BaseEstimator):
    def __init__(self, scale=2.0, name="x"):
        self.scale = scale
        self.name = name

    def fit(self, X, y=None):
        X = validate_data(self, X)
        self.components_ = self.scale * np.eye(X.shape[1])
        self.history_ = [{"step": 1, "loss": 0.5}]
        self.blocks_ = [np.ones(2), np.zeros((2, 2))]
        self.n_iter_ = 3
        return self


@pytest.fixture
def fitted(rng):
    X = rng.normal(size=(20, 4))
    return _ScaledIdentity(scale=3.0).fit(X), X


def test_round_trip_gives_identical_transform(tmp_path, fitted):
    est, X = fitted
    est.save(tmp_path / "m.npz")
    loaded = _ScaledIdentity.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
    assert loaded.get_params() == est.get_params()
    assert loaded.history_ == est.history_ and loaded.n_iter_ == 3
    np.testing.assert_array_equal(loaded.blocks_[1], est.blocks_[1])
    np.testing.assert_allclose(loaded.get_mahalanobis_matrix(), 9 * np.eye(4))


def test_truncated_file_is_rejected(tmp_path, fitted):
    path = tmp_path / "m.npz"
    save_model(fitted[0], path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a readable rankmetric model file"):
        load_model(path)


def test_tampered_array_is_rejected(tmp_path, fitted):
    path = tmp_path / "m.npz"
    save_model(fitted[0], path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["attr/components_"] = arrays["attr/components_"] * 2
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="fails its checksum"):
        load_model(path)


def test_pickle_payload_is_never_executed(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, __meta__=np.array([{"format": "rankmetric-model"}], dtype=object))
    with pytest.raises(ValueError):
        load_model(path)


def test_unfitted_and_unregistered_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(_ScaledIdentity(), tmp_path / "m.npz")

    class Other(_ScaledIdentity):
        pass

    est = Other().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="not a registered"):
        save_model(est, tmp_path / "m.npz")


def test_load_checks_the_class(tmp_path, fitted):
    from sklearn.base import BaseEstimator

    path = tmp_path / "m.npz"
    save_model(fitted[0], path)

    @register_estimator
    class _Unrelated(MahalanobisMixin, BaseEstimator):
        pass

    with pytest.raises(ValueError, match="not a _Unrelated"):
        _Unrelated.load(path)


def test_get_metric_and_pair_distances(fitted, rng):
    est, X = fitted
    metric = est.get_metric()
    assert metric(X[0], X[1]) == pytest.approx(3 * np.linalg.norm(X[0] - X[1]))
    np.testing.assert_allclose(
        est.pair_distances(X[:5], X[5:10]), 3 * np.linalg.norm(X[:5] - X[5:10], axis=1)
    )
