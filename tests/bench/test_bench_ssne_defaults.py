"""benchmarks/bench_ssne_defaults.py: parsed settings; scores from training halves only."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ssne_defaults.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("bench_ssne_defaults", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parse_reads_numbers_and_names_over_the_base(script):
    params = script._parse("solver=bcd,neg_target=0.0,reg_lambda=0.0001,max_iter=500")
    assert params == {"solver": "bcd", "neg_target": 0.0, "reg_lambda": 1e-4, "max_iter": 500}
    assert isinstance(params["max_iter"], int) and isinstance(params["neg_target"], float)
    assert script._parse("positive_sampling=classes") == {
        **script.BASE,
        "positive_sampling": "classes",
    }


def test_validation_score_never_reads_the_test_half(script, monkeypatch):
    """The fit and the score only see rows of the fold's training half."""
    from rankmetric.bench import ssne as bench

    X, y = np.random.default_rng(0).normal(size=(60, 3)), np.repeat([0, 1], 30)
    monkeypatch.setattr(bench, "load_arrays", lambda name: (X, y, None, None))
    train, test = bench.cv_fold(y, 0, n_repeats=5)
    X[test] = np.nan  # any use of a test row would make the score nan or raise
    score = script.validation_score(("iris", 0, {"max_iter": 5, "batch_size": 16}))
    assert 0.0 <= score <= 1.0


@pytest.mark.parametrize(
    ("n_features", "factor", "expected"), [(3, 4, 16), (10, 4, 40), (10, 1, 16), (200, 2, 256)]
)
def test_m_per_feature_sets_the_units_like_the_default_clip(
    script, monkeypatch, n_features, factor, expected
):
    """``m_per_feature=F`` fits ``M = F·D`` units clipped to [16, 256]; it is no SSNE parameter."""
    from rankmetric.bench import ssne as bench
    from rankmetric.estimators import ssne

    X, y = np.random.default_rng(0).normal(size=(60, n_features)), np.repeat([0, 1], 30)
    monkeypatch.setattr(bench, "load_arrays", lambda name: (X, y, None, None))
    seen = {}

    class Recording(ssne.SSNE):
        def fit(self, X, y):
            seen.update(self.get_params())
            return super().fit(X, y)

    monkeypatch.setattr(ssne, "SSNE", Recording)
    params = {"max_iter": 2, "batch_size": 8, "m_per_feature": factor}
    script.validation_score(("iris", 0, params))
    assert seen["n_components"] == expected
    assert params["m_per_feature"] == factor  # the setting itself is left as given
    assert seen["random_state"] == 0  # the fold's seed unless seed_offset is given
    script.validation_score(("iris", 3, {"max_iter": 2, "batch_size": 8, "seed_offset": 100}))
    assert seen["random_state"] == 103 and "seed_offset" not in seen


def test_unknown_set_is_refused(script, monkeypatch, capsys):
    monkeypatch.setattr(
        "sys.argv", ["bench_ssne_defaults.py", "--sets", "sonar,nope", "--config", "max_iter=2"]
    )
    with pytest.raises(SystemExit):
        script.main()
    assert "nope" in capsys.readouterr().err
