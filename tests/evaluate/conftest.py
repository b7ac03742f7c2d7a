"""Fixtures of the evaluation tests: the brute-force references of evaluate_reference.py."""

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "evaluate_reference", Path(__file__).with_name("evaluate_reference.py")
)
_REFERENCE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_REFERENCE)


@pytest.fixture(scope="session")
def ref():
    """Brute-force definitions: explicit loops over queries, pairs and ranks."""
    return _REFERENCE
