"""``python -m rankmetric`` and the demo's warning summary."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import rankmetric
from rankmetric.cli import demo, main


def _run_module(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "rankmetric", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_python_m_rankmetric_help_matches_the_command(capsys):
    proc = _run_module("--help")
    assert proc.returncode == 0, proc.stderr
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    assert proc.stdout.replace("__main__.py", "rankmetric") == capsys.readouterr().out


def test_python_m_rankmetric_version_and_errors():
    proc = _run_module("--version")
    assert proc.returncode == 0 and rankmetric.__version__ in proc.stdout
    proc = _run_module("no-such-command")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_demo_summarises_warnings_under_the_table(monkeypatch, capsys):
    from rankmetric import LMNN

    def methods(quick, seed):
        return {"Euclidean": None, "LMNN": LMNN(max_iter=1, random_state=seed)}

    monkeypatch.setattr(demo, "_methods", methods)
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        assert main(["demo", "--cases", "uci", "--datasets", "iris", "--threads", "1"]) == 0
    assert not escaped  # nothing printed above the table
    out = capsys.readouterr().out.splitlines()
    table = [i for i, line in enumerate(out) if line.startswith("| iris")]
    notes = [i for i, line in enumerate(out) if "ConvergenceWarning" in line]
    assert len(table) == 1 and len(notes) == 1 and notes[0] > table[0]
    assert out[notes[0]].startswith("- LMNN: ConvergenceWarning on iris (2x)")


def test_demo_prints_no_summary_without_warnings(monkeypatch, capsys):
    monkeypatch.setattr(demo, "_methods", lambda quick, seed: {"Euclidean": None})
    assert main(["demo", "--cases", "uci", "--datasets", "iris", "--threads", "1"]) == 0
    assert "Warnings raised" not in capsys.readouterr().out
