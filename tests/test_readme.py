"""The README's own-file quick start runs as written, from a clone's root with make's ``.venv/``.

The block is taken from README.md itself (not a copy), so an edit that breaks it fails here. It
runs in a temporary folder, with ``.venv/bin/`` read as the ``.venv/bin/`` of this clone.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"


def own_file_block() -> str:
    """The bash block that follows the README's "On your own features" paragraph."""
    text = (ROOT / "README.md").read_text()
    start = text.index("On your own features")
    match = re.search(r"```bash\n(.*?)```", text[start:], flags=re.S)
    assert match, "the README lost its own-file block"
    return match.group(1)


def test_the_block_uses_the_venv_that_make_creates():
    """Each command names ``.venv/bin/`` (the README never asks the user to activate it)."""
    lines = [line for line in own_file_block().splitlines() if line and not line[0].isspace()]
    commands = [line for line in lines if not line.startswith("d = ")]
    assert commands and all(line.startswith(".venv/bin/") for line in commands), commands


@pytest.mark.slow
@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="runs under make's .venv only (the README's commands name .venv/bin/)",
)
def test_the_own_file_block_runs_as_written(tmp_path):
    script = own_file_block().replace(".venv/bin/", f"{VENV_BIN}/")
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(Path.home())},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "m.npz").is_file()
    assert "reid_rank1" in proc.stdout and "| WARCA |" in proc.stdout
