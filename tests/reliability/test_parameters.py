"""Every estimator declares every hyper-parameter, and ``fit`` enforces the declarations.

One test per estimator of ``_estimators.SPECS`` (the ``spec`` fixture); ``fit`` enforcing each
declaration at its bounds is ``test_parameter_boundaries.py``. The declarations are the
``_parameter_constraints`` of :mod:`rankmetric._validation`; a renamed parameter (in
``_renamed_parameters``) is covered by its new name's declaration.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from sklearn.base import clone

from rankmetric._validation import DEPRECATED

from .conftest import estimators

make_data = estimators.make_data


def _constructor_parameters(cls) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def test_every_constructor_parameter_has_a_declaration(spec):
    cls = spec.cls
    renamed = cls._renamed_parameters
    declared = set(cls._parameter_constraints)
    params = set(_constructor_parameters(cls))
    assert params - set(renamed) == declared, "declared but not a parameter, or undeclared"
    assert set(renamed.values()) <= declared
    assert all(
        inspect.signature(cls.__init__).parameters[old].default == DEPRECATED for old in renamed
    )


def test_constructor_arguments_are_keyword_only(spec):
    kinds = {p.kind for p in inspect.signature(spec.cls.__init__).parameters.values()}
    assert kinds == {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
    assert list(inspect.signature(spec.cls.__init__).parameters)[0] == "self"


def test_validate_params_has_scikit_learns_signature(spec):
    assert list(inspect.signature(spec.cls._validate_params).parameters) == ["self"]


def test_a_positional_argument_warns_naming_the_keyword(spec):
    first = _constructor_parameters(spec.cls)[0]
    default = spec.cls().get_params()[first]
    with pytest.warns(FutureWarning, match=f"pass {first}="):
        est = spec.cls(default)
    assert est.get_params() == spec.cls().get_params()


def test_defaults_satisfy_the_declarations(spec):
    est = spec.cls()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # no default is a deprecated alias
        est._validate_params()
    assert clone(est).get_params() == est.get_params()


def test_multi_metric_lmnn_declares_and_enforces_every_parameter():
    """mLMNN is a classifier, outside ``SPECS``: every parameter declared.

    ``fit`` enforcing each declaration, at its bounds, for every estimator and transformer:
    ``test_parameter_boundaries.py``.
    """
    from rankmetric.estimators.lmnn import MultiMetricLMNN

    renamed = MultiMetricLMNN._renamed_parameters
    params = set(_constructor_parameters(MultiMetricLMNN))
    assert params - set(renamed) == set(MultiMetricLMNN._parameter_constraints)
