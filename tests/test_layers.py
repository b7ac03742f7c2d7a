"""The layer contract of ``docs/architecture.md``: no module imports from a layer above its own.

The layers are read from the ```` ```layers ```` block of that page (top first; packages that
share a line, separated by ``|``, must not import each other), so the page and this check cannot
disagree. Every ``import`` statement counts, including those inside functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "rankmetric"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def read_layers(text: str) -> dict[str, int]:
    """``{unit: depth}`` from the ```` ```layers ```` block (0 = top)."""
    match = re.search(r"```layers\n(.*?)```", text, flags=re.S)
    if match is None:
        raise ValueError("docs/architecture.md has no ```layers block.")
    depth = {}
    for level, line in enumerate(match.group(1).strip().splitlines()):
        for unit in line.split("|"):
            depth[unit.strip()] = level
    return depth


def root_exports() -> dict[str, str]:
    """Names re-exported by ``rankmetric/__init__.py`` → the unit defining them."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_LAZY":
            lazy = ast.literal_eval(node.value)
            return {name: module.split(".")[1] for name, module in lazy.items()}
    return {}


def unit_of(module: str) -> str | None:
    """``rankmetric.estimators.warca`` → ``estimators``; the root package → None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def imported_units(path: Path, exports: dict[str, str]) -> list[tuple[int, str]]:
    """``(line, unit)`` for every import of a rankmetric module in ``path``."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    package = package.removesuffix(".__init__")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base == "rankmetric":  # names from the root: resolve the lazy re-exports
                targets = [f"rankmetric.{exports.get(a.name, a.name)}" for a in node.names]
            else:
                targets = [base]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "rankmetric":
                unit = unit_of(target)
                if unit is not None and unit != "__version__":
                    found.append((node.lineno, unit))
    return found


def violations(depth: dict[str, int]) -> list[str]:
    exports = root_exports()
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = unit_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        if own is None or own == "__init__":
            continue
        where = path.relative_to(ROOT)
        if own not in depth:
            problems.append(f"{where}: '{own}' is in no layer of docs/architecture.md")
            continue
        for line, unit in imported_units(path, exports):
            if unit == own:
                continue
            if unit not in depth:
                problems.append(f"{where}:{line}: imports '{unit}', which is in no layer")
            elif depth[unit] <= depth[own]:
                relation = "the same layer" if depth[unit] == depth[own] else "a layer above"
                problems.append(f"{where}:{line}: '{own}' imports '{unit}' from {relation}")
    return problems


def test_every_import_follows_the_layers():
    problems = violations(read_layers(ARCHITECTURE.read_text()))
    assert not problems, "\n".join(problems)


def test_every_layered_unit_names_a_module_or_is_announced():
    depth = read_layers(ARCHITECTURE.read_text())
    present = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    missing = set(depth) - present - {"neighbors"}  # neighbors: arrives from a parallel branch
    assert not missing, f"layers name modules that do not exist: {sorted(missing)}"


@pytest.mark.parametrize(
    "layers,source,expected",
    [
        ("a\nb", "from ..a import x", "'b' imports 'a' from a layer above"),
        ("a | b", "from rankmetric.a import x", "'b' imports 'a' from the same layer"),
        ("b\na", "from ..a import x", None),
    ],
)
def test_the_check_catches_upward_and_sideways_imports(
    tmp_path, monkeypatch, layers, source, expected
):
    package = tmp_path / "rankmetric"
    (package / "b").mkdir(parents=True)
    (package / "a.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "b" / "__init__.py").write_text(f"def f():\n    {source}\n")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    problems = violations(read_layers(f"```layers\n{layers}\n```"))
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1 and expected in problems[0]
