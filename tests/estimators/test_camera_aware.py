"""Camera-aware training: cross-camera positives for WARCA, KISSME and XQDA (issue 22)."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from rankmetric import WARCA, KernelWARCA
from rankmetric.datasets import make_multicamera_reid
from rankmetric.estimators.pair_covariance import KISSME, XQDA, pair_difference_covariances
from rankmetric.sampling import CrossCameraLabelIndex, camera_group_codes

pytestmark = pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")


def _labels(seed=0, n=120):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 12, n)
    cams = rng.integers(0, 4, n)
    cams[y == 5] = 2  # identity 5 is seen by one camera only
    return y, cams


def test_no_identity_with_two_cameras_is_refused():
    with pytest.raises(ValueError, match="no identity is seen by two cameras"):
        CrossCameraLabelIndex.from_cameras([0, 0, 1, 1], [0, 0, 1, 1])
    X = np.random.default_rng(0).normal(size=(4, 3))
    for est in (KISSME(positives="cross_camera"), XQDA(positives="cross_camera")):
        with pytest.raises(ValueError, match="no identity is seen by two cameras"):
            est.fit(X, [0, 0, 1, 1], cameras=[0, 0, 1, 1])


def test_cross_camera_covariance_matches_brute_force():
    rng = np.random.default_rng(0)
    y, cams = _labels(1, 40)
    X = rng.normal(size=(40, 5))
    groups = camera_group_codes(y, cams)
    s_sim, s_dis = pair_difference_covariances(X, y, groups)
    D = X[:, None, :] - X[None, :, :]
    sim = (y[:, None] == y[None, :]) & (cams[:, None] != cams[None, :])
    dis = y[:, None] != y[None, :]
    np.testing.assert_allclose(
        s_sim, np.einsum("ijk,ijl->kl", D[sim][None], D[sim][None]) / sim.sum(), atol=1e-10
    )
    np.testing.assert_allclose(
        s_dis, np.einsum("nk,nl->kl", D[dis], D[dis]) / dis.sum(), atol=1e-10
    )


@pytest.fixture(scope="module")
def reid():
    d = make_multicamera_reid(n_identities=40, n_features=16, random_state=0)
    return d.X, d.ids, d.camera


def _warca(**kw):
    params = {"n_components": 8, "max_iter": 30, "tol": None, "random_state": 0, "device": "cpu"}
    return WARCA(**{**params, **kw})


def _kernel_warca(**kw):
    params = {"kernel": "rbf", "n_components": 8, "max_iter": 30, "tol": None,
              "random_state": 0, "device": "cpu"}  # fmt: skip
    return KernelWARCA(**{**params, **kw})


def _kernel_warca_held_out(**kw):
    return _kernel_warca(validation_fraction=0.25, validation_split="groups", **kw)


ESTIMATORS = [_warca, KISSME, XQDA, _kernel_warca, _kernel_warca_held_out]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_estimators_fit_with_and_without_the_option(reid, make):
    X, y, cams = reid
    plain = make().fit(X, y)
    same = make().fit(X, y, cameras=cams)  # cameras checked but unused with positives="all"
    np.testing.assert_allclose(plain.components_, same.components_)
    cross = make(positives="cross_camera").fit(X, y, cameras=cams)
    assert cross.transform(X).shape[0] == len(X)
    assert np.all(np.isfinite(cross.components_))
    assert not np.allclose(cross.components_[:1], plain.components_[:1])


@pytest.mark.parametrize("make", ESTIMATORS)
def test_cross_camera_without_cameras_or_bad_cameras_is_refused(reid, make):
    X, y, cams = reid
    with pytest.raises(ValueError, match="cameras="):
        make(positives="cross_camera").fit(X, y)
    with pytest.raises(ValueError, match="one camera id per sample"):
        make(positives="cross_camera").fit(X, y, cameras=cams[:-1])
    with pytest.raises(ValueError, match="NaN"):
        make().fit(X, y, cameras=np.where(np.arange(len(y)) == 3, np.nan, cams * 1.0))
    with pytest.raises(ValueError, match="positives"):
        make(positives="same_camera").fit(X, y, cameras=cams)


@pytest.mark.parametrize(("make", "step"), [(_warca, "warca"), (KISSME, "kissme"), (XQDA, "xqda")])
def test_pipeline_routes_cameras(reid, make, step):
    X, y, cams = reid
    pipe = make_pipeline(StandardScaler(), make(positives="cross_camera"))
    pipe.fit(X, y, **{f"{step}__cameras": cams})
    direct = make(positives="cross_camera").fit(StandardScaler().fit_transform(X), y, cameras=cams)
    np.testing.assert_allclose(pipe[-1].components_, direct.components_, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cameras="):
        make_pipeline(StandardScaler(), make(positives="cross_camera")).fit(X, y)


@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")
def test_warca_cross_camera_with_held_out_identities(reid):
    X, y, cams = reid
    est = _warca(
        positives="cross_camera",
        validation_fraction=0.25,
        validation_split="groups",
        validation_every=10,
    )
    est.fit(X, y, cameras=cams)
    assert len(est.validation_scores_) > 0
    # X_val, y_val still work positionally next to cameras (deprecated)
    half = np.isin(y, np.unique(y)[:30])
    with pytest.warns(FutureWarning, match=r"fit\(X, y, X_val, y_val\)"):
        _warca(positives="cross_camera", validation_every=10).fit(
            X[half], y[half], X[~half], y[~half], cameras=cams[half]
        )


def test_warca_trains_only_on_cross_camera_pairs(reid, monkeypatch):
    X, y, cams = reid
    seen = []
    original = CrossCameraLabelIndex.positive_pairs

    def spy(self, *args, **kwargs):
        i, j = original(self, *args, **kwargs)
        seen.append((i, j))
        return i, j

    monkeypatch.setattr(CrossCameraLabelIndex, "positive_pairs", spy)
    # held_out_check=False: only the model's own training pairs are spied on
    _warca(positives="cross_camera", max_iter=5, held_out_check=False).fit(X, y, cameras=cams)
    i = np.concatenate([s[0] for s in seen])
    j = np.concatenate([s[1] for s in seen])
    assert len(i) > 0 and np.all(y[i] == y[j]) and np.all(cams[i] != cams[j])


@pytest.mark.parametrize("make", [_kernel_warca, _kernel_warca_held_out])
def test_kernel_warca_draws_positives_across_cameras(reid, make, monkeypatch):
    """KernelWARCA(positives="cross_camera") trains on the cameras of its training rows (the
    default's second, held-out fit and a validation hold-out included)."""
    X, y, cams = reid
    seen = []
    real = CrossCameraLabelIndex.from_cameras.__func__

    def record(cls, codes, cameras):
        seen.append(len(cameras))
        return real(cls, codes, cameras)

    monkeypatch.setattr(CrossCameraLabelIndex, "from_cameras", classmethod(record))
    make(positives="cross_camera").fit(X, y, cameras=cams)
    assert seen and all(n <= len(X) for n in seen)
    assert len(seen) == 2 if make is _kernel_warca else seen[0] < len(X)
