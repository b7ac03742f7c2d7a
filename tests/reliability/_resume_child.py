"""Child process of ``test_resume.py``: fit one estimator with checkpoints, maybe die half way.

Usage: ``python _resume_child.py SPEC_NAME CHECKPOINT_DIR OUTPUT JSON_PARAMS KILL_AT``

Fits ``SPEC_NAME`` (from ``_estimators.py``) on its standard data with ``checkpoint_dir`` set.
With ``KILL_AT > 0`` the process ends with ``os._exit(KILLED)`` when optimiser step ``KILL_AT``
begins: no clean-up, no ``finally``, like a killed job. Otherwise it saves the fitted model to
``OUTPUT`` and prints ``{"steps": <optimiser steps run by this process>}``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import torch

KILLED = 75


def _count_steps(kill_at: int) -> dict:
    """Count optimiser steps (``zero_grad`` opens each step of ``training.train``); die at one."""
    counter = {"steps": 0}
    zero_grad = torch.optim.Optimizer.zero_grad

    def counting_zero_grad(self, *args, **kwargs):
        if kill_at and counter["steps"] == kill_at:
            sys.stdout.flush()
            os._exit(KILLED)
        counter["steps"] += 1
        return zero_grad(self, *args, **kwargs)

    torch.optim.Optimizer.zero_grad = counting_zero_grad
    return counter


def main(name: str, checkpoint_dir: str, output: str, params: str, kill_at: str) -> None:
    torch.set_num_threads(1)
    from _estimators import BY_NAME  # this script's folder is on sys.path

    spec = BY_NAME[name]
    counter = _count_steps(int(kill_at))
    X, y = spec.data()
    est = spec.make(checkpoint_dir=checkpoint_dir, **json.loads(params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    est.save(output)
    print(json.dumps({"steps": counter["steps"]}))


if __name__ == "__main__":
    main(*sys.argv[1:])
