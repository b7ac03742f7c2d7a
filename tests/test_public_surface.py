"""docs/architecture.md's count of public names ("The public surface") matches the package."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import rankmetric

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def public_names(under: str = "rankmetric") -> set[str]:
    """Every name in the ``__all__`` of a public module (no leading underscore) inside ``under``,
    and the root's when ``under`` is the whole package."""
    names = set(rankmetric.__all__) if under == "rankmetric" else set()
    for info in pkgutil.walk_packages(rankmetric.__path__, "rankmetric."):
        inside = info.name == under or info.name.startswith(under + ".")
        if inside and not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.update(getattr(importlib.import_module(info.name), "__all__", []))
    return names


def test_the_documented_count_is_the_package_s():
    section = ARCHITECTURE.read_text().split("## 8. The public surface", 1)[1]
    stated = int(re.search(r"\*\*(\d+)\*\* distinct public names", section).group(1))
    assert stated == len(public_names())


def test_the_root_names_are_the_ones_documented():
    section = ARCHITECTURE.read_text().split("## 8. The public surface", 1)[1]
    stated = int(re.search(r"\*\*`rankmetric\.\*`\*\* \((\d+) names", section).group(1))
    assert stated == len(rankmetric.__all__) - 1  # without __version__


def test_the_bench_s_share_is_the_documented_one():
    section = ARCHITECTURE.read_text().split("## 8. The public surface", 1)[1]
    stated = re.search(r"\*\*`rankmetric\.bench`\*\* \(\*\*(\d+)\*\* of them", section)
    assert int(stated.group(1)) == len(public_names("rankmetric.bench"))
