import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from rankmetric.training import (
    Checkpointing,
    NonFiniteLossError,
    Stopping,
    Validation,
    optimisation_step,
    train,
)


class Quadratic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(3))


def _setup(seed=0, lr=0.1, noise_scale=0.01):
    torch.manual_seed(seed)
    module = Quadratic()
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    target = torch.tensor([1.0, -2.0, 0.5])

    def loss_step(step):
        noise = torch.as_tensor(rng.normal(size=3) * noise_scale, dtype=torch.float32)
        return ((module.w - target - noise) ** 2).sum()

    return module, opt, rng, loss_step, target


class _Killed(Exception):
    pass


def test_train_minimises_and_records_history():
    module, opt, rng, loss_step, target = _setup()
    result = train(module, opt, loss_step, rng=rng, max_iter=300)
    assert result.n_iter == 300
    assert len(result.history) == 300
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    torch.testing.assert_close(module.w.detach(), target, atol=0.05, rtol=0)


def test_validation_restores_best_and_stops_early():
    module, opt, rng, loss_step, _ = _setup()
    scores = iter([1.0, 5.0, 2.0, 1.0, 0.5, 0.4, 0.3] + [0.0] * 100)
    snapshots = []

    def validate():
        snapshots.append(module.w.detach().clone())
        return next(scores)

    result = train(
        module,
        opt,
        loss_step,
        rng=rng,
        max_iter=1000,
        validation=Validation(validate, every=10, patience=3),
    )
    assert result.stopped_early
    assert result.best_step == 20
    assert result.n_iter == 50
    torch.testing.assert_close(module.w.detach(), snapshots[1])


def test_non_finite_loss_raises_and_keeps_last_good_parameters():
    module, opt, rng, _, _ = _setup()

    def loss_step(step):
        if step == 5:
            return module.w.sum() * float("nan")
        return ((module.w - 1) ** 2).sum()

    with pytest.raises(NonFiniteLossError, match="step 5"):
        train(module, opt, loss_step, rng=rng, max_iter=10)
    assert torch.isfinite(module.w).all()
    assert module.w.abs().sum() > 0


def test_tolerance_stops_or_warns():
    module, opt, rng, loss_step, _ = _setup()
    result = train(module, opt, loss_step, rng=rng, max_iter=2000, stopping=Stopping(1e-3, 50))
    assert result.stopped_early and result.n_iter < 2000
    module, opt, rng, loss_step, _ = _setup(lr=1e-4, noise_scale=0.0)
    with pytest.warns(ConvergenceWarning):
        train(module, opt, loss_step, rng=rng, max_iter=100, stopping=Stopping(1e-6, 10))


def test_checkpoint_resume_matches_uninterrupted_run(tmp_path):
    module, opt, rng, loss_step, _ = _setup(seed=1)
    train(module, opt, loss_step, rng=rng, max_iter=120)
    reference = module.w.detach().clone()

    module, opt, rng, loss_step, _ = _setup(seed=1)

    def killed_at_60(step):  # the run dies as step 60 begins, like a killed job
        if step == 60:
            raise _Killed
        return loss_step(step)

    with pytest.raises(_Killed):
        train(
            module,
            opt,
            killed_at_60,
            rng=rng,
            max_iter=120,
            checkpointing=Checkpointing(tmp_path, every=20),
        )
    assert (tmp_path / "checkpoint.pt").exists()
    # a fresh process: new objects, state only from the checkpoint
    module, opt, rng, loss_step, _ = _setup(seed=99)
    result = train(
        module, opt, loss_step, rng=rng, max_iter=120, checkpointing=Checkpointing(tmp_path, 20)
    )
    assert result.n_iter == 120 and len(result.history) == 120
    torch.testing.assert_close(module.w.detach(), reference, rtol=0, atol=0)
    assert not (tmp_path / "checkpoint.pt").exists()


def test_divergence_guard_stops_restores_the_lowest_loss_and_warns():
    from rankmetric.training import UntrainedModelWarning

    torch.manual_seed(0)
    module = Quadratic()
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    snapshots = {}

    def loss_step(step):
        snapshots[step] = module.w.detach().clone()  # parameters before step `step`
        # a fine quadratic for 30 steps, then a loss that only grows
        if step < 30:
            return ((module.w - 1.0) ** 2).sum() + 1.0
        return 50.0 * (module.w.sum() - 100.0) ** 2 * (1 + step - 30)

    with pytest.warns(UntrainedModelWarning, match="diverged.*try this"):
        result = train(
            module, opt, loss_step, rng=np.random.default_rng(0), max_iter=500, hint="try this"
        )
    assert result.diverged and result.stopped_early and result.n_iter < 60
    # the lowest 10-step mean loss came from the last window before the blow-up: step 30
    assert result.restored_step == 30
    torch.testing.assert_close(module.w.detach(), snapshots[30])


def _replay(losses, max_iter=None, **stopping):
    """Run :func:`train` on a tiny module whose loss at step ``t`` is ``losses[t]``."""
    module = Quadratic()
    opt = torch.optim.SGD(module.parameters(), lr=1e-3)
    values = np.asarray(losses, dtype=np.float64)

    def loss_step(step):
        return module.w.sum() * 0 + torch.tensor(values[step], dtype=torch.float64)

    max_iter = len(values) if max_iter is None else max_iter
    return train(module, opt, loss_step, rng=np.random.default_rng(0), max_iter=max_iter,
                 stopping=Stopping(**stopping))  # fmt: skip


def _guard_stop(losses, factor=10.0, window=10, spike_windows=10):
    """The divergence rule written out step by step: the step at which it stops, or None."""
    threshold = losses[0] + (factor - 1) * abs(losses[0])
    means = {}
    for n in range(1, len(losses) + 1):
        if n < window:
            continue
        means[n] = sum(losses[n - window : n]) / window
        if not means[n] > threshold:
            continue
        if n >= 2 * window and means[n] >= max(means[j] for j in range(n - window, n)):
            return n
        span = spike_windows * window
        if n >= span + window - 1 and all(means[j] > threshold for j in range(n - span + 1, n + 1)):
            return n
    return None


def _spike(peak, ratio, n=200, start=2.0, end=1.0):
    """A loss that jumps to ``peak`` at step 1 and falls by ``ratio`` per step to ``end``."""
    t = np.arange(n - 1)
    return np.concatenate([[start], end + (peak - end) * ratio**t])


def test_a_falling_spike_recovers_and_is_not_stopped():
    from rankmetric.training import UntrainedModelWarning

    # 2 → 2,000 at step 1, falling by 12 % a step: three 10-step windows above 10× the start
    losses = _spike(2000.0, 0.88)
    assert (losses[:30].reshape(3, 10).mean(axis=1) > 10 * losses[0]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedModelWarning)
        result = _replay(losses)
    assert not result.diverged and result.n_iter == len(losses) and not result.stopped_early
    # the same spike with an oscillating loss (Adam's), still falling window by window
    wobbly = losses * (1 + 0.9 * np.sin(np.arange(len(losses)) * 2 * np.pi / 7))
    wobbly[0] = losses[0]
    assert _guard_stop(list(wobbly)) is None
    assert not _replay(wobbly).diverged


@pytest.mark.parametrize(
    "case, stop, why",
    [
        ("rising", 20, "not falling"),  # judged once a window has one before it
        ("plateau", 20, "not falling"),
        ("slow fall", 109, "for 100 steps"),  # falling, but above 10× for 100 steps
        ("rising later", 40, "not falling"),  # trained, then a loss that grows
    ],
)
def test_a_rising_or_stuck_loss_above_the_threshold_is_stopped(case, stop, why):
    from rankmetric.training import UntrainedModelWarning

    t = np.arange(300.0)
    losses = {
        "rising": 2.0 * (1 + t),
        "plateau": np.r_[2.0, np.full(299, 50.0)],
        "slow fall": np.r_[2.0, 60.0 * 0.999 ** t[1:]],
        "rising later": np.r_[np.full(30, 2.0), 2.0 * 1.5 ** t[:270]],
    }[case]
    assert _guard_stop(list(losses)) == stop
    with pytest.warns(UntrainedModelWarning, match=f"diverged.*{why}.*stopped at step {stop}"):
        result = _replay(losses)
    assert result.diverged and result.stopped_early and result.n_iter == stop
    # the lowest windowed loss below the threshold (step 10 for the two that start below it)
    assert result.restored_step == (0 if case in ("plateau", "slow fall") else 10)


def test_a_nan_or_inf_loss_stops_a_spike_at_once():
    for bad in (np.nan, np.inf):  # inside a spike the guard lets recover: still an error
        with pytest.raises(NonFiniteLossError):
            _replay(np.r_[1.0, _spike(500.0, 0.8, n=30)[1:], bad, np.ones(20)])
    _replay(np.r_[1.0, _spike(500.0, 0.8, n=30)[1:], np.full(21, 0.5)])  # without it: no stop


def test_the_divergence_rule_matches_its_definition_on_random_losses():
    rng = np.random.default_rng(0)
    stops = []
    for _ in range(60):
        n = int(rng.integers(15, 200))
        base = rng.uniform(0.5, 5.0)
        jump = rng.choice([1.0, 5.0, 30.0, 1e4]) * base
        trend = rng.choice([0.8, 0.95, 0.995, 1.0, 1.02, 1.2])
        noise = rng.choice([0.0, 0.05, 0.7])
        start = int(rng.integers(1, min(40, n)))
        losses = np.full(n, base) * rng.uniform(0.9, 1.1, n)
        wobble = 1 + noise * rng.uniform(-1, 1, n - start)
        losses[start:] += jump * trend ** np.arange(n - start) * wobble
        expected = _guard_stop(list(losses))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = _replay(losses)
        assert result.diverged == (expected is not None)
        assert result.n_iter == (n if expected is None else expected)
        stops.append(expected)
    # the draws exercise every branch: no stop, and stops at 10–19 (never), 20, later, ≥ 109
    assert None in stops and 20 in stops and any(s and 20 < s < 109 for s in stops)
    assert not any(s and s < 20 for s in stops) and any(s and s >= 109 for s in stops)


def test_a_disabled_guard_never_stops():
    from rankmetric.training import UntrainedModelWarning

    with pytest.warns(UntrainedModelWarning, match="no lower than its first"):
        result = _replay(np.r_[1.0, np.full(150, 1e6)], divergence_factor=None)
    assert not result.diverged and result.n_iter == 151


def test_validation_that_keeps_the_start_warns():
    from rankmetric.training import UntrainedModelWarning

    module, opt, rng, loss_step, _ = _setup()
    start = module.w.detach().clone()
    scores = iter([1.0] + [0.5] * 100)  # step 0 scores best
    with pytest.warns(UntrainedModelWarning, match="untrained start"):
        result = train(
            module,
            opt,
            loss_step,
            rng=rng,
            max_iter=100,
            validation=Validation(lambda: next(scores), every=10, patience=3, score_start=True),
        )
    assert result.best_step == 0 and result.restored_step == 0 and result.start_score == 1.0
    torch.testing.assert_close(module.w.detach(), start)


def test_a_loss_that_ends_above_its_start_warns_and_a_good_fit_does_not():
    import warnings

    from rankmetric.training import UntrainedModelWarning

    module, opt, rng, _, _ = _setup()
    with pytest.warns(UntrainedModelWarning, match="no lower than its first"):
        train(
            module,
            opt,
            lambda step: module.w.sum() * 0 + 1.0 + 0.01 * step,
            rng=rng,
            max_iter=30,
            stopping=Stopping(divergence_factor=None),
        )
    module, opt, rng, loss_step, _ = _setup()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedModelWarning)
        train(module, opt, loss_step, rng=rng, max_iter=100)


def test_untrained_model_warning_is_public_and_a_convergence_warning():
    import rankmetric
    from rankmetric.training import UntrainedModelWarning

    assert rankmetric.UntrainedModelWarning is UntrainedModelWarning
    assert issubclass(UntrainedModelWarning, ConvergenceWarning)
    assert issubclass(UntrainedModelWarning, UserWarning)


def _checkpoint_then_resume(tmp_path, first, second):
    """Leave a checkpoint stamped with fingerprint ``first``, then resume with ``second``."""
    module, opt, rng, loss_step, _ = _setup(seed=1)

    def killed_at_4(step):
        if step == 4:
            raise _Killed
        return loss_step(step)

    with pytest.raises(_Killed):
        train(module, opt, killed_at_4, rng=rng, max_iter=10,
              checkpointing=Checkpointing(tmp_path, 2, first))  # fmt: skip
    module, opt, rng, loss_step, _ = _setup(seed=1)
    return train(module, opt, loss_step, rng=rng, max_iter=10,
                 checkpointing=Checkpointing(tmp_path, 2, second))  # fmt: skip


def test_the_fingerprint_argument_decides_which_checkpoint_resumes(tmp_path):
    resumed = _checkpoint_then_resume(tmp_path, "data A", "data A")
    assert resumed.n_iter == 10 and len(resumed.history) == 10
    with pytest.raises(ValueError, match="does not match"):
        _checkpoint_then_resume(tmp_path / "other", "data A", "data B")


def test_the_steps_are_named_and_patchable(monkeypatch):
    """A test changes one step of the loop by patching it, not through a hook in train."""
    from rankmetric import training

    calls = []
    real = training.optimisation_step

    def spy(*args, **kwargs):
        calls.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(training._loop, "optimisation_step", spy)
    module, opt, rng, loss_step, _ = _setup()
    train(module, opt, loss_step, rng=rng, max_iter=5)
    assert calls == [0, 1, 2, 3, 4]


def test_optimisation_step_guards_a_non_finite_gradient():
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=0.1)
    # d/dw sqrt(|w - 1|) at w = 1: a finite loss (0) with a NaN gradient
    with pytest.raises(NonFiniteLossError, match="gradient became non-finite at step 3"):
        optimisation_step([w], opt, lambda step: (w - 1).abs().sum() ** 0.5, 3)
    assert torch.equal(w.detach(), torch.ones(2))


def test_the_flat_keywords_of_0_1_still_work_with_a_future_warning(tmp_path):
    """``train(validate=..., patience=..., checkpoint_dir=...)`` is the grouped call, warned."""
    runs = []
    for grouped in (True, False):
        module, opt, rng, loss_step, _ = _setup(seed=2)
        scores = iter([1.0, 2.0, 0.5, 0.4, 0.3] + [0.0] * 100)
        if grouped:
            result = train(module, opt, loss_step, rng=rng, max_iter=200,
                           validation=Validation(scores.__next__, every=10, patience=2),
                           stopping=Stopping(divergence_factor=None),
                           checkpointing=Checkpointing(tmp_path / "a", every=5))  # fmt: skip
        else:
            with pytest.warns(FutureWarning, match=r"train\(validate=.*stop working in 0.3"):
                result = train(module, opt, loss_step, rng=rng, max_iter=200,
                               validate=scores.__next__, validation_every=10, patience=2,
                               divergence_factor=None, checkpoint_dir=tmp_path / "b",
                               checkpoint_every=5)  # fmt: skip
        runs.append((result.n_iter, result.best_step, module.w.detach().clone()))
    assert runs[0][:2] == runs[1][:2] == (40, 20)
    torch.testing.assert_close(runs[0][2], runs[1][2], rtol=0, atol=0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        train(*_setup()[:3], rng=np.random.default_rng(0), max_iter=1, validation_evry=3)


def test_train_takes_a_few_grouped_settings():
    import inspect

    parameters = inspect.signature(train).parameters
    assert len([p for p in parameters.values() if p.kind is not p.VAR_KEYWORD]) <= 14
    assert {"validation", "stopping", "checkpointing"} <= set(parameters)
