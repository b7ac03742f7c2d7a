"""Driver process of ``test_resume.py``: kill fits half way, then resume them in new processes.

Usage: ``python _resume_child.py OUT_DIR JSON`` with ``JSON`` = ``{"kill_at": k, "runs":
{spec name: extra params}}``.

The driver imports torch and the estimators once (it fits nothing itself), then for every spec
of ``_estimators.py`` in ``runs``:

1. forks a process that fits with ``checkpoint_dir=OUT_DIR/<name>`` and ends with
   ``os._exit(KILLED)`` when optimiser step ``kill_at`` begins: no clean-up, no ``finally``,
   like a killed job;
2. forks a *new* process (a fresh fork of the driver, sharing nothing with the killed one but
   the checkpoint folder) that fits the same estimator, resumes from the checkpoint, saves the
   model to ``OUT_DIR/<name>.npz`` and writes the number of optimiser steps it ran.

It prints one JSON line: ``{name: {"killed_status", "checkpoint_after_kill", "resumed_status",
"steps_after_resume"}}``. Forking saves one interpreter start-up (seconds) per process.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
import warnings
from pathlib import Path

import torch

KILLED = 75


def _count_steps(kill_at: int | None) -> dict:
    """Count optimiser steps (``zero_grad`` opens each step of ``training.train``); die at one."""
    counter = {"steps": 0}
    zero_grad = torch.optim.Optimizer.zero_grad

    def counting_zero_grad(self, *args, **kwargs):
        if kill_at is not None and counter["steps"] == kill_at:
            os._exit(KILLED)
        counter["steps"] += 1
        return zero_grad(self, *args, **kwargs)

    torch.optim.Optimizer.zero_grad = counting_zero_grad
    return counter


def _fit(spec, params: dict, checkpoint_dir: Path, kill_at: int | None, out: Path) -> None:
    """Body of a forked process: fit (maybe die), save the model and the step count."""
    counter = _count_steps(kill_at)
    X, y = spec.data()
    est = spec.make(checkpoint_dir=str(checkpoint_dir), **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    est.save(out.with_suffix(".npz"))
    out.with_suffix(".json").write_text(json.dumps({"steps": counter["steps"]}))


def _in_new_process(target, *args) -> int:
    """Run ``target(*args)`` in a forked process; return its exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            target(*args)
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            sys.stderr.flush()
            os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def main(out_dir: str, config: str) -> None:
    torch.set_num_threads(1)
    from _estimators import BY_NAME  # this script's folder is on sys.path

    config = json.loads(config)
    out_dir = Path(out_dir)
    for name in config["runs"]:  # import once here rather than in every forked process
        importlib.import_module(BY_NAME[name].module)
    importlib.import_module("torch._dynamo")  # imported lazily by the optimisers' first step
    report = {}
    for name, params in config["runs"].items():
        spec, checkpoints = BY_NAME[name], out_dir / name
        killed = _in_new_process(
            _fit, spec, params, checkpoints, config["kill_at"], out_dir / f"{name}-killed"
        )
        left = (checkpoints / "checkpoint.pt").is_file()
        resumed = _in_new_process(_fit, spec, params, checkpoints, None, out_dir / name)
        steps_file = out_dir / f"{name}.json"
        report[name] = {
            "killed_status": killed,
            "checkpoint_after_kill": left,
            "resumed_status": resumed,
            "steps_after_resume": json.loads(steps_file.read_text())["steps"]
            if steps_file.exists()
            else None,
            "checkpoint_after_resume": (checkpoints / "checkpoint.pt").is_file(),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:])
