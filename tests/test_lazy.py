"""The lazy exports of the root, estimators and datasets packages (``rankmetric._lazy``)."""

from __future__ import annotations

import math

import pytest

import rankmetric
import rankmetric.datasets
import rankmetric.estimators
from rankmetric._lazy import lazy_exports


def test_a_name_is_imported_from_its_table_entry():
    getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math", "join": "os.path"}, ["sqrt", "join"])
    assert getattr_("sqrt") is math.sqrt
    assert dir_() == ["join", "sqrt"]


def test_relative_modules_resolve_against_the_package():
    getattr_, _ = lazy_exports("rankmetric", {"WARCA": ".estimators.warca"}, ["WARCA"])
    assert getattr_("WARCA") is rankmetric.WARCA


def test_the_cache_keeps_a_name_once_imported():
    cache: dict = {}
    getattr_, _ = lazy_exports("pkg", {"sqrt": "math"}, ["sqrt"], cache)
    getattr_("sqrt")
    assert cache == {"sqrt": math.sqrt}
    getattr_, _ = lazy_exports("pkg", {"sqrt": "math"}, ["sqrt"])  # no cache: nothing kept
    assert getattr_("sqrt") is math.sqrt


@pytest.mark.parametrize("module", [rankmetric, rankmetric.estimators, rankmetric.datasets])
def test_unknown_names_raise_attribute_error_naming_the_package(module):
    message = rf"module '{module.__name__}' has no attribute 'nope'"
    with pytest.raises(AttributeError, match=message):
        getattr(module, "nope")  # noqa: B009 (the attribute lookup under test)
    assert dir(module) == sorted(module.__all__)
    assert all(getattr(module, name) is not None for name in module.__all__)
