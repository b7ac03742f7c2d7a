"""The `rankmetric evaluate` command: inputs, outputs and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split

from rankmetric.cli import main
from rankmetric.evaluate import clustering_scores, knn_accuracy, retrieval_scores
from rankmetric.io import register_estimator, save_model


@register_estimator
class CliTestScaler(TransformerMixin, BaseEstimator):
    """A minimal saved 'metric': per-feature scaling learned from the training data."""

    def __init__(self, power: float = 1.0):
        self.power = power

    def fit(self, X, y=None):
        self.scale_ = np.asarray(X).std(axis=0) ** self.power
        return self

    def transform(self, X):
        return np.asarray(X) / self.scale_


@pytest.fixture
def blobs(rng):
    y = rng.integers(0, 4, 160)
    X = rng.normal(size=(160, 5)) + 1.5 * rng.normal(size=(4, 5))[y]
    return X, y


def _run_json(capsys, *argv) -> dict:
    assert main(["evaluate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_help_is_enough_to_start(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for needle in ("X_test", "--labels", "--model", "--data", "--json", "mAP@R", "examples"):
        assert needle in text


def test_npz_with_test_part(tmp_path, capsys, blobs):
    X, y = blobs
    path = tmp_path / "emb.npz"
    np.savez(path, X=X[:100], y=y[:100], X_test=X[100:], y_test=y[100:])
    report = _run_json(capsys, str(path), "--ks", "1", "5", "-k", "5")
    expected = {"knn5_accuracy": knn_accuracy(X[:100], y[:100], X[100:], y[100:], k=5)}
    expected.update(retrieval_scores(X[100:], y[100:], ks=(1, 5)))
    expected.update({f"clustering_{k}": v for k, v in clustering_scores(X[100:], y[100:]).items()})
    assert report["scores"] == pytest.approx(expected)
    assert (report["n_evaluated"], report["n_reference"], report["n_classes"]) == (60, 100, 4)
    assert main(["evaluate", str(path)]) == 0
    assert "map@r" in capsys.readouterr().out


@pytest.mark.parametrize("label_format", ["npy", "txt"])
def test_npy_with_labels_is_leave_one_out(tmp_path, capsys, blobs, label_format):
    X, y = blobs
    np.save(tmp_path / "emb.npy", X)
    labels = tmp_path / f"y.{label_format}"
    np.save(labels, y) if label_format == "npy" else np.savetxt(labels, y, fmt="%d")
    report = _run_json(
        capsys, str(tmp_path / "emb.npy"), "--labels", str(labels), "--scores", "knn", "retrieval"
    )
    loo = retrieval_scores(X, y, ks=(1, 3))
    assert report["n_reference"] is None
    assert {k: report["scores"][k] for k in loo} == pytest.approx(loo)
    assert 0.5 < report["scores"]["knn3_accuracy"] <= 1.0


def test_saved_model_on_a_named_data_set(tmp_path, capsys):
    X, y = load_iris(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    model = CliTestScaler(power=2.0).fit(X_tr)
    save_model(model, tmp_path / "model.npz")
    report = _run_json(capsys, "--model", str(tmp_path / "model.npz"), "--data", "iris")
    Z_tr, Z_te = model.transform(X_tr), model.transform(X_te)
    assert report["scores"]["knn3_accuracy"] == pytest.approx(knn_accuracy(Z_tr, y_tr, Z_te, y_te))
    assert report["scores"]["map@r"] == pytest.approx(retrieval_scores(Z_te, y_te)["map@r"])
    assert report["split"].startswith("stratified 30%")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{dir}/emb.npy"], "--labels"),
        (["{dir}/missing.npz"], "no such file"),
        (["{dir}/emb.npy", "--labels", "{dir}/y.npy", "--data", "iris"], "either"),
        ([], "either"),
        (["{dir}/bad.npz"], "no array"),
        (["{dir}/emb.npy", "--labels", "{dir}/short.npy"], "labels"),
    ],
)
def test_errors_are_reported_with_exit_code_2(tmp_path, capsys, blobs, argv, message):
    X, y = blobs
    np.save(tmp_path / "emb.npy", X)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "short.npy", y[:5])
    np.savez(tmp_path / "bad.npz", Z=X)
    assert main(["evaluate", *(a.format(dir=tmp_path) for a in argv)]) == 2
    assert message in capsys.readouterr().err
