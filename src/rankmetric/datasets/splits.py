"""A data set read and split into a training and a test part: :func:`load_split`.

One function reads whatever ``rankmetric fit --data`` and ``rankmetric evaluate --data`` take,
a bundled set by name, a user's feature file or a ``.npz`` file of raw trials, and splits it the
one way both commands split it, so that ``evaluate --model`` scores the rows ``fit`` held out:

- the data's own test part (an official split, a trial file's ``X_test``, a feature file's
  ``split`` column);
- else, for a trial file, a held-out domain (``test_domain``, cross-session / cross-subject);
- else, for a feature file with cameras (re-identification), a share ``test_size`` of the
  identities held out;
- else a stratified hold-out of ``test_size``; every random choice with seed 0.

Errors are ``ValueError`` messages that start with the parameter at fault (``data``,
``test_domain``, ``covariance_estimator``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .user_features import is_feature_file

__all__ = ["Split", "holdout_rows", "load_split"]


@dataclass(frozen=True)
class Split:
    """A data set's training and test parts, with what rode along with each row.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
        The two parts (``X_test`` may be empty: nothing held out).
    how : str
        How the parts were made (``"official test split"``, ``"stratified 30% hold-out, seed
        0"`` ...).
    source : str
        The data set's name or the file's path.
    cameras_train, cameras_test : ndarray or None
        A feature file's cameras of each part (re-identification).
    split_test : ndarray or None
        A feature file's ``split`` value (``"query"``, ``"gallery"``, ``"test"``) of each test row.
    domains_train, domains_test : ndarray or None
        A trial file's domain (session, subject) of each trial.
    dataset : Dataset or None
        A bundled set as loaded, before the hold-out was drawn (its ``X``, ``y``: the whole set,
        or its official training part); ``None`` for a file.

    Examples
    --------
    >>> from rankmetric.datasets import load_split
    >>> split = load_split("iris", test_size=0.2)
    >>> split.X_train.shape, split.X_test.shape, split.how
    ((120, 4), (30, 4), 'stratified 20% hold-out, seed 0')
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    how: str
    source: str
    cameras_train: np.ndarray | None = None
    cameras_test: np.ndarray | None = None
    split_test: np.ndarray | None = None
    domains_train: np.ndarray | None = None
    domains_test: np.ndarray | None = None
    dataset: object = None


def _stratified(n_or_arrays, y, test_size: float):
    from sklearn.model_selection import train_test_split

    return train_test_split(*n_or_arrays, test_size=test_size, stratify=y, random_state=0)


def _stratified_how(test_size: float) -> str:
    return f"stratified {test_size:.0%} hold-out, seed 0"


def holdout_rows(data, test_size: float = 0.3) -> tuple[np.ndarray, np.ndarray, str]:
    """``(training rows, test rows, how)`` of a user's feature file, as :func:`load_split` makes
    them.

    Parameters
    ----------
    data : FeatureData
        A file read by :func:`rankmetric.datasets.load_features`.
    test_size : float, default=0.3
        The share held out when the file has no ``split`` column: of the identities when it has
        cameras (re-identification: test identities unseen in training), else of the rows
        (stratified). Seed 0 both.

    Returns
    -------
    train, test : ndarray of int
        Row indices.
    how : str
        How the rows were chosen.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import FeatureData, holdout_rows
    >>> data = FeatureData(np.eye(8), np.repeat([0, 1, 2, 3], 2), np.tile([0, 1], 4), None, "-")
    >>> train, test, how = holdout_rows(data, 0.5)
    >>> len(train), len(test), how
    (4, 4, '50% of the identities held out, seed 0')
    """
    path = data.source
    if data.split is not None:
        train, test = data.rows("train"), data.rows("test", "query", "gallery")
        if train.size == 0 or test.size == 0:
            raise ValueError(f"data {path}: the split column needs 'train' rows and test rows.")
        return train, test, "the file's split column"
    if data.cameras is not None:
        identities = np.unique(data.y)
        rng = np.random.default_rng(0)
        held = rng.choice(identities, max(2, round(test_size * len(identities))), False)
        test_mask = np.isin(data.y, held)
        if test_mask.all():
            raise ValueError(f"data {path}: too few identities to hold {test_size:.0%} out.")
        how = f"{test_size:.0%} of the identities held out, seed 0"
        return np.flatnonzero(~test_mask), np.flatnonzero(test_mask), how
    train, test = _stratified([np.arange(len(data.y))], data.y, test_size)
    return train, test, _stratified_how(test_size)


def _feature_file_split(path, test_size: float, columns) -> Split:
    from .user_features import load_features

    data = load_features(path, **(columns or {}))
    train, test, how = holdout_rows(data, test_size)
    return Split(data.X[train], data.y[train], data.X[test], data.y[test], how, str(path),
                 cameras_train=_rows(data.cameras, train), cameras_test=_rows(data.cameras, test),
                 split_test=_rows(data.split, test))  # fmt: skip


def _rows(values: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """``values[rows]`` of an optional per-row array."""
    return None if values is None else values[rows]


def _covariances(estimator: str | None):
    """``trials -> covariance matrices`` of ``covariance_estimator``, its name checked first
    (as :class:`~rankmetric.preprocessing.Covariances` computes them)."""
    from .covariance import check_covariance_estimator, covariances

    estimator = estimator or "scm"  # Covariances' default, said here
    try:
        check_covariance_estimator(estimator, None)
    except ValueError as exc:
        raise ValueError(f"covariance_estimator: {exc}") from None
    return lambda trials: covariances(trials, estimator, None)


def _trial_file_split(path, test_size, covariance_estimator, test_domain) -> Split:
    """A trial file's covariances (or its SPD matrices, as given), split by its ``X_test``, a
    held-out domain or a hold-out."""
    from .user_trials import read_trial_file

    try:
        data = read_trial_file(path)
    except ValueError as exc:
        raise ValueError(f"data {exc}") from None
    if data.holds_spd and covariance_estimator is not None:
        raise ValueError(f"covariance_estimator: {path} holds SPD matrices (square and "
                         "symmetric), used as given; a covariance estimator applies to raw "
                         "trials (n_trials, channels, time).")  # fmt: skip
    cov = (lambda matrices: matrices) if data.holds_spd else _covariances(covariance_estimator)
    X, y, domains = cov(data.X), data.y, data.domains
    given = "; the file's SPD matrices, as given" if data.holds_spd else ""
    if data.X_test is not None:
        if test_domain is not None:
            raise ValueError("test_domain needs a trial file with domains and without X_test.")
        return Split(X, y, cov(data.X_test), data.y_test, "official test split" + given,
                     str(path), domains_train=domains, domains_test=data.domains_test)  # fmt: skip
    if test_domain is not None:
        if domains is None:
            raise ValueError("test_domain needs a trial file with domains and without X_test.")
        held = domains.astype(str) == str(test_domain)
        if not held.any() or held.all():
            names = sorted({str(d) for d in domains})
            raise ValueError(f"test_domain {test_domain!r} must be one of {names}, and not the "
                             "only one.")  # fmt: skip
        how = f"domain {test_domain} held out (cross-domain), trained on the others{given}"
        return Split(X[~held], y[~held], X[held], y[held], how, str(path),
                     domains_train=domains[~held], domains_test=domains[held])  # fmt: skip
    train, test = _stratified([np.arange(len(y))], y, test_size)  # the rows of X, y and domains
    return Split(X[train], y[train], X[test], y[test], _stratified_how(test_size) + given,
                 str(path),
                 domains_train=_rows(domains, train),
                 domains_test=_rows(domains, test))  # fmt: skip


def _bundled_spd(name: str, covariance_estimator: str | None):
    """A bundled set as SPD matrices: its own, or re-estimated from its multichannel trials."""
    from ._registry import get_info
    from .covariance import load_spd

    if covariance_estimator is None:
        return load_spd(name)
    _covariances(covariance_estimator)  # its name checked first
    try:
        info = get_info(name)
    except ValueError:
        info = None
    if info is None or info.kind != "multichannel" or not info.available:
        raise ValueError(
            f"covariance_estimator applies to multichannel trials; {name!r} is not a bundled "
            "multichannel set (derived SPD sets such as fmnist-regcov come as matrices)."
        )
    return load_spd(info.name, estimator=covariance_estimator, random_state=None)


def load_split(
    data,
    *,
    test_size: float = 0.3,
    spd: bool | None = False,
    columns: dict | None = None,
    covariance_estimator: str | None = None,
    test_domain=None,
) -> Split:
    """Read a data set (a bundled one, a feature file or a trial file) and split it.

    Parameters
    ----------
    data : str or path-like
        A bundled set's name (:func:`rankmetric.datasets.list_datasets`), a feature file
        (``.npz``, ``.csv``, ``.parquet``, ``.mat``; :func:`rankmetric.datasets.load_features`),
        or with ``spd`` a ``.npz`` file of raw trials
        (:func:`rankmetric.datasets.read_trial_file`).
    test_size : float, default=0.3
        The share held out when the data has no test part of its own (see the module's rules).
    spd : bool or None, default=False
        Whether the learner takes SPD matrices: multichannel trials become covariance matrices
        and a ``.npz`` file is read as trials. ``None``: as the bundled set comes (a
        multichannel set as SPD matrices, a feature set as features).
    columns : dict, optional
        The column keywords of :func:`~rankmetric.datasets.load_features` (``id_column`` ...)
        of a feature file.
    covariance_estimator : str, optional
        With ``spd``: the :class:`~rankmetric.preprocessing.Covariances` estimator of each trial
        (default: a trial file's ``"scm"``, a bundled set's own matrices).
    test_domain : optional
        With ``spd`` and a trial file with domains: hold this domain out whole as the test part.

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        Starting with the parameter at fault: an unreadable file, a multichannel set without
        ``spd``, an unknown ``test_domain`` or ``covariance_estimator``.

    Examples
    --------
    >>> from rankmetric.datasets import load_split
    >>> split = load_split("wine")
    >>> len(split.y_train), len(split.y_test)
    (124, 54)
    """
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be between 0 and 1, got {test_size}.")
    trials = spd and str(data).lower().endswith(".npz")
    if test_domain is not None and not trials:
        raise ValueError("test_domain needs a trial file with a domains array.")
    if trials:
        return _trial_file_split(data, test_size, covariance_estimator, test_domain)
    if not spd and is_feature_file(data):
        return _feature_file_split(data, test_size, columns)
    from . import load_dataset  # the package's name, as tests and users may replace it

    dataset = _bundled_spd(data, covariance_estimator) if spd else load_dataset(data)
    if spd is None and dataset.X.ndim == 3 and dataset.X.shape[1] != dataset.X.shape[2]:
        dataset = _bundled_spd(data, None)  # multichannel -> SPD
    if spd is False and dataset.X.ndim != 2:
        raise ValueError(f"data {data} is a multichannel set; use an SPD learner for it "
                         "(spd=True; rankmetric fit rpl).")  # fmt: skip
    if dataset.X_test is not None:
        return Split(dataset.X, dataset.y, dataset.X_test, dataset.y_test, "official test split",
                     str(data), dataset=dataset)  # fmt: skip
    X_tr, X_te, y_tr, y_te = _stratified([dataset.X, dataset.y], dataset.y, test_size)
    return Split(X_tr, y_tr, X_te, y_te, _stratified_how(test_size), str(data), dataset=dataset)
