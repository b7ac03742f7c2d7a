"""``TangentSpace``: pyRiemann's vectors (to 1e-8 in float64), inverse, pipelines, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from rankmetric import WARCA
from rankmetric.datasets import make_spd_clusters
from rankmetric.geometry import airm_distance
from rankmetric.preprocessing import Covariances, TangentSpace

pyriemann = pytest.importorskip("pyriemann")
from pyriemann.tangentspace import TangentSpace as PyRiemannTangentSpace  # noqa: E402

METRICS = ["riemann", "logeuclid", "euclid"]


def _spd(n=30, c=5, seed=0):
    X, y = make_spd_clusters(n, c, 3, class_sep=1.0, random_state=seed)
    return X, y


def _upper_brute_force(S: np.ndarray) -> np.ndarray:
    """pyRiemann's layout written from its definition: row-major upper triangle, √2 off-diagonal."""
    c = S.shape[-1]
    out = []
    for i in range(c):
        for j in range(i, c):
            out.append(S[..., i, j] * (1.0 if i == j else np.sqrt(2.0)))
    return np.stack(out, axis=-1)


@pytest.mark.parametrize("metric", METRICS)
def test_same_vectors_and_reference_as_pyriemann(metric):
    X, _ = _spd()
    ours = TangentSpace(metric=metric, device="cpu").fit(X)
    theirs = PyRiemannTangentSpace(metric=metric).fit(X)
    np.testing.assert_allclose(ours.reference_, theirs.reference_, atol=1e-8, rtol=0)
    X_test, _ = _spd(n=12, seed=1)
    np.testing.assert_allclose(ours.transform(X_test), theirs.transform(X_test), atol=1e-8, rtol=0)
    np.testing.assert_allclose(ours.fit_transform(X), theirs.fit_transform(X), atol=1e-8, rtol=0)


@pytest.mark.parametrize("metric", [{"mean": "logeuclid", "map": "riemann"}])
def test_pyriemann_dict_of_metrics(metric):
    X, _ = _spd()
    ours = TangentSpace(metric=metric, device="cpu").fit_transform(X)
    theirs = PyRiemannTangentSpace(metric=metric).fit_transform(X)
    np.testing.assert_allclose(ours, theirs, atol=1e-8, rtol=0)


def test_riemann_vector_is_the_whitened_log_and_its_norm_the_airm_distance():
    X, _ = _spd(n=8, c=4)
    ts = TangentSpace(device="cpu").fit(X)
    M = ts.reference_
    w, U = np.linalg.eigh(M)
    W = (U / np.sqrt(w)) @ U.T  # M^{-1/2}, symmetric
    expected = []
    for x in X:
        lam, V = np.linalg.eigh(W @ x @ W)
        expected.append(_upper_brute_force((V * np.log(lam)) @ V.T))
    V = ts.transform(X)
    np.testing.assert_allclose(V, np.stack(expected), atol=1e-10)
    distances = airm_distance(torch.as_tensor(M).expand(8, 4, 4), torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), distances, rtol=1e-10)


@pytest.mark.parametrize("metric", METRICS)
def test_inverse_transform_round_trips(metric):
    X, _ = _spd()
    ts = TangentSpace(metric=metric, device="cpu").fit(X)
    np.testing.assert_allclose(ts.inverse_transform(ts.transform(X)), X, atol=1e-10)
    V = np.random.default_rng(0).normal(scale=0.3, size=(6, 15))
    np.testing.assert_allclose(ts.transform(ts.inverse_transform(V)), V, atol=1e-10)
    theirs = PyRiemannTangentSpace(metric=metric).fit(X)
    np.testing.assert_allclose(ts.inverse_transform(V), theirs.inverse_transform(V), atol=1e-8)


def test_reference_options_and_sample_weight():
    X, _ = _spd(n=10, c=3)
    identity = TangentSpace(reference="identity", device="cpu").fit(X)
    np.testing.assert_array_equal(identity.reference_, np.eye(3))
    fixed = TangentSpace(reference=X[0], device="cpu").fit(X)
    np.testing.assert_allclose(fixed.transform(X[:1]), 0, atol=1e-12)
    weights = np.r_[np.ones(5), np.zeros(5)]
    ours = TangentSpace(device="cpu").fit(X, sample_weight=weights)
    theirs = PyRiemannTangentSpace().fit(X, sample_weight=weights)
    np.testing.assert_allclose(ours.reference_, theirs.reference_, atol=1e-8)


def test_float32_and_torch_input():
    X, _ = _spd(n=10, c=4)
    ts64 = TangentSpace(device="cpu").fit(X)
    ts32 = TangentSpace(device="cpu").fit(X.astype(np.float32))
    V32 = ts32.transform(torch.as_tensor(X, dtype=torch.float32))
    assert V32.dtype == np.float32
    np.testing.assert_allclose(V32, ts64.transform(X), atol=1e-4)
    assert TangentSpace(dtype="float32", device="cpu").fit_transform(X).dtype == np.float32


def test_pipeline_from_raw_trials_with_pandas_output_and_a_metric_learner():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    scales = np.where(y[:, None] == 1, [3.0, 1.0, 1.0], [1.0, 1.0, 3.0])
    trials = rng.normal(size=(40, 3, 200)) * scales[:, :, None]
    model = make_pipeline(
        Covariances(estimator="scm"), TangentSpace(device="cpu"), LogisticRegression()
    )
    assert model.fit(trials, y).score(trials, y) == 1.0
    model.set_output(transform="pandas")
    frame = model[:-1].transform(trials)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [f"tangentspace{k}" for k in range(6)]
    learned = make_pipeline(
        Covariances(estimator="scm"),
        TangentSpace(device="cpu"),
        WARCA(n_components=2, random_state=0),
    )
    assert learned.fit_transform(trials, y).shape == (40, 2)


def test_clone_keeps_parameters():
    ts = TangentSpace(metric="logeuclid", reference="identity", device="cpu", dtype="float32")
    assert clone(ts).get_params() == ts.get_params()


@pytest.mark.parametrize(
    "params,match",
    [
        ({"metric": "wasserstein"}, "metric must be one of"),
        ({"metric": {"mean": "riemann"}}, "keys 'mean' and 'map'"),
        ({"metric": 3}, "metric must be a metric name"),
        ({"reference": "median"}, "reference must be"),
        ({"dtype": "float16"}, "dtype must be"),
    ],
)
def test_bad_parameters_name_the_problem(params, match):
    X, _ = _spd(n=6, c=3)
    with pytest.raises(ValueError, match=match):
        TangentSpace(device="cpu", **params).fit(X)


def test_bad_input_names_the_problem():
    X, _ = _spd(n=6, c=3)
    with pytest.raises(ValueError, match="shape"):
        TangentSpace(device="cpu").fit(X[0])
    bad = X.copy()
    bad[2, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TangentSpace(device="cpu").fit(bad)
    not_pd = X.copy()
    not_pd[1] = -np.eye(3)
    with pytest.raises(ValueError, match="positive definite"):
        TangentSpace(device="cpu").fit(not_pd)
    ts = TangentSpace(device="cpu").fit(X)
    with pytest.raises(ValueError, match="fitted on 3 x 3"):
        ts.transform(np.stack([np.eye(4)] * 2))
    with pytest.raises(ValueError, match=r"shape \(n_matrices, 6\)"):
        ts.inverse_transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="NaN"):
        ts.inverse_transform(np.full((2, 6), np.nan))
    with pytest.raises(ValueError, match="reference must have shape"):
        TangentSpace(reference=np.eye(4), device="cpu").fit(X)
    with pytest.raises(ValueError, match="reference is not positive definite"):
        TangentSpace(reference=-np.eye(3), device="cpu").fit(X).transform(X)
    with pytest.raises(ValueError, match="sample_weight is only used"):
        TangentSpace(reference="identity", device="cpu").fit(X, sample_weight=np.ones(6))
