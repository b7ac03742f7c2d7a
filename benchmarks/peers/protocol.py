"""The evaluation protocol shared by both sides of the metric-learn comparison.

Imported by ``metric_learn_side.py`` (metric-learn's own environment, scikit-learn 1.7) and by
``compare_metric_learn.py`` (rankmetric's environment), so it uses NumPy and scikit-learn only:
5×2 stratified cross-validation from ``RepeatedStratifiedKFold(n_splits=2, n_repeats=5,
random_state=0)``, standardisation fitted on the training half, k = 3 nearest-neighbour accuracy
on the test half, wall-clock fit time of the metric learner alone.
"""

from __future__ import annotations

import os

# One thread for every BLAS/OpenMP pool, on both sides, before NumPy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine  # noqa: E402
from sklearn.model_selection import RepeatedStratifiedKFold  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

DATASETS: dict[str, Callable] = {
    "iris": load_iris,
    "wine": load_wine,
    "wdbc": load_breast_cancer,
    "digits": load_digits,
}
K_NEIGHBOURS = 3
SEED = 0


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (n_samples, n_features) float64 and ``y`` (n_samples,) of a bundled data set."""
    return DATASETS[name](return_X_y=True)


def folds(y: np.ndarray, n_repeats: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) index pairs of repeated stratified 2-fold CV, seed ``SEED``."""
    cv = RepeatedStratifiedKFold(n_splits=2, n_repeats=n_repeats, random_state=SEED)
    return list(cv.split(np.zeros((len(y), 1)), y))


def knn_accuracy(Z_train, y_train, Z_test, y_test) -> float:
    """Accuracy of the k = 3 nearest-neighbour vote (Euclidean on the embeddings)."""
    knn = KNeighborsClassifier(n_neighbors=K_NEIGHBOURS).fit(Z_train, y_train)
    return float(knn.score(Z_test, y_test))


def evaluate(make_estimator: Callable, name: str, n_repeats: int = 5) -> dict:
    """Run one method over the folds of one data set.

    Parameters
    ----------
    make_estimator : callable ``(X_train, y_train) -> estimator`` or ``None``
        Builds an unfitted estimator with ``fit`` and ``transform`` (``None``: Euclidean k-NN).
    name : str
        Data set name, a key of ``DATASETS``.

    Returns
    -------
    dict with lists ``accuracy``, ``fit_seconds``, ``n_iter`` (one entry per fold),
    ``warnings`` (messages of warnings raised while fitting, deduplicated) and
    ``capped_folds`` (folds whose fit raised a ``ConvergenceWarning``).
    """
    X, y = load(name)
    out: dict = {"accuracy": [], "fit_seconds": [], "n_iter": [], "warnings": [], "capped_folds": 0}
    for train, test in folds(y, n_repeats):
        scaler = StandardScaler().fit(X[train])
        X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
        if make_estimator is None:
            out["accuracy"].append(knn_accuracy(X_train, y[train], X_test, y[test]))
            continue
        estimator = make_estimator(X_train, y[train])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            estimator.fit(X_train, y[train])
            out["fit_seconds"].append(time.perf_counter() - start)
        out["capped_folds"] += any(w.category.__name__ == "ConvergenceWarning" for w in caught)
        out["warnings"].extend(
            f"{w.category.__name__}: {str(w.message)[:80]}"
            for w in caught
            if not issubclass(w.category, (DeprecationWarning, FutureWarning))
        )
        out["n_iter"].append(int(getattr(estimator, "n_iter_", -1)))
        Z_train, Z_test = estimator.transform(X_train), estimator.transform(X_test)
        out["accuracy"].append(knn_accuracy(Z_train, y[train], Z_test, y[test]))
    out["warnings"] = sorted(set(out["warnings"]))
    return out
