"""``rankmetric --help`` and ``rankmetric data list`` start without the heavy libraries."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rankmetric.cli import _command_of, build_parser

HEAVY = ("torch", "sklearn", "scipy", "pandas", "matplotlib")


def _imported(*args: str) -> set[str]:
    """Top-level modules imported by ``python -X importtime -m rankmetric ARGS``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rankmetric", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("import time:")]
    assert lines, "python -X importtime printed nothing"
    return {ln.rsplit("|", 1)[1].strip().split(".")[0] for ln in lines}


@pytest.mark.parametrize("args", [("--help",), ("data", "list"), ("data", "--help")])
def test_light_commands_import_no_heavy_library(args):
    imported = _imported(*args)
    assert "rankmetric" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_the_heavy_command_still_imports_what_it_needs():
    assert "torch" in _imported("fit", "warca", "--help")


def test_build_parser_of_one_command_imports_no_heavy_library():
    code = (
        "import sys; from rankmetric.cli import build_parser; build_parser('data'); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout  # fmt: skip
    assert out.strip() == "[]"


def test_command_of_finds_the_sub_command():
    assert _command_of(["fit", "warca", "--data", "wine"]) == "fit"
    assert _command_of(["--help"]) == ""
    assert _command_of(["no-such-command"]) == ""


def test_every_command_is_listed_by_the_light_parser():
    light, full = build_parser(""), build_parser()
    choices = lambda p: set(p._subparsers._group_actions[0].choices)  # noqa: E731
    assert choices(light) == choices(full)
    assert light.format_help() == full.format_help()


def test_data_fetch_reports_each_set_through_a_pipe(tmp_path):
    """``rankmetric data fetch`` says what it does line by line, wherever its output goes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "rankmetric", "data", "fetch", "iris", "wine",
            "--data-home", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr.splitlines()
    assert any(line.startswith("iris:") and "nothing to fetch" in line for line in said)
    assert any(line.startswith("wine:") for line in said)
