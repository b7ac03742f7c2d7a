"""The one training loop behind every torch-trained estimator (WARCA, SSNE, RPL, ...).

An estimator supplies a module holding its parameters, an optimiser and a ``loss_step(step)``
callable that samples a batch from the estimator's NumPy generator and returns a scalar loss.
The loop does the rest. :func:`train` is a short loop over named steps, each its own unit:

* :func:`optimisation_step`: backward, the non-finite guards, gradient averaging across
  processes (:func:`rankmetric._distributed.average_gradients`), the optimiser and the post-step
  (proximal or retraction) update;
* :class:`_Validation`: validation every ``validation_every`` steps, the best parameters and the
  first stopping rule (``patience`` validations without improvement);
* :class:`_DivergenceGuard` and :class:`_LossPlateau`: the rules that stop on the loss alone
  (divergence; ``tol`` without validation);
* ``_checkpoints.Checkpoints``: resumable checkpoints, stamped with a fingerprint that the
  caller passes as ``train(fingerprint=...)`` (:func:`fit_fingerprint` of the estimator and its
  data);
* :func:`_warn_if_untrained`: the end-of-run warnings.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from ._checkpoints import Checkpoints, run_fingerprint
from ._distributed import average_gradients
from ._fingerprint import RESUMABLE_PARAMS, fit_fingerprint  # noqa: F401 - re-exported
from ._utils import progress

__all__ = [
    "TrainingResult",
    "NonFiniteLossError",
    "UntrainedModelWarning",
    "train",
    "optimisation_step",
    "fit_fingerprint",
    "checkpoint_fingerprint",
]

#: Steps over which the loss is averaged by the divergence guard and the end-of-fit check.
LOSS_WINDOW = 10
#: Default of ``train(divergence_factor=...)``: stop when the windowed loss exceeds this many
#: times the loss of the first step.
DIVERGENCE_FACTOR = 10.0
# Only for the deprecated ``checkpoint_fingerprint`` block (removed in 0.3); the fingerprint is
# an argument of :func:`train`.
_FINGERPRINT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "rankmetric_fit_fingerprint", default=None
)


class NonFiniteLossError(ValueError, FloatingPointError):
    """Raised when a loss or gradient becomes NaN/inf; parameters keep their last good values."""


class UntrainedModelWarning(ConvergenceWarning):
    """A fit returned a model that is no better than where it started, or no better than a
    reference the estimator checks (the Euclidean distance, for WARCA and kernel WARCA).

    Issued by :func:`train` when the loss diverged (it rose far above its start: the fit is
    stopped and the best parameters seen are restored), when validation kept the untrained
    start (step 0), or when the training loss ended no lower than it began; and by the estimators
    when the fitted metric ranks below their reference. The message says which, and what to try.
    A subclass of scikit-learn's ``ConvergenceWarning`` (so of ``UserWarning``): filters on
    either catch it. Make it an error with
    ``warnings.simplefilter("error", rankmetric.UntrainedModelWarning)``.

    See Also
    --------
    rankmetric.WARCA : Checks its fitted metric against the Euclidean one.
    rankmetric.SPDNetEmbedding : Warns when validation kept the untrained network.
    """


@dataclass
class TrainingResult:
    """What a run of :func:`train` did.

    Attributes
    ----------
    n_iter : int
        Steps taken.
    history : list of dict
        One entry per logged step: ``{"step", "loss"}`` and ``"val_score"`` when validated.
    best_step : int or None
        Step of the best validation score (``None`` without validation).
    stopped_early : bool
        Whether validation patience, the loss tolerance or the divergence guard ended the run.
    diverged : bool
        Whether the divergence guard stopped the run (the best parameters seen were restored).
    start_score : float or None
        Validation score of the parameters before the first step (``validate_start``).
    restored_step : int or None
        Step whose parameters the module holds at the end when they are not the last step's
        (the best validation, or the lowest windowed loss after a divergence; 0: the start).
    """

    n_iter: int = 0
    history: list[dict] = field(default_factory=list)
    best_step: int | None = None
    best_score: float = -math.inf
    stopped_early: bool = False
    diverged: bool = False
    restored_step: int | None = None
    start_score: float | None = None


@contextlib.contextmanager
def checkpoint_fingerprint(fingerprint: str | None) -> Iterator[None]:
    """Deprecated: pass ``train(fingerprint=...)`` instead (removed in 0.3).

    Within this block, a :func:`train` called without ``fingerprint`` stamps its checkpoints
    with ``fingerprint``.
    """
    warnings.warn(
        "checkpoint_fingerprint is deprecated and will be removed in 0.3; pass the fingerprint "
        "to train(fingerprint=...) instead.",
        FutureWarning,
        stacklevel=3,
    )
    token = _FINGERPRINT.set(fingerprint)
    try:
        yield
    finally:
        _FINGERPRINT.reset(token)


# ----------------------------------------------------------------------------- the steps


def optimisation_step(
    params: Sequence[torch.Tensor],
    optimizer: torch.optim.Optimizer,
    loss_step: Callable[[int], torch.Tensor],
    step: int,
    *,
    post_step: Callable[[], None] | None = None,
    desc: str = "training",
) -> float:
    """One step of :func:`train`: loss, guards, backward, gradient sync, update; the loss value.

    Parameters
    ----------
    params : sequence of tensors
        The trained parameters (those whose gradients are checked and averaged over ranks).
    optimizer : torch.optim.Optimizer
        Optimiser over ``params``.
    loss_step : callable ``step -> scalar tensor``
        Draws a batch and returns the loss to minimise.
    step : int
        The step's index (0 for the first), passed to ``loss_step``.
    post_step : callable, optional
        Called without gradient tracking after the optimiser's step.
    desc : str, default="training"
        Names the run in error messages.

    Returns
    -------
    float
        The loss of the step, before the update.

    Raises
    ------
    NonFiniteLossError
        When the loss or a gradient is not finite; the parameters are left untouched.

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> optimizer = torch.optim.SGD([w], lr=0.5)
    >>> optimisation_step([w], optimizer, lambda step: (w**2).sum(), 0)
    2.0
    >>> w.detach().tolist()
    [0.0, 0.0]
    """
    optimizer.zero_grad(set_to_none=True)
    loss = loss_step(step)
    if not torch.isfinite(loss):
        raise NonFiniteLossError(
            f"{desc}: the loss became {loss.item()} at step {step}; parameters are left at "
            "their last finite values. Lower the learning rate or check the input scaling."
        )
    loss.backward()
    average_gradients(params)
    if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in params):
        raise NonFiniteLossError(
            f"{desc}: a gradient became non-finite at step {step}; parameters are left at "
            "their last finite values."
        )
    optimizer.step()
    if post_step is not None:
        with torch.no_grad():
            post_step()
    return float(loss.detach())


class _Validation:
    """Validation every ``every`` steps, the best parameters seen, and the patience rule."""

    def __init__(self, validate, every: int, patience: int | None, max_iter: int, result):
        self.validate, self.every, self.patience = validate, every, patience
        self.max_iter, self.result = max_iter, result
        self.best_state: dict | None = None
        self.bad = 0  # validations since the best one

    def resume(self, best_state: dict | None) -> None:
        """Continue from a checkpoint: its best parameters and its count since the best."""
        self.best_state = best_state
        best = -1 if self.result.best_step is None else self.result.best_step
        self.bad = sum(1 for h in self.result.history if "val_score" in h and h["step"] > best)

    def score_start(self, module: torch.nn.Module) -> None:
        """Score the parameters before the first step (``train(validate_start=True)``)."""
        self.result.best_score, self.result.best_step = float(self.validate()), 0
        self.result.start_score = self.result.best_score
        self.best_state = copy.deepcopy(module.state_dict())

    def _record(self, score: float, step: int, module: torch.nn.Module) -> None:
        if score > self.result.best_score:
            self.result.best_score, self.result.best_step = score, step
            self.best_state = copy.deepcopy(module.state_dict())
            self.bad = 0
        else:
            self.bad += 1

    def after_step(self, done: int, module: torch.nn.Module, entry: dict) -> None:
        """Validate after ``done`` steps when it is time, noting the score in ``entry``."""
        if self.validate is None or not (done % self.every == 0 or done == self.max_iter):
            return
        entry["val_score"] = score = float(self.validate())
        self._record(score, done, module)

    def should_stop(self) -> bool:
        """The first stopping rule: ``patience`` validations without improvement."""
        return self.validate is not None and self.patience is not None and self.bad >= self.patience


class _DivergenceGuard:
    """Stop when the windowed loss rises ``factor`` times above the first step's loss.

    Keeps the parameters of the lowest windowed loss (every ``LOSS_WINDOW`` steps), to restore
    when the run diverged without a validated best.
    """

    def __init__(self, factor: float | None, module: torch.nn.Module, start: int):
        self.factor, self.start = factor, start
        self.low_state = copy.deepcopy(module.state_dict()) if factor is not None else None
        self.low_step, self.low_loss = start, math.inf
        self.diverged = False

    def should_stop(self, losses: list[float], done: int, module: torch.nn.Module) -> bool:
        if self.factor is None or len(losses) < LOSS_WINDOW:
            return False
        recent = float(np.mean(losses[-LOSS_WINDOW:]))
        if recent > losses[0] + (self.factor - 1) * max(abs(losses[0]), 1e-12):
            self.diverged = True
            return True
        if (done - self.start) % LOSS_WINDOW == 0 and recent < self.low_loss:
            self.low_loss, self.low_step = recent, done
            self.low_state = copy.deepcopy(module.state_dict())
        return False


class _LossPlateau:
    """The second stopping rule, without validation: the windowed loss stopped improving."""

    def __init__(self, tol: float | None, window: int, validated: bool):
        self.tol = None if validated else tol
        self.window = window

    def should_stop(self, losses: list[float]) -> bool:
        if self.tol is None or len(losses) < 2 * self.window:
            return False
        recent = np.mean(losses[-self.window :])
        before = np.mean(losses[-2 * self.window : -self.window])
        return before - recent < self.tol * max(abs(before), 1e-12)


class _Interrupted(Exception):
    """Internal: the deprecated ``stop_after`` ends the run as if it were killed."""


def _interrupt_after(loss_step, stop_after: int):
    """``loss_step`` that raises :class:`_Interrupted` instead of running step ``stop_after``."""
    warnings.warn(
        "train(stop_after=...) is deprecated and will be removed in 0.3; to simulate a killed "
        "run, let loss_step raise (or patch _checkpoints.save_checkpoint).",
        FutureWarning,
        stacklevel=3,
    )
    calls = iter(range(stop_after + 1))

    def interrupted(step: int) -> torch.Tensor:
        if next(calls, stop_after) == stop_after:
            raise _Interrupted(step)
        return loss_step(step)

    return interrupted


# ----------------------------------------------------------------------------- the loop


def train(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_step: Callable[[int], torch.Tensor],
    *,
    rng: np.random.Generator,
    max_iter: int,
    post_step: Callable[[], None] | None = None,
    validate: Callable[[], float] | None = None,
    validation_every: int = 50,
    patience: int | None = 10,
    tol: float | None = None,
    tol_window: int = 100,
    verbose: bool | int = False,
    desc: str = "training",
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int = 100,
    fingerprint: str | None = None,
    validate_start: bool = False,
    divergence_factor: float | None = DIVERGENCE_FACTOR,
    hint: str | None = None,
    stop_after: int | None = None,
) -> TrainingResult:
    """Run ``max_iter`` optimisation steps of ``loss_step`` on ``module``'s parameters.

    Parameters
    ----------
    module : torch.nn.Module
        Holds every trained tensor; its ``state_dict`` is what checkpoints and early stopping keep.
    optimizer : torch.optim.Optimizer
        Optimiser over ``module.parameters()``.
    loss_step : callable ``step -> scalar tensor``
        Draws a batch (from ``rng``) and returns the loss to minimise.
    rng : numpy.random.Generator
        The generator every sampler of the estimator draws from; saved in checkpoints.
    max_iter : int
        Number of steps.
    post_step : callable, optional
        Called after each optimiser step (a proximal step, a retraction onto a manifold, ...).
    validate : callable ``() -> float``, optional
        A score where higher is better; enables early stopping and best-parameter restoring.
    validation_every, patience : int
        Validate every ``validation_every`` steps; stop after ``patience`` validations without
        improvement (``None``: never stop early, still restore the best parameters).
    tol, tol_window : float, int
        Without validation: stop when the mean loss over the last ``tol_window`` steps improved
        by less than ``tol`` (relative) on the window before. ``None`` disables it.
    verbose : bool or int
        Show a progress bar (only on a terminal).
    desc : str, default="training"
        Names the run in the progress bar, errors and warnings.
    checkpoint_dir : path, optional
        Write ``checkpoint.pt`` there every ``checkpoint_every`` steps (atomically); an existing
        checkpoint is resumed, so a killed fit ends with the same parameters as an uninterrupted
        one. A checkpoint carries a fingerprint of the module's structure, the optimiser settings
        and ``fingerprint``; one that does not match is refused with a ``ValueError``, and so is
        a damaged one.
    checkpoint_every : int, default=100
        Steps between checkpoints.
    fingerprint : str, optional
        What else a resumable checkpoint must match: every estimator passes
        :func:`fit_fingerprint` of itself and the data of its fit (the estimators' fit
        decorator computes it), so a checkpoint of other data, labels or hyper-parameters is
        refused.
    validate_start : bool, default=False
        Also score the parameters before the first step (step 0), so that validation can keep
        the untrained start when no step beats it (``result.best_step == 0``, with an
        :class:`UntrainedModelWarning`).
    divergence_factor : float or None, default=10.0
        The divergence guard: stop when the mean loss of the last ``LOSS_WINDOW`` (10) steps
        exceeds the first step's loss by ``divergence_factor − 1`` times its magnitude (10 times
        a positive start), restore the best parameters seen (the best validation, else the
        lowest 10-step mean loss, checked every 10 steps, or the start) and issue an
        :class:`UntrainedModelWarning`. ``None`` disables it.
    hint : str, optional
        What the estimator suggests trying, appended to every :class:`UntrainedModelWarning`.
    stop_after : int, optional
        Deprecated (removed in 0.3): return after this many steps as if interrupted. To
        simulate a killed run, let ``loss_step`` raise.

    Returns
    -------
    TrainingResult

    Raises
    ------
    NonFiniteLossError
        When the loss or a gradient is not finite; the parameters keep their last good values.

    Warns
    -----
    UntrainedModelWarning
        When the loss diverged (see ``divergence_factor``), when validation kept the untrained
        start (step 0, with ``validate_start``), or, without validation, when the mean loss of
        the last 10 steps is no lower than the first step's: the model returned may be no
        better than where it started.

    Examples
    --------
    >>> import numpy as np, torch
    >>> module = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    >>> result = train(module, optimizer, lambda step: module.weight.square().sum(),
    ...                rng=np.random.default_rng(0), max_iter=20)
    >>> result.n_iter, result.history[-1]["loss"] < result.history[0]["loss"]
    (20, True)
    """
    if fingerprint is None:
        fingerprint = _FINGERPRINT.get()  # the deprecated checkpoint_fingerprint block
    if stop_after is not None:
        loss_step = _interrupt_after(loss_step, stop_after)
    result = TrainingResult()
    checkpoints = Checkpoints(
        checkpoint_dir, checkpoint_every, run_fingerprint(module, optimizer, fingerprint)
    )
    validation = _Validation(validate, validation_every, patience, max_iter, result)
    start, best_state = checkpoints.resume(module, optimizer, rng, result)
    validation.resume(best_state)
    if validate is not None and validate_start and start == 0 and max_iter > 0:
        validation.score_start(module)
    losses: list[float] = [h["loss"] for h in result.history]
    divergence = _DivergenceGuard(divergence_factor, module, start)
    plateau = _LossPlateau(tol, tol_window, validated=validate is not None)
    params = [p for p in module.parameters() if p.requires_grad]
    bar = progress(
        range(start, max_iter), total=max_iter, initial=start, desc=desc, verbose=verbose
    )
    step = start
    try:
        for step in bar:
            value = optimisation_step(
                params, optimizer, loss_step, step, post_step=post_step, desc=desc
            )
            losses.append(value)
            entry = {"step": step + 1, "loss": value}
            validation.after_step(step + 1, module, entry)
            result.history.append(entry)
            if verbose:
                bar.set_postfix(loss=f"{value:.4g}")
            checkpoints.after_step(step + 1, module, optimizer, rng, result, validation.best_state)
            if (
                validation.should_stop()
                or divergence.should_stop(losses, step + 1, module)
                or plateau.should_stop(losses)
            ):
                result.stopped_early = True
                break
    except _Interrupted as stopped:
        result.n_iter = stopped.args[0]
        return result
    result.n_iter = step + 1 if max_iter > start else start
    result.diverged = divergence.diverged
    _restore(module, result, validation.best_state, divergence)
    _warn_if_untrained(result, losses, desc, hint, validated=validate is not None)
    _warn_if_unsettled(result, desc, tol, max_iter, validated=validate is not None)
    checkpoints.remove()
    return result


def _restore(module, result: TrainingResult, best_state, divergence: _DivergenceGuard) -> None:
    """Load the best validated parameters, or after a divergence those of the lowest loss."""
    if best_state is not None:
        module.load_state_dict(best_state)
        result.restored_step = result.best_step
    elif result.diverged:
        module.load_state_dict(divergence.low_state)
        result.restored_step = divergence.low_step


def _warn_if_unsettled(result, desc: str, tol, max_iter: int, *, validated: bool) -> None:
    """The ``ConvergenceWarning`` of a ``tol`` run that reached ``max_iter`` unsettled."""
    if validated or tol is None or result.stopped_early or max_iter <= 0:
        return
    warnings.warn(
        f"{desc}: stopped at max_iter={max_iter} before the loss settled (tol={tol}); "
        "consider increasing max_iter.",
        ConvergenceWarning,
        stacklevel=3,
    )


def _warn_if_untrained(
    result: TrainingResult, losses: list[float], desc: str, hint: str | None, *, validated: bool
) -> None:
    """Issue an :class:`UntrainedModelWarning` when the run ended no better than its start."""
    advice = f" {hint}" if hint else ""
    start = "the untrained start (step 0)"
    if result.diverged:
        recent = float(np.mean(losses[-LOSS_WINDOW:]))
        kept = start if result.restored_step == 0 else f"step {result.restored_step}"
        message = (
            f"{desc}: the training loss diverged, from {losses[0]:.4g} at the first step to a "
            f"mean of {recent:.4g} over steps {len(losses) - LOSS_WINDOW + 1}–{len(losses)}; "
            f"training stopped at step {result.n_iter} and the parameters of {kept} were "
            "restored."
        )
    elif validated and result.best_step == 0:
        later = [h["val_score"] for h in result.history if "val_score" in h]
        best_later = f"; best later: {max(later):.4g}" if later else ""
        message = (
            f"{desc}: no validated step scored above the untrained start (step 0: "
            f"{result.best_score:.4g}{best_later}), so the model returned is the untrained one."
        )
    elif not validated and len(losses) >= 2 * LOSS_WINDOW:
        end = float(np.mean(losses[-LOSS_WINDOW:]))
        if end < losses[0]:
            return
        message = (
            f"{desc}: the training loss ended at {end:.4g} (mean of the last {LOSS_WINDOW} "
            f"steps), no lower than its first step's {losses[0]:.4g}: the model may be no "
            "better than its start."
        )
    else:
        return
    warnings.warn(message + advice, UntrainedModelWarning, stacklevel=3)
