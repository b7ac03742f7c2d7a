"""The one training loop behind every torch-trained estimator (WARCA, SSNE, RPL, ...).

An estimator supplies a module holding its parameters, an optimiser and a ``loss_step(step)``
callable that samples a batch from the estimator's NumPy generator and returns a scalar loss.
The loop does the rest: backward, gradient synchronisation across processes, optimiser and
post-step (proximal or retraction) updates, validation with early stopping, a progress bar,
non-finite guards, and resumable checkpoints.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import hashlib
import json
import math
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from ._utils import progress
from .io import atomic_write

__all__ = [
    "TrainingResult",
    "NonFiniteLossError",
    "UntrainedModelWarning",
    "train",
    "fit_fingerprint",
    "checkpoint_fingerprint",
]

# Hyper-parameters that may change between a killed fit and its resume.
RESUMABLE_PARAMS = frozenset(
    {"verbose", "checkpoint_dir", "checkpoint_every", "device", "max_iter"}
)
#: Steps over which the loss is averaged by the divergence guard and the end-of-fit check.
LOSS_WINDOW = 10
#: Default of ``train(divergence_factor=...)``: stop when the windowed loss exceeds this many
#: times the loss of the first step.
DIVERGENCE_FACTOR = 10.0
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


def _sync_gradients(params: list[torch.Tensor]) -> None:
    """Average gradients over ranks when running under ``torch.distributed``."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    world = torch.distributed.get_world_size()
    if world == 1:
        return
    for p in params:
        if p.grad is not None:
            torch.distributed.all_reduce(p.grad)
            p.grad.div_(world)


def _is_main_process() -> bool:
    return not (torch.distributed.is_available() and torch.distributed.is_initialized()) or (
        torch.distributed.get_rank() == 0
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


@contextlib.contextmanager
def checkpoint_fingerprint(fingerprint: str | None) -> Iterator[None]:
    """Within this block, :func:`train` stamps its checkpoints with ``fingerprint`` and resumes
    only checkpoints that carry it (the estimators' ``fit`` sets it; see ``estimators/base.py``)."""
    token = _FINGERPRINT.set(fingerprint)
    try:
        yield
    finally:
        _FINGERPRINT.reset(token)


def _run_fingerprint(module, optimizer, fingerprint: str | None) -> str:
    """The caller's fingerprint plus the structure of the module and the optimiser settings."""
    h = hashlib.sha256((fingerprint or "").encode())
    for name, tensor in module.state_dict().items():
        h.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
    h.update(type(optimizer).__name__.encode())
    for group in optimizer.param_groups:
        h.update(repr(sorted((k, repr(v)) for k, v in group.items() if k != "params")).encode())
    return h.hexdigest()


def _save_checkpoint(
    path: Path, module, optimizer, rng, step, result, best_state, fingerprint
) -> None:
    payload = {
        "fingerprint": fingerprint,
        "step": step,
        "module": module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng_state": json.dumps(rng.bit_generator.state),
        "history": json.dumps(result.history),
        "best_step": -1 if result.best_step is None else result.best_step,
        "best_score": result.best_score,
        "best_state": best_state if best_state is not None else {},
    }
    atomic_write(path, lambda fh: torch.save(payload, fh))


def _mismatch(path: Path, detail: str) -> ValueError:
    return ValueError(
        f"the checkpoint {path} does not match the model being trained (another estimator, "
        f"other data or other hyper-parameters); delete it or use another checkpoint_dir. "
        f"({detail})"
    )


def _read_checkpoint(path: Path) -> dict:
    """The payload of ``path``, or a ``ValueError`` saying the file is damaged."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types (and advice not to follow)
        raise ValueError(
            f"the checkpoint {path} is damaged or not a rankmetric checkpoint "
            f"({type(exc).__name__}); delete it to start the fit afresh."
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"the checkpoint {path} is damaged or not a rankmetric checkpoint.")
    return payload


def _load_checkpoint(path: Path, module, optimizer, rng, result, fingerprint: str):
    payload = _read_checkpoint(path)
    if payload.get("fingerprint") != fingerprint:
        raise _mismatch(path, "its fingerprint differs")
    try:
        module.load_state_dict(payload["module"])
        optimizer.load_state_dict(payload["optimizer"])
        rng.bit_generator.state = json.loads(payload["rng_state"])
        result.history = json.loads(payload["history"])
        result.best_step = None if payload["best_step"] < 0 else int(payload["best_step"])
        result.best_score = float(payload["best_score"])
        best_state = payload["best_state"] or None
        return int(payload["step"]), best_state
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _mismatch(path, f"{type(exc).__name__}: {str(exc)[:200]}") from exc


def _validations_since_best(result: TrainingResult) -> int:
    """Validations after the best one: the early-stopping count a resumed run continues from."""
    best = -1 if result.best_step is None else result.best_step
    return sum(1 for h in result.history if "val_score" in h and h["step"] > best)


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
    stop_after: int | None = None,
    validate_start: bool = False,
    divergence_factor: float | None = DIVERGENCE_FACTOR,
    hint: str | None = None,
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
    checkpoint_dir : path, optional
        Write ``checkpoint.pt`` there every ``checkpoint_every`` steps (atomically); an existing
        checkpoint is resumed, so a killed fit ends with the same parameters as an uninterrupted
        one. A checkpoint carries a fingerprint of the module's structure, the optimiser settings
        and, inside :func:`checkpoint_fingerprint` (every estimator's ``fit``), the data, labels
        and hyper-parameters; one that does not match is refused with a ``ValueError``, and so is
        a damaged one.
    stop_after : int, optional
        Testing aid: return after this many steps as if interrupted (a checkpoint is written).
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
    """
    params = [p for p in module.parameters() if p.requires_grad]
    result = TrainingResult()
    best_state = None
    start = 0
    ckpt_path = None
    fingerprint = _run_fingerprint(module, optimizer, _FINGERPRINT.get())
    if checkpoint_dir is not None:
        if isinstance(checkpoint_every, bool) or not (
            isinstance(checkpoint_every, Integral) and checkpoint_every >= 1
        ):
            raise ValueError(
                f"checkpoint_every must be a positive integer, got {checkpoint_every!r}."
            )
        ckpt_path = Path(checkpoint_dir) / "checkpoint.pt"
        try:
            ckpt_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"checkpoint_dir={str(checkpoint_dir)!r}: cannot create it ({exc.strerror or exc})."
            ) from None
        if ckpt_path.exists():
            start, best_state = _load_checkpoint(
                ckpt_path, module, optimizer, rng, result, fingerprint
            )
    if validate is not None and validate_start and start == 0 and max_iter > 0:
        result.best_score, result.best_step = float(validate()), 0
        result.start_score = result.best_score
        best_state = copy.deepcopy(module.state_dict())
    bad_validations = _validations_since_best(result)  # 0 unless resumed
    losses: list[float] = [h["loss"] for h in result.history]
    # the divergence guard's fallback: the parameters of the lowest windowed loss (or the start)
    guard = divergence_factor is not None
    low_state = copy.deepcopy(module.state_dict()) if guard else None
    low_step, low_loss = start, math.inf
    bar = progress(
        range(start, max_iter), total=max_iter, initial=start, desc=desc, verbose=verbose
    )
    step = start
    for step in bar:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_step(step)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"{desc}: the loss became {loss.item()} at step {step}; parameters are left at "
                "their last finite values. Lower the learning rate or check the input scaling."
            )
        loss.backward()
        _sync_gradients(params)
        if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in params):
            raise NonFiniteLossError(
                f"{desc}: a gradient became non-finite at step {step}; parameters are left at "
                "their last finite values."
            )
        optimizer.step()
        if post_step is not None:
            with torch.no_grad():
                post_step()
        value = float(loss.detach())
        losses.append(value)
        entry = {"step": step + 1, "loss": value}
        if validate is not None and ((step + 1) % validation_every == 0 or step + 1 == max_iter):
            score = float(validate())
            entry["val_score"] = score
            if score > result.best_score:
                result.best_score, result.best_step = score, step + 1
                best_state = copy.deepcopy(module.state_dict())
                bad_validations = 0
            else:
                bad_validations += 1
        result.history.append(entry)
        if verbose:
            bar.set_postfix(loss=f"{value:.4g}")
        if ckpt_path is not None and (step + 1) % checkpoint_every == 0 and _is_main_process():
            _save_checkpoint(
                ckpt_path, module, optimizer, rng, step + 1, result, best_state, fingerprint
            )
        if stop_after is not None and step + 1 - start >= stop_after:
            result.n_iter = step + 1
            return result
        if patience is not None and validate is not None and bad_validations >= patience:
            result.stopped_early = True
            break
        if guard and len(losses) >= LOSS_WINDOW:
            recent = float(np.mean(losses[-LOSS_WINDOW:]))
            if recent > losses[0] + (divergence_factor - 1) * max(abs(losses[0]), 1e-12):
                result.stopped_early = result.diverged = True
                break
            if (step + 1 - start) % LOSS_WINDOW == 0 and recent < low_loss:
                low_loss, low_step = recent, step + 1
                low_state = copy.deepcopy(module.state_dict())
        if tol is not None and validate is None and len(losses) >= 2 * tol_window:
            recent = np.mean(losses[-tol_window:])
            before = np.mean(losses[-2 * tol_window : -tol_window])
            if before - recent < tol * max(abs(before), 1e-12):
                result.stopped_early = True
                break
    result.n_iter = step + 1 if max_iter > start else start
    if best_state is not None:
        module.load_state_dict(best_state)
        result.restored_step = result.best_step
    elif result.diverged:
        module.load_state_dict(low_state)
        result.restored_step = low_step
    _warn_if_untrained(result, losses, desc, hint, validated=validate is not None)
    if validate is None and tol is not None and not result.stopped_early and max_iter > 0:
        warnings.warn(
            f"{desc}: stopped at max_iter={max_iter} before the loss settled (tol={tol}); "
            "consider increasing max_iter.",
            ConvergenceWarning,
            stacklevel=2,
        )
    if ckpt_path is not None and ckpt_path.exists() and _is_main_process():
        ckpt_path.unlink()
    return result


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
