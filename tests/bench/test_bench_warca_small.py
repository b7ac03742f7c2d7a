"""benchmarks/bench_warca_small.py: its redone held-out check is WARCA's own check."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from rankmetric import WARCA

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_warca_small.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("bench_warca_small", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300] / 16.0, y[:300]


# whether the check finds the metric below Euclidean on these data is not what is tested here
@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")
def test_the_emulated_check_equals_warcas_own_check(script, digits):
    X, y = digits
    for seed in (3, 4):
        own = WARCA(random_state=seed).fit(X, y).held_out_check_
        result, probes = script.emulated_check(X, y, seed)
        assert own["status"] == "done" and len(probes) == own["n_folds"]
        z_bound = script.sequential_bounds(3)[own["n_folds"] - 1]
        assert own["folds_planned"] == 3 and own["bound"] == pytest.approx(
            script.critical_value(z_bound, own["dof"]), abs=1e-4
        )
        keys = ("learned", "reference", "difference", "standard_error", "n_queries", "dof")
        for key in (*keys, "item_standard_error", "below"):
            assert result[key] == pytest.approx(own[key], rel=1e-6), key
        assert result["verdict"] == own["verdict"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")
def test_the_candidates_cut_the_probes_and_the_folds(script, digits):
    X, y = digits
    result, probes = script.emulated_check(X, y, 0, max_iter=7, one_fold=True)
    assert len(probes) == 1 and probes[0].n_iter_ == 7
    assert np.isfinite(result["difference"]) and result["n_queries"] > 0
    assert script.emulated_check(X[y < 4], y[y < 4], 0) == (None, [])  # four classes: skipped


def test_the_sequential_bounds_keep_the_checks_false_alarm_rate(script):
    from rankmetric.estimators._held_out import MAX_FOLDS, SEQUENTIAL_BOUNDS, Z_BELOW

    assert script.Z_BELOW == Z_BELOW
    assert script.sequential_bounds(1) == (Z_BELOW,)
    for k in range(1, MAX_FOLDS + 1):  # the library's constants are the script's computation
        np.testing.assert_allclose(SEQUENTIAL_BOUNDS[k], script.sequential_bounds(k), atol=1e-4)
    # O'Brien–Fleming, one-sided 5 %, three equal looks (Jennison & Turnbull's table 2.3)
    np.testing.assert_allclose(script.sequential_bounds(3), [2.961, 2.094, 1.710], atol=2e-3)
    rng = np.random.default_rng(0)
    for k in (2, 3):  # the rate at which a level comparison crosses some look's boundary
        walks = np.cumsum(rng.normal(size=(400_000, k)), axis=1) / np.sqrt(np.arange(1, k + 1))
        crossed = (walks < -np.asarray(script.sequential_bounds(k))).any(axis=1).mean()
        assert crossed == pytest.approx(0.05, abs=0.0015)


def normal_folds(script, monkeypatch, zs):
    """Folds whose pooled difference after ``k`` folds is ``mean(zs[:k])`` in standard errors of
    ``1 / sqrt(k)`` (items' and classes' alike, with very many classes: normal bounds)."""

    def pooled(folds):
        k = len(folds)
        se = 0.01 / np.sqrt(k)
        return {"difference": 0.01 * np.mean(folds), "standard_error": se,
                "item_standard_error": se, "dof": 10**9}  # fmt: skip

    monkeypatch.setattr(script, "pooled", pooled)
    return list(zs)


@pytest.mark.parametrize(
    ("zs", "classes", "items", "every_fold"),
    [
        ([-4.0, 2.0, 2.0], ("below", 1), ("below", 1), "level"),  # decisive below: stops
        ([4.0, -9.0, -9.0], ("better", 1), ("-", 1), "below"),  # decisive above: no warning
        ([-2.0, -0.5, -1.0], ("below", 3), ("below", 3), "below"),  # pooled -2.02 at the last
        ([0.0, -2.0, -0.87], ("not better", 3), ("-", 3), "below"),  # -1.66: 1.645 < it < 1.710
        ([0.5, 1.0, -0.5], ("level", 3), ("-", 3), "level"),
    ],
)
def test_sequential_rules_stop_only_when_decisive(
    script, monkeypatch, zs, classes, items, every_fold
):
    folds = normal_folds(script, monkeypatch, zs)
    assert script.sequential_verdict(folds, "classes") == classes
    assert script.sequential_verdict(folds, "items") == items
    assert script.sequential_verdict(folds, "classes", sequential=False) == (every_fold, 3)


def test_profile_times_every_phase_and_puts_the_functions_back(script, capsys):
    import torch

    from rankmetric.training import _loop

    step, backward = _loop.optimisation_step, torch.Tensor.backward
    script.profile_steps(fits=1)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 + len(script.PHASES)  # header, whole fit, one row per phase
    per_step = [float(row.split("|")[2]) for row in rows[1:]]
    assert all(value > 0 for value in per_step)
    assert per_step[1] <= per_step[0]  # the optimisation step is part of the fit
    assert _loop.optimisation_step is step and torch.Tensor.backward is backward


def test_worker_times_both_fits_and_digests_the_map(script, capsys):
    import hashlib
    import json

    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from rankmetric.datasets import load_dataset

    script.worker("wine", 0)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {len(out[key]) for key in ("bare", "check", "nca", "steps", "digest")} == {2}
    data = load_dataset("wine")
    X, y = data.X.astype(np.float64), data.y
    train, _ = next(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    fitted = WARCA(random_state=0, held_out_check=False).fit(
        StandardScaler().fit_transform(X[train]), y[train]
    )
    assert out["digest"][0] == hashlib.sha1(fitted.components_.tobytes()).hexdigest()
    assert out["steps"][0] == fitted.n_iter_
