"""What an SPD fit that keeps its untrained network says: the warning, its message and advice.

A fit of :class:`~rankmetric.estimators.spd.SPDNetEmbedding` (or its RPL configuration) whose
one-standard-error selection keeps step 0 warns with an
:class:`~rankmetric.training.UntrainedModelWarning`: :func:`untrained_message` (why) followed by
:data:`UNTRAINED_ADVICE` (what to try). Importable from :mod:`rankmetric.estimators.spd`.
"""

from __future__ import annotations

from ..._validation import warn_at_caller
from ...training import UntrainedModelWarning

__all__ = ["UNTRAINED_ADVICE", "untrained_message", "warn_untrained_kept"]


#: What to try when a fit keeps the untrained SPD network (also for a shared training warning).
UNTRAINED_ADVICE = (
    "What to try: the untrained network is the tangent space at the training mean, so compare "
    "with MDM or TangentSpace + LogisticRegression (`rankmetric bench rpl-spd --data FILE`); "
    "hold out more (validation_fraction) or set selection_se=0.5; max_iter=0 builds this "
    "reference without a warning."
)


def untrained_message(estimator) -> str:
    """Why a fitted SPD network is its untrained start (``best_iter_ == 0``), in one sentence.

    Parameters
    ----------
    estimator : fitted SPDNetEmbedding or RPLEmbedding

    Returns
    -------
    str
        The name of the estimator, the validation scores of step 0 and of the best step with the
        paired standard error of their difference, and, when step 0 already scores 1, that nothing
        was left to learn; :data:`UNTRAINED_ADVICE` says what to try.

    Examples
    --------
    >>> import warnings
    >>> from rankmetric.datasets import make_spd_clusters
    >>> from rankmetric.estimators.spd import SPDNetEmbedding, untrained_message
    >>> X, y = make_spd_clusters(60, n_channels=4, n_classes=3, random_state=0)
    >>> est = SPDNetEmbedding(max_iter=5, learning_rate=1e-12, random_state=0, device="cpu")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = est.fit(X, y)
    >>> est.best_iter_, untrained_message(est) in str(caught[-1].message)
    (0, True)
    """
    name = type(estimator).__name__
    metric = estimator.validation_metric
    start = estimator.initial_validation_score_
    gain, noise = estimator.validation_gain_ or (0.0, 0.0)
    text = (
        f"{name} kept the untrained network (best_iter_ == 0): in {estimator.n_iter_} steps no "
        f"validated step beat its validation {metric} ({start:.3f}) by more than "
        f"{estimator.selection_se:g} paired SE (gain {gain:+.3f} ± {noise:.3f})."
    )
    if start >= 1.0:
        text += " It already scores 1 on validation: nothing was left to learn."
    return text


def warn_untrained_kept(estimator) -> None:
    """Warn that a fit kept its untrained network (the one place SPD fits say so).

    The category is the library's :class:`~rankmetric.training.UntrainedModelWarning`; the text
    is :func:`untrained_message` followed by :data:`UNTRAINED_ADVICE`, at the user's line (through
    a Pipeline too: :func:`rankmetric._validation.warn_at_caller`).
    """
    warn_at_caller(f"{untrained_message(estimator)} {UNTRAINED_ADVICE}", UntrainedModelWarning)
