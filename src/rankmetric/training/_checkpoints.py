"""Resumable training checkpoints: one file, written atomically, refused when it does not match.

:class:`Checkpoints` is the checkpointing step of :func:`rankmetric.training.train`:
``checkpoint_dir/checkpoint.pt`` is resumed at the start of a run, written every
``checkpoint_every`` steps by rank 0 (through :func:`rankmetric._atomic.atomic_write`) and
removed when the run ends. A checkpoint holds the module's and the optimiser's state, the NumPy
generator's state, the history and the best validated state, and is read with
``torch.load(weights_only=True)`` (no code runs). It carries a fingerprint
(:func:`run_fingerprint`: the module's structure, the optimiser settings and the caller's
fingerprint of its estimator and data); one that does not match, or a damaged one, is refused
with a ``ValueError`` naming the file.
"""

from __future__ import annotations

import hashlib
import json
from numbers import Integral
from pathlib import Path

import torch

from .._atomic import atomic_write
from .._distributed import is_main_process

__all__ = ["Checkpoints", "run_fingerprint", "save_checkpoint", "load_checkpoint"]


def run_fingerprint(module, optimizer, fingerprint: str | None) -> str:
    """The caller's fingerprint plus the structure of the module and the optimiser settings."""
    h = hashlib.sha256((fingerprint or "").encode())
    for name, tensor in module.state_dict().items():
        h.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
    h.update(type(optimizer).__name__.encode())
    for group in optimizer.param_groups:
        h.update(repr(sorted((k, repr(v)) for k, v in group.items() if k != "params")).encode())
    return h.hexdigest()


def save_checkpoint(
    path: Path, module, optimizer, rng, step, result, best_state, fingerprint
) -> None:
    """Write the state of a run after ``step`` steps to ``path``, atomically."""
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


def load_checkpoint(path: Path, module, optimizer, rng, result, fingerprint: str):
    """Restore a run from ``path`` into its objects; ``(step, best state)``."""
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


class Checkpoints:
    """``checkpoint_dir/checkpoint.pt``: resumed at the start, written every ``every`` steps
    (by rank 0), removed at the end; ``path`` is ``None`` without a ``checkpoint_dir``."""

    def __init__(self, checkpoint_dir, every, fingerprint: str):
        self.path, self.every, self.fingerprint = None, every, fingerprint
        if checkpoint_dir is None:
            return
        if isinstance(every, bool) or not (isinstance(every, Integral) and every >= 1):
            raise ValueError(f"checkpoint_every must be a positive integer, got {every!r}.")
        self.path = Path(checkpoint_dir) / "checkpoint.pt"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"checkpoint_dir={str(checkpoint_dir)!r}: cannot create it ({exc.strerror or exc})."
            ) from None

    def resume(self, module, optimizer, rng, result) -> tuple[int, dict | None]:
        """``(first step, best state)``: from the checkpoint if there is one, else ``(0, None)``."""
        if self.path is None or not self.path.exists():
            return 0, None
        return load_checkpoint(self.path, module, optimizer, rng, result, self.fingerprint)

    def after_step(self, done: int, module, optimizer, rng, result, best_state) -> None:
        if self.path is not None and done % self.every == 0 and is_main_process():
            save_checkpoint(
                self.path, module, optimizer, rng, done, result, best_state, self.fingerprint
            )

    def remove(self) -> None:
        """A finished run leaves no checkpoint behind."""
        if self.path is not None and self.path.exists() and is_main_process():
            self.path.unlink()
