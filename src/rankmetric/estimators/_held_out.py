"""The held-out check of every learner: is the learned distance better than its reference?

Metric learning is worth using only if the learned distance beats the plain one on items it has
not seen. After each fit, with ``held_out_check="auto"`` (the default of every learner), part of
the training groups (classes, identities; for pairs, the connected components of the similar
pairs) is held out whole, a second fit with the same settings (the *probe*) learns on the other
groups, and on the held-out groups its distance is compared with the **reference distance** of
the same preprocessing (the Euclidean distance of the inputs, or of KISSME's PCA features; the
untrained network for the SPD networks):

* labels: the leave-one-out average precision (mAP) of each held-out item among the other
  held-out items, cross-camera when ``cameras`` are given; with few groups the held-out groups
  rotate through up to :data:`MAX_FOLDS` disjoint folds (:func:`held_out_folds`);
* pairs and triplets: the ROC AUC of the held-out pairs (both members in held-out groups);
* a classifier of its training classes (``MultiMetricLMNN``): 20 % of each class's samples held
  out, its k-NN accuracy there against the Euclidean k-NN rule's (each sample counts alone in
  the standard error: the classes are its training ones).

Fits inside scikit-learn's cross-validation skip it (``"auto"``): the search scores held-out
folds itself, and its final refit is checked.

The comparison is paired (the same queries, the same pairs), and its standard error is counted
over the held-out **groups**, not the items (:func:`rankmetric.training.pooled`: each query's or
pair's influence summed per group, a pair between two groups in both; Student's t with groups − 1
degrees of freedom): which classes happen to be held out moves the difference far more than the
items' noise (on inner splits of digits and satellite the folds' item-level z spread with SDs of
2.9 and 5.4, ``docs/reliability.md``). The folds run one at a time, each a probe fit: after
each, the comparison pooled over the folds so far ends the check when it is beyond
:data:`SEQUENTIAL_BOUNDS` either way (O'Brien–Fleming boundaries: 2.96, 2.09, 1.71 normal
standard errors after folds 1, 2, 3 of three, each turned into Student's t at that look's degrees
of freedom by :func:`rankmetric.training.critical_value`), so that a level comparison is called
below no more often than one look at ``Z_BELOW`` (1.645, one-sided 5 %) would; an undecided
comparison runs every fold. The verdict (:func:`rankmetric.training.verdict`): **below** or
**better** beyond the last look's ``bound``; within it, **not better** when the difference is
negative, else **level**. Below and not better issue an
:class:`~rankmetric.training.UntrainedModelWarning` (how much, on what, what to try; "never worse
than Euclidean without saying so": with few held-out classes a real loss is often within the
noise, and the user is told), and with ``fallback="reference"`` the estimator returns the
reference metric instead (its transform becomes the identity of the same preprocessing: the
better-scoring of the two on the held-out groups). The model returned without fallback is the one
fitted on all the data: the check never changes it. The result is the fitted attribute
``held_out_check_`` (with ``n_folds`` run of ``folds_planned``, the ``bound`` applied and the
``verdict``); fewer than :data:`MIN_GROUPS` groups with two items skip the check, which
``held_out_check_`` says (and, with ``held_out_check=True``, a warning at each fit).

:func:`held_out_folds`, :func:`pair_groups`, :func:`compare_with_reference`
and :func:`pooled` are the pieces, reusable by a tuning loop.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import sys
import warnings
from collections.abc import Callable, Iterator
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from .._distances import paired_squared_euclidean
from .._validation import BOOLEAN, NONE, Options
from .._validation.compat import warn_at_caller
from .._validation.points import pair_groups
from ..training import (
    Z_ONE_LOOK,
    UntrainedModelWarning,
    compare_with_reference,
    critical_value,
    holdout_folds,
    pooled,
    sample_retrieval_items,
    split_validation,
    verdict,
)
from ._supervision import check_pair_supervision, check_triplet_supervision, pairs_from_triplets

__all__ = [
    "FALLBACKS",
    "HELD_OUT_FRACTION",
    "HELD_OUT_PARAMETER_CONSTRAINTS",
    "MIN_GROUPS",
    "SEQUENTIAL_BOUNDS",
    "Z_BELOW",
    "HeldOutCheckMixin",
    "compare_with_reference",
    "held_out_folds",
    "pooled",
    "pair_groups",
    "run_held_out_check",
]

#: Share of the groups held out by a fold (at least two groups).
HELD_OUT_FRACTION = 0.2
#: Groups held out over all folds (each fold its own groups), and the most folds (probe fits).
MIN_HELD_GROUPS = 6
MAX_FOLDS = 3
#: Fewest groups with two items (labels) or groups (pairs) for the check to run: two held out and
#: at least four left to learn from.
MIN_GROUPS = 6
#: How the split's messages name the check.
CHECK = "the held-out check"
#: The learned distance is below the reference when the paired difference is below ``-Z_BELOW``
#: standard errors (one-sided, about 95 %), when one fold is all there is to look at.
Z_BELOW = Z_ONE_LOOK
#: The folds run one at a time: after fold ``k`` of ``K``, a pooled difference beyond
#: ``SEQUENTIAL_BOUNDS[K][k - 1]`` standard errors either way ends the check (below: the warning;
#: above: none); otherwise the next fold runs, and the last fold's bound decides. O'Brien–Fleming
#: boundaries ``c · sqrt(K / k)``, ``c`` such that a level comparison crosses the lower one at
#: some look with probability ``norm.sf(Z_BELOW)``: the false-alarm rate of one look at
#: ``Z_BELOW`` (``benchmarks/bench_warca_small.py``'s ``sequential_bounds`` computes them;
#: ``tests/bench/test_bench_warca_small.py`` checks these against it and by simulation).
SEQUENTIAL_BOUNDS = {1: (Z_BELOW,), 2: (2.37317, 1.67809), 3: (2.96135, 2.09399, 1.70974)}
#: The verdicts that warn (and fall back with ``fallback="reference"``): below the reference
#: beyond the bound, or below it within the noise (:func:`rankmetric.training.verdict`).
WARNED = ("below", "not better")
#: Most held-out items ranked (every held-out group its share:
#: :func:`rankmetric.training.sample_retrieval_items`), most held-out pairs scored.
MAX_HELD_OUT_ITEMS = 2000
MAX_HELD_OUT_PAIRS = 200_000
#: ``fallback``: None (keep the learned metric) or ``"reference"``.
FALLBACKS = ("reference",)
#: Fit arguments with one entry per row of ``X``, sliced with it for the probe.
ROW_ARGUMENTS = ("cameras", "domains")

#: The two parameters of every learner, declared once.
HELD_OUT_PARAMETER_CONSTRAINTS = {
    "held_out_check": [Options("auto"), BOOLEAN],
    "fallback": [NONE, Options(*FALLBACKS)],
}

#: Depth of the rankmetric fits running in this context: only the outermost one checks.
_FIT_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("rankmetric_fit_depth", default=0)


def held_out_folds(groups, random_state) -> list[tuple[np.ndarray, np.ndarray]]:
    """The check's folds: :data:`HELD_OUT_FRACTION` of the groups each, whole and disjoint, as
    many as it takes to hold out :data:`MIN_HELD_GROUPS` in all (at most :data:`MAX_FOLDS`):
    with few groups one comparison would depend on which were drawn. The package's one split
    (:func:`rankmetric.training.holdout_folds`).

    Examples
    --------
    >>> import numpy as np
    >>> [len(held) for _, held in held_out_folds(np.repeat(np.arange(6), 3), 0)]
    [6, 6, 6]
    """
    codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    return holdout_folds(
        codes,
        HELD_OUT_FRACTION,
        np.random.default_rng(random_state),
        min_groups=MIN_GROUPS,
        min_held=MIN_HELD_GROUPS,
        max_folds=MAX_FOLDS,
        what=CHECK,
    )


class HeldOutCheckMixin:
    """The hooks of the held-out check that a learner may override.

    ``_held_out_reference(X)``: the reference embedding of rows of ``X`` for the fitted
    estimator (default: the inputs, flattened: the Euclidean distance); ``_reference_params``:
    when not None, the reference is this estimator refitted with these parameters (the SPD
    networks: ``{"max_iter": 0}``); ``_use_reference()``: turn the fitted estimator into its
    reference (``fallback="reference"``); ``_held_out_metric``: the score of label fits.
    """

    _reference_params: dict | None = None
    _held_out_metric = "map"
    #: What to try when the learned metric is below its reference (one short sentence).
    _held_out_hint = "try another regularisation, fewer steps or a validation set"

    def _held_out_reference(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64).reshape(X.shape[0], -1)

    def _use_reference(self) -> None:
        """Make the fitted model its reference (the Mahalanobis learners: identity map)."""
        self.components_ = np.eye(self.n_features_in_, dtype=self.components_.dtype)

    def _reference_in_use(self) -> bool:
        """Whether ``fallback`` replaced the learned metric by its reference."""
        check = getattr(self, "held_out_check_", None)
        return bool(check and check.get("fallback"))


# ---------------------------------------------------------------------- the check itself


@contextlib.contextmanager
def fit_depth() -> Iterator[bool]:
    """Count one more running fit (:func:`rankmetric.estimators.base.fit_context`) while in the
    block; it yields whether this fit is the outermost one (no other rankmetric fit's inner
    fit)."""
    depth = _FIT_DEPTH.get()
    token = _FIT_DEPTH.set(depth + 1)
    try:
        yield depth == 0
    finally:
        _FIT_DEPTH.reset(token)


def run_held_out_check(est, fit: Callable, args: tuple, kwargs: dict) -> None:
    """The check after ``fit(est, *args, **kwargs)`` returned: sets ``est.held_out_check_``.

    Called by :func:`rankmetric.estimators.base.fit_context` after the outermost fit of an
    estimator that has a ``held_out_check`` parameter.
    """
    method = fit

    def fit(obj, *a, **k):  # the decorated method: thread sizing and atomicity for the probe
        return getattr(obj, method.__name__)(*a, **k)

    setting = est.held_out_check
    if setting is False:
        est.held_out_check_ = None
        return
    if setting == "auto" and _inside_cross_validation():
        return _skipped(est, CROSS_VALIDATION, explicit=False)
    params = est.get_params(deep=False)
    if est._reference_params and all(params[k] == v for k, v in est._reference_params.items()):
        return _skipped(est, "the model is its reference", explicit=False)
    try:
        task = _task(est, method, args, kwargs)
    except _Skip as skip:
        _skipped(est, str(skip), explicit=setting is True)
        return
    bounds, results = SEQUENTIAL_BOUNDS[len(task.folds)], []
    with warnings.catch_warnings():  # what matters of these fits is the comparison
        warnings.simplefilter("ignore")
        for fold, z_bound in zip(task.folds, bounds, strict=True):  # a fresh probe each fold
            results.append(task.score_fold(_probe(est), fit, *fold))
            result = pooled(results)
            bound = critical_value(z_bound, result["dof"])
            if abs(result["difference"]) > bound * result["standard_error"]:
                break  # decisive either way; the last fold's bound always decides
    said = verdict(result, bound)
    result.update(n_folds=len(results), folds_planned=len(task.folds), bound=bound)
    result.update(held_out=task.what, status="done", verdict=said, below=said == "below")
    result.update(fallback=False, summary=_summary_line(est, result))
    est.held_out_check_ = result
    if said in WARNED:
        if est.fallback == "reference":
            _fall_back(est, fit, args, kwargs)
            result["fallback"] = True
        _warn_below(est, result)


#: Why a fit inside scikit-learn's cross-validation skips the check ("auto").
CROSS_VALIDATION = (
    "fitted inside scikit-learn's cross-validation (GridSearchCV, cross_val_score, ...), which "
    "scores held-out folds itself; the search's final refit is checked"
)


def _inside_cross_validation() -> bool:
    """Whether this fit runs inside scikit-learn's ``_fit_and_score`` (one fit of a search or of
    ``cross_validate``): checking each of those would multiply the search's cost and warnings."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_fit_and_score" and "sklearn" in code.co_filename:
            return True
        frame = frame.f_back
    return False


#: The settings of a probe, where the estimator has them.
_PROBE_PARAMS = dict(held_out_check=False, fallback=None, checkpoint_dir=None, verbose=False)


def _probe(est):
    """A clone of ``est`` that neither checks, falls back, writes checkpoints nor reports."""
    probe = clone(est)
    names = probe.get_params(deep=False)
    return probe.set_params(**{k: v for k, v in _PROBE_PARAMS.items() if k in names})


def _fall_back(est, fit, args, kwargs) -> None:
    if est._reference_params is None:
        est._use_reference()
        return
    reference = _probe(est).set_params(**est._reference_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(reference, *args, **kwargs)
    kept = est.held_out_check_
    vars(est).update({k: v for k, v in vars(reference).items() if k.endswith("_")})
    est.held_out_check_ = kept


def _summary_line(est, r: dict) -> str:
    """The comparison in words (``held_out_check_["summary"]``: the warning's and the command
    line's report)."""
    what = {"roc_auc": "ROC AUC", "map": "mAP", "accuracy": "k-NN accuracy"}.get(r["metric"])
    reference = "the untrained network" if est._reference_params else "the Euclidean distance"
    return (
        f"{what} {r['learned']:.3f} vs {r['reference']:.3f} for {reference} "
        f"({r['difference']:+.3f} ± {r['standard_error']:.3f}) on {r['n_groups']} "
        f"{r['held_out']} held out of the fit"
    )


def _warn_below(est, r: dict) -> None:
    how = (
        "worse than no metric learning"
        if r["verdict"] == "below"
        else "not better than no metric learning (below it, within the noise)"
    )
    warn_at_caller(
        f"{type(est).__name__} held-out check: {r['summary']}: {how}. "
        + (
            "fallback='reference': the reference was returned."
            if r["fallback"]
            else f"Use fallback='reference', or {est._held_out_hint}."
        ),
        UntrainedModelWarning,
    )


def _skipped(est, reason: str, *, explicit: bool) -> None:
    """Record why the check did not run (``held_out_check_``); with ``held_out_check=True``
    also say it, at every fit: ``"auto"`` means "when it can", and a warning at each fit on
    small data (a grid search fits many times) would only teach users to ignore warnings."""
    est.held_out_check_ = {"status": "skipped", "reason": reason, "fallback": False}
    if explicit:
        warn_at_caller(
            f"{type(est).__name__}(held_out_check=True) skipped its held-out check: {reason}.",
            UserWarning,
        )


class _Skip(Exception):
    """The check cannot run on these data (the reason is the message)."""


class _Task(NamedTuple):
    """The data of one check: how to fit a probe and score it on one fold, and the folds."""

    score_fold: Callable
    folds: list
    what: str


def _seed(est) -> int:
    """The check's own seed: from an integer ``random_state``, else 0 (the user's generator is
    not advanced: the check is reproducible and the model independent of it)."""
    state = est.get_params(deep=False).get("random_state")
    return int(state) if isinstance(state, Integral) else 0


def _task(est, fit, args, kwargs) -> _Task:
    bound = inspect.signature(fit).bind(est, *args, **kwargs).arguments
    bound.pop("self", None)
    if fit.__name__ not in ("fit", "fit_pairs", "fit_triplets"):
        raise _Skip(f"{fit.__name__} has no held-out convention")
    if fit.__name__ == "fit":
        return (_classifier_task if est._held_out_metric == "accuracy" else _label_task)(est, bound)
    return _tuple_task(est, list(bound.values()), triplets=fit.__name__ == "fit_triplets")


def _label_task(est, bound: dict) -> _Task:
    X, y = np.asarray(bound["X"]), np.asarray(bound["y"])
    if y.ndim != 1:
        raise _Skip("multi-label y has no groups to hold out")
    if getattr(est, "kernel", None) == "precomputed":
        raise _Skip("a precomputed kernel has no inputs to take a reference distance of")
    groups = np.unique(y, return_inverse=True)[1].ravel()
    try:
        folds = held_out_folds(groups, random_state=_seed(est))
    except ValueError as exc:
        reason = str(exc).removeprefix(f"{CHECK}: ")  # the skip's own messages name the check
        raise _Skip(reason.replace("groups", "classes").replace("rows", "samples")) from None
    rows = {k: np.asarray(v) for k, v in bound.items() if k in ROW_ARGUMENTS and v is not None}
    others = {k: v for k, v in bound.items() if k not in ("X", "y", *ROW_ARGUMENTS)}
    rng = np.random.default_rng(_seed(est))

    def score_fold(probe, fit, train, held):
        fitted = {k: v[train] for k, v in rows.items()}
        fit(probe, X[train], y[train], **fitted, **others)
        items = held[sample_retrieval_items(groups[held], rng, MAX_HELD_OUT_ITEMS)]
        extra = {k: v[items] for k, v in rows.items() if k == "domains"}
        reference = _reference_embedding(est, probe, fit, X[train], y[train], fitted)
        return compare_with_reference(
            probe.transform(X[items], **extra).reshape(len(items), -1),
            reference(X[items], extra).reshape(len(items), -1),
            groups[items],
            metric=est._held_out_metric,
            cameras=rows["cameras"][items] if "cameras" in rows else None,
        )

    return _Task(score_fold, folds, "identities" if "cameras" in rows else "classes")


def _classifier_task(est, bound: dict) -> _Task:
    """A k-NN classifier of its training classes: 20 % of each class held out, its k-NN
    accuracy there against the Euclidean k-NN rule's on the same training rows."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y = np.asarray(bound["X"]), np.asarray(bound["y"])
    codes = np.unique(y, return_inverse=True)[1].ravel()
    rng = np.random.default_rng(_seed(est))
    train, held = split_validation(codes, HELD_OUT_FRACTION, "stratified", rng)
    k = int(getattr(est, "n_neighbors", 1))
    if held.size < 2 or train.size <= k:
        raise _Skip("too few samples per class to hold 20 % out and keep two")

    def score_fold(probe, fit, train, held):
        fit(probe, X[train], y[train])
        euclidean = KNeighborsClassifier(n_neighbors=k).fit(X[train], y[train])
        return compare_with_reference(
            probe.predict(X[held]) == y[held],
            euclidean.predict(X[held]) == y[held],
            None,
            metric="accuracy",
        )

    return _Task(score_fold, [(train, held)], "samples of its classes")


def _reference_embedding(est, probe, fit, X_train, y_train, fitted_rows):
    """``f(rows, extra) -> embedding`` of the reference for the probe's training data."""
    if est._reference_params is None:
        return lambda Z, extra: probe._held_out_reference(Z)
    reference = _probe(est).set_params(**est._reference_params)
    fit(reference, X_train, y_train, **fitted_rows)
    return lambda Z, extra: reference.transform(Z, **extra)


def _tuple_task(est, values: list, *, triplets: bool) -> _Task:
    """Pairs or triplets, checked as the fit checks them; triplets as their pairs (anchor,
    positive) similar and (anchor, negative) dissimilar."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if triplets:
            t = check_triplet_supervision(clone(est), *values[:2])
            s, tuples = pairs_from_triplets(t), [t.anchor, t.positive, t.negative]
        else:  # SSNE's fit_pairs takes similarities, the others labels
            similarities = "similarities" in inspect.signature(est.fit_pairs).parameters
            targets = "similarity" if similarities else "binary"
            s = check_pair_supervision(clone(est), *values[:3], targets=targets)
            tuples = [s.a, s.b]
    refit = _tuple_refit(np.stack(tuples, axis=1), *([] if triplets else [s.y]))
    return _graph_task(est, s.X, s.a, s.b, s.y, refit)


def _tuple_refit(tuples: np.ndarray, *per_tuple):
    """The probe's fit on the pairs or triplets whose members are all kept (rows renumbered),
    with their entries of ``per_tuple`` (the pairs' targets)."""

    def refit(probe, fit, X, is_held):
        inside = ~is_held[tuples].any(axis=1)
        keep = np.zeros(X.shape[0], dtype=bool)
        keep[tuples[inside].ravel()] = True
        fit(probe, X[keep], (np.cumsum(keep) - 1)[tuples[inside]], *(v[inside] for v in per_tuple))

    return refit


def _graph_task(est, X, a, b, targets, refit) -> _Task:
    """Hold out components of the similar pairs; score the ROC AUC of the held-out pairs."""
    similar = targets > 0
    groups = pair_groups(a, b, similar, X.shape[0])
    rows = np.unique(np.concatenate([a, b]))
    try:
        folds = held_out_folds(groups[rows], random_state=_seed(est))
    except ValueError as exc:
        raise _Skip(f"{exc} (groups: the connected components of the similar pairs)") from None
    held_masks = []
    for _, held in folds:
        is_held = np.zeros(X.shape[0], dtype=bool)
        is_held[rows[held]] = True
        for chosen, where in (
            (is_held[a] & is_held[b], "held-out"),
            (~is_held[a] & ~is_held[b], "remaining"),
        ):
            if not (similar[chosen].any() and (~similar[chosen]).any()):
                raise _Skip(f"the {where} groups have no similar and dissimilar pairs among them")
        held_masks.append((None, is_held))
    rng = np.random.default_rng(_seed(est))

    def score_fold(probe, fit, _, is_held):
        refit(probe, fit, X, is_held)
        chosen = is_held[a] & is_held[b]
        pa, pb, sim = a[chosen], b[chosen], similar[chosen]
        if pa.shape[0] > MAX_HELD_OUT_PAIRS:
            pick = np.sort(rng.choice(pa.shape[0], MAX_HELD_OUT_PAIRS, replace=False))
            pa, pb, sim = pa[pick], pb[pick], sim[pick]
        learned = probe.pair_distances(X[pa], X[pb])
        ref_a, ref_b = probe._held_out_reference(X[pa]), probe._held_out_reference(X[pb])
        reference = np.sqrt(paired_squared_euclidean(ref_a, ref_b))
        return compare_with_reference(
            learned, reference, sim, metric="roc_auc", pair_groups=(groups[pa], groups[pb])
        )

    return _Task(score_fold, held_masks, "groups of pairs")
