"""The code on the landing page and in the user guide runs, and prints what the page shows.

Each page's ```python blocks run in order in one fresh process (as a reader pasting them into a
script would), in an empty temporary folder, with ``-W error::UserWarning``. A ```text block that
follows a python block is that block's printed output: the test compares them, numbers with a
decimal point within 0.03 (other text exactly), so a change that moves a figure on a page
fails here until the page is updated. Blocks written as ```{code-block} python are shown but
not run (commands too long for a test, such as a search over a million items).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDE = sorted(p for p in (DOCS / "user_guide").glob("*.md") if p.name != "index.md")
PAGES = [DOCS / "index.md", *GUIDE]
NEEDS_DATA = {"eeg.md"}  # reads a fetched data set (rankmetric data fetch EyesOpenShut)
MARKER = "@@@ end of block {} @@@"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NUMBER = re.compile(r"[-+]?\d+\.\d+|[-+]?\d+")


def blocks(page: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of every plain fenced block of ``page``, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text())]


def same_output(expected: str, actual: str, tol: float = 0.03) -> bool:
    """Equal text, and equal numbers (those with a decimal point within ``tol``)."""
    if NUMBER.sub("#", " ".join(expected.split())) != NUMBER.sub("#", " ".join(actual.split())):
        return False
    for e, a in zip(NUMBER.findall(expected), NUMBER.findall(actual), strict=True):
        if ("." in e and abs(float(e) - float(a)) > tol) or ("." not in e and e != a):
            return False
    return True


def test_same_output_compares_numbers_with_a_tolerance():
    assert same_output("R@1 0.524  n 42", "R@1  0.530 n 42")
    assert not same_output("R@1 0.524", "R@1 0.600")
    assert not same_output("n 42", "n 43")
    assert not same_output("R@1 0.524", "R@5 0.524")


def _param(page: Path):
    marks = [pytest.mark.slow] + ([pytest.mark.data] if page.name in NEEDS_DATA else [])
    return pytest.param(page, id=page.stem, marks=marks)


@pytest.mark.parametrize("page", [_param(p) for p in PAGES])
def test_page_runs_and_prints_what_it_shows(page, tmp_path):
    fenced = blocks(page)
    code = [c for lang, c in fenced if lang == "python"]
    assert code, f"{page.name} has no runnable python block"
    script = "\n".join(f"{c}\nprint({MARKER.format(i)!r}, flush=True)" for i, c in enumerate(code))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the pages show what the CPU prints (user_guide/index.md)
    proc = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-W", "error::FutureWarning", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, f"{page.name}:\n{proc.stdout}\n{proc.stderr}"
    outputs = re.split(r"@@@ end of block \d+ @@@\n", proc.stdout)
    i = -1
    for lang, text in fenced:
        if lang == "python":
            i += 1
        elif lang == "text" and i >= 0:
            assert same_output(text, outputs[i]), (
                f"{page.name}, block {i}: the page shows\n{text}\nbut the code prints\n{outputs[i]}"
            )
