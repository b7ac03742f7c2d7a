"""Resumable training: a fit killed half way resumes, in a new process, to the very parameters
of an uninterrupted fit with the same seed (exact equality on the CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from rankmetric.training import Checkpointing, Validation, train

DRIVER = Path(__file__).with_name("_resume_child.py")
KILLED = 75  # exit status of a process that kills itself (see _resume_child.py)
MAX_ITER, EVERY, KILL_AT = 40, 10, 25  # checkpoints at steps 10 and 20; killed as step 26 begins
# RPLEmbedding validates every 5 steps and runs all 40 (no early stopping, which would end its
# identity-start network before the kill): restoring the best parameters happens after the resume.
EXTRA = {"RPLEmbedding": {"learning_rate": 0.1, "n_iter_no_change": None}}


class _Killed(Exception):
    """A run that dies half way (what a killed job does), leaving its checkpoint behind."""


def _params(spec) -> dict:
    return {"max_iter": MAX_ITER, "checkpoint_every": EVERY, **EXTRA.get(spec.name, {})}


@pytest.fixture(scope="module")
def resumed_runs(tmp_path_factory, all_specs):
    """Kill and resume every torch-trained estimator in processes of one driver subprocess."""
    out = tmp_path_factory.mktemp("resume")
    specs = [s for s in all_specs if s.torch_trained]
    config = {"kill_at": KILL_AT, "runs": {s.name: _params(s) for s in specs}}
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(out), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out, json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _uninterrupted(spec):
    X, y = spec.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.make(**_params(spec)).fit(X, y), X


def _assert_same_model(resumed, reference, spec, X) -> None:
    for name in spec.fitted_arrays:
        a, b = getattr(resumed, name), getattr(reference, name)
        for u, v in zip(
            a if isinstance(a, list) else [a], b if isinstance(b, list) else [b], strict=True
        ):
            np.testing.assert_array_equal(u, v, err_msg=name)
    np.testing.assert_array_equal(
        np.asarray(resumed.loss_curve_), np.asarray(reference.loss_curve_)
    )
    assert resumed.n_iter_ == reference.n_iter_
    assert getattr(resumed, "best_iter_", None) == getattr(reference, "best_iter_", None)
    np.testing.assert_array_equal(resumed.transform(X), reference.transform(X))


def test_torch_trained_estimators_expose_checkpointing(torch_spec):
    params = torch_spec.make().get_params()
    assert params["checkpoint_dir"] is None
    assert isinstance(params["checkpoint_every"], int) and params["checkpoint_every"] >= 1


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the driver forks its worker processes")
def test_a_killed_fit_resumes_to_the_parameters_of_an_uninterrupted_fit(torch_spec, resumed_runs):
    out, report, stderr = resumed_runs
    run = report[torch_spec.name]
    assert run["killed_status"] == KILLED, stderr[-3000:]
    assert run["checkpoint_after_kill"]
    assert run["resumed_status"] == 0, stderr[-3000:]
    assert not run["checkpoint_after_resume"]  # a finished fit removes its checkpoint

    reference, X = _uninterrupted(torch_spec)
    assert reference.n_iter_ > KILL_AT, "the uninterrupted fit must outlast the kill"
    last_checkpoint = KILL_AT // EVERY * EVERY
    assert run["steps_after_resume"] == reference.n_iter_ - last_checkpoint  # not restarted
    resumed = torch_spec.cls.load(out / f"{torch_spec.name}.npz")
    _assert_same_model(resumed, reference, torch_spec, X)


def test_checkpoint_of_another_model_is_refused_with_a_clear_error(torch_spec, tmp_path):
    """A stale checkpoint (another model) in ``checkpoint_dir`` gives a ValueError naming it."""
    other = torch.nn.Linear(3, 2)

    def killed_at_2(step):
        if step == 2:
            raise _Killed
        return other.weight.square().sum()

    with pytest.raises(_Killed):
        train(
            other,
            torch.optim.Adam(other.parameters()),
            killed_at_2,
            rng=np.random.default_rng(0),
            max_iter=4,
            checkpointing=Checkpointing(tmp_path, every=2),
        )
    assert (tmp_path / "checkpoint.pt").exists()
    X, y = torch_spec.data()
    est = torch_spec.make(checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="checkpoint.*does not match"):
        est.fit(X, y)


@pytest.mark.parametrize("every", [0, -3, 2.5])
def test_bad_checkpoint_every_is_refused(torch_spec, tmp_path, every):
    X, y = torch_spec.data()
    est = torch_spec.make(checkpoint_dir=tmp_path, checkpoint_every=every)
    with pytest.raises(ValueError, match="checkpoint_every"):
        est.fit(X, y)


def test_early_stopping_count_survives_a_resume(tmp_path):
    """Validations without improvement before the checkpoint still count after resuming."""
    scores = [1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0, 0.0]  # best at the first validation

    def run(checkpoint_dir=None, killed_at=None, first_validation=0):
        module = torch.nn.Linear(2, 1)
        remaining = iter(scores[first_validation:])

        def loss_step(step):
            if step == killed_at:
                raise _Killed
            return module.weight.square().sum()

        return train(
            module,
            torch.optim.SGD(module.parameters(), lr=0.01),
            loss_step,
            rng=np.random.default_rng(0),
            max_iter=100,
            validation=Validation(lambda: next(remaining), every=5, patience=3),
            checkpointing=None if checkpoint_dir is None else Checkpointing(checkpoint_dir, 10),
        )

    uninterrupted = run()
    assert uninterrupted.stopped_early and uninterrupted.n_iter == 20
    with pytest.raises(_Killed):  # validations at steps 5 (best) and 10 (worse)
        run(tmp_path, killed_at=10)
    resumed = run(tmp_path, first_validation=2)
    assert resumed.stopped_early and resumed.n_iter == uninterrupted.n_iter
    assert resumed.best_step == uninterrupted.best_step == 5
