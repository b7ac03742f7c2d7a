"""``rankmetric demo``: the re-id and pair cases, their gains, the figure, progress lines."""

from __future__ import annotations

import builtins
import re
from pathlib import Path

import numpy as np
import pytest

from rankmetric._progress import ProgressLines
from rankmetric.cli import demo, main


@pytest.mark.slow
def test_demo_shows_a_large_reid_gain_and_writes_the_figure(tmp_path, capsys):
    figure = tmp_path / "demo.png"
    argv = ["demo", "--cases", "reid", "pairs", "--threads", "1", "--figure", str(figure)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = captured.out
    gain = float(re.search(r"Re-id gain: ([+-][\d.]+) points of rank-1", out).group(1))
    assert gain >= 20  # the done-when of the demo: a learned metric matters here
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert {"Euclidean", "WARCA", "XQDA", "SSNE", "WARCA + re-ranking", "KISSME"} <= set(rows)
    assert "Verification gain" in out
    assert f"figure: {figure.resolve()}" in out and figure.stat().st_size > 10_000
    # progress lines on stderr (not a terminal under pytest), one per fitted method
    assert len(re.findall(r"^\[demo +[\d.]+s\] re-id: \w+ fitted", captured.err, re.M)) == 3


def test_tables_show_gains_in_points():
    rows = [("Euclidean", 0.25, 0.2), ("WARCA", 0.75, 0.6), ("Worse", 0.2, 0.1)]
    lines = demo._table(rows, ("rank-1 %", "mAP %"), 1, "rank-1 gain")
    assert "rank-1 gain" in lines[0]
    assert lines[2].rstrip().endswith("|") and "+" not in lines[2]
    assert "+50.0" in lines[3] and "-5.0" in lines[4]
    assert demo._best_gain(rows, 1) == ("WARCA", pytest.approx(50.0))
    assert demo._best_gain(rows, 2) == ("WARCA", pytest.approx(40.0))


def test_training_pairs_are_each_identity_and_random_others():
    pairs, labels = demo._training_pairs(5, np.random.default_rng(0))
    same = pairs[labels > 0]
    np.testing.assert_array_equal(same, np.column_stack([np.arange(5), 5 + np.arange(5)]))
    different = pairs[labels < 0]
    assert len(different) == 5 * demo.NEGATIVES_PER_IDENTITY
    assert (different[:, 0] != different[:, 1] - 5).all()  # never an identity with itself


def _cases():
    ranks = np.arange(1, 21)
    reid = {"curves": {"Euclidean": (ranks, np.linspace(0.3, 0.7, 20)),
                       "WARCA + re-ranking": (ranks, np.linspace(0.9, 1, 20))},
            "axes": {"xlabel": "rank", "xticks": [1, 5, 10, 15, 20]}}  # fmt: skip
    pairs = {"curves": {"Euclidean": (np.array([1e-4, 0.5, 1.0]), np.array([0, 0.6, 1.0]))},
             "axes": {"xscale": "log", "xlim": (1e-4, 1)}}  # fmt: skip
    return reid, pairs


def test_figure_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "f.png"
    assert demo._figure(path, *_cases()) == f"figure: {path.resolve()}"
    assert path.stat().st_size > 1000


def test_figure_is_skipped_without_matplotlib(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    said = demo._figure(tmp_path / "f.png", *_cases())
    assert said.startswith("figure: skipped (matplotlib is not installed")
    assert not (tmp_path / "f.png").exists()


def test_demo_refuses_an_unwritable_figure_path(tmp_path, capsys):
    argv = ["demo", "--cases", "uci", "--figure", str(tmp_path / "no" / "f.png")]
    assert main(argv) == 2
    assert "--figure" in capsys.readouterr().err


def test_progress_lines_name_the_command_and_the_step(capsys):
    import time

    progress = ProgressLines("bench")
    progress("warca-reid: split 1/10", time.perf_counter())
    ProgressLines("x", enabled=False)("nothing")
    err = capsys.readouterr().err
    assert re.fullmatch(r"\[bench +[\d.]+s\] warca-reid: split 1/10 \([\d.]+s\)\n", err)


def test_full_keeps_the_earlier_protocol():
    methods = demo._methods(quick=False, seed=0)
    assert {"Euclidean", "WARCA", "SSNE", "LMNN", "NCA (scikit-learn)"} <= set(methods)
    assert "LMNN" not in demo._methods(quick=True, seed=0)
    parser = __import__("rankmetric.cli", fromlist=["build_parser"]).build_parser("demo")
    args = parser.parse_args(["demo", "--full"])
    assert args.quick is False and args.datasets is None
    assert Path(args.figure).name == "rankmetric-demo.png"
