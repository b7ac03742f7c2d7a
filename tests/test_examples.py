"""Every script of ``examples/`` runs to the end, so the gallery cannot rot.

Each script runs in its own process, as a user would run it, with ``examples/`` as the working
directory. Scripts that read fetched data sets (``load_dataset`` of a set that is not bundled
with scikit-learn) carry the ``data`` mark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
NEEDS_DATA = {"rpl_raw_trials.py", "cross_session_eeg.py"}


def _param(path: Path):
    marks = [pytest.mark.data] if path.name in NEEDS_DATA else []
    return pytest.param(path, id=path.stem, marks=marks)


def test_the_gallery_has_the_promised_scripts():
    names = {p.stem for p in EXAMPLES}
    assert len(names) >= 5
    assert {"warca_pipeline", "ssne_pair_similarities", "rpl_raw_trials"} <= names
    assert {"loss_in_your_training_loop", "retrieval_evaluation", "save_and_load"} <= names
    assert "sampler_miner_memory" in names
    for path in EXAMPLES:
        assert path.read_text().startswith('"""'), f"{path.name} needs a docstring (its caption)"
        title, underline = path.read_text()[3:].splitlines()[:2]
        assert set(underline) == {"="} and len(underline) >= len(title), (
            f"{path.name}: the docstring's first line is the gallery page's title; underline it "
            f"with at least {len(title)} '=' on the next line (reStructuredText, sphinx-gallery)"
        )


@pytest.mark.parametrize("path", [_param(p) for p in EXAMPLES])
def test_example_runs(path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-W", "error::FutureWarning", path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip(), "an example prints what it shows"
    assert "Warning" not in proc.stderr, proc.stderr
