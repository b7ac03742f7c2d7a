"""Renamed hyper-parameters (0.2): the old name still works this release, with a FutureWarning.

One case per alias: fitting with the old name warns naming the new one and learns exactly
what the new name learns; ``get_params`` / ``clone`` / ``set_params`` keep the old name's value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from rankmetric.datasets import make_gaussian_clusters
from rankmetric.estimators.itml import ITML
from rankmetric.estimators.lmnn import LMNN, MultiMetricLMNN

_FAST = {
    LMNN: {"max_iter": 15, "device": "cpu"},
    MultiMetricLMNN: {"max_iter": 5, "device": "cpu"},
    ITML: {"max_iter": 20, "random_state": 0},
}

ALIASES = [
    (LMNN, "k", "n_target_neighbors", 2),
    (LMNN, "regularization", "push_weight", 0.3),
    (MultiMetricLMNN, "k", "n_target_neighbors", 2),
    (MultiMetricLMNN, "regularization", "push_weight", 0.3),
    (ITML, "gamma", "slack_weight", 0.5),
    (ITML, "num_constraints", "n_constraints", 30),
]


def _fit(cls, **params):
    X, y = make_gaussian_clusters(36, 4, 3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # convergence, small classes
        return cls(**_FAST[cls], **params).fit(X, y)


@pytest.mark.parametrize(
    ("cls", "old", "new", "value"), ALIASES, ids=[f"{c.__name__}-{o}" for c, o, _, _ in ALIASES]
)
def test_old_name_warns_and_fits_as_the_new_name(cls, old, new, value):
    with pytest.warns(FutureWarning, match=f"'{old}' was renamed '{new}'.*Use {new}="):
        by_old = _fit(cls, **{old: value})
    by_new = _fit(cls, **{new: value})
    np.testing.assert_array_equal(by_old.components_, by_new.components_)
    assert not np.array_equal(by_new.components_, _fit(cls).components_)  # the value matters


@pytest.mark.parametrize(
    ("cls", "old", "new", "value"), ALIASES, ids=[f"{c.__name__}-{o}" for c, o, _, _ in ALIASES]
)
def test_old_name_survives_get_params_clone_and_set_params(cls, old, new, value):
    est = cls(**{old: value})
    assert est.get_params()[old] == value
    assert clone(est).get_params()[old] == value
    assert cls().set_params(**{old: value}).get_params()[old] == value
    assert cls().get_params()[old] == "deprecated"  # not given: the new name is used


def test_new_name_is_used_when_the_old_one_is_not_given():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert LMNN(n_target_neighbors=4)._param("n_target_neighbors") == 4
