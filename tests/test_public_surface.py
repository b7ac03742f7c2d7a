"""docs/architecture.md's count of public names ("The public surface") matches the package."""

from __future__ import annotations

import importlib
import inspect
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


#: Public callables of ``rankmetric.bench`` that still call their seed ``seed`` (the bench's cells
#: are (method, data set, fold, seed) and its helpers take the cell's seed); ``BenchConfig(seeds=)``
#: is a count of repetitions, not a seed. Every other public callable says ``random_state``.
BENCH_SEEDS = {
    "rankmetric.bench.grid.Cell",
    "rankmetric.bench.warca.identity_holdout",
    "rankmetric.bench.learners.build_learner",
    "rankmetric.bench.learners.fit_learner",
    "rankmetric.bench.spd_pipelines.fit_pipeline",
    "rankmetric.bench.spd_pipelines.validation_split",
    "rankmetric.bench.spdnet_baselines.fit_spdnet_row",
    "rankmetric.bench.ssne.cv_fold",
    "rankmetric.bench.ssne.stratified_holdout",
    "rankmetric.bench.ssne.image_split",
    "rankmetric.bench.warca.fit_reid_learner",
}


def _callables(module):
    """``(where it is defined, callable)`` of a module's ``__all__``: functions, classes and the
    public methods of those classes."""
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name, None)
        if not callable(obj):
            continue
        members = vars(obj).items() if inspect.isclass(obj) else ()
        for value in [obj] + [v for m, v in members if m[0] != "_" and callable(v)]:
            where = f"{getattr(value, '__module__', module.__name__)}."
            yield where + getattr(value, "__qualname__", name), value


def test_every_public_callable_calls_its_seed_random_state():
    """One name for seeds, the estimators' (docs/architecture.md, "Seeds")."""
    offenders = set()
    for info in pkgutil.walk_packages(rankmetric.__path__, "rankmetric."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        for label, obj in _callables(importlib.import_module(info.name)):
            try:
                names = inspect.signature(obj).parameters
            except (TypeError, ValueError):  # a builtin without a signature
                continue
            if "seed" in names:
                offenders.add(label)
    assert offenders == BENCH_SEEDS
