"""Code outside the package uses rankmetric's public names only.

- The scripts in ``benchmarks/`` and ``examples/`` reach no private name of rankmetric (a module
  or name with a leading underscore): not by ``import``, not as an attribute of an imported
  module (``lmnn._helper``), not as a dotted string (``"rankmetric.x._y"``). What they need is
  public (``rankmetric.bench`` exposes what the benchmark scripts share).
- No file in ``benchmarks/``, ``examples/`` or ``tests/`` imports a private name of
  ``rankmetric.bench`` (tests of other subpackages may import the private helpers they test;
  the bench's are public). Attribute access in tests (``monkeypatch.setattr(rpl, "_fit", ...)``)
  is not an import and stays allowed.
- Inside ``src/``, a private name is imported only where it is defined: a private module by the
  modules of its package, a private function or class by its own module (``io`` may not import
  ``_safe_npz._read_member``; ``cli/evaluate.py`` may not import ``cli.fit._transform``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_DOTTED = re.compile(r"rankmetric(\.[A-Za-z_]\w*)+")


def _is_private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.endswith("__") for p in dotted.split("."))


def private_uses(source: str, prefix: str, *, attributes: bool) -> list[tuple[int, str]]:
    """``(line, dotted name)`` for each private name under ``prefix`` that ``source`` reaches.

    Imports (``import``, ``from ... import``, and a call given a whole dotted path as a string,
    as ``importlib.import_module`` or ``monkeypatch.setattr`` take) always count; with
    ``attributes``, so does ``module._name`` on a name bound to a rankmetric module or object.
    """
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> the rankmetric path it stands for
    found = []

    def check(line: int, dotted: str) -> None:
        if (dotted == prefix or dotted.startswith(prefix + ".")) and _is_private(dotted):
            found.append((line, dotted))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rankmetric":
                    check(node.lineno, alias.name)
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else "rankmetric"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "rankmetric":
                for alias in node.names:
                    check(node.lineno, f"{node.module}.{alias.name}")
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call):  # import_module("..."), monkeypatch.setattr("...", v)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if _DOTTED.fullmatch(arg.value):
                        check(node.lineno, arg.value)
    if attributes:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                chain, base = [], node
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in bound:
                    check(node.lineno, ".".join([bound[base.id], *reversed(chain)]))
    # one report per use: ``a._b.c`` is not also reported as ``a._b``
    return sorted(
        {
            (line, n)
            for line, n in found
            if not any(m.startswith(n + ".") for k, m in found if k == line)
        }
    )


def _files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def _report(files: list[Path], prefix: str, *, attributes: bool) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in private_uses(path.read_text(), prefix, attributes=attributes)
    ]


def test_scripts_use_no_private_rankmetric_name():
    problems = _report(_files("benchmarks", "examples"), "rankmetric", attributes=True)
    assert not problems, "\n".join(problems)


def test_nothing_outside_the_package_imports_a_private_name_of_bench():
    files = _files("benchmarks", "examples", "tests")
    problems = _report(files, "rankmetric.bench", attributes=False)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "attributes", "expected"),
    [
        ("from rankmetric.bench._common import BenchConfig", False, "bench._common.BenchConfig"),
        ("from rankmetric.bench.warca import _reid as r", False, "rankmetric.bench.warca._reid"),
        ("import rankmetric.bench._common", False, "rankmetric.bench._common"),
        ("import importlib\nimportlib.import_module('rankmetric.bench._common')", False, "_common"),
        ("from rankmetric.bench import warca\nwarca._features()", True, "warca._features"),
        ("from rankmetric.bench import warca\nwarca._features()", False, None),
        ("import rankmetric.bench.warca as w\nw._reid('x')", True, "rankmetric.bench.warca._reid"),
        ("import rankmetric\nrankmetric.bench._common.mean_std", True, "bench._common"),
        ("from rankmetric.bench import mean_std, warca\nwarca.BUDGETS", True, None),
        ("from rankmetric.bench.warca import __doc__", True, None),
    ],
)
def test_the_check_finds_private_names(source, attributes, expected):
    found = private_uses(source, "rankmetric.bench", attributes=attributes)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0][1], found


def test_every_public_name_of_bench_resolves_and_is_documented():
    import rankmetric.bench as bench

    assert bench.__all__ == sorted(set(bench.__all__))
    assert set(bench.__all__) <= set(dir(bench))
    for name in bench.__all__:
        value = getattr(bench, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"rankmetric.bench.{name} has no docstring"
    with pytest.raises(AttributeError, match="no attribute '_features'"):
        bench._features  # noqa: B018 - private names stay in their submodule


# --- inside the package: a private name is imported only where it is defined ---------------

PACKAGE = ROOT / "src" / "rankmetric"


def _module_path(path: Path) -> list[str]:
    parts = ["rankmetric", *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def foreign_private_imports(source: str, module: list[str], is_package: bool) -> list[str]:
    """Dotted names that module ``module`` imports from inside another module's privacy.

    A name with a leading underscore belongs to the module or package it is defined in: only
    code inside that module or package imports it (a private module of a package is imported
    by that package's modules; a private function only by its own module).
    ``rankmetric._validation.check_param`` may be imported anywhere (``_validation`` is a
    private module of the root package, which holds everything),
    ``rankmetric._safe_npz._read_member`` only inside ``_safe_npz``, and
    ``rankmetric.geometry._common.x`` only inside ``geometry``.
    """
    here = module if is_package else module[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - node.level + 1] + (node.module or "").split(".")
        elif (node.module or "").split(".")[0] == "rankmetric":
            base = node.module.split(".")
        else:
            continue
        for alias in node.names:
            target = [p for p in [*base, alias.name] if p]
            for depth, part in enumerate(target):
                private = part.startswith("_") and not part.endswith("__")
                if private and module[:depth] != target[:depth]:
                    found.append(".".join(target))
                    break
    return found


def test_no_private_name_is_imported_across_packages_inside_src():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = foreign_private_imports(
            path.read_text(), _module_path(path), path.name == "__init__.py"
        )
        if names:
            found[path.relative_to(PACKAGE).as_posix()] = names
    assert not found, "\n".join(f"{p}: {', '.join(n)}" for p, n in sorted(found.items()))


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("from .._safe_npz import _read_member", "rankmetric.io", ["_safe_npz._read_member"]),
        ("from .._validation import check_param", "rankmetric.losses.base", []),
        ("from ._common import x", "rankmetric.geometry.means", []),
        ("from ..geometry._common import x", "rankmetric.models.linear", ["geometry._common.x"]),
        ("from rankmetric.evaluate._inputs import f", "rankmetric.index.x", ["evaluate._inputs"]),
        ("from .._solver import f", "rankmetric.estimators.warca.linear", []),
        ("from ..warca._solver import f", "rankmetric.estimators.spd.x", ["warca._solver.f"]),
        ("from .fit import _transform", "rankmetric.cli.evaluate", ["cli.fit._transform"]),
    ],
)
def test_the_source_check_knows_whose_private_name_it_is(source, module, expected):
    found = foreign_private_imports(source, module.split("."), is_package=False)
    assert len(found) == len(expected) and all(e in f for e, f in zip(expected, found, strict=True))


def imports_from_root_private_modules(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` of each name that ``path`` imports from a private module of the root
    package (``rankmetric._safe_npz``, ``rankmetric._threads``, ...) that it is not part of."""
    module = _module_path(path)
    is_package = path.name == "__init__.py"
    here = module if is_package else module[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - node.level + 1] + [
                p for p in (node.module or "").split(".") if p
            ]
        elif (node.module or "").split(".")[0] == "rankmetric":
            base = node.module.split(".")
        else:
            continue
        root_private = len(base) == 2 and base[1].startswith("_") and not base[1].endswith("__")
        if root_private and module[:2] != base:
            found += [(".".join(base), alias.name) for alias in node.names]
    return found


def test_the_root_s_private_modules_are_imported_through_their_all():
    """``io`` and ``index`` import only ``_safe_npz.__all__`` (docs/architecture.md), and so do
    the importers of every other private module of the root that declares an ``__all__``."""
    import importlib

    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for module, name in imports_from_root_private_modules(path):
            names = getattr(importlib.import_module(module), "__all__", None)
            if names is not None and name not in names:
                outside.append(f"{path.relative_to(PACKAGE)}: {module}.{name}")
    assert not outside, "\n".join(outside)
    io_imports = imports_from_root_private_modules(PACKAGE / "io.py")
    assert ("rankmetric._safe_npz", "read_model_arrays") in io_imports  # the check sees them
