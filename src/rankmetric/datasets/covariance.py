"""Covariance (SPD) features of multichannel trials: ``covariances`` and ``load_spd``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from .._validation import check_finite
from ._info import Dataset
from ._loaders import encode_targets, load_trials
from ._registry import DERIVED_SPD, REGISTRY, derived_spd_name, get_info
from ._ts import by_length

__all__ = ["covariances", "load_spd", "ESTIMATORS", "ESTIMATOR_ALIASES"]

#: pyRiemann's names of the covariance estimators (``pyriemann.estimation.Covariances``).
ESTIMATORS = ("scm", "lwf", "oas", "mcd", "sch", "cov", "corr")
#: Other accepted spellings → their name in :data:`ESTIMATORS`.
ESTIMATOR_ALIASES = {"lw": "lwf"}
#: pyRiemann's M-estimators, named in the error message as not available here.
_NOT_AVAILABLE = ("hub", "stu", "tyl")
_EIGEN_FLOOR = 1e-5  # smallest eigenvalue kept, relative to the trace


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def covariances(
    X: np.ndarray | Sequence[np.ndarray],
    estimator: str = "oas",
    shrinkage: float | None = None,
    *,
    random_state=None,
) -> np.ndarray:
    r"""Covariance matrix of each trial, vectorised over trials; always SPD.

    The estimators carry pyRiemann's names and give its numbers (``pyriemann.estimation.
    Covariances(estimator=...)``, tested to 1e-10), except for the eigenvalue floor below. With
    :math:`X_c` a trial centered over time (:math:`T` = ``length`` samples),
    :math:`S = X_c X_c^\top / T` is the maximum-likelihood sample covariance; a shrunk estimate
    is :math:`(1 - s) S + s \mu I` with :math:`\mu = \operatorname{tr}(S) / c` (:math:`c` =
    ``n_channels``).

    - ``"scm"``: :math:`S` (``sklearn.covariance.empirical_covariance``); with ``shrinkage`` given,
      shrunk by that fixed :math:`s`.
    - ``"lwf"`` (alias ``"lw"``): :math:`s` from Ledoit & Wolf (J. Multivariate Anal. 88, 2004),
      exactly as ``sklearn.covariance.ledoit_wolf``.
    - ``"oas"``: :math:`s` from the Oracle Approximating Shrinkage formula (Chen, Wiesel, Eldar &
      Hero, IEEE TSP 58(10), 2010), exactly as ``sklearn.covariance.oas``.
    - ``"mcd"``: the raw Minimum Covariance Determinant estimate of
      ``sklearn.covariance.fast_mcd`` (Rousseeuw & Van Driessen 1999), robust to outlying time
      samples; randomised (``random_state``), and run trial by trial (FastMCD is iterative).
    - ``"sch"``: Schäfer & Strimmer's shrinkage (Stat. Appl. Genet. Mol. Biol. 4(1), 2005)
      of the correlations towards 0 (target: the diagonal), with the optimal weight
      :math:`\gamma = \sum_{i \ne j} \operatorname{Var}(r_{ij}) / \sum_{i \ne j} r_{ij}^2`
      clipped to [0, 1], as pyRiemann's ``covariance_sch``:
      :math:`\frac{T}{T - 1} \bigl((1 - \gamma) S + \gamma \operatorname{diag}(S)\bigr)`.
    - ``"cov"``: the unbiased covariance :math:`\frac{T}{T - 1} S` (``numpy.cov``).
    - ``"corr"``: the correlation matrix :math:`S_{ij} / \sqrt{S_{ii} S_{jj}}`
      (``numpy.corrcoef``).

    Finally, a matrix whose smallest eigenvalue is below :math:`10^{-5} \operatorname{tr}(S)` (too
    few samples, a flat channel) gets the ridge that lifts it to that floor (pyRiemann returns it
    as is). The condition number then stays below about 1e5, so the matrices remain positive
    definite after a cast to float32 (whose rounding moves eigenvalues by about 1e-7 · trace). A
    trial without any signal (trace 0) becomes :math:`10^{-5} c\, I`.

    Parameters
    ----------
    X : array of shape (n_trials, n_channels, length), or sequence of arrays of shape
        (n_channels, length_i)
        Trials; a sequence may hold trials of different lengths.
    estimator : {"scm", "lwf", "oas", "mcd", "sch", "cov", "corr"}, default="oas"
        ``"lw"`` is accepted for ``"lwf"``.
    shrinkage : float in [0, 1], optional
        Fixed shrinkage; only with ``estimator="scm"`` (the others choose their own).
    random_state : int, RandomState, Generator or None, default=None
        Seed of ``"mcd"`` (unused by the others). An int seeds every trial's FastMCD alike, as
        pyRiemann passes it to ``fast_mcd``; a ``Generator`` is turned into one int seed.

    Returns
    -------
    ndarray of shape (n_trials, n_channels, n_channels), float64
        Symmetric positive-definite matrices.

    Raises
    ------
    ValueError
        Unknown estimator (the message lists the known ones), a shrinkage outside [0, 1] or
        combined with another estimator than ``"scm"``, trials with fewer than 2 samples,
        differing channel counts, non-finite values, or a flat channel with ``"corr"``.

    See Also
    --------
    rankmetric.preprocessing.Covariances : The same estimators as a transformer.
    rankmetric.datasets.load_spd : Multichannel sets turned into such matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import covariances
    >>> trials = np.random.default_rng(0).normal(size=(4, 3, 50))
    >>> covariances(trials, "lwf").shape
    (4, 3, 3)
    """
    estimator = check_covariance_estimator(estimator, shrinkage)
    trials = _as_trials(X)
    if estimator == "mcd" and isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(0, 2**31 - 1))  # fast_mcd takes no Generator
    if isinstance(trials, np.ndarray):
        return _covariances_equal_length(trials, estimator, shrinkage, random_state)
    out = np.empty((len(trials), trials[0].shape[0], trials[0].shape[0]))
    return by_length(
        lambda group: _covariances_equal_length(group, estimator, shrinkage, random_state),
        trials,
        out,
    )


def check_covariance_estimator(estimator: str, shrinkage: float | None) -> str:
    """The canonical name of ``estimator`` (``"lw"`` → ``"lwf"``), or a ``ValueError``."""
    name = ESTIMATOR_ALIASES.get(estimator, estimator) if isinstance(estimator, str) else None
    if name not in ESTIMATORS:
        known = ", ".join(repr(e) for e in ESTIMATORS)
        aliases = ", ".join(f"{a!r} for {n!r}" for a, n in ESTIMATOR_ALIASES.items())
        hint = ""
        if isinstance(estimator, str) and estimator in _NOT_AVAILABLE:
            hint = f" (pyRiemann's M-estimator {estimator!r} is not available in rankmetric)"
        raise ValueError(f"estimator must be one of {known} ({aliases}), got {estimator!r}{hint}.")
    if shrinkage is None:
        return name
    if name != "scm":
        raise ValueError(
            f"shrinkage={shrinkage!r} is only used with estimator='scm'; "
            f"{estimator!r} chooses its own shrinkage."
        )
    if not 0.0 <= float(shrinkage) <= 1.0:
        raise ValueError(f"shrinkage must lie in [0, 1], got {shrinkage!r}.")
    return name


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


def _covariances_equal_length(
    X: np.ndarray, estimator: str, shrinkage: float | None, random_state=None
) -> np.ndarray:
    """``covariances`` for an (n, c, t) array (``estimator`` already canonical)."""
    n_channels, length = X.shape[1], X.shape[2]
    centered = X - X.mean(axis=2, keepdims=True)
    S = centered @ centered.transpose(0, 2, 1) / length
    mu = np.trace(S, axis1=1, axis2=2) / n_channels
    if estimator in ("cov", "corr", "sch", "mcd"):
        C = _OTHER_ESTIMATORS[estimator](X, centered, S, random_state)
        return _lift_smallest_eigenvalue(C, np.trace(C, axis1=1, axis2=2) / n_channels)
    if estimator == "oas":
        s = _oas_shrinkage(S, mu, length)
    elif estimator == "lwf":
        s = _ledoit_wolf_shrinkage(centered, S, mu)
    else:
        s = np.full(len(X), 0.0 if shrinkage is None else float(shrinkage))
    if n_channels == 1:
        s = np.zeros(len(X))
    eye = np.eye(n_channels)
    C = (1.0 - s)[:, None, None] * S + (s * mu)[:, None, None] * eye
    return _lift_smallest_eigenvalue(C, mu)


def _unbiased(X, centered, S, random_state) -> np.ndarray:
    """``numpy.cov``: ``S · length / (length - 1)``."""
    length = X.shape[2]
    return S * (length / (length - 1.0))


def _correlation(X, centered, S, random_state) -> np.ndarray:
    """``numpy.corrcoef``: ``S_ij / √(S_ii S_jj)``, clipped to [-1, 1]."""
    std = np.sqrt(np.diagonal(S, axis1=1, axis2=2))
    flat = np.flatnonzero((std == 0).any(axis=1))
    if flat.size:
        raise ValueError(
            f"trial {flat[0]} has a channel without variance: its correlation matrix "
            "(estimator='corr') is undefined."
        )
    return np.clip(S / std[:, :, None] / std[:, None, :], -1.0, 1.0)


def _schaefer_strimmer(X, centered, S, random_state) -> np.ndarray:
    """Schäfer–Strimmer shrinkage of the correlations towards 0, as pyRiemann's ``sch``."""
    length = X.shape[2]
    n = float(length)
    variance = np.diagonal(S, axis1=1, axis2=2)  # ddof=0, as numpy's var / std
    std = np.sqrt(variance)
    R = (n / ((n - 1.0) * std[:, :, None] * std[:, None, :])) * S
    squares = centered**2
    var_R = squares @ squares.transpose(0, 2, 1) - n * S**2
    var_R = var_R * (n / ((n - 1.0) ** 3 * variance[:, :, None] * variance[:, None, :]))
    off = ~np.eye(X.shape[1], dtype=bool)
    R2_sum = np.sum(np.where(off, R, 0.0) ** 2, axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.where(R2_sum == 0, 0.0, np.sum(np.where(off, var_R, 0.0), axis=(1, 2)) / R2_sum)
    gamma = np.clip(gamma, 0.0, 1.0)[:, None, None]
    unbiased = S * (n / (n - 1.0))
    return np.where(off, (1.0 - gamma) * unbiased, unbiased)


def _minimum_covariance_determinant(X, centered, S, random_state) -> np.ndarray:
    """Raw FastMCD covariance of each trial (``sklearn.covariance.fast_mcd``), trial by trial."""
    from sklearn.covariance import fast_mcd

    return np.stack([fast_mcd(trial.T, random_state=random_state)[1] for trial in X])


_OTHER_ESTIMATORS = {
    "cov": _unbiased,
    "corr": _correlation,
    "sch": _schaefer_strimmer,
    "mcd": _minimum_covariance_determinant,
}


def _oas_shrinkage(S: np.ndarray, mu: np.ndarray, length: int) -> np.ndarray:
    """OAS shrinkage per trial, as ``sklearn.covariance.oas`` (shape (n,))."""
    n_channels = S.shape[1]
    alpha = np.mean(S**2, axis=(1, 2))
    numerator = alpha + mu**2
    denominator = (length + 1) * (alpha - mu**2 / n_channels)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.minimum(numerator / denominator, 1.0)
    return np.where(denominator == 0, 1.0, ratio)


def _ledoit_wolf_shrinkage(centered: np.ndarray, S: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Ledoit–Wolf shrinkage per trial, as ``sklearn.covariance.ledoit_wolf_shrinkage``."""
    n_channels, length = centered.shape[1], centered.shape[2]
    beta_ = np.sum(np.sum(centered**2, axis=1) ** 2, axis=1)  # Σ_t ||x_t||⁴
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
    estimator : str, default="oas"
        Covariance estimator of multichannel trials, a name of :data:`ESTIMATORS` (pyRiemann's:
        ``"scm"``, ``"lwf"``, ``"oas"``, ``"mcd"``, ``"sch"``, ``"cov"``, ``"corr"``; ``"lw"``
        for ``"lwf"``); see :func:`covariances`. Not used by derived sets.
    shrinkage : float in [0, 1], optional
        Fixed shrinkage, with ``estimator="scm"`` only.
    data_home : str or path-like, optional
        Cache folder (see :func:`data_home`).
    n_train, n_test : int, optional
        Keep a random subsample of that many training / test samples (stratified: the same share
        of every class, drawn from ``random_state``); ``None`` keeps the whole part.
    random_state : int, default=0
        Seed of the subsample (and of ``estimator="mcd"``).

    Returns
    -------
    Dataset
        ``kind="spd"``; ``X`` of shape (n_train, c, c) and ``X_test`` of shape (n_test, c, c),
        float64 SPD; ``y``/``y_test`` as in :func:`load_dataset`.

    See Also
    --------
    rankmetric.datasets.covariances : The covariance estimators it applies.
    rankmetric.datasets.load_dataset : The raw multichannel trials.
    rankmetric.RPLEmbedding : An estimator for these matrices.

    Examples
    --------
    >>> from rankmetric.datasets import load_spd
    >>> data = load_spd("JapaneseVowels", estimator="lwf")  # doctest: +SKIP
    >>> data.X.shape  # doctest: +SKIP
    (270, 12, 12)
    """
    derived = derived_spd_name(name)
    if derived is not None:
        data = _load_derived(derived, data_home)
    else:
        data = _load_multichannel(name, estimator, shrinkage, data_home, random_state)
    return _subsample(data, n_train, n_test, random_state)


def _load_multichannel(name, estimator, shrinkage, data_home, random_state=0) -> Dataset:
    info = get_info(name)
    if info.kind != "multichannel":
        raise ValueError(
            f"load_spd needs a multichannel set; {info.name!r} is {info.kind}. "
            "Multichannel sets: " + ", ".join(_multichannel_names()) + "."
        )
    check_covariance_estimator(estimator, shrinkage)
    train, test = load_trials(info.name, data_home=data_home)
    target_names, y, y_test = encode_targets(train.labels, test.labels)
    amount = "its own shrinkage" if shrinkage is None else f"shrinkage {shrinkage}"
    return Dataset(
        X=covariances(train.series, estimator, shrinkage, random_state=random_state),
        y=y.astype(np.int64),
        X_test=covariances(test.series, estimator, shrinkage, random_state=random_state),
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

    def descriptors(X: np.ndarray) -> np.ndarray:
        return region_covariances(X.reshape(-1, side, side))

    return dataclasses.replace(images, X=descriptors(images.X), X_test=descriptors(images.X_test),
                               name=name, kind="spd", description=description)  # fmt: skip


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
    names = [i.name for i in REGISTRY.values() if i.kind == "multichannel" and i.available]
    return names + list(DERIVED_SPD)
