"""Sphinx extension: the user guide's figures, drawn by each page's own code at build time.

Every page of ``docs/user_guide/`` is a script written as Markdown: its ```python blocks run
in order in one process (``tests/test_user_guide.py`` runs them the same way and compares the
printed output with the page's ```text blocks). A page that saves a figure
(``plt.savefig("cmc.png")``) shows it with ``![...](_figures/PAGE/cmc.png)``: this extension
runs each such page's blocks in a temporary folder when the build starts and copies the PNG
files it wrote to ``docs/user_guide/_figures/PAGE/``. So a figure is redrawn on every build, from
the code beside it and the library as it is (never a stale picture), and a page whose code fails
fails the build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
FIGURE = re.compile(r"!\[[^\]]*\]\(_figures/([\w-]+)/([\w.-]+\.png)\)")


def python_blocks(page: Path) -> list[str]:
    """The code of every plain ```python block of ``page``, in order."""
    return [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) == "python"]


def figures_of(page: Path) -> list[str]:
    """File names of the figures that ``page`` shows from its own ``_figures/`` folder."""
    return [name for stem, name in FIGURE.findall(page.read_text()) if stem == page.stem]


def draw_figures(page: Path, out: Path, timeout: float = 900) -> list[Path]:
    """Run ``page``'s python blocks in a temporary folder; copy the figures it shows to ``out``."""
    wanted = figures_of(page)
    if not wanted:
        return []
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    with tempfile.TemporaryDirectory() as work:
        proc = subprocess.run(
            [sys.executable, "-c", "\n".join(python_blocks(page))],
            cwd=work, env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"{page.name}: its code failed:\n{proc.stderr[-3000:]}")
        out.mkdir(parents=True, exist_ok=True)
        copied = []
        for name in wanted:
            drawn = Path(work) / name
            if not drawn.is_file():
                raise RuntimeError(f"{page.name} shows _figures/{page.stem}/{name}, never saved")
            copied.append(Path(shutil.copy(drawn, out / name)))
        return copied


def _draw_all(app) -> None:
    guide = Path(app.srcdir) / "user_guide"
    for page in sorted(guide.glob("*.md")):
        draw_figures(page, guide / "_figures" / page.stem)


def setup(app):
    app.connect("builder-inited", _draw_all)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
