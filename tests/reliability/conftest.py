"""Fixtures of the reliability suite: one parametrisation over every public estimator.

A test that takes the ``spec`` argument runs once per estimator of ``_estimators.SPECS``;
``torch_spec`` runs over the estimators trained by :func:`rankmetric.training.train`.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

_PATH = Path(__file__).with_name("_estimators.py")
_SPEC = importlib.util.spec_from_file_location("reliability_estimators", _PATH)
estimators = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = estimators  # dataclasses look their module up by name
_SPEC.loader.exec_module(estimators)


def pytest_generate_tests(metafunc):
    if "spec" in metafunc.fixturenames:
        specs = estimators.SPECS
        metafunc.parametrize("spec", specs, ids=[s.name for s in specs])
    if "torch_spec" in metafunc.fixturenames:
        specs = [s for s in estimators.SPECS if s.torch_trained]
        metafunc.parametrize("torch_spec", specs, ids=[s.name for s in specs])


@pytest.fixture(scope="session")
def all_specs():
    return estimators.SPECS


@pytest.fixture(scope="session")
def fitted_models():
    """``{name: (estimator fitted on spec.data(), X, y)}``, fitted once per session."""
    cache = {}

    def get(spec):
        if spec.name not in cache:
            X, y = spec.data()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
                cache[spec.name] = (spec.make().fit(X, y), X, y)
        return cache[spec.name]

    return get
