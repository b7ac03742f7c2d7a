"""Shared benchmark pieces: formatting, summaries, learners and their hyper-parameter selection."""

import warnings

import numpy as np
import pytest

from rankmetric.bench import (
    BenchConfig,
    captured_warnings,
    cell_runner,
    format_pm,
    group_by,
    markdown_table,
    mean_std,
    split_failures,
    strip_timings,
)
from rankmetric.bench.learners import (
    build_learner,
    expand_grid,
    fit_learner,
    keep_first_unless_better,
)


def test_mean_std_uses_population_std():
    assert mean_std([0.5, 0.7]) == pytest.approx((0.6, 0.1))
    assert all(np.isnan(v) for v in mean_std([]))


def test_format_pm_scales_and_marks_missing():
    assert format_pm(0.97123, 0.00333) == "97.12 ± 0.33"
    assert format_pm(0.5, digits=1) == "50.0"
    assert format_pm(float("nan"), 0.1) == "—"


def test_markdown_table_shape():
    text = markdown_table(["a", "b"], [["x", "1"], ["y", "2"]])
    lines = text.splitlines()
    assert lines[0] == "| a | b |" and lines[1] == "|:--|--:|" and len(lines) == 4


def test_group_by_and_strip_timings():
    results = [
        {"cell": {"method": "m", "dataset": "d"}, "accuracy": 1.0, "fit_seconds": 3.0},
        {"cell": {"method": "m", "dataset": "e"}, "accuracy": 0.5, "seconds": 1.0},
    ]
    assert set(group_by(results, "dataset")) == {("d",), ("e",)}
    assert strip_timings(results[0]) == {"cell": {"method": "m", "dataset": "d"}, "accuracy": 1.0}


def test_captured_warnings_are_distinct_and_silent():
    with captured_warnings() as seen:
        for _ in range(3):
            warnings.warn("careful", UserWarning, stacklevel=1)
    assert seen == ["UserWarning: careful"]


def test_config_pick_validates_names():
    assert BenchConfig().pick("datasets", ("a", "b"), ("a", "b")) == ("a", "b")
    assert BenchConfig(datasets=("b",)).pick("datasets", ("a",), ("a", "b")) == ("b",)
    with pytest.raises(ValueError, match="unknown datasets"):
        BenchConfig(datasets=("z",)).pick("datasets", ("a",), ("a", "b"))


def test_expand_grid_is_the_sorted_product():
    assert expand_grid({}) == [{}]
    assert expand_grid({"b": [1, 2], "a": [0]}) == [{"a": 0, "b": 1}, {"a": 0, "b": 2}]


def test_build_learner_seeds_and_places_estimators():
    est = build_learner("warca", {"max_iter": 3}, seed=7, device="cpu")
    assert (est.random_state, est.device, est.max_iter) == (7, "cpu", 3)
    assert build_learner("kissme", {}, seed=7).get_params() == {
        "fallback": None,
        "held_out_check": False,
        "n_components": None,
        "positives": "all",
        "regularization": 1e-6,
    }
    assert build_learner("euclidean", {}, seed=0) is None
    with pytest.raises(ValueError, match="unknown learner"):
        build_learner("nope", {}, seed=0)


def _noisy(rng, n=240):
    """Two informative features under large noise: PCA to few axes keeps the noise only."""
    y = rng.integers(0, 3, size=n)
    angles = np.array([0.0, 2.1, 4.2])[y]
    informative = np.column_stack([np.cos(angles), np.sin(angles)]) + 0.2 * rng.normal(size=(n, 2))
    return np.hstack([informative, 5.0 * rng.normal(size=(n, 4))]), y


def _holdout(y, seed):
    idx = np.random.default_rng(seed).permutation(len(y))
    return np.sort(idx[: 2 * len(y) // 3]), np.sort(idx[2 * len(y) // 3 :])


def _accuracy(Z_tr, y_tr, Z_val, y_val):
    from rankmetric.evaluate import knn_accuracy

    return knn_accuracy(Z_tr, y_tr, Z_val, y_val, k=3)


def test_fit_learner_picks_the_best_validation_candidate(rng):
    X, y = _noisy(rng)
    fitted = fit_learner("kissme", X, y, grid={"n_components": [1, 6]}, split=_holdout,
                         score=_accuracy)  # fmt: skip
    scores = {v["params"]["n_components"]: v["score"] for v in fitted.validation}
    assert set(scores) == {1, 6} and scores[6] > scores[1]
    assert fitted.params == {"n_components": 6}
    assert fitted.transform(X).shape == (len(y), 6)


def test_keep_first_unless_better_needs_more_than_one_standard_error():
    # reference 0.8 on 100 points: standard error 0.04, so 0.84 is noise and 0.85 is not
    assert keep_first_unless_better([0.8, 0.84, 0.7], n_val=100) == 0
    assert keep_first_unless_better([0.8, 0.84, 0.85], n_val=100) == 2
    assert keep_first_unless_better([0.8, 0.9], n_val=10_000) == 1
    assert keep_first_unless_better([1.0, 1.0], n_val=5) == 0  # ties keep the first
    assert keep_first_unless_better([-np.inf, 0.1, 0.3], n_val=5) == 2  # failed reference


def test_fit_learner_prefer_first_keeps_the_default_within_noise(rng, monkeypatch):
    X, y = _noisy(rng)
    scores = iter([0.80, 0.83])  # within the standard error of 0.8 on the 1/3 held out

    def score(Z_tr, y_tr, Z_val, y_val):
        return next(scores)

    grid = {"n_components": [1, 6]}
    kept = fit_learner("kissme", X, y, grid=grid, split=_holdout, score=score, prefer_first=True)
    assert kept.params == {"n_components": 1}
    scores = iter([0.80, 0.83])
    best = fit_learner("kissme", X, y, grid=grid, split=_holdout, score=score)
    assert best.params == {"n_components": 6}


def test_k_is_a_scorer_parameter_and_candidates_differing_in_k_share_a_fit(rng, monkeypatch):
    from rankmetric.bench import learners

    X, y = _noisy(rng)
    fits, seen_k = [], []
    original = learners._fit

    def counting_fit(method, params, *args):
        fits.append(dict(params))
        return original(method, params, *args)

    def score(Z_tr, y_tr, Z_val, y_val, k):
        seen_k.append(k)
        return float(k == 5) + 0.01 * Z_tr.shape[1]

    monkeypatch.setattr(learners, "_fit", counting_fit)
    fitted = fit_learner("kissme", X, y, grid={"n_components": [1, 2], "k": [3, 5]},
                         split=_holdout, score=score)  # fmt: skip
    assert seen_k == [3, 3, 5, 5]  # "k" sorts first: k = 3 wins ties
    assert [f["n_components"] for f in fits] == [1, 2, 2]  # two candidate fits, then the refit
    assert fitted.params == {"n_components": 2, "k": 5}
    assert fitted.transform(X).shape == (len(y), 2)  # k never reached the estimator


def test_fit_learner_without_grid_fits_once_and_euclidean_is_identity(rng):
    X, y = _noisy(rng, 60)
    fitted = fit_learner("kissme", X, y, fixed={"n_components": 2})
    assert fitted.validation == [] and fitted.params == {"n_components": 2}
    plain = fit_learner("euclidean", X, y)
    assert plain.transform(X) is X and plain.seconds == 0.0


def test_fit_learner_needs_split_and_score_to_tune(rng):
    X, y = _noisy(rng, 60)
    with pytest.raises(ValueError, match="split and a score"):
        fit_learner("kissme", X, y, grid={"n_components": [1, 2]})


def test_failing_candidates_are_skipped_and_reported(rng):
    X, y = _noisy(rng, 90)
    fitted = fit_learner("kissme", X, y, grid={"n_components": [500, 3]}, split=_holdout,
                         score=_accuracy)  # fmt: skip
    failed, chosen = fitted.validation
    assert failed["score"] is None and "n_components" in failed["error"]
    assert chosen["score"] > 0 and fitted.params == {"n_components": 3}
    with pytest.raises(ValueError, match="every candidate failed"):
        fit_learner("kissme", X, y, grid={"n_components": [500, 600]}, split=_holdout,
                    score=_accuracy)  # fmt: skip


def test_cell_runner_records_a_failed_cell_instead_of_raising():
    @cell_runner
    def broken(cell):
        raise ValueError("no positive pair")

    @cell_runner
    def fine(cell):
        return {"accuracy": 1.0}

    assert broken(None) == {"error": "ValueError: no positive pair"}
    cell = {"method": "m", "dataset": "d", "fold": 0, "seed": 1}
    results = [{"cell": cell, **broken(None)}, {"cell": cell, **fine(None)}]
    ok, note = split_failures(results)
    assert ok == [results[1]] and "1 cell(s) failed" in note and "no positive pair" in note
    assert split_failures(ok) == (ok, "")


def test_mean_ci_is_the_student_t_interval():
    from scipy import stats

    from rankmetric.bench import mean_ci

    values = [0.5, 0.7, 0.6]
    mean, half = mean_ci(values)
    expected = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3)
    assert mean == pytest.approx(0.6) and half == pytest.approx(expected)
    assert np.isnan(mean_ci([0.4])[1]) and all(np.isnan(v) for v in mean_ci([]))


def test_paired_p_value_pairs_by_split():
    from scipy import stats

    from rankmetric.bench import paired_p_value

    a = {0: 0.5, 1: 0.6, 2: 0.8, 3: 0.7}
    b = {0: 0.4, 1: 0.55, 2: 0.6, 9: 0.1}  # split 9 has no partner, 3 neither
    expected = stats.ttest_rel([0.5, 0.6, 0.8], [0.4, 0.55, 0.6]).pvalue
    assert paired_p_value(a, b) == pytest.approx(expected)
    assert paired_p_value(a, a) == 1.0
    assert np.isnan(paired_p_value({0: 0.1}, {0: 0.2}))


def test_compare_rows_marks_learned_rows_below_the_reference():
    from rankmetric.bench import (
        BELOW_MARK,
        below_reference_note,
        compare_rows,
        format_comparison,
        paired_p_value,
    )

    scores = {
        "euclidean": {0: 0.30, 1: 0.32, 2: 0.31},
        "good": {0: 0.50, 1: 0.52, 2: 0.49},
        "bad": {0: 0.10, 1: 0.13, 2: 0.11},
    }
    rows = compare_rows(scores, "euclidean")
    assert rows["good"]["best"] == "good" and not rows["good"]["below_reference"]
    assert rows["bad"]["below_reference"] and not rows["euclidean"]["below_reference"]
    assert rows["bad"]["vs_reference"] == pytest.approx(-0.19666, abs=1e-4)
    assert rows["bad"]["p_reference"] < 0.05 and rows["bad"]["p_best"] < 0.05
    assert np.isnan(rows["good"]["vs_best"])  # the best row is not compared with itself
    assert format_comparison(-0.2, 0.001) == "−20.0* (p 0.00)"
    assert format_comparison(0.013, 0.4) == "+1.3 (p 0.40)"
    lines = below_reference_note(rows, {"bad": "Bad"}, "set-a", "rank 1")
    assert len(lines) == 1 and BELOW_MARK in lines[0] and "Bad" in lines[0] and "−" not in lines[0]
    assert "-19.7 points of rank 1" in lines[0]
    assert np.isnan(paired_p_value({0: 0.1, 1: 0.2}, {0: 0.2, 1: 0.3}))  # no spread
