"""ONNX export reproduces transform (onnxruntime, 1e-5 relative); SPD networks refused plainly."""

import warnings

import numpy as np
import pytest

from rankmetric import ITML, SSNE, WARCA, KernelWARCA, SPDNetEmbedding
from rankmetric.index import Index, export_onnx, onnx_graph

ort = pytest.importorskip("onnxruntime")


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny fits may warn that they barely trained
        return model.fit(X, y)


MODELS = {
    "warca": lambda: WARCA(n_components=4, max_iter=20),
    "itml": lambda: ITML(),
    "kernel_rbf_exact": lambda: KernelWARCA(kernel="rbf", n_components=4, max_iter=20),
    "kernel_rbf_nystroem": lambda: KernelWARCA(
        kernel="rbf", n_components=4, max_iter=20, n_landmarks=60
    ),
    "kernel_poly_nystroem": lambda: KernelWARCA(
        kernel="poly", n_components=4, max_iter=20, n_landmarks=60
    ),
    "kernel_chi2_nystroem": lambda: KernelWARCA(
        kernel="chi2_rbf", n_components=4, max_iter=20, n_landmarks=60
    ),
    "ssne": lambda: SSNE(n_components=6, max_iter=20),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnxruntime_reproduces_transform(rng, tmp_path, name):
    X = rng.normal(size=(240, 8))
    if "chi2" in name:
        X = np.abs(X)
    y = np.repeat(np.arange(24), 10)
    model = _fit(MODELS[name](), X, y)
    path = tmp_path / f"{name}.onnx"
    export_onnx(model, path)
    X32 = rng.normal(size=(50, 8)).astype(np.float32)
    if "chi2" in name:
        X32 = np.abs(X32)
    got = ort.InferenceSession(str(path)).run(None, {"X": X32})[0]
    expected = model.transform(X32.astype(np.float64))
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()


def test_index_exports_its_model(rng, tmp_path):
    X, y = rng.normal(size=(100, 5)), np.repeat(np.arange(10), 10)
    model = _fit(WARCA(n_components=3, max_iter=10), X, y)
    index = Index.build(model, X)
    index.export_onnx(tmp_path / "m.onnx")
    got = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"X": X.astype(np.float32)})[0]
    np.testing.assert_allclose(got, index.embedding_vectors(), rtol=1e-5, atol=1e-6)


def test_spd_networks_and_callables_refused(rng):
    with pytest.raises(ValueError, match="eigendecomposition"):
        onnx_graph(SPDNetEmbedding())
    with pytest.raises(ValueError, match="no transform"):
        onnx_graph(lambda X: X)
