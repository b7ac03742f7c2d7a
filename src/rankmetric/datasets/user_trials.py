"""Your own multichannel trials: one ``.npz`` file of raw trials, labels and sessions.

:func:`read_trial_file` reads and checks the file that ``rankmetric fit rpl|spdnet``,
``rankmetric evaluate`` and ``rankmetric bench rpl-spd --data`` take:

==================  =================================================================
array               what it holds
==================  =================================================================
``X``               trials, (n_trials, n_channels, n_times) (MNE's ``epochs.get_data()``)
``y``               one class label per trial
``domains``         optional: the session (or subject) of each trial
``X_test`` ...      optional: a test part, with ``y_test`` (and ``domains_test``)
==================  =================================================================

``X`` may also hold SPD matrices already, (n_trials, n_channels, n_channels) (covariances the
user estimated, coherence or kernel matrices, as pyRiemann takes them): a stack of square,
symmetric matrices is read as such (:attr:`TrialData.holds_spd`), each checked positive
definite (the first that is not is named), and used as given; no covariance is estimated.

The names of the feature files are accepted (:data:`rankmetric.datasets.user_features.ALIASES`:
``features``, ``labels``, ``ids`` ...), and those of EEG tools: trials ``trials``, ``epochs``,
``data``, ``signals`` (SPD matrices: ``covariances``, ``covs``, ``matrices``); labels
``events``, ``targets``, ``classes``; domains ``session``, ``sessions``, ``subject``,
``subjects``, ``run``, ``runs``, ``groups``. A test part is any of them with ``_test``
(``trials_test``, ``labels_test``, ``session_test``); the first name found wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .user_features import ALIASES as FEATURE_ALIASES
from .user_features import first_present

__all__ = ["TRIAL_ALIASES", "TrialData", "is_trial_file", "read_trial_file"]

#: What a trial file's arrays may be called, for each role (first found wins).
TRIAL_ALIASES = {
    "X": (*FEATURE_ALIASES["X"], "trials", "epochs", "data", "signals", "covariances", "covs",
          "matrices"),
    "y": (*FEATURE_ALIASES["y"], "events", "targets", "classes"),
    "domains": (
        "domains", "domain", "session", "sessions", "subject", "subjects", "run", "runs", "groups",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class TrialData:
    """Raw trials read from a user's file, checked.

    Attributes
    ----------
    X : ndarray of shape (n_trials, n_channels, n_times), float64
    y : ndarray of shape (n_trials,)
    X_test, y_test : ndarray or None
        The file's test part.
    domains, domains_test : ndarray or None
        The session (subject) of each trial of ``X`` / ``X_test``.
    names : dict
        ``{role: name in the file}`` of the arrays read (``"X"``, ``"y"``, ``"domains"``, and
        ``"X_test"`` ... when present).
    source : str
    holds_spd : bool
        Whether ``X`` (and ``X_test``) hold SPD matrices rather than raw trials: square and
        symmetric (checked positive definite as the file was read).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets.user_trials import TrialData
    >>> data = TrialData(np.zeros((2, 3, 8)), np.array([0, 1]), None, None, None, None, {}, "-")
    >>> data.n_channels
    3
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    domains: np.ndarray | None
    domains_test: np.ndarray | None
    names: dict
    source: str
    holds_spd: bool = False

    @property
    def n_channels(self) -> int:
        return int(self.X.shape[1])


def is_trial_file(path) -> bool:
    """Whether ``path`` is a ``.npz`` file whose trials (``X`` or an alias of
    :data:`TRIAL_ALIASES`, the first found, as :func:`read_trial_file` takes it) are 3-D, by
    their header.

    Only the header of ``X`` is read (the trials themselves are read once, later); a file that
    cannot be read is not one (its reader reports why).

    Parameters
    ----------
    path : str or path-like or None

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from rankmetric.datasets import is_trial_file
    >>> path = os.path.join(tempfile.mkdtemp(), "t.npz")
    >>> np.savez(path, X=np.zeros((2, 3, 8)), y=[0, 1])
    >>> np.savez(path.replace("t.npz", "e.npz"), trials=np.zeros((2, 3, 8)), labels=[0, 1])
    >>> is_trial_file(path), is_trial_file(path.replace("t.npz", "e.npz")), is_trial_file("iris")
    (True, True, False)
    """
    import zipfile

    from .._safe_npz import read_npy_header

    if not path or not str(path).lower().endswith(".npz"):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            stored = [name.removesuffix(".npy") for name in archive.namelist()]
            name = first_present(TRIAL_ALIASES["X"], stored)
            if name is None:
                return False
            with archive.open(f"{name}.npy") as member:
                return len(read_npy_header(member)[1]) == 3
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return False


def read_trial_file(path) -> TrialData:
    """Read a ``.npz`` file of raw trials, with their labels and optionally sessions.

    Parameters
    ----------
    path : str or path-like
        A ``.npz`` archive (no pickled objects) with the arrays of the module's table, under
        their names or an alias of :data:`TRIAL_ALIASES`.

    Returns
    -------
    TrialData

    Raises
    ------
    ValueError
        Naming the file and the problem: an unreadable file, a missing array (with the names
        tried and those found), a wrong shape, non-finite trials, a test part without its
        labels, or a channel count that differs between the parts.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from rankmetric.datasets.user_trials import read_trial_file
    >>> path = os.path.join(tempfile.mkdtemp(), "mine.npz")
    >>> rng = np.random.default_rng(0)
    >>> np.savez(path, trials=rng.normal(size=(6, 3, 50)), labels=[0, 1] * 3,
    ...          session=["a"] * 3 + ["b"] * 3)
    >>> data = read_trial_file(path)
    >>> data.X.shape, data.names["domains"]
    ((6, 3, 50), 'session')
    """
    from .._safe_npz import read_data_npz
    from ..geometry.checks import check_spd, is_symmetric_stack

    arrays = read_data_npz(path)  # untrusted input: every member checked before it is read
    names = {
        role + suffix: first_present([name + suffix for name in TRIAL_ALIASES[role]], arrays)
        for suffix in ("", "_test")
        for role in ("X", "y", "domains")
    }
    missing = [role for role in ("X", "y") if names[role] is None]
    if missing:
        tried = "; ".join(f"{r}: {', '.join(TRIAL_ALIASES[r])}" for r in missing)
        raise ValueError(
            f"{path}: missing array(s) {missing} (names tried, {tried}); a trial file holds X "
            f"(n_trials, channels, time), or SPD matrices (n_trials, channels, channels), and y "
            f"(n_trials,), optionally X_test and y_test; it has {sorted(arrays)}."
        )
    if (names["X_test"] is None) != (names["y_test"] is None):
        raise ValueError(f"{path}: X_test and y_test come together.")
    names = {role: name for role, name in names.items() if name is not None}
    found = {role: arrays[name] for role, name in names.items()}
    for suffix in ("", "_test") if "X_test" in found else ("",):
        _check_part(path, found, suffix)
    X, X_test = found["X"], found.get("X_test")
    if X_test is not None and X_test.shape[1] != X.shape[1]:
        raise ValueError(f"{path}: X has {X.shape[1]} channels, X_test {X_test.shape[1]}.")
    holds_spd = is_symmetric_stack(X)
    if holds_spd:  # SPD matrices as given: each checked positive definite, the first named
        if X_test is not None and not is_symmetric_stack(X_test):
            raise ValueError(f"{path}: X holds SPD matrices but X_test does not (square and "
                             "symmetric matrices, both parts).")  # fmt: skip
        for key in ("X", "X_test") if X_test is not None else ("X",):
            check_spd(found[key], f"{path}: {names[key]}")
    return TrialData(
        X=X.astype(np.float64),
        y=found["y"],
        X_test=None if X_test is None else X_test.astype(np.float64),
        y_test=found.get("y_test"),
        domains=found.get("domains"),
        domains_test=found.get("domains_test"),
        names=names,
        source=str(path),
        holds_spd=holds_spd,
    )


def _check_part(path, found: dict, suffix: str) -> None:
    """The trials ``X{suffix}``, their labels and domains: shapes that agree, finite numbers."""
    X, y, domains = found[f"X{suffix}"], found[f"y{suffix}"], found.get(f"domains{suffix}")
    if X.ndim != 3:
        raise ValueError(
            f"{path}: X{suffix} must have shape (n_trials, channels, time), got {X.shape}."
        )
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(
            f"{path}: y{suffix} must hold one label per trial of X{suffix} ({len(X)}), got shape "
            f"{y.shape}."
        )
    if not np.issubdtype(X.dtype, np.number) or not np.isfinite(X).all():
        raise ValueError(f"{path}: X{suffix} must hold finite numbers.")
    if domains is not None and domains.shape != (len(X),):
        raise ValueError(
            f"{path}: domains{suffix} must hold one domain per trial of X{suffix} ({len(X)}), got "
            f"shape {domains.shape}."
        )
