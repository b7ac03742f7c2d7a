"""The three small groups of settings of :func:`rankmetric.training.train`.

:class:`Validation` (the score, how often, the patience), :class:`Stopping` (the rules on the
loss alone) and :class:`Checkpointing` (where, how often, the fingerprint); and :func:`grouped`,
which moves the flat keywords of 0.1 into them with a ``FutureWarning``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from .._validation.compat import warn_deprecated

__all__ = ["Checkpointing", "Stopping", "Validation", "grouped"]

#: Default of ``Stopping(divergence_factor=...)``: the windowed loss above this many times the
#: loss of the first step is a spike, stopped unless it is falling (see :class:`Stopping`).
DIVERGENCE_FACTOR = 10.0
#: The longest a falling spike may stay above the threshold, in windows of 10 steps. Chosen on
#: training losses only (``benchmarks/bench_divergence_guard.py``, docs/warca.md): Kernel
#: WARCA's spikes at the bench's pinned settings stay above it for at most 44 steps and recover;
#: ``learning_rate=1.0`` stays above it for good and is stopped at step 109.
SPIKE_WINDOWS = 10


@dataclass(frozen=True)
class Validation:
    """How :func:`train` validates: the score, how often, and when to stop.

    Parameters
    ----------
    score : callable ``() -> float``
        A score where higher is better (a :func:`rankmetric.training.retrieval_validator`); the
        best validated parameters are restored at the end.
    every : int, default=50
        Steps between validations (and after the last step).
    patience : int or None, default=10
        Stop after this many validations without improvement (``None``: never stop early,
        still restore the best parameters).
    score_start : bool, default=False
        Also score the parameters before the first step (step 0), so that validation can keep
        the untrained start when no step beats it (``result.best_step == 0``, with an
        :class:`~rankmetric.UntrainedModelWarning`).

    Examples
    --------
    >>> Validation(lambda: 1.0, every=10).patience
    10
    """

    score: Callable[[], float]
    every: int = 50
    patience: int | None = 10
    score_start: bool = False


@dataclass(frozen=True)
class Stopping:
    """The rules of :func:`train` that stop on the training loss alone.

    Parameters
    ----------
    tol : float or None, default=None
        Without validation: stop when the mean loss over the last ``window`` steps improved by
        less than ``tol`` (relative) on the window before; ``None`` disables it.
    window : int, default=100
        The steps of ``tol``'s means.
    divergence_factor : float or None, default=10.0
        The divergence guard. The threshold is the first step's loss plus
        ``divergence_factor − 1`` times its magnitude (10 times a positive start); while the
        mean loss of the last ``LOSS_WINDOW`` (10) steps is above it, the run is in a spike,
        and the guard stops it when that mean is at least as high as at each of the 10 steps
        before (rising or flat: the loss is not falling from its peak) or when it has been
        above the threshold at every step of the last ``SPIKE_WINDOWS`` (10) windows (100
        steps). A spike that is falling may recover; the rule is applied from step 20, when
        the windowed loss has 10 earlier values to be compared with (a NaN or infinite loss
        stops any run at once, with :class:`~rankmetric.training.NonFiniteLossError`). A
        stopped run restores the best parameters seen (the best validation, else the lowest
        10-step mean loss below the threshold, checked every 10 steps, or the start) and
        issues an :class:`~rankmetric.UntrainedModelWarning`. Whether a recovered fit is any
        good is for validation and the estimators' checks to say. ``None`` disables the
        guard.

    Examples
    --------
    >>> Stopping(tol=1e-4).divergence_factor
    10.0
    """

    tol: float | None = None
    window: int = 100
    divergence_factor: float | None = DIVERGENCE_FACTOR


@dataclass(frozen=True)
class Checkpointing:
    """Resumable checkpoints of :func:`train`.

    Parameters
    ----------
    directory : path
        ``checkpoint.pt`` is written there every ``every`` steps (atomically); an existing
        checkpoint is resumed, so a killed fit ends with the same parameters as an
        uninterrupted one. A checkpoint carries a fingerprint of the module's structure, the
        optimiser settings and ``fingerprint``; one that does not match is refused with a
        ``ValueError``, and so is a damaged one.
    every : int, default=100
        Steps between checkpoints.
    fingerprint : str, optional
        What else a checkpoint must match: every estimator passes
        :func:`~rankmetric.training.fit_fingerprint` of itself and the data of its fit, so a
        checkpoint of other data, labels or hyper-parameters is refused.

    Examples
    --------
    >>> Checkpointing("/tmp/run", every=20).fingerprint is None
    True
    """

    directory: str | os.PathLike
    every: int = 100
    fingerprint: str | None = None


#: The keywords of :func:`train` before its settings were grouped: ``old: (group, field)``.
# alike: a table of string pairs, shaped like other tables (the bench's method labels)
_GROUPED_KEYWORDS = {
    "validate": ("validation", "score"),
    "validation_every": ("validation", "every"),
    "patience": ("validation", "patience"),
    "validate_start": ("validation", "score_start"),
    "tol": ("stopping", "tol"),
    "tol_window": ("stopping", "window"),
    "divergence_factor": ("stopping", "divergence_factor"),
    "checkpoint_dir": ("checkpointing", "directory"),
    "checkpoint_every": ("checkpointing", "every"),
    "fingerprint": ("checkpointing", "fingerprint"),
}
_GROUPS = {"validation": Validation, "stopping": Stopping, "checkpointing": Checkpointing}


def grouped(legacy: dict, groups: dict) -> dict:
    """The groups of :func:`train`, with the deprecated flat keywords ``legacy`` moved in."""
    unknown = set(legacy) - set(_GROUPED_KEYWORDS)
    if unknown:
        raise TypeError(f"train() got unexpected keyword arguments {sorted(unknown)}.")
    warn_deprecated(
        f"train({', '.join(f'{k}=' for k in legacy)}...)",
        "Pass the grouped settings: train(validation=Validation(...), stopping=Stopping(...), "
        "checkpointing=Checkpointing(...))",
        stacklevel=3,
    )
    fields: dict[str, dict] = {}
    for old, value in legacy.items():
        group, name = _GROUPED_KEYWORDS[old]
        fields.setdefault(group, {})[name] = value
    for group, values in fields.items():
        current = groups[group]
        if current is None:
            first = next(iter(_GROUPS[group].__dataclass_fields__))
            if values.get(first) is None:
                continue  # no score, no directory: that group stays off
            current = _GROUPS[group](values[first])
        groups[group] = replace(current, **values)
    return groups
