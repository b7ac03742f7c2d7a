"""``MDM``: pyRiemann's minimum distance to mean, on pyRiemann's own simulated data."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmetric import MDM
from rankmetric.datasets import make_spd_clusters
from rankmetric.io import load_model, save_model

from ._spd_rows import rows_to_spd

pyriemann_datasets = pytest.importorskip("pyriemann.datasets")
pyriemann_classification = pytest.importorskip("pyriemann.classification")


def _pipeline():  # scikit-learn's checks feed 2-D rows: mapped to SPD matrices first
    return make_pipeline(FunctionTransformer(rows_to_spd, validate=True), MDM(device="cpu"))


@parametrize_with_checks([_pipeline()], expected_failed_checks=lambda est: {
    "check_estimators_overwrite_params": "a Pipeline fits its steps in place",
    "check_dont_overwrite_parameters": "a Pipeline fits its steps in place",
})  # fmt: skip
def test_sklearn_checks_on_spd_input(estimator, check):
    check(estimator)


def _blobs(seed=0):
    X, y = pyriemann_datasets.make_gaussian_blobs(
        n_matrices=40, n_dim=4, class_sep=1.0, class_disp=0.6, random_state=seed
    )
    return X, y


def _matrices_and_masks(seed=1):
    """Two classes of pyRiemann's random SPD matrices, seen through one of its masks."""
    rs = np.random.RandomState(seed)
    X0 = pyriemann_datasets.make_matrices(40, 6, "spd", rs, evals_low=0.5, evals_high=2.0)
    X1 = pyriemann_datasets.make_matrices(40, 6, "spd", rs, evals_low=0.8, evals_high=3.0)
    (mask,) = pyriemann_datasets.make_masks(1, 6, 4, rs)
    X = np.concatenate([X0, X1])
    return mask.T @ X @ mask, np.repeat(["rest", "task"], 40)


@pytest.mark.parametrize("data", [_blobs, _matrices_and_masks])
@pytest.mark.parametrize("metric", ["riemann", "logeuclid"])
def test_equals_pyriemanns_mdm_on_its_simulated_data(data, metric):
    X, y = data()
    rng = np.random.default_rng(0)
    train = rng.permutation(len(y))[: len(y) // 2]
    test = np.setdiff1d(np.arange(len(y)), train)
    theirs = pyriemann_classification.MDM(metric=metric).fit(X[train], y[train])
    ours = MDM(metric=metric, device="cpu").fit(X[train], y[train])
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    np.testing.assert_allclose(ours.covmeans_, theirs.covmeans_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.transform(X[test]), theirs.transform(X[test]), rtol=1e-6)
    np.testing.assert_array_equal(ours.predict(X[test]), theirs.predict(X[test]))
    np.testing.assert_allclose(
        ours.predict_proba(X[test]), theirs.predict_proba(X[test]), rtol=1e-5, atol=1e-9
    )
    assert ours.score(X[test], y[test]) == theirs.score(X[test], y[test])


def test_sample_weight_is_pyriemanns_and_checked():
    X, y = _blobs(seed=2)
    w = np.random.default_rng(0).uniform(0.1, 2.0, len(y))
    theirs = pyriemann_classification.MDM().fit(X, y, sample_weight=w)
    ours = MDM(device="cpu").fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.covmeans_, theirs.covmeans_, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="non-negative"):
        MDM(device="cpu").fit(X, y, sample_weight=-w)
    with pytest.raises(ValueError, match="positive sample_weight"):
        MDM(device="cpu").fit(X, y, sample_weight=np.where(y == y[0], 0.0, 1.0))


def test_congruence_invariance_of_the_riemannian_mdm():
    X, y = make_spd_clusters(60, n_channels=4, n_classes=3, random_state=0)
    A = np.eye(4) + 0.5 * np.random.default_rng(1).normal(size=(4, 4))
    plain = MDM(device="cpu").fit(X, y)
    moved = MDM(device="cpu").fit(A @ X @ A.T, y)
    np.testing.assert_allclose(moved.transform(A @ X @ A.T), plain.transform(X), rtol=1e-6)


def test_model_file_round_trip(tmp_path):
    X, y = _matrices_and_masks()
    mdm = MDM(metric="logeuclid", device="cpu").fit(X, y)
    save_model(mdm, tmp_path / "mdm.npz")
    loaded = load_model(tmp_path / "mdm.npz")
    assert loaded.get_params() == mdm.get_params()
    np.testing.assert_array_equal(loaded.predict(X), mdm.predict(X))
    np.testing.assert_array_equal(loaded.classes_, ["rest", "task"])


def test_bad_input_names_the_problem():
    X, y = _blobs()
    with pytest.raises(ValueError, match="metric"):
        MDM(metric="cosine", device="cpu").fit(X, y)
    with pytest.raises(ValueError, match=r"shape \(n_matrices, c, c\)"):
        MDM(device="cpu").fit(X[:, :, :3], y)
    fitted = MDM(device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(np.stack([np.eye(3)] * 2))
    assert clone(fitted).get_params() == fitted.get_params()
