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
    own = WARCA(random_state=3).fit(X, y).held_out_check_
    result, probes = script.emulated_check(X, y, 3)
    assert own["status"] == "done" and len(probes) == own["n_folds"] == 3
    for key in ("learned", "reference", "difference", "standard_error", "n_queries", "below"):
        assert result[key] == pytest.approx(own[key], rel=1e-6), key


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::rankmetric.training.UntrainedModelWarning")
def test_the_candidates_cut_the_probes_and_the_folds(script, digits):
    X, y = digits
    result, probes = script.emulated_check(X, y, 0, max_iter=7, one_fold=True)
    assert len(probes) == 1 and probes[0].n_iter_ == 7
    assert np.isfinite(result["difference"]) and result["n_queries"] > 0
    assert script.emulated_check(X[y < 4], y[y < 4], 0) == (None, [])  # four classes: skipped
