"""Fingerprints of a fit: what a resumable checkpoint must match to be resumed.

:func:`fit_fingerprint` digests an estimator's class, its hyper-parameters (except those a
resumed fit may change, :data:`RESUMABLE_PARAMS`) and the data of its fit. The estimators' fit
decorator (:func:`rankmetric.estimators.base.fit_context`) computes it and the estimator passes
it to :func:`rankmetric.training.train` (``fingerprint=``), which stamps its checkpoints with
it and refuses a checkpoint that does not carry it.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["RESUMABLE_PARAMS", "fit_fingerprint"]

# Hyper-parameters that may change between a killed fit and its resume.
RESUMABLE_PARAMS = frozenset(
    {"verbose", "checkpoint_dir", "checkpoint_every", "device", "max_iter"}
)


def _hash_value(h, value) -> None:
    """Feed ``value`` (an array-like, a generator, a plain value) into the hash ``h``."""
    if isinstance(value, (np.random.Generator, np.random.RandomState)):
        h.update(type(value).__name__.encode())  # its state moves as it is used
        return
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        h.update(repr(value).encode())
        return
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything np.asarray cannot read is hashed by repr
        a = None
    if a is None or a.dtype == object or a.ndim == 0:
        h.update(repr(value).encode())
    else:
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())


def fit_fingerprint(estimator, *data, **named_data) -> str:
    """A digest of ``estimator``'s class, hyper-parameters and the data a fit is given.

    Hyper-parameters in :data:`RESUMABLE_PARAMS` (``verbose``, ``checkpoint_dir``,
    ``checkpoint_every``, ``device``, ``max_iter``) are left out, so a killed fit may be resumed
    with them changed; every other parameter and every array of ``data`` must be the same.

    Parameters
    ----------
    estimator : estimator with ``get_params``
        The estimator being fitted.
    *data, **named_data
        The arguments of its fit (arrays are hashed by dtype, shape and bytes).

    Returns
    -------
    str
        A SHA-256 hex digest.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> a = fit_fingerprint(StandardScaler(), np.ones((3, 2)))
    >>> a == fit_fingerprint(StandardScaler(), np.ones((3, 2)))
    True
    >>> a == fit_fingerprint(StandardScaler(with_mean=False), np.ones((3, 2)))
    False
    """
    h = hashlib.sha256(type(estimator).__qualname__.encode())
    for name, value in sorted(estimator.get_params(deep=False).items()):
        if name not in RESUMABLE_PARAMS:
            h.update(name.encode())
            _hash_value(h, value)
    for value in data:
        _hash_value(h, value)
    for name, value in sorted(named_data.items()):
        h.update(name.encode())
        _hash_value(h, value)
    return h.hexdigest()
