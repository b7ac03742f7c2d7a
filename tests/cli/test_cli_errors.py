"""User errors on the command line: one line naming the problem, non-zero exit, no traceback;
and ``rankmetric fit --out`` never loses a fitted model (issue #15, findings 4 and 13)."""

from __future__ import annotations

import numpy as np
import pytest

from rankmetric.cli import main

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "emb.npy", np.random.default_rng(0).random((30, 3)))
    np.save(tmp_path / "lab.npy", np.repeat([0, 1, 2], 10))
    (tmp_path / "a-file").write_text("")
    return tmp_path


CASES = {
    "unknown device (fit)": (["fit", "warca", "--data", "iris", "--device", "nosuch"], "--device"),
    "unknown device (evaluate)": (
        ["evaluate", "{t}/emb.npy", "--labels", "{t}/lab.npy", "--device", "nosuch"],
        "--device",
    ),
    "unknown device (bench)": (
        ["bench", "ssne-uci", "--quick", "--device", "nosuch", "--results-dir", "{t}/r"],
        "--device",
    ),
    "seed is not a number": (
        ["fit", "itml", "--data", "iris", "--random-state", "foo"],
        "--random-state",
    ),
    "negative seed": (["fit", "itml", "--data", "iris", "--random-state", "-3"], "--random-state"),
    "zero threads (evaluate)": (
        ["evaluate", "{t}/emb.npy", "--labels", "{t}/lab.npy", "--threads", "0"],
        "--threads",
    ),
    "zero threads (demo)": (["demo", "--threads", "0"], "--threads"),
    "missing labels file": (["evaluate", "{t}/emb.npy", "--labels", "{t}/nosuch.npy"], "--labels"),
    "missing embeddings file": (
        ["evaluate", "{t}/nosuch.npy", "--labels", "{t}/lab.npy"],
        "no such file",
    ),
    "--out in a missing folder": (
        ["fit", "kissme", "--data", "iris", "--out", "{t}/no/dir/m.npz"],
        "does not exist",
    ),
    "--out is a folder": (["fit", "kissme", "--data", "iris", "--out", "{t}"], "is a folder"),
    "--out under a file": (
        ["fit", "kissme", "--data", "iris", "--out", "{t}/a-file/m.npz"],
        "--out",
    ),
    "-k zero": (["fit", "kissme", "--data", "iris", "-k", "0"], "-k"),
    "-k beyond the training set": (["fit", "kissme", "--data", "iris", "-k", "1000"], "-k 1000"),
    "--test-size 2": (["fit", "kissme", "--data", "iris", "--test-size", "2"], "--test-size"),
    "--results-dir under a file": (
        ["bench", "ssne-uci", "--quick", "--results-dir", "{t}/a-file/r"],
        "--results-dir",
    ),
    "--results-dir is a file": (
        ["bench", "ssne-uci", "--quick", "--results-dir", "{t}/a-file"],
        "--results-dir",
    ),
    "unknown model file": (
        ["evaluate", "--model", "{t}/nosuch.npz", "--data", "iris"],
        "nosuch.npz",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_user_error_prints_one_line_and_exits_non_zero(case, files, capsys):
    argv, fragment = CASES[case]
    code = main([a.replace("{t}", str(files)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("rankmetric: error:") and fragment in err
    assert "Traceback" not in err


def test_ctrl_c_prints_one_line(monkeypatch, capsys):
    from rankmetric.cli import fit as fit_cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_cli, "_load", interrupted)
    assert main(["fit", "kissme", "--data", "iris"]) == 130
    assert capsys.readouterr().err.strip() == "rankmetric: interrupted."


def test_fit_saves_the_model_before_the_report_can_fail(tmp_path, monkeypatch, capsys):
    import rankmetric.evaluate as evaluate

    def broken(*args, **kwargs):
        raise ValueError("report failed")

    monkeypatch.setattr(evaluate, "knn_accuracy", broken)
    out = tmp_path / "m.npz"
    assert main(["fit", "kissme", "--data", "iris", "--out", str(out)]) == 2
    assert "report failed" in capsys.readouterr().err
    from rankmetric import load_model

    assert load_model(out).components_.shape[1] == 4


def test_fit_checks_its_arguments_before_fitting(tmp_path, monkeypatch, capsys):
    from rankmetric.cli import fit as fit_cli

    loaded = []
    monkeypatch.setattr(fit_cli, "_load", lambda args: loaded.append(args))
    assert main(["fit", "kissme", "--data", "iris", "--out", str(tmp_path / "no" / "m.npz")]) == 2
    assert loaded == []  # refused before any data was loaded or model fitted


@pytest.mark.parametrize(
    "argv, said",
    [
        (["fit", "warca", "--max-iter", "-1"], "--max-iter must be an integer >= 0, got -1."),
        (["fit", "rpl", "--learning-rate", "-1"], "--learning-rate must be a finite number > 0"),
        (["fit", "kissme", "--tune", "2"], "--tune must be a number of default fits >= 3, got 2"),
    ],
)
def test_a_bad_hyper_parameter_names_its_option_before_the_data_is_read(
    argv, said, tmp_path, capsys
):
    """The estimator's checks run first (the data file here does not even exist) and the
    message names the option typed, not the Python parameter behind it."""
    assert main([*argv, "--data", str(tmp_path / "never_read.npz")]) == 2
    err = capsys.readouterr().err
    assert said in err and "never_read" not in err


def test_a_renamed_parameter_warns_once(capsys):
    """The early parameter check does not repeat the fit's deprecation warning."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        main(["fit", "warca", "--data", "wine", "--patience", "5", "--max-iter", "5"])
    said = [w for w in seen if issubclass(w.category, FutureWarning)]
    said += [line for line in capsys.readouterr().err.splitlines() if "FutureWarning" in line]
    assert len([w for w in said if "patience" in str(getattr(w, "message", w))]) == 1
