"""Fixtures of the data-set tests.

Tests marked ``data`` read the fetched sets from the default cache (``rankmetric data fetch all``
runs before the test suite in CI).
"""

import shutil

import pytest

from rankmetric.datasets import data_home


@pytest.fixture
def fetched_copy(tmp_path):
    """Copy one fetched set into a fresh data home and return that home."""

    def copy(name: str):
        shutil.copytree(data_home() / name, tmp_path / name)
        return tmp_path

    return copy
