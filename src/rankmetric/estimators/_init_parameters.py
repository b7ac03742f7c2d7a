"""One way for an estimator's ``__init__`` to store its hyper-parameters, untouched."""

from __future__ import annotations

from collections.abc import Mapping

from sklearn.base import BaseEstimator

from .._validation import DEVICE, RANDOM_STATE, VERBOSE

__all__ = ["TRAINING_PARAMETER_CONSTRAINTS", "store_parameters"]

#: Constraints of the seed, device and progress parameters every trained estimator takes.
TRAINING_PARAMETER_CONSTRAINTS = {
    "random_state": [RANDOM_STATE],
    "device": [DEVICE],
    "verbose": VERBOSE,
}


def store_parameters(estimator: BaseEstimator, values: Mapping[str, object]) -> None:
    """Set every constructor parameter of ``estimator`` from ``values``, as given.

    Call it as the whole body of ``__init__``: ``store_parameters(self, locals())``. The names
    are those of the ``__init__`` signature (scikit-learn's ``_get_param_names``, which reads
    through ``deprecate_positional_args``), so the stored attributes are exactly what
    ``get_params`` returns and ``clone`` copies, and a signature of several dozen keywords is not
    repeated as as many assignments in every estimator.

    Parameters
    ----------
    estimator : BaseEstimator
    values : mapping
        The ``__init__``'s ``locals()``.
    """
    for name in type(estimator)._get_param_names():
        setattr(estimator, name, values[name])
