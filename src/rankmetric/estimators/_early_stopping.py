"""The validation convention of every iteratively trained estimator, declared once.

One meaning for each parameter (``docs/architecture.md``, "Validation"):

* ``n_iter_no_change``: validations without improvement before the fit stops (scikit-learn's
  name; ``patience``, its name before 0.2, still works until 0.3 with a ``FutureWarning``:
  :data:`RENAMED_PATIENCE`);
* ``validation_fraction``: the share of ``(X, y)`` held out inside ``fit`` for early stopping
  (0: none), so early stopping works in a ``Pipeline`` and ``GridSearchCV``. ``fit(X, y, X_val,
  y_val)`` is deprecated in its favour (:func:`warn_validation_set`);
* ``validation_split="stratified"`` holds out a share of each class's samples,
  ``validation_split="groups"`` holds out a share of the classes (identities) whole, so the
  validation identities are never seen in training — the only valid validation in
  re-identification (:func:`rankmetric.training.split_validation`);
* validation scores **retrieval among the validation items**, leave-one-out
  (:func:`rankmetric.training.per_query_scores`);
* the held-out check after ``fit`` (is the learned metric better than none?) is another thing,
  under its own name, ``held_out_check`` (:mod:`rankmetric.estimators._held_out`).

Also here: the check that a fitted metric ranks above its untrained reference (the Euclidean
distance of the inputs), which turns a useless model into an
:class:`~rankmetric.training.UntrainedModelWarning` rather than a silent result.
"""

from __future__ import annotations

import warnings
from numbers import Real

from .._validation import NONE, POSITIVE_INT, Interval, Options
from .._validation.compat import warn_deprecated
from ..training import VALIDATION_SPLITS, UntrainedModelWarning

__all__ = [
    "EARLY_STOPPING_CONSTRAINTS",
    "MAX_REFERENCE_ITEMS",
    "RENAMED_PATIENCE",
    "VALIDATION_PARAMETER_CONSTRAINTS",
    "warn_if_below_reference",
    "warn_validation_set",
]

#: Most items the check against the Euclidean reference ranks (raw inputs can be wide).
MAX_REFERENCE_ITEMS = 500

#: The early-stopping parameters of every iteratively trained estimator, declared once.
EARLY_STOPPING_CONSTRAINTS = {
    "validation_fraction": [Interval(Real, 0, 1, closed="left")],
    "validation_every": [POSITIVE_INT],
    "n_iter_no_change": [NONE, POSITIVE_INT],
}
#: With the choice of the held-out share (the estimators of vectors).
VALIDATION_PARAMETER_CONSTRAINTS = {
    **EARLY_STOPPING_CONSTRAINTS,
    "validation_split": [Options(*VALIDATION_SPLITS)],
}
#: ``_renamed_parameters`` of every iteratively trained estimator: the patience's old name.
RENAMED_PATIENCE = {"patience": "n_iter_no_change"}


def warn_if_below_reference(
    learned: float,
    reference: float,
    *,
    desc: str,
    where: str,
    metric: str,
    hint: str | None,
    n_items: int | None = None,
) -> bool:
    r"""Issue an :class:`UntrainedModelWarning` when ``learned`` is below ``reference`` by more
    than the noise of ``n_items`` queries; return whether.

    The noise is one binomial standard error of the reference score,
    :math:`\sqrt{p (1 - p) / n}`, and at least one query (:math:`1 / n`): a learned metric that
    misses one more of 1,000 items than a perfect Euclidean ranking is not "worse than no metric
    learning". Without ``n_items`` any deficit warns.

    Parameters
    ----------
    learned, reference : float
        The fitted metric's and the reference's (the Euclidean distance's) retrieval scores.
    desc : str
        The estimator's name.
    where : str
        Which items were ranked (``"the validation items"``).
    metric : str
        The score's name.
    hint : str or None
        What to try, appended to the message.
    n_items : int, optional
        Number of queries the two scores average over.
    """
    noise = 0.0
    if n_items:
        p = min(max(reference, 0.0), 1.0)
        noise = max((p * (1 - p) / n_items) ** 0.5, 1.0 / n_items)
    if not learned < reference - noise:
        return False
    warnings.warn(
        f"{desc}: the fitted metric ranks below the Euclidean distance of the inputs on {where} "
        f"(leave-one-out {metric} {learned:.4g} against {reference:.4g}): it is worse than no "
        f"metric learning.{f' {hint}' if hint else ''}",
        UntrainedModelWarning,
        stacklevel=3,
    )
    return True


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def warn_validation_set(owner: str) -> None:
    """The ``FutureWarning`` of ``fit(X, y, X_val, y_val)``: ``validation_fraction`` instead.

    Parameters
    ----------
    owner : str
        The estimator's class name.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_validation_set("WARCA")
    >>> caught[0].category.__name__
    'FutureWarning'
    """
    warn_deprecated(
        f"{owner}.fit(X, y, X_val, y_val)",
        "Let fit hold the validation set out of (X, y): validation_fraction=... (with "
        "validation_split='groups' for held-out identities)",
        stacklevel=None,
    )
