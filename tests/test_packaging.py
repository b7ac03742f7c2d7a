"""The wheel: built without a license deprecation warning, with LICENSE, py.typed and metadata."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rankmetric

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """Build the wheel from a copy of the sources (the work tree gets no build/ or egg-info)."""
    pytest.importorskip("build")
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("SPDX license strings need setuptools >= 77 (the test extra installs it)")
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", "dist", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    (path,) = (tree / "dist").glob("rankmetric-*.whl")
    return path, log


def test_build_prints_no_deprecation_warning(wheel):
    _, log = wheel
    assert not re.search(r"deprecat", log, flags=re.IGNORECASE), log


def test_wheel_holds_license_and_py_typed(wheel):
    path, _ = wheel
    names = zipfile.ZipFile(path).namelist()
    assert "rankmetric/py.typed" in names
    licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licenses
    text = zipfile.ZipFile(path).read(licenses[0]).decode()
    assert "BSD 3-Clause License" in text
    assert "rankmetric/preprocessing/covariances.py" in names


def test_metadata_has_one_version_and_the_imported_dependencies(wheel):
    path, _ = wheel
    (meta_name,) = [n for n in zipfile.ZipFile(path).namelist() if n.endswith("METADATA")]
    meta = zipfile.ZipFile(path).read(meta_name).decode()
    assert f"Version: {rankmetric.__version__}\n" in meta
    assert "License-Expression: BSD-3-Clause" in meta
    requires = set(re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)[^;\n]*$", meta, flags=re.M))
    assert {"joblib", "threadpoolctl", "numpy", "scipy", "scikit-learn", "torch"} <= requires


def test_every_third_party_import_is_declared():
    """Each top-level module imported by the library is a runtime dependency or an extra."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    imported = set()
    for file in (ROOT / "src" / "rankmetric").rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    distribution = {"sklearn": "scikit-learn", "faiss": "faiss-cpu"}
    third_party = imported - set(sys.stdlib_module_names) - {"rankmetric"}
    for module in sorted(third_party):
        name = distribution.get(module, module)
        assert f'"{name}>=' in pyproject, f"{module} is imported but {name} is not declared"
