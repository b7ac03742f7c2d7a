"""Evaluation protocols: k-NN accuracy under repeated stratified cross-validation (SSNE's 5×2)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_array

from .._utils import progress
from .._validation import check_labels
from ._inputs import check_int
from .knn import knn_accuracy

__all__ = ["CVResult", "repeated_cv_knn"]


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
@dataclass(frozen=True, eq=False)
class CVResult:
    """Test accuracies of a repeated cross-validation.

    Attributes
    ----------
    scores : ndarray of shape (n_repeats * n_splits,)
        k-NN accuracy on each test fold, in the order of ``RepeatedStratifiedKFold``.
    fit_times : ndarray of shape (n_repeats * n_splits,)
        Seconds to fit the standardisation and the estimator on each training fold.

    See Also
    --------
    rankmetric.evaluate.repeated_cv_knn : Returns one.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import CVResult
    >>> result = CVResult(scores=np.array([0.9, 0.95]), fit_times=np.array([0.1, 0.1]))
    >>> round(result.mean, 3), str(result)
    (0.925, '92.50 ± 2.50')
    """

    scores: np.ndarray
    fit_times: np.ndarray

    @property
    def mean(self) -> float:
        """Mean accuracy over the folds."""
        return float(np.mean(self.scores))

    @property
    def std(self) -> float:
        """Standard deviation of the fold accuracies (``ddof=0``, as ``numpy.std``)."""
        return float(np.std(self.scores))

    def as_dict(self) -> dict:
        """JSON-friendly summary: mean, std, per-fold scores and fit times."""
        return {
            "mean": self.mean,
            "std": self.std,
            "scores": self.scores.tolist(),
            "fit_times": self.fit_times.tolist(),
        }

    def __str__(self) -> str:
        return f"{100 * self.mean:.2f} ± {100 * self.std:.2f}"


def _check_estimator(estimator) -> None:
    if estimator is None:
        return
    missing = [m for m in ("fit", "transform") if not callable(getattr(estimator, m, None))]
    if missing:
        raise ValueError(
            f"estimator must be None or a scikit-learn transformer; {type(estimator).__name__} "
            f"has no {' / '.join(missing)} method."
        )


def _score_fold(estimator, X, y, codes, train, test, k: int, standardize: bool):
    """Fit (scaler +) a clone of ``estimator`` on ``train``; k-NN accuracy on ``test``."""
    start = time.perf_counter()
    X_train, X_test = X[train], X[test]
    if standardize:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    if estimator is not None:
        model = clone(estimator).fit(X_train, y[train])
        fit_time = time.perf_counter() - start
        X_train, X_test = model.transform(X_train), model.transform(X_test)
    else:
        fit_time = time.perf_counter() - start
    accuracy = knn_accuracy(
        _flat(X_train), codes[train], _flat(X_test), codes[test], k=k, device="cpu"
    )
    return accuracy, fit_time


def _flat(Z) -> np.ndarray:
    """Embeddings as 2-D rows (e.g. SPD outputs of shape (n, c, c) are flattened)."""
    Z = np.asarray(Z)
    return Z.reshape(Z.shape[0], -1)


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def repeated_cv_knn(
    estimator,
    X,
    y,
    *,
    n_repeats: int = 5,
    n_splits: int = 2,
    k: int = 3,
    standardize: bool = True,
    random_state=0,
    n_jobs: int | None = None,
    verbose: bool = False,
) -> CVResult:
    """k-NN accuracy of a learned metric under repeated stratified k-fold cross-validation.

    For each of the ``n_repeats × n_splits`` folds of ``RepeatedStratifiedKFold``: fit a
    ``StandardScaler`` on the training part only (if ``standardize``), fit a clone of
    ``estimator`` on the scaled training part, transform both parts, and score the k-NN
    majority vote (:func:`~rankmetric.evaluate.knn_accuracy`, Euclidean distance in the
    transformed space) on the test part.

    Parameters
    ----------
    estimator : scikit-learn transformer or None
        Anything with ``fit(X, y)`` and ``transform(X)``; cloned and refitted inside each fold.
        None is the plain Euclidean distance (on standardised features if ``standardize``).
        Outputs with more than two dimensions (SPD matrices) are flattened for the k-NN search.
    X : array-like of shape (n_samples, n_features) or (n_samples, ...)
        More than two dimensions only with ``standardize=False``.
    y : array-like of shape (n_samples,)
    n_repeats : int, default=5
    n_splits : int, default=2
    k : int, default=3
        Neighbours of the majority vote.
    standardize : bool, default=True
        Zero mean, unit variance per feature, fitted on each training fold.
    random_state : int, RandomState or None, default=0
        Seed of the fold assignment (the estimator keeps its own ``random_state``).
    n_jobs : int, optional
        Folds run in parallel with joblib (None: one at a time).
    verbose : bool, default=False
        Progress bar over the folds.

    Returns
    -------
    CVResult
        Per-fold accuracies and fit times; ``str(result)`` reads ``"97.12 ± 0.33"`` (percent).

    See Also
    --------
    rankmetric.evaluate.knn_accuracy : The accuracy of one split.
    rankmetric.evaluate.CVResult : The result it returns.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import KISSME
    >>> from rankmetric.evaluate import repeated_cv_knn
    >>> X, y = load_iris(return_X_y=True)
    >>> result = repeated_cv_knn(KISSME(), X, y, n_repeats=2)
    >>> len(result.scores)
    4
    >>> str(result)  # mean ± std over the 4 folds, in percent
    '97.00 ± 1.73'
    """
    _check_estimator(estimator)
    n_repeats = check_int(n_repeats, "n_repeats")
    n_splits = check_int(n_splits, "n_splits", 2)
    k = check_int(k, "k")
    X = check_array(X, allow_nd=True, dtype=[np.float64, np.float32])
    if standardize and X.ndim != 2:
        raise ValueError(
            f"standardize=True needs X of shape (n_samples, n_features), got {X.shape}."
        )
    y = np.asarray(y)
    _, codes = check_labels(y, X.shape[0])
    counts = np.bincount(codes)
    if counts.min() < n_splits:
        raise ValueError(
            f"the smallest class has {counts.min()} sample(s), fewer than n_splits={n_splits}."
        )
    cv = RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=random_state)
    folds = list(cv.split(np.zeros((X.shape[0], 1)), codes))
    jobs = (
        delayed(_score_fold)(estimator, X, y, codes, train, test, k, standardize)
        for train, test in progress(folds, total=len(folds), desc="folds", verbose=verbose)
    )
    results = Parallel(n_jobs=n_jobs)(jobs)
    scores, fit_times = (np.asarray(v, dtype=np.float64) for v in zip(*results, strict=True))
    return CVResult(scores=scores, fit_times=fit_times)
