"""Training: the one loop of every torch-trained estimator and what it needs.

============================  ==================================================================
``train``                     the loop (:mod:`._loop`), configured by three small groups:
                              ``Validation``, ``Stopping``, ``Checkpointing``
``TrainingResult``            what a run did
``optimisation_step``         one step: loss, guards, backward, gradient sync, update
``fit_fingerprint``           the digest of an estimator and its data a checkpoint must match
``split_validation``          the one validation split (a share of each class, or whole
                              classes); ``holdout_folds`` its disjoint folds
``per_query_scores``          the one validation scorer: per-query leave-one-out R@1 or AP,
                              from :func:`rankmetric.neighbors.relevant_places`
``retrieval_validator``       the ``Validation.score`` of an embedding among its validation items
``OneStandardErrorSelector``  the one-standard-error choice among validated steps
============================  ==================================================================
"""

from ._comparison import Z_ONE_LOOK as Z_ONE_LOOK
from ._comparison import compare_with_reference as compare_with_reference
from ._comparison import critical_value as critical_value
from ._comparison import pooled as pooled
from ._comparison import verdict as verdict
from ._fingerprint import RESUMABLE_PARAMS as RESUMABLE_PARAMS
from ._fingerprint import fit_fingerprint
from ._loop import (
    Checkpointing,
    NonFiniteLossError,
    Stopping,
    TrainingResult,
    UntrainedModelWarning,
    Validation,
    optimisation_step,
    train,
)
from ._scoring import RETRIEVAL_METRICS as RETRIEVAL_METRICS
from ._scoring import per_query_retrieval as per_query_retrieval
from ._scoring import per_query_scores
from ._scoring import retrieval_score as retrieval_score
from ._scoring import retrieval_validator as retrieval_validator
from ._split import VALIDATION_SPLITS as VALIDATION_SPLITS
from ._split import holdout_folds, split_validation
from ._split import sample_retrieval_items as sample_retrieval_items
from .model_selection import OneStandardErrorSelector as OneStandardErrorSelector
from .model_selection import paired_gain as paired_gain

__all__ = [
    "Checkpointing",
    "NonFiniteLossError",
    "Stopping",
    "TrainingResult",
    "UntrainedModelWarning",
    "Validation",
    "fit_fingerprint",
    "holdout_folds",
    "optimisation_step",
    "per_query_scores",
    "split_validation",
    "train",
]
