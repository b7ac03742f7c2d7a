"""The one training loop behind every torch-trained estimator (WARCA, SSNE, RPL, ...).

An estimator supplies a module holding its parameters, an optimiser and a ``loss_step(step)``
callable that samples a batch from the estimator's NumPy generator and returns a scalar loss.
The loop does the rest. Its settings come in three small groups: :class:`Validation` (the
score, how often, the patience), :class:`Stopping` (the rules on the loss alone) and
:class:`Checkpointing` (where, how often, the fingerprint). :func:`train` is a short loop over
named steps, each its own unit:

* :func:`optimisation_step`: backward, the non-finite guards, gradient averaging across
  processes (:func:`rankmetric._distributed.average_gradients`), the optimiser and the post-step
  (proximal or retraction) update;
* :class:`_Validation`: validation every ``validation_every`` steps, the best parameters and the
  first stopping rule (``patience`` validations without improvement);
* :class:`_DivergenceGuard` and :class:`_LossPlateau`: the rules that stop on the loss alone
  (divergence; ``tol`` without validation);
* ``_checkpoints.Checkpoints``: resumable checkpoints, stamped with a fingerprint that the
  caller passes as ``Checkpointing(fingerprint=...)`` (:func:`fit_fingerprint` of the estimator
  and its data);
* :func:`_warn_if_untrained`: the end-of-run warnings.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .._distributed import average_gradients
from .._utils import progress
from ._checkpoints import Checkpoints, run_fingerprint
from ._settings import SPIKE_WINDOWS, Checkpointing, Stopping, Validation, grouped

#: Steps over which the loss is averaged by the divergence guard and the end-of-fit check.
LOSS_WINDOW = 10


class NonFiniteLossError(ValueError, FloatingPointError):
    """Raised when a loss or gradient becomes NaN/inf; parameters keep their last good values."""


class UntrainedModelWarning(ConvergenceWarning):
    """A fit returned a model that is no better than where it started, or no better than a
    reference the estimator checks (the Euclidean distance, for WARCA and kernel WARCA).

    Issued by :func:`train` when the loss diverged (it rose far above its start and is not
    coming down: the fit is stopped and the best parameters seen are restored; a spike that is
    falling runs on, see :class:`Stopping`), when validation kept the untrained
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
    value = float(loss.detach())  # one read of the scalar: the check and the returned value
    if not math.isfinite(value):
        raise NonFiniteLossError(
            f"{desc}: the loss became {value} at step {step}; parameters are left at "
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
    return value


def _snapshot(module: torch.nn.Module) -> dict:
    """A copy of ``module.state_dict()`` to restore later: tensors cloned, anything else (a
    module's extra state) deep-copied, the version metadata kept; what ``copy.deepcopy`` of it
    gives, without its generic walk over every tensor's attributes."""
    state = module.state_dict()
    copied = OrderedDict(
        (key, value.clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value))
        for key, value in state.items()
    )
    copied._metadata = copy.deepcopy(getattr(state, "_metadata", None))  # type: ignore[attr-defined]
    return copied


class _Validation:
    """Validation every ``config.every`` steps, the best parameters seen, the patience rule."""

    def __init__(self, config: Validation | None, max_iter: int, result: TrainingResult):
        self.config, self.max_iter, self.result = config, max_iter, result
        self.best_state: dict | None = None
        self.bad = 0  # validations since the best one

    def resume(self, best_state: dict | None) -> None:
        """Continue from a checkpoint: its best parameters and its count since the best."""
        self.best_state = best_state
        best = -1 if self.result.best_step is None else self.result.best_step
        self.bad = sum(1 for h in self.result.history if "val_score" in h and h["step"] > best)

    def score_start(self, module: torch.nn.Module) -> None:
        """Score the parameters before the first step (``Validation(score_start=True)``)."""
        self.result.best_score, self.result.best_step = float(self.config.score()), 0
        self.result.start_score = self.result.best_score
        self.best_state = _snapshot(module)

    def after_step(self, done: int, module: torch.nn.Module, entry: dict) -> None:
        """Validate after ``done`` steps when it is time, noting the score in ``entry``."""
        config = self.config
        if config is None or not (done % config.every == 0 or done == self.max_iter):
            return
        entry["val_score"] = score = float(config.score())
        if score > self.result.best_score:
            self.result.best_score, self.result.best_step = score, done
            self.best_state = _snapshot(module)
            self.bad = 0
        else:
            self.bad += 1

    def should_stop(self) -> bool:
        """The first stopping rule: ``patience`` validations without improvement."""
        patience = None if self.config is None else self.config.patience
        return patience is not None and self.bad >= patience


class _DivergenceGuard:
    """Stop a run whose windowed loss is above the threshold and not recovering.

    The threshold is the first step's loss plus ``factor − 1`` times its magnitude. The
    windowed loss is the mean of the last ``LOSS_WINDOW`` steps; above the threshold, the run
    is stopped when it is at least as high as at each of the
    ``LOSS_WINDOW`` steps before (rising or flat: not a spike on its way down from its peak;
    judged from step ``2 · LOSS_WINDOW``), or when it has been above the threshold at each of
    the last ``SPIKE_WINDOWS · LOSS_WINDOW`` steps (a non-finite loss never gets here:
    :func:`optimisation_step` raises :class:`NonFiniteLossError`). A pure
    function of the losses, so a resumed run decides as an uninterrupted one. Keeps the
    parameters of the lowest windowed loss below the threshold (every ``LOSS_WINDOW`` steps),
    to restore when the run diverged without a validated best.
    """

    def __init__(self, factor: float | None, module: torch.nn.Module, start: int):
        self.factor, self.start = factor, start
        self.low_state = _snapshot(module) if factor is not None else None
        self.low_step, self.low_loss = start, math.inf
        self.diverged, self.reason = False, ""

    def should_stop(self, losses: list[float], done: int, module: torch.nn.Module) -> bool:
        if self.factor is None or len(losses) < LOSS_WINDOW:
            return False
        threshold = losses[0] + (self.factor - 1) * max(abs(losses[0]), 1e-12)
        recent = float(np.mean(losses[-LOSS_WINDOW:]))
        if recent > threshold:
            self.reason = _divergence(losses, threshold)
            self.diverged = bool(self.reason)
            return self.diverged
        if (done - self.start) % LOSS_WINDOW == 0 and recent < self.low_loss:
            self.low_loss, self.low_step = recent, done
            self.low_state = _snapshot(module)
        return False


def _divergence(losses: list[float], threshold: float) -> str:
    """Why a windowed loss above ``threshold`` is a divergence, or ``""`` for a spike that is
    falling (:class:`_DivergenceGuard`'s rule; ``losses`` end above the threshold)."""
    w, span = LOSS_WINDOW, SPIKE_WINDOWS * LOSS_WINDOW
    if len(losses) < 2 * w:
        return ""  # judged from step 2 · LOSS_WINDOW, with a window's worth of earlier means
    tail = np.asarray(losses[-(max(span, w + 1) + w - 1) :], dtype=np.float64)
    windowed = np.convolve(tail, np.full(w, 1.0 / w), mode="valid")  # [-1]: the last step's
    if windowed[-1] >= windowed[-(w + 1) : -1].max():
        return f"not falling: at least as high as at each of the {w} steps before"
    if len(windowed) >= span and np.all(windowed[-span:] > threshold):
        return f"above {threshold:.4g} for {span} steps"
    return ""


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


# ----------------------------------------------------------------------------- the loop


def train(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_step: Callable[[int], torch.Tensor],
    *,
    rng: np.random.Generator,
    max_iter: int,
    post_step: Callable[[], None] | None = None,
    validation: Validation | None = None,
    stopping: Stopping | None = None,
    checkpointing: Checkpointing | None = None,
    verbose: bool | int = False,
    desc: str = "training",
    hint: str | None = None,
    **deprecated,
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
    validation : Validation, optional
        Validate (early stopping, the best parameters restored); without it the run is judged
        on its loss alone.
    stopping : Stopping, optional
        The rules on the loss: the divergence guard, and ``tol`` without validation (default
        ``Stopping()``: the guard at 10 times the first loss, no ``tol``).
    checkpointing : Checkpointing, optional
        Resumable checkpoints.
    verbose : bool or int
        Show a progress bar (only on a terminal).
    desc : str, default="training"
        Names the run in the progress bar, errors and warnings.
    hint : str, optional
        What the estimator suggests trying, appended to every :class:`UntrainedModelWarning`.
    **deprecated
        The flat keywords of 0.1 (``validate``, ``validation_every``, ``patience``,
        ``validate_start``, ``tol``, ``tol_window``, ``divergence_factor``, ``checkpoint_dir``,
        ``checkpoint_every``, ``fingerprint``), moved into their group with a
        ``FutureWarning``; removed in 0.3.

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
        When the loss diverged (see :class:`Stopping`), when validation kept the untrained
        start (step 0, with ``Validation(score_start=True)``), or, without validation, when the
        mean loss of the last 10 steps is no lower than the first step's: the model returned
        may be no better than where it started.

    Examples
    --------
    >>> import numpy as np, torch
    >>> module = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    >>> result = train(module, optimizer, lambda step: module.weight.square().sum(),
    ...                rng=np.random.default_rng(0), max_iter=20, stopping=Stopping(tol=None))
    >>> result.n_iter, result.history[-1]["loss"] < result.history[0]["loss"]
    (20, True)
    """
    stopping = Stopping() if stopping is None else stopping
    if deprecated:
        groups = {"validation": validation, "stopping": stopping, "checkpointing": checkpointing}
        groups = grouped(deprecated, groups)
        validation, stopping, checkpointing = groups.values()
    checkpointing = Checkpointing(None) if checkpointing is None else checkpointing
    result = TrainingResult()
    validated = validation is not None
    checkpoints = Checkpoints(
        checkpointing.directory,
        checkpointing.every,
        run_fingerprint(module, optimizer, checkpointing.fingerprint),
    )
    validation = _Validation(validation, max_iter, result)
    start, best_state = checkpoints.resume(module, optimizer, rng, result)
    validation.resume(best_state)
    if validated and validation.config.score_start and start == 0 and max_iter > 0:
        validation.score_start(module)
    losses: list[float] = [h["loss"] for h in result.history]
    divergence = _DivergenceGuard(stopping.divergence_factor, module, start)
    plateau = _LossPlateau(stopping.tol, stopping.window, validated=validated)
    params = [p for p in module.parameters() if p.requires_grad]
    bar = progress(
        range(start, max_iter), total=max_iter, initial=start, desc=desc, verbose=verbose
    )
    step = start
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
    result.n_iter = step + 1 if max_iter > start else start
    result.diverged = divergence.diverged
    _restore(module, result, validation.best_state, divergence)
    _warn_if_untrained(result, losses, desc, hint, validated=validated, why=divergence.reason)
    _warn_if_unsettled(result, desc, stopping.tol, max_iter, validated=validated)
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
    result: TrainingResult,
    losses: list[float],
    desc: str,
    hint: str | None,
    *,
    validated: bool,
    why: str = "",
) -> None:
    """Issue an :class:`UntrainedModelWarning` when the run ended no better than its start
    (``why``: the divergence guard's reason)."""
    advice = f" {hint}" if hint else ""
    start = "the untrained start (step 0)"
    if result.diverged:
        recent = float(np.mean(losses[-LOSS_WINDOW:]))
        kept = start if result.restored_step == 0 else f"step {result.restored_step}"
        message = (
            f"{desc}: the training loss diverged, from {losses[0]:.4g} at the first step to a "
            f"mean of {recent:.4g} over steps {len(losses) - LOSS_WINDOW + 1}–{len(losses)} "
            f"({why}); training stopped at step {result.n_iter} and the parameters of {kept} were "
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
