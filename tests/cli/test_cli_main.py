import json

import numpy as np
import pytest

from rankmetric import load_model
from rankmetric.cli import build_parser, main


def _subcommand_paths():
    """Every (sub)command path of the CLI, e.g. ("fit", "warca")."""
    paths = []

    def walk(parser, prefix):
        paths.append(prefix)
        for action in parser._actions:
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for name, sub in choices.items():
                    walk(sub, (*prefix, name))

    walk(build_parser(), ())
    return paths


@pytest.mark.parametrize("path", _subcommand_paths(), ids=lambda p: " ".join(p) or "rankmetric")
def test_help_at_every_level(path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*path, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: rankmetric")


def test_fit_cli_reports_and_saves_a_loadable_model(tmp_path, capsys):
    out_path = tmp_path / "warca.npz"
    code = main(
        [
            "fit",
            "warca",
            "--data",
            "wine",
            "--max-iter",
            "60",
            "--random-state",
            "0",
            "--out",
            str(out_path),
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"] == "WARCA" and report["n_train"] + report["n_test"] == 178
    assert 0.5 < report["knn3_accuracy_learned"] <= 1.0
    model = load_model(out_path)
    assert model.max_iter == 60 and model.components_.shape[1] == 13


def test_fit_cli_parses_parameter_types(capsys):
    code = main(
        [
            "fit",
            "ssne",
            "--data",
            "iris",
            "--max-iter",
            "30",
            "--n-components",
            "8",
            "--reg-lambda",
            "0.01",
            "--random-state",
            "1",
            "--json",
        ]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["method"] == "SSNE"


def test_fit_cli_names_a_bad_parameter_value(capsys):
    code = main(["fit", "warca", "--data", "wine", "--max-iter", "-5"])
    assert code == 2
    assert "--max-iter must be" in capsys.readouterr().err  # the option typed, not max_iter


def test_fit_cli_rejects_multichannel_data_for_vector_methods(capsys, monkeypatch):
    from rankmetric.cli import fit as fit_cli
    from rankmetric.datasets import Dataset

    def fake_load(name):
        return Dataset(X=np.zeros((10, 3, 5)), y=np.arange(10) % 2, name=name, kind="multichannel")

    monkeypatch.setattr("rankmetric.datasets.load_dataset", fake_load)
    assert fit_cli.METHODS["warca"].fit_input == "features"
    assert main(["fit", "warca", "--data", "BasicMotions"]) == 2
    assert "rankmetric fit rpl" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_runs_on_one_data_set(capsys):
    assert main(["demo", "--cases", "uci", "--datasets", "iris", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "| iris" in out and "WARCA" in out and "SSNE" in out


def test_warnings_print_as_the_command_s_one_line_without_the_entry_script(capsys):
    import warnings

    from rankmetric.cli import _format_warning, main

    line = _format_warning("below Euclidean", UserWarning, "/venv/bin/rankmetric", 6)
    assert line == "rankmetric: UserWarning: below Euclidean\n"
    before = warnings.formatwarning
    assert main(["data", "list"]) == 0
    assert warnings.formatwarning is before  # restored after the command
    capsys.readouterr()


def test_a_deprecated_alias_parses_but_is_not_offered(capsys):
    # ``patience`` is the deprecated name of ``n_iter_no_change``: old command lines still
    # parse, but ``--help`` offers only the current name.
    with pytest.raises(SystemExit):
        main(["fit", "warca", "--help"])
    text = capsys.readouterr().out
    assert "--n-iter-no-change" in text
    assert "--patience" not in text
    args = build_parser().parse_args(["fit", "warca", "--patience", "5"])
    assert args.param_patience == 5
