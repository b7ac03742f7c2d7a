"""Covariance (SPD) features of multichannel trials: ``covariances`` and ``load_spd``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from .._validation import check_finite
from ._info import Dataset
from ._loaders import encode_labels, load_trials
from ._registry import DERIVED_SPD, derived_spd_name, get_info

__all__ = ["covariances", "load_spd", "ESTIMATORS"]

ESTIMATORS = ("oas", "lw", "scm")
_EIGEN_FLOOR = 1e-5  # smallest eigenvalue kept, relative to the trace


def covariances(
    X: np.ndarray | Sequence[np.ndarray],
    estimator: str = "oas",
    shrinkage: float | None = None,
) -> np.ndarray:
    r"""Covariance matrix of each trial, vectorised over trials; always SPD.

    Each trial is centred over time; the empirical covariance is ``S = Xc Xcᵀ / length`` (the
    maximum-likelihood estimate, as ``sklearn.covariance.empirical_covariance``). A shrunk
    estimate is :math:`(1 - s) S + s \mu I` with :math:`\mu = \operatorname{tr}(S) / c` (``c``
    channels).

    - ``"oas"``: ``s`` from the Oracle Approximating Shrinkage formula (Chen, Wiesel, Eldar &
      Hero, IEEE TSP 58(10), 2010), exactly as ``sklearn.covariance.oas``.
    - ``"lw"``: ``s`` from Ledoit & Wolf (J. Multivariate Anal. 88, 2004), exactly as
      ``sklearn.covariance.ledoit_wolf``.
    - ``"scm"``: the sample covariance ``S``; with ``shrinkage`` given, that fixed ``s``.

    Finally, a matrix whose smallest eigenvalue is below :math:`10^{-5} \operatorname{tr}(S)`
    (too few samples, a flat channel) gets the ridge that lifts it to that floor. The condition
    number then stays below about :math:`10^5`, so the matrices remain positive definite after a
    cast to float32 (whose rounding moves eigenvalues by about :math:`10^{-7}
    \operatorname{tr}(S)`). A trial without any signal (trace 0) becomes :math:`10^{-5} c I`.

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
    n_train: int | None = None,
    n_test: int | None = None,
    random_state: int = 0,
) -> Dataset:
    """A multichannel set as SPD covariance matrices, one per trial (see :func:`covariances`),
    or a derived SPD set (``"fmnist-regcov"``: region covariances of Fashion-MNIST images).

    Covariances are computed on each trial's original samples (JapaneseVowels' trials are not
    resampled first).

    Parameters
    ----------
    name : str
        A multichannel set of :func:`list_datasets` (BasicMotions, JapaneseVowels,
        HandMovementDirection, FingerMovements, SelfRegulationSCP1, SelfRegulationSCP2,
        EyesOpenShut), or ``"fmnist-regcov"`` (8 × 8 region covariance descriptors,
        :class:`rankmetric.preprocessing.RegionCovariances`, of Fashion-MNIST's official
        60 000 / 10 000 split).
    estimator : {"oas", "lw", "scm"}, default="oas"
        Covariance estimator of multichannel trials (not used by derived sets).
    shrinkage : float in [0, 1], optional
        Fixed shrinkage, with ``estimator="scm"`` only.
    data_home : str or path-like, optional
        Cache folder (see :func:`data_home`).
    n_train, n_test : int, optional
        Keep a random subsample of that many training / test samples (stratified: the same share
        of every class, drawn from ``random_state``); ``None`` keeps the whole part.
    random_state : int, default=0
        Seed of the subsample.

    Returns
    -------
    Dataset
        ``kind="spd"``; ``X`` of shape (n_train, c, c) and ``X_test`` of shape (n_test, c, c),
        float64 SPD; ``y``/``y_test`` as in :func:`load_dataset`.
    """
    derived = derived_spd_name(name)
    if derived is not None:
        data = _load_derived(derived, data_home)
    else:
        data = _load_multichannel(name, estimator, shrinkage, data_home)
    return _subsample(data, n_train, n_test, random_state)


def _load_multichannel(name, estimator, shrinkage, data_home) -> Dataset:
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


def _load_derived(name: str, data_home) -> Dataset:
    """A derived SPD set of :data:`DERIVED_SPD` (region covariances of an image set)."""
    from ._loaders import load_dataset
    from .region_covariance import region_covariances

    source, description = DERIVED_SPD[name]
    images = load_dataset(source, data_home=data_home)
    side = int(round(np.sqrt(images.X.shape[1])))
    return Dataset(
        X=region_covariances(images.X.reshape(-1, side, side)),
        y=images.y,
        X_test=region_covariances(images.X_test.reshape(-1, side, side)),
        y_test=images.y_test,
        name=name,
        kind="spd",
        description=description,
        info=images.info,
        target_names=images.target_names,
    )


def _subsample(data: Dataset, n_train, n_test, random_state) -> Dataset:
    """``data`` with stratified random subsamples of its parts (``None``: the whole part)."""
    if n_train is None and n_test is None:
        return data
    rng = np.random.default_rng(random_state)
    train = _stratified_subset(data.y, n_train, rng, "n_train")
    test = _stratified_subset(data.y_test, n_test, rng, "n_test")
    note = f"; subsample of {len(train)} training / {len(test)} test samples (seed {random_state})"
    return dataclasses.replace(
        data,
        X=data.X[train],
        y=data.y[train],
        X_test=data.X_test[test],
        y_test=data.y_test[test],
        description=data.description + note,
    )


def _stratified_subset(y: np.ndarray, n: int | None, rng, name: str) -> np.ndarray:
    """Sorted indices of ``n`` samples of ``y``, the same share of every class (all if None)."""
    if n is None:
        return np.arange(len(y))
    if isinstance(n, bool) or int(n) != n or not 1 <= n <= len(y):
        raise ValueError(f"{name} must be an integer in [1, {len(y)}], got {n!r}.")
    # a random order within each class, then classes interleaved: any prefix is stratified
    order = np.lexsort((rng.random(len(y)), y))
    counts = np.bincount(y)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(y))
    rank[order] = (np.arange(len(y)) - starts[y[order]]) / counts[y[order]]
    return np.sort(np.argsort(rank, kind="stable")[: int(n)])


def _multichannel_names() -> list[str]:
    from ._registry import REGISTRY

    names = [i.name for i in REGISTRY.values() if i.kind == "multichannel" and i.available]
    return names + list(DERIVED_SPD)
