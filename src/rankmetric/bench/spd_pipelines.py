"""The rows of the RPL table that an EEG / MEG user would pick instead of an SPD network.

**MDM** (minimum distance to the class means; :class:`rankmetric.MDM`, equal to pyRiemann's), and
the tangent space at the Riemannian mean of the training matrices
(:class:`rankmetric.preprocessing.TangentSpace`, pyRiemann's vectors) followed by a **logistic
regression**, **WARCA** or **LMNN**: MOABB's workhorse pipelines and a learned linear metric on the
SPD manifold.

Every row gets the budget the network rows get: hyper-parameters are chosen on the same
stratified 20 % validation part of the training part (the split the network of the same seed
holds out for its early stopping, ``split_validation(..., "stratified", ...)``), each
grid's first candidate (the estimator's default) kept unless another beats it by more than one
binomial standard error (:func:`rankmetric.bench.learners.keep_first_unless_better`, the rule of
the SSNE table), then refitted on the whole training part. Metric rows (WARCA, LMNN) are scored
on validation by leave-one-out R@1 among the held-out matrices, as the networks; the classifier
(logistic regression) by its validation accuracy; MDM has nothing to tune.

What each row embeds for the retrieval and clustering columns: the metric rows their
``transform`` of the tangent vectors; the logistic regression its ``decision_function`` (class
scores); MDM its ``transform`` (AIRM distances to the class means). The classifiers' accuracy is
their own ``predict``; the metric rows' a k-NN vote on the embedding.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from .._utils import make_rng
from .._validation import check_labels
from ..training import split_validation
from .learners import fit_learner, keep_first_unless_better, loo_recall_at_1

__all__ = ["PIPELINES", "GRIDS", "BUDGETS", "fit_pipeline", "validation_split"]

#: Row id -> (table label, what it is).
PIPELINES = {
    "mdm": ("MDM", "minimum distance to the AIRM class means (rankmetric.MDM, as pyRiemann's)"),
    "ts-lr": ("TangentSpace + LogReg", "tangent vectors, scikit-learn LogisticRegression"),
    "ts-warca": ("TangentSpace + WARCA", "tangent vectors, rankmetric WARCA"),
    "ts-lmnn": ("TangentSpace + LMNN", "tangent vectors, rankmetric LMNN"),
}
#: Candidates tried on the validation part, the default first (kept unless beaten clearly).
GRIDS = {
    "ts-lr": {"C": [1.0, 0.1, 10.0]},
    "ts-warca": {"reg_lambda": [1e-2, 1e-3]},  # the reference code's two settings
    "ts-lmnn": {"push_weight": [0.5, 0.25, 0.75]},
}
#: Fixed settings per mode (the SSNE table's budgets for WARCA and LMNN).
BUDGETS = {
    "quick": {"ts-lr": {"max_iter": 1000}, "ts-warca": {"max_iter": 200},
              "ts-lmnn": {"max_iter": 50}},
    "full": {"ts-lr": {"max_iter": 1000}, "ts-warca": {"max_iter": 2000},
             "ts-lmnn": {"max_iter": 1000}},
}  # fmt: skip
VALIDATION_FRACTION = 0.2


def validation_split(y: np.ndarray, seed: int, fraction: float = VALIDATION_FRACTION):
    """``(inner, validation)`` indices: the split the network rows of ``seed`` hold out.

    The SPD estimators draw it first from ``make_rng(seed)``, so the same call gives the same
    indices.
    """
    _, codes = check_labels(y, len(y))
    return split_validation(codes, fraction, "stratified", make_rng(seed))


def _tangent_space(X: np.ndarray):
    from ..preprocessing import TangentSpace

    return TangentSpace(metric="riemann").fit(X)


def _fit_mdm(X, y, seed, budget):
    from ..estimators.spd import MDM

    mdm = MDM(metric="riemann", device="cpu").fit(X, y)
    return mdm.transform, mdm.predict, {"params": {"metric": "riemann"}, "validation": []}


def _fit_logistic(X, y, seed, budget):
    from sklearn.linear_model import LogisticRegression

    ts = _tangent_space(X)
    T = ts.transform(X)
    inner, val = validation_split(y, seed)
    candidates = GRIDS["ts-lr"]["C"]
    scores = []
    for C in candidates:
        clf = LogisticRegression(C=C, **budget).fit(T[inner], y[inner])
        scores.append(float(np.mean(clf.predict(T[val]) == y[val])))
    C = candidates[keep_first_unless_better(scores, len(val))]
    clf = LogisticRegression(C=C, **budget).fit(T, y)
    validation = [{"params": {"C": c}, "score": s} for c, s in zip(candidates, scores, strict=True)]

    def embed(Z):  # class scores, (n, 1) for two classes
        return clf.decision_function(ts.transform(Z)).reshape(len(Z), -1)

    def predict(Z):
        return clf.predict(ts.transform(Z))

    return embed, predict, {"params": {"C": C, **budget}, "validation": validation}


def _fit_metric(X, y, seed, budget, *, method: str):
    ts = _tangent_space(X)
    fitted = fit_learner(
        method.removeprefix("ts-"),
        ts.transform(X),
        y,
        fixed=budget,
        grid=GRIDS[method],
        seed=seed,
        split=validation_split,
        score=loo_recall_at_1,
        prefer_first=True,
    )

    def embed(Z):
        return fitted.transform(ts.transform(Z))

    return embed, None, {"params": fitted.params, "validation": fitted.validation}


_FITS: dict[str, Callable] = {
    "mdm": _fit_mdm,
    "ts-lr": _fit_logistic,
    "ts-warca": functools.partial(_fit_metric, method="ts-warca"),
    "ts-lmnn": functools.partial(_fit_metric, method="ts-lmnn"),
}


def fit_pipeline(
    method: str, X: np.ndarray, y: np.ndarray, *, seed: int, mode: str = "full"
) -> tuple[Callable, Callable | None, dict]:
    """Fit the row ``method`` of :data:`PIPELINES` on SPD matrices ``X`` (n, c, c).

    Parameters
    ----------
    method : str
        A key of :data:`PIPELINES`.
    X : ndarray of shape (n, c, c)
    y : ndarray of shape (n,)
    seed : int
        Seed of the validation split and of the learners.
    mode : {"full", "quick"}
        Which of :data:`BUDGETS`.

    Returns
    -------
    embed : callable ``X -> (n, d)``
        The embedding the retrieval and clustering columns read.
    predict : callable ``X -> labels`` or None
        The classifier's own prediction (MDM, logistic regression); ``None`` for metric rows
        (their accuracy is a k-NN vote on ``embed``).
    record : dict
        ``params`` (the final fit's), ``validation`` (each candidate's validation score) and
        ``seconds`` (the whole fit, selection included).
    """
    if method not in _FITS:
        raise ValueError(f"unknown SPD pipeline {method!r}; choose from {list(PIPELINES)}.")
    budget = dict(BUDGETS[mode].get(method, {}))
    start = time.perf_counter()
    embed, predict, record = _FITS[method](np.asarray(X, dtype=np.float64), np.asarray(y), seed,
                                           budget)  # fmt: skip
    record["seconds"] = time.perf_counter() - start
    return embed, predict, record
