"""The metric learners on feature vectors compared by the SSNE and WARCA tables.

Each learner is named by a short id (``"warca"``, ``"nca"``, ...). :func:`fit_learner` chooses
its hyper-parameters on a validation split carved out of the training data only (never the test
fold), refits the best candidate on the whole training data, and returns the fitted embedding
with the choice it made and the fit time. A learner that is a k-NN classifier with its own
distances rather than an embedding (``"mlmnn"``: one metric per class) returns its ``predict``
instead, and is scored on the validation split by its own accuracy.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import is_classifier

from .._registry import ESTIMATORS
from ._common import captured_warnings, import_object

__all__ = [
    "LABELS",
    "EUCLIDEAN",
    "SCORE_PARAMS",
    "FittedLearner",
    "build_learner",
    "expand_grid",
    "fit_learner",
    "keep_first_unless_better",
    "loo_recall_at_1",
    "split_score_params",
]

#: Learner id -> estimator class (dotted path); the Euclidean baselines learn nothing. The
#: learners of rankmetric come from its table of estimators (those with a benchmark label).
CLASSES = {
    **{e.name: f"{e.path}.{e.cls}" for e in ESTIMATORS if e.label},
    "nca": "sklearn.neighbors.NeighborhoodComponentsAnalysis",
}
EUCLIDEAN = ("euclidean", "euclidean-scaled")

#: Learner id -> column name in the tables.
LABELS = {
    "euclidean": "Euclidean",
    "euclidean-scaled": "Euclidean (scaled)",
    **{e.name: e.label for e in ESTIMATORS if e.label},
    "nca": "NCA (scikit-learn)",
}


def grids_text(grids: Mapping[str, Mapping], note: str = "") -> str:
    """The candidates of each learner as the tables' headings list them (``"WARCA {...}; ..."``)."""
    return "; ".join(f"{LABELS[method]}{note} {grid}" for method, grid in grids.items())


#: Grid entries that tune the scoring rule (the k of the k-NN vote), not the estimator: they are
#: passed to the scorer as keywords, and candidates differing only in them share one fit.
SCORE_PARAMS = ("k",)

#: (X_train, y_train, X_val, y_val, **score params) embedded -> score, higher is better.
Scorer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], float]
#: labels, seed -> (inner training indices, validation indices).
Splitter = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


@dataclass
class FittedLearner:
    """A learner fitted on the training data.

    Attributes
    ----------
    transform : callable ``X -> embedding`` or None
        The learned map (the identity for the Euclidean baselines; ``None`` for a classifier).
    params : dict
        Hyper-parameters of the final fit (fixed ones and the chosen candidate).
    seconds : float
        Wall-clock time of the final ``fit`` (without the selection).
    validation : list of dict
        One ``{"params", "score"}`` per candidate tried on the validation split (empty when
        nothing was tuned).
    warnings : list of str
        Distinct warnings raised while fitting.
    predict : callable ``X -> labels`` or None
        A classifier learner's own k-NN rule (``None`` for the embedding learners).
    """

    transform: Callable[[np.ndarray], np.ndarray] | None
    params: dict
    seconds: float
    validation: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    predict: Callable[[np.ndarray], np.ndarray] | None = None


def build_learner(method: str, params: Mapping, seed: int, device: str = "cpu"):
    """An unfitted estimator for ``method`` with ``params``, seeded; ``None`` for Euclidean.

    ``random_state`` and ``device`` are set when the estimator has them. The learners' own
    held-out check is off (unless ``params`` sets it): the tables compare every row with the
    Euclidean one on the test identities themselves, with intervals and paired tests, and a
    "fit s" column must time the method, not the check's extra fits.
    """
    if method in EUCLIDEAN:
        return None
    if method not in CLASSES:
        raise ValueError(f"unknown learner {method!r}; choose from {[*EUCLIDEAN, *CLASSES]}.")
    cls = import_object(CLASSES[method])
    kwargs = dict(params)
    accepted = cls().get_params(deep=False)
    if "random_state" in accepted:
        kwargs["random_state"] = seed
    if "device" in accepted:
        kwargs["device"] = device
    if "held_out_check" in accepted:
        kwargs.setdefault("held_out_check", False)
    return cls(**kwargs)


def expand_grid(grid: Mapping[str, list]) -> list[dict]:
    """Every combination of a ``{name: [values]}`` grid, in a fixed order (``[{}]`` if empty)."""
    names = sorted(grid)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(grid[n] for n in names))
    ]


def loo_recall_at_1(Z_train, y_train, Z_val, y_val) -> float:
    """Validation score: leave-one-out R@1 among the validation embeddings (held-out identities'
    images in the re-id table, the held-out matrices in the SPD table; the training part unused)."""
    from ..evaluate import retrieval_scores

    return float(retrieval_scores(np.asarray(Z_val), y_val, ks=(1,), device="cpu")["recall@1"])


def _is_classifier(est) -> bool:
    """A learner that predicts labels by its own distances instead of embedding the data."""
    return est is not None and is_classifier(est) and not hasattr(est, "transform")


def split_score_params(params: Mapping) -> tuple[dict, dict]:
    """``(estimator params, scorer params)``: the :data:`SCORE_PARAMS` go to the scorer."""
    fit = {k: v for k, v in params.items() if k not in SCORE_PARAMS}
    return fit, {k: v for k, v in params.items() if k in SCORE_PARAMS}


def _fit(method: str, params: Mapping, X: np.ndarray, y: np.ndarray, seed: int, device: str):
    """Fit one estimator; returns ``(estimator or None for Euclidean, seconds)``."""
    est = build_learner(method, split_score_params(params)[0], seed, device)
    if est is None:
        return None, 0.0
    start = time.perf_counter()
    est.fit(X, y)
    return est, time.perf_counter() - start


def _transform(est):
    """The learned map of a fitted estimator; the identity for the Euclidean baselines."""
    return (lambda X: X) if est is None else est.transform


def _select(method, fixed, candidates, X, y, seed, device, split, score, prefer_first=False):
    """The best candidate on ``split``'s validation part (first on ties) and every score.

    Candidates that differ only in scorer parameters (``k``) share one fit. With
    ``prefer_first``, see :func:`keep_first_unless_better`.
    """
    inner, val = split(y, seed)
    fits: dict[str, object] = {}
    validation = []
    for cand in candidates:
        fit_params, score_params = split_score_params({**fixed, **cand})
        key = repr(sorted(fit_params.items()))
        if key not in fits:
            fits[key] = _fit_inner(method, fit_params, X[inner], y[inner], seed, device)
        result = _validate(fits[key], X, y, inner, val, score, score_params)
        validation.append({"params": cand, **result})
    scores = [-np.inf if v["score"] is None else v["score"] for v in validation]
    if not np.isfinite(max(scores)):
        errors = [v["error"] for v in validation]
        raise ValueError(f"{method}: every candidate failed on the validation split: {errors}")
    if prefer_first:
        return candidates[keep_first_unless_better(scores, len(val))], validation
    return candidates[int(np.argmax(scores))], validation


def keep_first_unless_better(scores: list[float], n_val: int) -> int:
    """Index of the chosen candidate: the first, unless another beats it by more than noise.

    ``scores`` are validation accuracies on ``n_val`` points, the first being the reference
    (the estimator's defaults). The best candidate replaces it only if its accuracy exceeds the
    reference's by more than the binomial standard error ``sqrt(p (1 − p) / n_val)`` of the
    reference's accuracy ``p`` (a failed reference, score ``-inf``, is always replaced).

    Parameters
    ----------
    scores : list of float
        Validation accuracy in ``[0, 1]`` per candidate (``-inf`` for a failed one).
    n_val : int
        Number of validation points.

    Returns
    -------
    int
    """
    best = int(np.argmax(scores))
    reference = scores[0]
    if not np.isfinite(reference):
        return best
    noise = np.sqrt(max(reference * (1.0 - reference), 0.0) / max(n_val, 1))
    return best if scores[best] > reference + noise else 0


def _fit_inner(method, params, X, y, seed, device):
    """The estimator fitted on the inner part, or the ``ValueError`` its fit raised.

    A failing fit (e.g. SSNE's group norm pruning every unit, a non-finite loss) becomes a
    skipped candidate instead of stopping the grid.
    """
    try:
        return _fit(method, params, X, y, seed, device)[0]
    except ValueError as exc:
        return exc


def _validate(est, X, y, inner, val, score, score_params) -> dict:
    """Score the validation part with an estimator fitted on the inner part."""
    if isinstance(est, ValueError):
        return {"score": None, "error": f"{type(est).__name__}: {est}"}
    try:
        if _is_classifier(est):
            value = np.mean(est.predict(X[val]) == y[val])
        else:
            transform = _transform(est)
            value = score(transform(X[inner]), y[inner], transform(X[val]), y[val], **score_params)
    except ValueError as exc:
        return {"score": None, "error": f"{type(exc).__name__}: {exc}"}
    return {"score": float(value)}


def fit_learner(
    method: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    fixed: Mapping | None = None,
    grid: Mapping[str, list] | None = None,
    seed: int = 0,
    device: str = "cpu",
    split: Splitter | None = None,
    score: Scorer | None = None,
    prefer_first: bool = False,
) -> FittedLearner:
    """Choose hyper-parameters on a validation split of ``(X, y)``, then fit on all of it.

    Parameters
    ----------
    method : str
        A learner id (``"warca"``, ``"lmnn"``, ..., ``"euclidean"``).
    X : ndarray of shape (n_samples, n_features)
        Training data only (already standardised if the protocol asks for it).
    y : ndarray of shape (n_samples,)
    fixed : dict, optional
        Hyper-parameters every candidate shares (budgets such as ``max_iter``).
    grid : dict of lists, optional
        Candidates; with more than one, each is fitted on ``split``'s inner training part and
        scored by ``score`` on its validation part, and the best (first on ties) is refitted.
        A candidate whose fit raises ``ValueError`` is skipped (``score=None``, its message kept).
        Entries named in :data:`SCORE_PARAMS` (``k``) are passed to ``score`` rather than to
        the estimator, and kept in the returned ``params``. A classifier learner
        (``"mlmnn"``) is scored by its own validation accuracy instead of
        ``score``.
    seed : int
        Seed of the estimators and of the split.
    split, score : callables
        Required when the grid has more than one candidate.
    prefer_first : bool, default=False
        Keep the first candidate (list each grid's default first) unless another beats its
        validation accuracy by more than its binomial standard error
        (:func:`keep_first_unless_better`), instead of taking the best score: on validation sets
        of 50-250 points, the best of several candidates is mostly the luckiest.

    Returns
    -------
    FittedLearner
    """
    fixed = dict(fixed or {})
    candidates = expand_grid(grid or {})
    validation: list[dict] = []
    with captured_warnings() as caught:
        best = candidates[0]
        if len(candidates) > 1:
            if split is None or score is None:
                raise ValueError("tuning a grid needs a split and a score function.")
            best, validation = _select(
                method, fixed, candidates, X, y, seed, device, split, score, prefer_first
            )
        params = {**fixed, **best}
        est, seconds = _fit(method, params, X, y, seed, device)
    if _is_classifier(est):
        return FittedLearner(None, params, seconds, validation, caught, predict=est.predict)
    return FittedLearner(_transform(est), params, seconds, validation, caught)
