"""``rankmetric fit --out`` records its hold-out in the model; ``evaluate --model`` on the same
file scores that hold-out, never rows (or pairs, or trials) the model was trained on."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rankmetric import KISSME, load_model, save_model
from rankmetric.cli import main

from .test_cli_fit_spd import FAST, _session_file
from .test_cli_pairs import _pair_file

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _run(argv, capsys) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


@pytest.fixture
def feature_file(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(6), 20)
    X = np.c_[y + 0.3 * rng.normal(size=120), rng.normal(size=(120, 3))]
    path = tmp_path / "features.npz"
    np.savez(path, X=X, y=y)
    return path


def test_evaluate_uses_the_test_size_the_model_was_fitted_with(feature_file, tmp_path, capsys):
    model = tmp_path / "m.npz"
    fitted = _run(["fit", "kissme", "--data", str(feature_file), "--test-size", "0.5",
                   "--out", str(model)], capsys)  # fmt: skip
    record = load_model(model).fit_split_
    assert record["test_size"] == 0.5 and record["how"] == fitted["split"]
    assert record["fingerprint"].startswith("sha256:")
    report = _run(["evaluate", "--model", str(model), "--data", str(feature_file)], capsys)
    assert report["n_evaluated"] == fitted["n_test"] == 60  # the fit's hold-out, not 30 %
    assert report["model_split"].startswith(f"the hold-out {model} was fitted with")
    same = _run(["evaluate", "--model", str(model), "--data", str(feature_file),
                 "--test-size", "0.5"], capsys)  # fmt: skip
    assert same["scores"] == report["scores"]


def test_a_tuned_model_records_its_hold_out_too(feature_file, tmp_path, capsys):
    """``--tune`` saves the best estimator: the record goes with it."""
    model = tmp_path / "t.npz"
    fitted = _run(["fit", "kissme", "--data", str(feature_file), "--test-size", "0.5", "--tune",
                   "3", "--out", str(model)], capsys)  # fmt: skip
    assert load_model(model).fit_split_["test_size"] == 0.5
    report = _run(["evaluate", "--model", str(model), "--data", str(feature_file)], capsys)
    assert report["n_evaluated"] == fitted["n_test"]


def test_evaluate_refuses_another_hold_out_of_the_models_file(feature_file, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", "kissme", "--data", str(feature_file), "--test-size", "0.5",
                 "--out", str(model)]) == 0  # fmt: skip
    capsys.readouterr()
    err = _refused(["evaluate", "--model", str(model), "--data", str(feature_file),
                    "--test-size", "0.3"], capsys)  # fmt: skip
    assert "--test-size 0.3" in err and "with --test-size 0.5" in err
    assert "would score data it was trained on" in err and "Leave --test-size out" in err


def test_another_file_or_an_unrecorded_model_keeps_the_stated_test_size(
    feature_file, tmp_path, capsys
):
    model = tmp_path / "m.npz"
    assert main(["fit", "kissme", "--data", str(feature_file), "--test-size", "0.5",
                 "--out", str(model)]) == 0  # fmt: skip
    capsys.readouterr()
    other = tmp_path / "other.npz"
    data = dict(np.load(feature_file))
    data["X"][0, 0] += 1.0  # one value changed: another file
    np.savez(other, **data)
    report = _run(["evaluate", "--model", str(model), "--data", str(other)], capsys)
    assert report["model_split"].startswith(f"{other} is not the file")
    assert report["n_evaluated"] == 36  # its own default 30 % hold-out
    plain = tmp_path / "plain.npz"  # saved in Python: no record
    save_model(KISSME().fit(data["X"], data["y"]), plain)
    report = _run(["evaluate", "--model", str(plain), "--data", str(feature_file)], capsys)
    assert "does not record its hold-out" in report["model_split"]
    assert "--test-size 0.3 assumed" in report["model_split"]
    copy = tmp_path / "copy.npz"  # the same bytes under another name: the same file
    shutil.copy(feature_file, copy)
    report = _run(["evaluate", "--model", str(model), "--data", str(copy)], capsys)
    assert report["n_evaluated"] == 60


def test_pair_evaluation_uses_the_models_test_size(tmp_path, capsys):
    path, model = tmp_path / "pairs.npz", tmp_path / "k.npz"
    _pair_file(path, with_test=False)
    fitted = _run(["fit", "kissme", "--pairs", str(path), "--test-size", "0.5",
                   "--out", str(model)], capsys)  # fmt: skip
    report = _run(["evaluate", "--pairs", str(path), "--model", str(model)], capsys)
    assert report["n_pairs"] == fitted["n_evaluated_pairs"]
    assert report["scores"]["roc_auc"] == pytest.approx(fitted["learned"]["roc_auc"], abs=1e-12)
    err = _refused(["evaluate", "--pairs", str(path), "--model", str(model),
                    "--test-size", "0.3"], capsys)  # fmt: skip
    assert "with --test-size 0.5" in err


@pytest.fixture
def fitted_rpl(tmp_path, capsys):
    """``(trial file, model, fit report)``: RPL fitted on raw trials, session s2 held out, LWF
    covariances."""
    path, _ = _session_file(tmp_path)
    model = tmp_path / "rpl.npz"
    fitted = _run(["fit", "rpl", "--data", str(path), "--test-domain", "s2", "--out", str(model),
                   "--covariance-estimator", "lwf", *FAST], capsys)  # fmt: skip
    return path, model, fitted


def test_trial_evaluation_uses_the_models_domain_and_covariances(fitted_rpl, capsys):
    path, model, fitted = fitted_rpl
    report = _run(["evaluate", "--model", str(model), "--data", str(path), "--scores", "knn"],
                  capsys)  # fmt: skip
    assert report["split"] == fitted["split"] and report["n_evaluated"] == fitted["n_test"]
    assert report["scores"]["knn3_accuracy"] == pytest.approx(fitted["knn3_accuracy_learned"])
    err = _refused(["evaluate", "--model", str(model), "--data", str(path),
                    "--covariance-estimator", "oas"], capsys)  # fmt: skip
    assert "with --covariance-estimator lwf" in err and "estimated that way" in err
    err = _refused(["evaluate", "--model", str(model), "--data", str(path),
                    "--test-domain", "s1"], capsys)  # fmt: skip
    assert "with --test-domain s2" in err


def test_an_index_of_an_spd_model_refuses_raw_trials_naming_the_estimator(
    fitted_rpl, tmp_path, capsys
):
    path, model, _ = fitted_rpl
    err = _refused(["index", "build", "--model", str(model), "--data", str(path), "--out",
                    str(tmp_path / "idx")], capsys)  # fmt: skip
    assert "these are raw trials" in err and "the model was fitted with, 'lwf'" in err


def test_evaluate_puts_the_euclidean_distance_beside_the_model(feature_file, tmp_path, capsys):
    """The same rows under the plain distance: equal to scoring the raw rows directly, and a
    model worse than it on this data says so."""
    from rankmetric.datasets import holdout_rows, load_features
    from rankmetric.evaluate import knn_accuracy, retrieval_scores

    model = tmp_path / "m.npz"
    assert main(["fit", "kissme", "--data", str(feature_file), "--out", str(model)]) == 0
    capsys.readouterr()
    report = _run(["evaluate", "--model", str(model), "--data", str(feature_file)], capsys)
    train, test, _ = holdout_rows(load_features(feature_file), 0.3)
    data = np.load(feature_file)
    X, y = data["X"], data["y"]
    euclidean = report["euclidean_scores"]
    assert euclidean["knn3_accuracy"] == knn_accuracy(X[train], y[train], X[test], y[test], k=3)
    assert euclidean["map@r"] == pytest.approx(retrieval_scores(X[test], y[test])["map@r"])
    assert set(euclidean) == set(report["scores"]) and report["below_euclidean"] == "none"
    # a model of another file, where the labels live in another feature: below the distance
    rng = np.random.default_rng(1)
    other_y = np.repeat(np.arange(6), 20)
    other = np.c_[
        rng.normal(size=120), other_y + 0.3 * rng.normal(size=120), rng.normal(size=(120, 2))
    ]
    np.savez(tmp_path / "other.npz", X=other, y=other_y)
    report = _run(
        ["evaluate", "--model", str(model), "--data", str(tmp_path / "other.npz")], capsys
    )
    assert "map@r" in report["below_euclidean"] and " vs " in report["below_euclidean"]


def test_pair_evaluation_puts_the_euclidean_distance_beside_the_model(tmp_path, capsys):
    from rankmetric.datasets import holdout_pairs, read_pair_file
    from rankmetric.evaluate import verification_scores

    path, model = tmp_path / "pairs.npz", tmp_path / "k.npz"
    _pair_file(path, with_test=False)
    assert main(["fit", "kissme", "--pairs", str(path), "--out", str(model)]) == 0
    capsys.readouterr()
    report = _run(["evaluate", "--pairs", str(path), "--model", str(model)], capsys)
    stacked, y = holdout_pairs(read_pair_file(path), 0.3).test
    d = np.linalg.norm(stacked[:, 0] - stacked[:, 1], axis=1)
    expected = verification_scores(d, y > 0)["roc_auc"]
    assert report["euclidean_scores"]["roc_auc"] == pytest.approx(expected, abs=1e-12)
    assert report["below_euclidean"] == "none"  # eer lower is better: not listed


def test_data_the_model_cannot_take_is_named_with_both_files(feature_file, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", "kissme", "--data", str(feature_file), "--out", str(model)]) == 0
    np.savez(tmp_path / "wide.npz", X=np.zeros((30, 6)), y=np.arange(30) % 3)
    err = _refused(["evaluate", "--model", str(model), "--data", str(tmp_path / "wide.npz")],
                   capsys)  # fmt: skip
    assert f"--data {tmp_path / 'wide.npz'} has 6 features per row, but --model {model} " in err
    assert f"(KISSME, fitted on {feature_file}) takes 4." in err
    assert main(["index", "build", "--model", str(model), "--data", str(feature_file), "--out",
                 str(tmp_path / "idx")]) == 0  # fmt: skip
    capsys.readouterr()
    err = _refused(["index", "query", "--index", str(tmp_path / "idx"), "--data",
                    str(tmp_path / "wide.npz")], capsys)  # fmt: skip
    assert f"but the model of --index {tmp_path / 'idx'} (KISSME" in err


def test_a_trial_file_with_eeg_names_is_evaluated_as_trials(tmp_path, capsys):
    """``trials``, ``labels``, ``session`` (EEG tools' names, which fit reads) are trials for
    ``evaluate`` too: it used to look for ``X`` only and read the file as features."""
    path, _ = _session_file(tmp_path)
    data = dict(np.load(path))
    named = tmp_path / "eeg.npz"
    np.savez(named, trials=data["X"], labels=data["y"], session=data["domains"])
    model = tmp_path / "rpl.npz"
    fitted = _run(["fit", "rpl", "--data", str(named), "--test-domain", "s2", "--out", str(model),
                   *FAST], capsys)  # fmt: skip
    report = _run(["evaluate", "--model", str(model), "--data", str(named), "--scores", "knn"],
                  capsys)  # fmt: skip
    assert report["split"] == fitted["split"] and report["n_evaluated"] == fitted["n_test"]
