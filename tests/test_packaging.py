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


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> list[str]:
    """The member names of the source distribution built from a copy of the sources."""
    pytest.importorskip("build")
    tree = tmp_path_factory.mktemp("sdist_tree")
    for name in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "MANIFEST.in",
        "constraints.txt",
        "CHANGELOG.md",
        "CITATION.cff",
    ):
        shutil.copy(ROOT / name, tree / name)
    for folder in ("src", "tests"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("*.egg-info"))
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", "dist", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import tarfile

    (path,) = (tree / "dist").glob("rankmetric-*.tar.gz")
    with tarfile.open(path) as archive:
        return [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]


def test_sdist_holds_no_half_test_suite_and_the_install_pins(sdist):
    """Either a runnable suite or none (#32): none, with README, LICENSE and constraints.txt."""
    assert not [n for n in sdist if n.startswith("tests/")]
    assert {"README.md", "LICENSE", "constraints.txt", "pyproject.toml"} <= set(sdist)
    assert "src/rankmetric/__init__.py" in sdist


def test_readme_has_no_relative_link_and_no_internal_wording():
    """The README is the package index page: a relative link breaks there (#32)."""
    text = (ROOT / "README.md").read_text()
    relative = re.findall(r"\]\((?!https?://|#)([^)]+)\)", text)
    assert not relative, relative
    assert "these machines" not in text


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


#: Import name → distribution name, where they differ.
DISTRIBUTIONS = {"sklearn": "scikit-learn", "faiss": "faiss-cpu"}
#: Extras that a user never installs to run the library (they cannot declare its imports).
DEVELOPMENT_EXTRAS = {"test", "docs"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _normalise(requirement: str) -> str:
    """``"scikit-learn>=1.6"`` → ``"scikit-learn"`` (PEP 503 spelling)."""
    name = re.match(r"[A-Za-z0-9_.-]+", requirement.strip()).group(0)
    return re.sub(r"[-_.]+", "-", name).lower()


def _guards_import_errors(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(getattr(n, "id", None) in _IMPORT_ERRORS for n in names):
            return True
    return False


def third_party_imports(package: Path) -> list[tuple[str, str, str]]:
    """``(module, where, how)`` for each import of a non-stdlib module by ``package``.

    ``how`` is ``"runtime"`` (run when the module is imported), ``"lazy"`` (inside a
    function: run when it is called) or ``"guarded"`` (inside ``try: ... except ImportError``,
    where the error is turned into a message). ``importlib.import_module("name")`` with a
    literal name counts as an import. Imports under ``if TYPE_CHECKING:`` are not run.
    """
    found = []
    own = package.name

    def record(module: str | None, node, how: str, path: Path) -> None:
        top = (module or "").split(".")[0]
        if top and top not in sys.stdlib_module_names and top != own:
            found.append((top, f"{path.relative_to(package.parent)}:{node.lineno}", how))

    def visit(node, how: str, path: Path) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                record(alias.name, node, how, path)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            record(node.module, node, how, path)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "importlib.import_module",
            "import_module",
            "__import__",
        ):
            if node.args and isinstance(node.args[0], ast.Constant):
                record(str(node.args[0].value), node, how, path)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            how = "lazy" if how == "runtime" else how
        if isinstance(node, ast.Try) and _guards_import_errors(node):
            for child in node.body:
                visit(child, "guarded", path)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, how, path)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, how, path)

    for path in sorted(package.rglob("*.py")):
        visit(ast.parse(path.read_text(), filename=str(path)), "runtime", path)
    return found


def undeclared_imports(package: Path, project: dict) -> list[str]:
    """Imports that ``[project]`` does not declare as the way they are run needs.

    - a runtime import (module level) must be in ``dependencies``: an extra is not installed
      by ``pip install rankmetric``;
    - a lazy or guarded import of a module outside ``dependencies`` must be in a user-facing
      extra (never only in ``test`` / ``docs``), and a lazy one must be guarded: inside
      ``try: ... except ImportError`` or in a module that asks ``importlib.util.find_spec``
      first, so that a missing extra gives a message naming it, not a bare traceback.
    """
    required = {_normalise(r) for r in project.get("dependencies", [])}
    extras = {
        _normalise(r)
        for name, reqs in project.get("optional-dependencies", {}).items()
        if name not in DEVELOPMENT_EXTRAS
        for r in reqs
    }
    problems = []
    for module, where, how in third_party_imports(package):
        name = _normalise(DISTRIBUTIONS.get(module, module))
        if name in required:
            continue
        if how == "runtime":
            problems.append(
                f"{where}: {module} is imported at runtime but {name} is not in "
                "[project] dependencies"
            )
        elif name not in extras:
            problems.append(f"{where}: {module} is imported but {name} is in no user extra")
        elif how == "lazy":
            text = (package.parent / where.rsplit(":", 1)[0]).read_text()
            if f'find_spec("{module}")' not in text:
                problems.append(f"{where}: {module} (extra only) is imported without a guard")
    return problems


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_every_third_party_import_is_declared_as_it_is_run():
    """Runtime imports are dependencies; optional ones are guarded and in a user extra."""
    problems = undeclared_imports(ROOT / "src" / "rankmetric", _project())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import matplotlib\n", "matplotlib is imported at runtime"),  # only in extras
        ("def f():\n    import pytest\n", "pytest is in no user extra"),  # test extra only
        ("def f():\n    import matplotlib\n", "imported without a guard"),
        ("import importlib\nimportlib.import_module('faiss')\n", "faiss is imported at runtime"),
        (
            "def f():\n    try:\n        import matplotlib\n    except ImportError:\n"
            "        raise ImportError('pip install rankmetric[plot]') from None\n",
            None,
        ),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pytest\n", None),
        ("import numpy\nfrom sklearn import base\n", None),
    ],
)
def test_the_check_ignores_extras_for_runtime_imports(tmp_path, source, expected):
    package = tmp_path / "rankmetric"
    package.mkdir()
    (package / "m.py").write_text(source)
    project = {
        "dependencies": ["numpy>=1", "scikit-learn>=1"],
        "optional-dependencies": {
            "plot": ["matplotlib>=3"],
            "faiss": ["faiss-cpu>=1"],
            "test": ["pytest>=8"],
        },
    }
    problems = undeclared_imports(package, project)
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1 and expected in problems[0], problems


def test_lint_requires_zip_strict_everywhere():
    """ruff's B905 (``zip()`` without ``strict=``) is selected and exempted nowhere."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    selected = lint.get("select", []) + lint.get("extend-select", [])
    assert any("B905".startswith(code) for code in selected)
    exempt = [*lint.get("ignore", []), *lint.get("extend-ignore", [])]
    exempt += [c for codes in lint.get("per-file-ignores", {}).values() for c in codes]
    assert not any("B905".startswith(code) for code in exempt), exempt
    noqa = [
        str(path.relative_to(ROOT))
        for folder in ("src", "tests", "benchmarks", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"noqa:[^\n]*B" + "905", path.read_text())  # split: not matching itself
    ]
    assert not noqa, noqa


#: Import name → distribution name for the tests' imports (beside ``DISTRIBUTIONS``).
TEST_DISTRIBUTIONS = {
    **DISTRIBUTIONS,
    "yaml": "pyyaml",
    "PIL": "pillow",
    "pytorch_metric_learning": "pytorch-metric-learning",
    "_pytest": "pytest",
}


def _local_modules() -> set[str]:
    """Names the tests import from the repository itself (test helpers, docs tools, benchmarks)."""
    names = {"rankmetric", "conftest", "tests", "benchmarks", "examples", "docs"}
    for folder in ("tests", "docs/tools", "benchmarks", "examples"):
        names |= {p.stem for p in (ROOT / folder).rglob("*.py")}
        names |= {p.name for p in (ROOT / folder).rglob("*") if p.is_dir()}
    return names


def test_every_package_the_tests_import_is_in_the_test_extra():
    """``make test`` on a fresh clone needs nothing beyond ``.[test]`` (#32).

    A test that needs a package outside the library's dependencies must find it in the ``test``
    extra: a package that only the ``docs`` extra holds passes in CI (which builds the docs
    first) and fails on a user's fresh clone.
    """
    project = _project()
    declared = {_normalise(r) for r in project["dependencies"]}
    declared |= {_normalise(r) for r in project["optional-dependencies"]["test"]}
    local = _local_modules()
    missing = []
    for module, where, _ in third_party_imports(ROOT / "tests"):
        if module in local:
            continue
        name = _normalise(TEST_DISTRIBUTIONS.get(module, module))
        if name not in declared:
            missing.append(f"{where}: {module} ({name}) is not in the test extra")
    assert not missing, "\n".join(sorted(set(missing)))
