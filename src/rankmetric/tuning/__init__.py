"""Budgeted self-tuning: ``WARCACV``, ``KernelWARCACV``, ``SSNECV``, ``ITMLCV``, ``KISSMECV``,
``XQDACV`` and ``LMNNCV``.

scikit-learn's ``*CV`` convention: ``KernelWARCACV().fit(X, y)`` chooses the learner's few
decisive hyper-parameters on validation data held out of ``(X, y)`` itself, then refits the
learner on all of ``(X, y)`` with the chosen values. One implementation
(:class:`TunedMetricLearner`) serves every learner; a subclass names the learner and its search
space (:meth:`TunedMetricLearner.search_space`).

How a fit runs:

1. **Hold-out by group.** A quarter of the labels (identities or classes) is held out
   (:func:`group_holdout`), with every row of those groups; with ``split="stratified"`` a
   quarter of the rows of every class instead. ``split="auto"`` holds groups out when cameras are
   given or there are at least :data:`MIN_GROUPS_FOR_GROUP_SPLIT` labels (re-identification,
   retrieval of unseen classes), rows otherwise (a classifier over known classes).
2. **Score = the task's metric** on the held-out part: rank-1 of the Market-1501 protocol when
   cameras are given (:func:`rankmetric.evaluate.reid_scores`, one query per (identity, camera)
   track), leave-one-out recall@1 among the held-out groups without cameras
   (:func:`rankmetric.evaluate.retrieval_scores`), and k-NN accuracy of the held-out rows against
   the training rows with ``split="stratified"`` (:func:`rankmetric.evaluate.knn_accuracy`).
3. **The default first.** The learner with its defaults (``estimator``'s parameters) is fitted on
   the training part and scored; its fit time is the budget's unit, ``t_default``.
4. **Successive halving** (Jamieson & Talwalkar 2016) over candidates drawn at random from the
   search space (seeded by ``random_state``): round ``i`` fits its candidates on a nested
   subsample of ``eta**(i - k)`` of the training groups (rows within classes with the stratified
   split), the best ``1/eta`` go on to the next round, the last round uses the whole training
   part. The search gets what is left of ``budget × t_default`` after the default's fit and
   scoring and before the final refit, split evenly between rounds, a round's unspent time
   carried over; a round stops drawing when its next fit (predicted from the round's measured
   fits) would overrun it, and the first round draws as many candidates as its share affords.
   Learners whose solver takes a starting point (WARCA, LMNN: ``init``) start a promoted
   candidate from its previous round's map (a warm start). A rank (``n_components``) larger
   than a subsampled round supports is fitted at the learner's default rank in that round
   (noted in ``error``).
5. **Choice and refit.** The best score among the candidates fitted on the whole training part,
   the default included (the default on ties), is refitted on all of ``(X, y)``.

A whole tuned fit takes about ``budget`` times a default fit (``benchmarks/bench_tuning.py``
measures the ratio): the search gets what is left of ``budget × t_default`` after the default's
fit and scoring and before the refit, and its accounting includes the scoring. The first round
fits at least ``eta`` candidates and every later round at least one, and a single fit may
overrun its round's share, so the ratio can exceed ``budget`` when single fits are slow
compared with the whole budget or faster than their scoring.

The held-out part is carved from the data given to ``fit`` only: pass training data, never a
test split (tests/test_tuning.py checks that no row given to ``fit`` or ``score`` during the
search comes from outside it, and that the held-out rows reach only the final refit).

Model files: ``save`` writes the best estimator (``best_estimator_``); :func:`rankmetric.load_model`
returns that base learner (a ``WARCA`` for a ``WARCACV``), which transforms identically.
"""

from ._learners import (
    CV_CLASSES,
    ITMLCV,
    KISSMECV,
    LMNNCV,
    SSNECV,
    WARCACV,
    XQDACV,
    KernelWARCACV,
    tuned_learner,
)
from ._search import TunedMetricLearner
from ._split import MIN_GROUPS_FOR_GROUP_SPLIT, MIN_ROUND_GROUPS, group_holdout

__all__ = [
    "CV_CLASSES",
    "MIN_GROUPS_FOR_GROUP_SPLIT",
    "MIN_ROUND_GROUPS",
    "TunedMetricLearner",
    "WARCACV",
    "KernelWARCACV",
    "SSNECV",
    "ITMLCV",
    "KISSMECV",
    "XQDACV",
    "LMNNCV",
    "group_holdout",
    "tuned_learner",
]
