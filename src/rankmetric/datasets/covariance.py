"""Covariance (SPD) features of multichannel trials: ``covariances`` and ``load_spd``."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .._validation import check_finite
from ._info import Dataset
from ._loaders import encode_labels, load_trials
from ._registry import get_info

__all__ = ["covariances", "load_spd", "ESTIMATORS"]

ESTIMATORS = ("oas", "lw", "scm")
_EIGEN_FLOOR = 1e-5  # smallest eigenvalue kept, relative to the trace


def covariances(
    X: np.ndarray | Sequence[np.ndarray],
    estimator: str = "oas",
    shrinkage: float | None = None,
) -> np.ndarray:
    """Covariance matrix of each trial, vectorised over trials; always SPD.

    Each trial is centred over time; the empirical covariance is ``S = Xc Xcᵀ / length`` (the
    maximum-likelihood estimate, as ``sklearn.covariance.empirical_covariance``). A shrunk
    estimate is ``(1 - s) S + s μ I`` with ``μ = trace(S) / n_channels``.

    - ``"oas"``: ``s`` from the Oracle Approximating Shrinkage formula (Chen, Wiesel, Eldar &
      Hero, IEEE TSP 58(10), 2010), exactly as ``sklearn.covariance.oas``.
    - ``"lw"``: ``s`` from Ledoit & Wolf (J. Multivariate Anal. 88, 2004), exactly as
      ``sklearn.covariance.ledoit_wolf``.
    - ``"scm"``: the sample covariance ``S``; with ``shrinkage`` given, that fixed ``s``.

    Finally, a matrix whose smallest eigenvalue is below ``1e-5 · trace`` (too few samples, a
    flat channel) gets the ridge that lifts it to that floor. The condition number then stays
    below about 1e5, so the matrices remain positive definite after a cast to float32 (whose
    rounding moves eigenvalues by about 1e-7 · trace). A trial without any signal (trace 0)
    becomes ``1e-5 · n_channels · I``.

    Parameters
    ----------
    X : array of shape (n_trials, n_channels, length), or sequence of arrays of shape
        (n_channels, length_i)
        Trials; a sequence may hold trials of different lengths.
    estimator : {"oas", "lw", "scm"}, default="oas"
    shrinkage : float in [0, 1], optional
        Fixed shrinkage; only with ``estimator="scm"`` (OAS and LW choose their own).

    Returns
    -------
    ndarray of shape (n_trials, n_channels, n_channels), float64
        Symmetric positive-definite matrices.

    Raises
    ------
    ValueError
        Unknown estimator, a shrinkage outside [0, 1] or combined with OAS/LW, trials with fewer
        than 2 samples, differing channel counts, or non-finite values.
    """
    _check_estimator(estimator, shrinkage)
    trials = _as_trials(X)
    if isinstance(trials, np.ndarray):
        return _covariances_equal_length(trials, estimator, shrinkage)
    lengths = np.array([trial.shape[1] for trial in trials])
    out = np.empty((len(trials), trials[0].shape[0], trials[0].shape[0]))
    for length in np.unique(lengths):
        index = np.flatnonzero(lengths == length)
        group = np.stack([trials[i] for i in index])
        out[index] = _covariances_equal_length(group, estimator, shrinkage)
    return out


def _check_estimator(estimator: str, shrinkage: float | None) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}.")
    if shrinkage is None:
        return
    if estimator != "scm":
        raise ValueError(
            f"shrinkage={shrinkage!r} is only used with estimator='scm'; "
            f"{estimator!r} chooses its own shrinkage."
        )
    if not 0.0 <= float(shrinkage) <= 1.0:
        raise ValueError(f"shrinkage must lie in [0, 1], got {shrinkage!r}.")


def _as_trials(X) -> np.ndarray | list[np.ndarray]:
    """An (n, c, t) float64 array, or a list of (c, t_i) float64 arrays (lengths may differ)."""
    if isinstance(X, np.ndarray) or not isinstance(X, Sequence):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 3:
            raise ValueError(f"X must have shape (n_trials, n_channels, length), got {X.shape}.")
        shapes = [X.shape[1:]] if X.shape[0] else []
        trials = X
    else:
        trials = [np.asarray(trial, dtype=np.float64) for trial in X]
        if any(trial.ndim != 2 for trial in trials):
            raise ValueError("each trial must be an array of shape (n_channels, length).")
        shapes = [trial.shape for trial in trials]
    if not shapes:
        raise ValueError("X holds no trials.")
    if len({channels for channels, _ in shapes}) != 1:
        raise ValueError("the trials differ in their number of channels.")
    if min(length for _, length in shapes) < 2:
        raise ValueError("every trial needs at least 2 time samples to estimate a covariance.")
    for trial in [trials] if isinstance(trials, np.ndarray) else trials:
        check_finite(trial, "X")
    return trials


def _covariances_equal_length(X: np.ndarray, estimator: str, shrinkage: float | None) -> np.ndarray:
    """``covariances`` for an (n, c, t) array."""
    n_channels, length = X.shape[1], X.shape[2]
    centred = X - X.mean(axis=2, keepdims=True)
    S = centred @ centred.transpose(0, 2, 1) / length
    mu = np.trace(S, axis1=1, axis2=2) / n_channels
    if estimator == "oas":
        s = _oas_shrinkage(S, mu, length)
    elif estimator == "lw":
        s = _ledoit_wolf_shrinkage(centred, S, mu)
    else:
        s = np.full(len(X), 0.0 if shrinkage is None else float(shrinkage))
    if n_channels == 1:
        s = np.zeros(len(X))
    eye = np.eye(n_channels)
    C = (1.0 - s)[:, None, None] * S + (s * mu)[:, None, None] * eye
    return _lift_smallest_eigenvalue(C, mu)


def _oas_shrinkage(S: np.ndarray, mu: np.ndarray, length: int) -> np.ndarray:
    """OAS shrinkage per trial, as ``sklearn.covariance.oas`` (shape (n,))."""
    n_channels = S.shape[1]
    alpha = np.mean(S**2, axis=(1, 2))
    numerator = alpha + mu**2
    denominator = (length + 1) * (alpha - mu**2 / n_channels)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.minimum(numerator / denominator, 1.0)
    return np.where(denominator == 0, 1.0, ratio)


def _ledoit_wolf_shrinkage(centred: np.ndarray, S: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Ledoit–Wolf shrinkage per trial, as ``sklearn.covariance.ledoit_wolf_shrinkage``."""
    n_channels, length = centred.shape[1], centred.shape[2]
    beta_ = np.sum(np.sum(centred**2, axis=1) ** 2, axis=1)  # Σ_t ||x_t||⁴
    delta_ = np.sum(S**2, axis=(1, 2))  # ||S||²_F
    beta = (beta_ / length - delta_) / (n_channels * length)
    delta = (delta_ - 2.0 * mu * np.trace(S, axis1=1, axis2=2) + n_channels * mu**2) / n_channels
    beta = np.minimum(beta, delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(beta == 0, 0.0, beta / delta)


def _lift_smallest_eigenvalue(C: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Add a ridge to the matrices whose smallest eigenvalue is below ``_EIGEN_FLOOR · trace``."""
    C = (C + C.transpose(0, 2, 1)) / 2.0
    trace = C.shape[1] * np.where(mu > 0, mu, 1.0)
    floor = _EIGEN_FLOOR * trace
    smallest = np.linalg.eigvalsh(C)[:, 0]
    ridge = np.maximum(floor - smallest, 0.0)
    return C + ridge[:, None, None] * np.eye(C.shape[1])


def load_spd(
    name: str,
    *,
    estimator: str = "oas",
    shrinkage: float | None = None,
    data_home: str | os.PathLike | None = None,
) -> Dataset:
    """A multichannel set as SPD covariance matrices, one per trial (see :func:`covariances`).

    Covariances are computed on each trial's original samples (JapaneseVowels' trials are not
    resampled first).

    Parameters
    ----------
    name : str
        A multichannel set of :func:`list_datasets` (BasicMotions, JapaneseVowels,
        HandMovementDirection, FingerMovements, SelfRegulationSCP1, SelfRegulationSCP2,
        EyesOpenShut).
    estimator : {"oas", "lw", "scm"}, default="oas"
    shrinkage : float in [0, 1], optional
        Fixed shrinkage, with ``estimator="scm"`` only.
    data_home : str or path-like, optional
        Cache folder (see :func:`data_home`).

    Returns
    -------
    Dataset
        ``kind="spd"``; ``X`` of shape (n_train, c, c) and ``X_test`` of shape (n_test, c, c),
        float64 SPD; ``y``/``y_test`` as in :func:`load_dataset`.
    """
    info = get_info(name)
    if info.kind != "multichannel":
        raise ValueError(
            f"load_spd needs a multichannel set; {info.name!r} is {info.kind}. "
            "Multichannel sets: " + ", ".join(_multichannel_names()) + "."
        )
    _check_estimator(estimator, shrinkage)
    train, test = load_trials(info.name, data_home=data_home)
    target_names, y, y_test = encode_labels(train.labels, test.labels)
    amount = "its own shrinkage" if shrinkage is None else f"shrinkage {shrinkage}"
    return Dataset(
        X=covariances(train.series, estimator, shrinkage),
        y=y.astype(np.int64),
        X_test=covariances(test.series, estimator, shrinkage),
        y_test=y_test.astype(np.int64),
        name=info.name,
        kind="spd",
        description=f"{info.description}; {estimator.upper()} covariances ({amount}) of each "
        f"trial. Source: {info.source}.",
        info=info,
        target_names=target_names,
    )


def _multichannel_names() -> list[str]:
    from ._registry import REGISTRY

    return [i.name for i in REGISTRY.values() if i.kind == "multichannel" and i.available]
