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

from __future__ import annotations

import inspect
import math
import os
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._utils import make_rng

__all__ = [
    "CV_CLASSES",
    "MIN_GROUPS_FOR_GROUP_SPLIT",
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

#: With this many labels or more (and no cameras), ``split="auto"`` holds out groups.
MIN_GROUPS_FOR_GROUP_SPLIT = 20
#: Fewest groups (or rows per class, stratified) a subsampled round keeps.
MIN_ROUND_GROUPS = 16


def group_holdout(groups, fraction: float = 0.25, *, random_state=None):
    """Training and validation rows with whole groups (identities, classes) held out.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        The group (identity or class label) of each row.
    fraction : float, default=0.25
        Share of the groups held out (rounded, at least 2, leaving at least 2).
    random_state : int, Generator or None
        Picks the held-out groups.

    Returns
    -------
    train_rows, validation_rows : ndarray of int
        Sorted row indices; no group has rows in both.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import group_holdout
    >>> groups = np.repeat(np.arange(8), 2)
    >>> train, val = group_holdout(groups, 0.25, random_state=0)
    >>> len(train), len(val), set(groups[train]) & set(groups[val])
    (12, 4, set())
    """
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be one-dimensional, got shape {groups.shape}.")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}.")
    names = np.unique(groups)
    if names.shape[0] < 4:
        raise ValueError(
            f"too few groups to hold some out: {names.shape[0]} (at least 4 are needed)."
        )
    n_held = min(max(2, round(fraction * names.shape[0])), names.shape[0] - 2)
    held = make_rng(random_state).choice(names, n_held, replace=False)
    mask = np.isin(groups, held)
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def _stratified_holdout(y, fraction, rng):
    """Rows held out within every class (a class of one row stays in training)."""
    val = []
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        n_held = min(round(fraction * rows.shape[0]), rows.shape[0] - 1)
        val.append(rng.choice(rows, n_held, replace=False))
    mask = np.zeros(y.shape[0], dtype=bool)
    mask[np.concatenate(val)] = True
    if not mask.any():
        raise ValueError("too few rows per class to hold some out for validation.")
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def _round_ranks(y, inner, by_groups, rng):
    """Nested subsamples of the training part for the rounds: ``(rank, size)`` per row.

    A round with share ``f`` keeps the rows with ``rank < max(MIN_ROUND_GROUPS, ceil(f size))``.
    By groups: ``rank`` is the row's group's place in a random order of the groups and ``size``
    their number (whole groups are kept). Stratified: ``rank`` is the row's place in a random
    order of its class and ``size`` the class's size (every class keeps its share).
    """
    labels = y[inner]
    names, codes = np.unique(labels, return_inverse=True)
    if by_groups:
        place = np.empty(names.shape[0], dtype=np.int64)
        place[rng.permutation(names.shape[0])] = np.arange(names.shape[0])
        return place[codes], np.full(labels.shape[0], names.shape[0])
    rank = np.empty(labels.shape[0], dtype=np.int64)
    for code in range(names.shape[0]):
        rows = np.flatnonzero(codes == code)
        rank[rows[rng.permutation(rows.shape[0])]] = np.arange(rows.shape[0])
    return rank, np.bincount(codes)[codes]


def _subsample(inner, ranks, fraction):
    """The training rows of a round with share ``fraction`` (see :func:`_round_ranks`)."""
    if fraction >= 1.0:
        return inner
    rank, size = ranks
    keep = np.maximum(MIN_ROUND_GROUPS, np.ceil(fraction * size))
    return inner[rank < keep]


class TunedMetricLearner(TransformerMixin, BaseEstimator):
    """A metric learner whose hyper-parameters are chosen inside ``fit`` (budgeted search).

    The generic implementation behind ``WARCACV``, ``KernelWARCACV``, ``SSNECV``, ``ITMLCV``,
    ``KISSMECV``, ``XQDACV`` and ``LMNNCV``; the procedure is described in
    :mod:`rankmetric.tuning`. Subclasses set ``_learner`` (the learner's class) and
    :meth:`search_space`.

    Parameters
    ----------
    estimator : estimator, optional
        The learner with the values of the parameters that are not searched (and the defaults
        the search starts from); default the learner with its own defaults.
    param_space : dict of lists, optional
        ``{parameter: [values]}`` to search instead of :meth:`search_space`.
    budget : float, default=10.0
        Time of the whole tuned fit in units of one default fit (at least 3; the default's
        fit on the training part is the unit).
    validation_fraction : float, default=0.25
        Share of the groups (or of each class's rows) held out for validation.
    split : {"auto", "groups", "stratified"}, default="auto"
        How the validation part is held out (see :mod:`rankmetric.tuning`).
    eta : int, default=3
        Successive halving's reduction factor: a round keeps the best ``1/eta`` of its
        candidates and gives them ``eta`` times more data.
    n_rounds : int, default=3
        Rounds of successive halving; the first fits on ``eta**(1 - n_rounds)`` of the training
        part (at least :data:`MIN_ROUND_GROUPS` groups or rows per class).
    n_candidates : int, optional
        Candidates of the first round, a fixed plan instead of the time ``budget`` (which is
        then not used): the fits do not depend on timings, so a seed gives the same choice
        bit for bit.
    random_state : int, Generator or None
        Seeds the split, the candidates and every fit. With the time ``budget`` (no
        ``n_candidates``), how many candidates fit in it depends on the machine's speed.
    verbose : bool, default=False
        Print each candidate's score.

    Attributes
    ----------
    best_estimator_ : estimator
        The learner refitted on all of ``(X, y)`` with ``best_params_``.
    best_params_ : dict
        The chosen values of the searched parameters.
    best_score_ : float
        The chosen candidate's validation score.
    default_score_ : float
        The defaults' validation score.
    reference_score_ : float
        The Euclidean distance's validation score (the same inputs, no learning).
    tuning_results_ : dict of lists
        One entry per fit of the search: ``params``, ``round``, ``resource`` (share of the
        training part), ``n_samples``, ``score``, ``fit_seconds`` and ``error``.
    default_fit_seconds_ : float
        Time of the default's fit on the training part (the budget's unit).
    search_seconds_ : float
        Time of the search (default fit included, final refit excluded).
    split_ : str
        The split used (``"groups"`` or ``"stratified"``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric.tuning import KISSMECV
    >>> X, y = load_iris(return_X_y=True)
    >>> cv = KISSMECV(budget=4, random_state=0).fit(X, y)
    >>> sorted(cv.best_params_)
    ['n_components', 'regularization']
    >>> cv.transform(X).shape[0]
    150
    """

    _learner: type | None = None

    def __init__(
        self,
        estimator=None,
        *,
        param_space: dict | None = None,
        budget: float = 10.0,
        validation_fraction: float = 0.25,
        split: str = "auto",
        eta: int = 3,
        n_rounds: int = 3,
        n_candidates: int | None = None,
        random_state=None,
        verbose: bool = False,
    ) -> None:
        self.estimator = estimator
        self.param_space = param_space
        self.budget = budget
        self.validation_fraction = validation_fraction
        self.split = split
        self.eta = eta
        self.n_rounds = n_rounds
        self.n_candidates = n_candidates
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ the search space
    def search_space(self, X: np.ndarray, y: np.ndarray, template) -> dict:
        """The candidate values of the learner's decisive parameters for data ``(X, y)``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,)
        template : estimator
            The learner with the non-searched values.

        Returns
        -------
        dict of lists

        Examples
        --------
        >>> import numpy as np
        >>> from rankmetric.tuning import ITMLCV
        >>> ITMLCV().search_space(np.zeros((10, 3)), np.arange(10) % 2, None)["slack_weight"]
        [0.01, 0.1, 1.0, 10.0, 100.0]
        """
        raise NotImplementedError

    def _warm_start(self, previous) -> dict:
        """Parameters that start a promoted candidate from its previous round's fit."""
        return {}

    # ------------------------------------------------------------------ fitting
    def _template(self):
        if self._learner is None:
            raise TypeError(f"{type(self).__name__} names no learner; use one of its subclasses.")
        if self.estimator is None:
            return self._learner()
        if not isinstance(self.estimator, self._learner):
            raise ValueError(
                f"estimator must be a {self._learner.__name__}, "
                f"got {type(self.estimator).__name__}."
            )
        return clone(self.estimator)

    def _check_settings(self):
        if not (isinstance(self.budget, (int, float)) and self.budget >= 3):
            raise ValueError(f"budget must be a number of default fits >= 3, got {self.budget!r}.")
        if not 0.0 < float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"validation_fraction must lie in (0, 1), got {self.validation_fraction!r}."
            )
        if self.split not in ("auto", "groups", "stratified"):
            raise ValueError(f"split must be 'auto', 'groups' or 'stratified', got {self.split!r}.")
        if not (isinstance(self.eta, (int, np.integer)) and self.eta >= 2):
            raise ValueError(f"eta must be an integer >= 2, got {self.eta!r}.")
        if not (isinstance(self.n_rounds, (int, np.integer)) and self.n_rounds >= 1):
            raise ValueError(f"n_rounds must be an integer >= 1, got {self.n_rounds!r}.")
        fixed = self.n_candidates
        if fixed is not None and not (isinstance(fixed, (int, np.integer)) and fixed >= 1):
            raise ValueError(f"n_candidates must be None or an integer >= 1, got {fixed!r}.")

    def _space(self, X, y, template) -> dict:
        space = self.search_space(X, y, template) if self.param_space is None else self.param_space
        if not isinstance(space, dict) or not space:
            raise ValueError("param_space must be a non-empty dict of lists of values.")
        known = template.get_params(deep=False)
        unknown = [name for name in space if name not in known]
        if unknown:
            raise ValueError(
                f"param_space names {unknown}, which {type(template).__name__} does not have."
            )
        for name, values in space.items():
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise ValueError(f"param_space[{name!r}] must be a non-empty list of values.")
        return {name: list(values) for name, values in space.items()}

    def _candidates(self, space, template, rng) -> list[dict]:
        """Every combination of the space in a seeded random order, without the defaults'."""
        names = sorted(space)
        sizes = [len(space[n]) for n in names]
        total = math.prod(sizes)
        defaults = template.get_params(deep=False)
        picks = rng.permutation(total) if total <= 100_000 else rng.integers(0, total, 100_000)
        out, seen = [], set()
        for flat in picks:
            index = np.unravel_index(int(flat), sizes)
            cand = {n: space[n][i] for n, i in zip(names, index, strict=True)}
            key = repr(sorted(cand.items()))
            if key in seen or all(_same(defaults[n], v) for n, v in cand.items()):
                continue
            seen.add(key)
            out.append(cand)
        return out

    def _fit_one(self, template, params, X, y, cameras, rows):
        """A clone of ``template`` with ``params`` fitted on ``rows``; (estimator, seconds)."""
        est = clone(template).set_params(**params)
        kwargs = {}
        if cameras is not None and "cameras" in inspect.signature(est.fit).parameters:
            kwargs["cameras"] = cameras[rows]
        start = time.perf_counter()
        est.fit(X[rows], y[rows], **kwargs)
        return est, time.perf_counter() - start

    def _score(self, transform, X, y, cameras, inner, val) -> float:
        """The validation score of an embedding (``transform``; the identity for Euclidean)."""
        from .evaluate import knn_accuracy, query_gallery_split, reid_scores, retrieval_scores

        Z_val = np.asarray(transform(X[val]), dtype=np.float64)
        if self.split_ == "stratified":
            Z_inner = np.asarray(transform(X[inner]), dtype=np.float64)
            return float(knn_accuracy(Z_inner, y[inner], Z_val, y[val], device="cpu"))
        if cameras is None:
            return float(retrieval_scores(Z_val, y[val], ks=(1,), device="cpu")["recall@1"])
        query, gallery = query_gallery_split(y[val], cameras[val], random_state=0)
        ids, cams = y[val], cameras[val]
        scores = reid_scores(Z_val[query], ids[query], cams[query], Z_val[gallery], ids[gallery],
                             cams[gallery], ranks=(1,), device="cpu")  # fmt: skip
        return float(scores["cmc"][1])

    def _evaluate(self, template, params, X, y, cameras, inner, val, rows, results, info):
        """Fit one candidate on ``rows``, score it on ``val``, append it to ``results``."""
        entry = {"params": dict(params), **info, "n_samples": int(rows.shape[0])}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est, seconds = self._fit_one(template, params, X, y, cameras, rows)
                    note = None
                except ValueError:
                    # a subsample too small for the candidate's rank: its default rank there
                    if params.get("n_components") is None or info["resource"] >= 1.0:
                        raise
                    clipped = {**params, "n_components": None}
                    est, seconds = self._fit_one(template, clipped, X, y, cameras, rows)
                    note = "n_components too large for this round's subsample: default rank"
                score = self._score(est.transform, X, y, cameras, inner, val)
            entry.update(score=score, fit_seconds=seconds, error=note)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            est, score = None, float("nan")
            entry.update(
                score=score, fit_seconds=float("nan"), error=f"{type(exc).__name__}: {exc}"
            )
        results.append(entry)
        if self.verbose:
            print(f"[{type(self).__name__}] round {info['round']} {params}: {score:.4f}")
        return est, score

    def fit(self, X, y, *, cameras=None):
        """Choose the hyper-parameters on held-out groups of ``(X, y)``, then refit on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data only.
        y : array-like of shape (n_samples,)
            Identities or class labels (the groups held out).
        cameras : array-like of shape (n_samples,), optional
            Camera of each row: validation by re-identification rank-1, and passed to the
            learner's ``fit`` when it takes cameras.

        Returns
        -------
        self
        """
        self._check_settings()
        X = np.asarray(X)
        y = np.asarray(y)
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {X.shape}.")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have one label per row of X: {y.shape} vs {X.shape[0]} rows.")
        if cameras is not None:
            cameras = np.asarray(cameras)
            if cameras.shape != y.shape:
                raise ValueError(
                    f"cameras must have one entry per row: {cameras.shape} vs {y.shape}."
                )
        template = self._template()
        rng = make_rng(self.random_state)
        if "random_state" in template.get_params(deep=False) and template.random_state is None:
            template.set_params(random_state=int(rng.integers(2**31 - 1)))
        n_groups = np.unique(y).shape[0]
        by_groups = self.split == "groups" or (
            self.split == "auto" and (cameras is not None or n_groups >= MIN_GROUPS_FOR_GROUP_SPLIT)
        )
        self.split_ = "groups" if by_groups else "stratified"
        fraction = float(self.validation_fraction)
        if by_groups:
            inner, val = group_holdout(y, fraction, random_state=rng)
        else:
            inner, val = _stratified_holdout(y, fraction, rng)
        space = self._space(X[inner], y[inner], template)
        candidates = self._candidates(space, template, rng)
        ranks = _round_ranks(y, inner, by_groups, rng)

        start = time.perf_counter()
        results: list[dict] = []
        self.reference_score_ = self._score(lambda Z: Z, X, y, cameras, inner, val)
        defaults = {n: template.get_params(deep=False)[n] for n in space}
        info = {"round": self.n_rounds - 1, "resource": 1.0}
        _, self.default_score_ = self._evaluate(
            template, {}, X, y, cameras, inner, val, inner, results, info
        )
        results[-1]["params"] = dict(defaults)
        unit = results[-1]["fit_seconds"]
        if not np.isfinite(unit):
            raise ValueError(f"the default {type(template).__name__} fails on this data: "
                             f"{results[-1]['error']}")  # fmt: skip
        unit = max(unit, 1e-3)
        self.default_fit_seconds_ = unit
        # the whole fit's time is budget × unit: what is left after the default's fit and
        # scoring, less the refit on all rows (about unit × n / n_inner)
        refit = unit * X.shape[0] / inner.shape[0]
        left = unit * float(self.budget) - (time.perf_counter() - start) - refit
        finalists = self._halving(template, candidates, X, y, cameras, inner, val, ranks,
                                  results, left)  # fmt: skip
        self.search_seconds_ = time.perf_counter() - start

        best_params, best_score = {}, self.default_score_
        for params, score in finalists:
            if np.isfinite(score) and (not np.isfinite(best_score) or score > best_score):
                best_params, best_score = params, score
        self.best_params_ = {**defaults, **best_params}
        self.best_score_ = float(best_score)
        self.tuning_results_ = {k: [r[k] for r in results] for k in results[0]}
        self.best_estimator_, _ = self._fit_one(
            template, self.best_params_, X, y, cameras, np.arange(X.shape[0])
        )
        self.n_features_in_ = X.shape[1]
        return self

    def _halving(self, template, candidates, X, y, cameras, inner, val, ranks, results,
                 budget_s):  # fmt: skip
        """Successive halving; returns ``[(params, score)]`` of the full-resource round."""
        eta, n_rounds = int(self.eta), int(self.n_rounds)
        share = budget_s / n_rounds
        carried = 0.0
        fixed = self.n_candidates is not None
        if fixed:
            candidates = candidates[: int(self.n_candidates)]
        alive = [(cand, None) for cand in candidates]  # (params, previous round's estimator)
        finalists: list[tuple[dict, float]] = []
        for round_ in range(n_rounds):
            resource = float(eta) ** (round_ - n_rounds + 1)
            rows = _subsample(inner, ranks, resource)
            allowance, spent, times = share + carried, 0.0, []
            scored = []
            for params, previous in alive:
                predicted = np.mean(times) if times else 0.0
                at_least = eta if round_ == 0 else 1  # a search compares some candidates
                if not fixed and len(times) >= at_least and spent + predicted > allowance:
                    break
                warm = self._warm_start(previous) if previous is not None else {}
                rank = params.get("n_components")
                if "init" in warm and rank is not None and warm["init"].shape[0] != rank:
                    warm = {}  # the previous round ran at another rank: no warm start
                fit_params = {**params, **warm}
                info = {"round": round_, "resource": resource}
                tic = time.perf_counter()
                est, score = self._evaluate(template, fit_params, X, y, cameras, inner, val, rows,
                                            results, info)  # fmt: skip
                results[-1]["params"] = dict(params)
                times.append(time.perf_counter() - tic)
                spent += times[-1]
                if np.isfinite(score):
                    scored.append((params, est, score))
            carried = max(allowance - spent, 0.0)
            if round_ == n_rounds - 1:
                finalists = [(p, s) for p, _, s in scored]
                break
            scored.sort(key=lambda item: -item[2])
            keep = max(1, len(scored) // eta) if scored else 0
            alive = [(p, est) for p, est, _ in scored[:keep]]
            if not alive:
                break
        return finalists

    # ------------------------------------------------------------------ the fitted learner
    def transform(self, X) -> np.ndarray:
        """Embed ``X`` with the best estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.transform(X)

    def pair_distances(self, X1, X2=None) -> np.ndarray:
        """The best estimator's learned distance of each pair (see its ``pair_distances``).

        Parameters
        ----------
        X1 : array-like of shape (n_pairs, n_features), or (n_pairs, 2, n_features)
        X2 : array-like of shape (n_pairs, n_features), optional

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.pair_distances(X1, X2)

    def get_metric(self):
        """The best estimator's ``metric(a, b) -> float`` on single samples.

        Returns
        -------
        callable
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.get_metric()

    def save(self, path: str | os.PathLike) -> None:
        """Save the best estimator to ``path``; :func:`rankmetric.load_model` returns the learner.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        None
        """
        check_is_fitted(self, "best_estimator_")
        self.best_estimator_.save(path)


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b) or (a is None and b is None)
    except (TypeError, ValueError):
        return False


def _components(n_features: int, values=(8, 16, 32, 64)) -> list:
    """Rank candidates below ``n_features`` and ``None`` (the learner's default rank)."""
    return [None, *(v for v in values if v < n_features)]


def _learner(path: str):
    module, _, name = path.rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), name)


class WARCACV(TunedMetricLearner):
    """:class:`~rankmetric.WARCA` with rank, λ and learning rate chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default),
    ``reg_lambda`` (1e-3 … 1e-1), ``learning_rate`` (the default's rule, 0.003, 0.03); a promoted
    candidate starts from its previous round's map. Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import WARCA
    >>> from rankmetric.tuning import WARCACV
    >>> X, y = load_iris(return_X_y=True)
    >>> cv = WARCACV(WARCA(max_iter=50), budget=3, random_state=0).fit(X, y)
    >>> cv.best_estimator_.__class__.__name__
    'WARCA'
    """

    _learner = _learner("rankmetric.estimators.warca.WARCA")

    def search_space(self, X, y, template) -> dict:
        """Rank, λ and learning rate (see the class docstring)."""
        return {
            "n_components": _components(X.shape[1]),
            "reg_lambda": [1e-3, 1e-2, 1e-1],
            "learning_rate": [None, 3e-3, 3e-2],
        }

    def _warm_start(self, previous) -> dict:
        return {"init": np.asarray(previous.components_, dtype=np.float64)}


class KernelWARCACV(TunedMetricLearner):
    """:class:`~rankmetric.KernelWARCA` with kernel width, λ, rank and steps chosen in ``fit``.

    Space: ``gamma`` (the default width of :func:`rankmetric.kernels.default_gamma` times 1/4,
    1/2, 1, 2, 4, on the training part), ``reg_lambda`` (0, 1e-4, 1e-3, 1e-2), ``n_components``
    (16, 32, 64 below the input dimension, and the default) and ``max_iter`` (500, 1000, 2000).
    Parameters and attributes: see :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import KernelWARCACV
    >>> X = np.random.default_rng(0).random((40, 6))
    >>> space = KernelWARCACV().search_space(X, np.arange(40) % 4, None)
    >>> sorted(space), len(space["gamma"])
    (['gamma', 'max_iter', 'n_components', 'reg_lambda'], 5)
    """

    _learner = _learner("rankmetric.estimators.kernel_warca.KernelWARCA")

    def search_space(self, X, y, template) -> dict:
        """Width, λ, rank and steps (see the class docstring)."""
        from .kernels import default_gamma

        kernel = "chi2_rbf" if template is None else template.kernel
        seed = 0 if template is None or template.random_state is None else template.random_state
        if template is not None and template.gamma is not None:
            base = float(template.gamma)
        else:
            base = default_gamma(np.asarray(X, dtype=np.float64), kernel, make_rng(seed))
        gammas = [None] + [float(base * f) for f in (0.25, 0.5, 2.0, 4.0)]
        return {
            "gamma": gammas,
            "reg_lambda": [0.0, 1e-4, 1e-3, 1e-2],
            "n_components": _components(X.shape[1], (16, 32, 64)),
            "max_iter": [500, 1000, 2000],
        }


class SSNECV(TunedMetricLearner):
    """:class:`~rankmetric.SSNE` with its dimension and λ chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default) and
    ``reg_lambda`` (1e-5 … 1e-2). Parameters and attributes: see :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import SSNECV
    >>> SSNECV().search_space(np.zeros((10, 20)), np.arange(10) % 2, None)["n_components"]
    [None, 8, 16]
    """

    _learner = _learner("rankmetric.estimators.ssne.SSNE")

    def search_space(self, X, y, template) -> dict:
        """Dimension and λ (see the class docstring)."""
        return {
            "n_components": _components(X.shape[1]),
            "reg_lambda": [1e-5, 1e-4, 1e-3, 1e-2],
        }


class ITMLCV(TunedMetricLearner):
    """:class:`~rankmetric.ITML` with its slack weight γ chosen inside ``fit``.

    Space: ``slack_weight`` (0.01 … 100). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric.tuning import ITMLCV
    >>> X, y = load_iris(return_X_y=True)
    >>> ITMLCV(budget=3, random_state=0).fit(X, y).best_params_["slack_weight"] > 0
    True
    """

    _learner = _learner("rankmetric.estimators.itml.ITML")

    def search_space(self, X, y, template) -> dict:
        """The slack weight γ (see the class docstring)."""
        return {"slack_weight": [0.01, 0.1, 1.0, 10.0, 100.0]}


class KISSMECV(TunedMetricLearner):
    """:class:`~rankmetric.KISSME` with its PCA dimension and ridge chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default) and
    ``regularization`` (1e-6, 1e-4, 1e-2, 1e-1). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import KISSMECV
    >>> KISSMECV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["n_components"]
    [None]
    """

    _learner = _learner("rankmetric.estimators.kissme.KISSME")

    def search_space(self, X, y, template) -> dict:
        """Dimension and ridge (see the class docstring)."""
        return {
            "n_components": _components(X.shape[1]),
            "regularization": [1e-6, 1e-4, 1e-2, 1e-1],
        }


class XQDACV(TunedMetricLearner):
    """:class:`~rankmetric.XQDA` with its dimension and ridge chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the paper's rule,
    the default) and ``regularization`` (1e-4 … 1). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import XQDACV
    >>> XQDACV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["regularization"]
    [0.0001, 0.001, 0.01, 0.1, 1.0]
    """

    _learner = _learner("rankmetric.estimators.xqda.XQDA")

    def search_space(self, X, y, template) -> dict:
        """Dimension and ridge (see the class docstring)."""
        return {
            "n_components": _components(X.shape[1]),
            "regularization": [1e-4, 1e-3, 1e-2, 1e-1, 1.0],
        }


class LMNNCV(TunedMetricLearner):
    """:class:`~rankmetric.LMNN` with its k and push weight chosen inside ``fit``.

    Space: ``n_target_neighbors`` (1, 3, 5) and ``push_weight`` (0.25, 0.5, 0.75); a promoted
    candidate starts from its previous round's map. Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import LMNNCV
    >>> LMNNCV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["n_target_neighbors"]
    [1, 3, 5]
    """

    _learner = _learner("rankmetric.estimators.lmnn.LMNN")

    def search_space(self, X, y, template) -> dict:
        """k and the push weight (see the class docstring)."""
        return {"n_target_neighbors": [1, 3, 5], "push_weight": [0.25, 0.5, 0.75]}

    def _warm_start(self, previous) -> dict:
        return {"init": np.asarray(previous.components_, dtype=np.float64)}


#: ``rankmetric fit`` method name -> its tuned learner.
CV_CLASSES = {
    "warca": WARCACV,
    "kernel-warca": KernelWARCACV,
    "ssne": SSNECV,
    "itml": ITMLCV,
    "kissme": KISSMECV,
    "xqda": XQDACV,
    "lmnn": LMNNCV,
}


def tuned_learner(method: str, estimator, budget: float = 10.0) -> TunedMetricLearner:
    """The tuned learner of ``rankmetric fit METHOD --tune``: ``estimator``'s settings, seeded
    by its ``random_state`` (0 without one).

    Parameters
    ----------
    method : str
        A ``rankmetric fit`` method with a tuned learner (:data:`CV_CLASSES`).
    estimator : estimator
        The learner with the command line's values (the search starts from them).
    budget : float, default=10.0
        Whole fit's time in default fits.

    Returns
    -------
    TunedMetricLearner

    Examples
    --------
    >>> from rankmetric import KISSME
    >>> from rankmetric.tuning import tuned_learner
    >>> type(tuned_learner("kissme", KISSME())).__name__
    'KISSMECV'
    """
    if method not in CV_CLASSES:
        raise ValueError(f"--tune is available for {sorted(CV_CLASSES)}, not {method!r}.")
    seed = getattr(estimator, "random_state", None)
    seed = seed if isinstance(seed, (int, np.integer)) else 0
    return CV_CLASSES[method](estimator, budget=budget, random_state=seed)
