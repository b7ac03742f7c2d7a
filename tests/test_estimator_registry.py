"""Every table of estimators is derived from the one in ``rankmetric._registry``."""

from __future__ import annotations

import importlib

import pytest

import rankmetric
import rankmetric.estimators
from rankmetric import io
from rankmetric._registry import ESTIMATORS, TUNED_MODULE, exports, module_of
from rankmetric.bench import learners
from rankmetric.cli import fit as fit_cli
from rankmetric.tuning import CV_CLASSES


@pytest.mark.parametrize("entry", ESTIMATORS, ids=lambda e: e.cls)
def test_each_entry_names_a_class_of_its_module(entry):
    cls = getattr(importlib.import_module(entry.path), entry.cls)
    assert cls.__name__ == entry.cls and cls.__module__ == entry.path
    assert getattr(rankmetric, entry.cls) is cls
    assert getattr(rankmetric.estimators, entry.cls) is cls
    assert (io._REGISTRY.get(entry.cls) is cls) == entry.model_file  # @register_estimator
    assert module_of(entry.cls) == (entry.path if entry.model_file else None)


def test_the_lazy_exports_are_the_table():
    assert rankmetric.estimators.__all__ == [e.cls for e in ESTIMATORS]
    tuned = [e.tuned for e in ESTIMATORS if e.tuned]
    assert [n for n in rankmetric.__all__ if n in exports()] == [e.cls for e in ESTIMATORS] + tuned
    for name in tuned:
        assert getattr(rankmetric, name).__module__.startswith(f"rankmetric.{TUNED_MODULE}")


def test_the_cli_methods_are_the_table():
    assert fit_cli.METHODS == {e.name: e for e in ESTIMATORS if e.fit_input}
    assert {e.fit_input for e in ESTIMATORS} <= {None, "features", "spd"}
    for method, entry in fit_cli.METHODS.items():
        assert fit_cli._estimator_class(method).__name__ == entry.cls


def test_the_tuned_learners_are_the_table():
    assert {m: c.__name__ for m, c in CV_CLASSES.items()} == {
        e.name: e.tuned for e in ESTIMATORS if e.tuned
    }
    for method, cls in CV_CLASSES.items():  # each tunes its own estimator
        assert cls._learner.__name__ == fit_cli.METHODS[method].cls


def test_the_bench_learners_are_the_table():
    ours = {e.name: e for e in ESTIMATORS if e.label}
    assert {m: p for m, p in learners.CLASSES.items() if m in ours} == {
        m: f"{e.path}.{e.cls}" for m, e in ours.items()
    }
    assert set(learners.CLASSES) - set(ours) == {"nca"}  # scikit-learn's, not ours
    assert {m: learners.LABELS[m] for m in ours} == {m: e.label for m, e in ours.items()}
    assert set(learners.LABELS) == set(learners.CLASSES) | set(learners.EUCLIDEAN)


def test_names_are_unique():
    for field in ("cls", "name", "label", "tuned"):
        values = [getattr(e, field) for e in ESTIMATORS if getattr(e, field)]
        assert len(values) == len(set(values)), field
