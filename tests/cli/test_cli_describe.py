"""``rankmetric describe MODEL``: what a saved model takes and gives, and how it was fitted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankmetric import SSNE, KernelWARCA, load_model, save_model
from rankmetric.cli import main

from .test_cli_fit_spd import FAST, _session_file
from .test_cli_fit_split import _run

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _describe(path, capsys) -> dict:
    assert main(["describe", str(path), "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_a_model_fitted_on_the_command_line(tmp_path, capsys):
    model = tmp_path / "warca.npz"
    fitted = _run(["fit", "warca", "--data", "wine", "--n-components", "3", "--max-iter", "40",
                   "--random-state", "0", "--out", str(model)], capsys)  # fmt: skip
    found = _describe(model, capsys)
    assert found["model"] == "WARCA" and found["written_by"].startswith("rankmetric ")
    assert found["input"] == "13 features (samples × 13)"
    assert found["output"] == "3 values per sample"
    assert found["fitted_on"] == f"wine: {fitted['split']}"
    assert found["held_out_check"] == fitted["held_out_check"]
    assert found["training"].startswith(f"{load_model(model).n_iter_} steps")
    assert found["settings"] == {"max_iter": "40", "n_components": "3", "random_state": "0"}


@pytest.mark.parametrize("make", [
    lambda X, y: KernelWARCA(kernel="rbf", n_components=2, max_iter=20, random_state=0).fit(X, y),
    lambda X, y: SSNE(n_components=4, max_iter=20, random_state=0).fit(X, y),
])  # fmt: skip
def test_a_model_saved_in_python(tmp_path, capsys, make):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 5)), np.repeat(np.arange(4), 10)
    model = make(X, y)
    save_model(model, tmp_path / "m.npz")
    found = _describe(tmp_path / "m.npz", capsys)
    width = model.transform(X[:1]).shape[1]
    assert found["output"] == f"{width} values per sample" and found["input"].startswith("5 ")
    assert found["fitted_on"].startswith("not recorded")


def test_an_spd_network_names_its_matrices_and_covariance_estimator(tmp_path, capsys):
    path, _ = _session_file(tmp_path)
    model = tmp_path / "rpl.npz"
    _run(["fit", "rpl", "--data", str(path), "--covariance-estimator", "lwf", "--out", str(model),
          *FAST], capsys)  # fmt: skip
    found = _describe(model, capsys)
    c = load_model(model).n_features_in_
    assert found["input"] == (f"SPD matrices {c} × {c} (samples × {c} × {c}); fitted on "
                              "covariances of raw trials by 'lwf'")  # fmt: skip


def test_a_file_that_is_not_a_model_is_named(tmp_path, capsys):
    (tmp_path / "x.npz").write_bytes(b"not a zip")
    assert main(["describe", str(tmp_path / "x.npz")]) == 2
    assert "x.npz: not a readable rankmetric model file" in capsys.readouterr().err
