"""The SSNE table: folds, cells, paper constants and an end-to-end run on a bundled set."""

import dataclasses
import json

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from rankmetric.bench import BenchConfig, ssne, strip_timings
from rankmetric.bench.learners import keep_first_unless_better
from rankmetric.bench.runner import run_benchmark
from rankmetric.evaluate import repeated_cv_knn

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def test_paper_tables_are_complete():
    assert set(ssne.UCI_SETS) < set(ssne.PAPER_TABLE1) and "protein" in ssne.PAPER_TABLE1
    for row in ssne.PAPER_TABLE1.values():
        assert len(row) == len(ssne.PAPER_TABLE1_METHODS)
        assert all(50 < mean < 100 and 0 < std < 3 for mean, std in row)
    assert ssne.PAPER_TABLE1["wdbc"][ssne.PAPER_TABLE1_METHODS.index("ssne")] == (97.12, 0.33)
    assert set(ssne.IMAGE_SETS.values()) == set(ssne.PAPER_TABLE2)
    assert ssne.PAPER_TABLE2["CIFAR-10"]["ssne"] == 61.49


def test_cv_fold_matches_repeated_stratified_kfold():
    y = np.repeat([0, 1, 2], 20)
    cv = list(RepeatedStratifiedKFold(n_splits=2, n_repeats=3, random_state=0).split(y[:, None], y))
    for fold, (train, test) in enumerate(cv):
        got_train, got_test = ssne.cv_fold(y, fold, n_repeats=3)
        np.testing.assert_array_equal(got_train, train)
        np.testing.assert_array_equal(got_test, test)
    with pytest.raises(ValueError, match="fold"):
        ssne.cv_fold(y, 6, n_repeats=3)


def test_euclidean_cells_reproduce_repeated_cv_knn():
    """The per-fold cells and the evaluate protocol give the same fold accuracies."""
    config = BenchConfig(quick=True, datasets=("iris",), methods=("euclidean-scaled",), seeds=2)
    cells = ssne.build_cells(config)
    assert [c.fold for c in cells] == [0, 1, 2, 3]
    ours = [ssne.run_cv_cell(c)["accuracy"] for c in cells]
    X, y = load_iris(return_X_y=True)
    ref = repeated_cv_knn(None, X, y, n_repeats=2, n_splits=2, k=3, random_state=0)
    np.testing.assert_allclose(ours, ref.scores)


def test_every_grid_starts_with_the_defaults_and_prefers_them():
    """The first candidate of every grid is the estimator's untuned setting (same rule for all)."""
    from rankmetric.bench.learners import build_learner, expand_grid

    for method in ssne.METHODS:
        first = expand_grid(ssne.GRIDS[method])[0]
        assert first.pop("k", ssne.K) == ssne.K, method
        est = build_learner(method, {}, seed=0)
        defaults = {} if est is None else est.get_params()
        for name, value in first.items():
            expected = ssne.K if name == "n_neighbors" else defaults[name]
            assert value == expected, (method, name)
    cells = ssne.build_cells(BenchConfig(quick=False, datasets=("iris",)))
    assert all(c.options["prefer_first"] is ssne.PREFER_DEFAULT is True for c in cells)


def test_cells_follow_the_mode():
    quick = ssne.build_cells(BenchConfig(quick=True))
    full = ssne.build_cells(BenchConfig(quick=False))
    uci_quick = [c for c in quick if c.benchmark == "ssne-uci"]
    uci_full = [c for c in full if c.benchmark == "ssne-uci"]
    assert len(uci_quick) == len(ssne.UCI_SETS) * len(ssne.METHODS) * 2
    assert len(uci_full) == len(ssne.UCI_SETS) * len(ssne.METHODS) * 10
    assert all(c.options["grid"] == {} for c in quick)
    warca_full = next(c for c in uci_full if c.method == "warca")
    assert warca_full.options["grid"] == ssne.GRIDS["warca"]
    assert warca_full.options["fixed"]["max_iter"] == 2000
    images = [c for c in full if c.benchmark == "ssne-images"]
    assert {c.dataset for c in images} == set(ssne.IMAGE_SETS)
    assert all(c.options["grid"] == {} for c in images)
    # a full-mode key differs from the quick one, so the caches never mix
    assert {c.key for c in quick}.isdisjoint(c.key for c in full)


def test_tuned_cell_reports_its_choice():
    config = BenchConfig(quick=False, datasets=("iris",), methods=("itml",), seeds=1)
    cell = ssne.build_cells(config)[0]
    result = ssne.run_cv_cell(cell)
    tried = [(v["params"]["slack_weight"], v["params"]["k"]) for v in result["validation"]]
    # names in sorted order: k outer ("k" < "slack_weight")
    assert tried == [(g, k) for k in ssne.K_CANDIDATES for g in ssne.GRIDS["itml"]["slack_weight"]]
    scores = [v["score"] for v in result["validation"]]
    best = result["validation"][keep_first_unless_better(scores, n_val=25)]  # iris: 75 → 50 + 25
    assert result["params"] == {**cell.options["fixed"], **best["params"]}
    assert result["k"] == best["params"]["k"]
    assert 0.8 < result["accuracy"] <= 1.0


def test_every_method_chooses_k_on_validation_and_the_table_says_which():
    """Full mode: k ∈ K_CANDIDATES is tuned for every method (mLMNN through n_neighbors)."""
    for method in ssne.METHODS:
        grid = ssne.GRIDS[method]
        assert grid.get("k", grid.get("n_neighbors")) == ssne.K_CANDIDATES, method
    config = BenchConfig(quick=False, datasets=("iris",), methods=("euclidean-scaled",), seeds=1)
    cells = ssne.build_cells(config)
    results = [{"cell": dataclasses.asdict(c), **ssne.run_cv_cell(c)} for c in cells]
    for r in results:
        scores = {v["params"]["k"]: v["score"] for v in r["validation"]}
        noise = np.sqrt(scores[3] * (1 - scores[3]) / 25)  # 25 validation points of 75
        assert r["k"] == (5 if scores[5] > scores[3] + noise else 3)  # k = 3 kept unless better
    table, _ = ssne._table1(results, config)
    assert "k ∈ [3, 5] chosen per fold" in table or all(r["k"] == 3 for r in results)
    rows, _ = ssne._k_table(
        {("iris", "euclidean-scaled"): [{"k": 3}, {"k": 5}, {"k": 5}]}, ["iris"],
        ["euclidean-scaled"],
    )  # fmt: skip
    assert rows == [["iris", "1 / 2"]]


def test_end_to_end_writes_table_json_plot_and_resumes(tmp_path):
    config = BenchConfig(quick=True, datasets=("iris", "wine"),
                         methods=("euclidean", "euclidean-scaled", "itml"))  # fmt: skip
    summary = run_benchmark("ssne-uci", config, results_dir=tmp_path, verbose=False)
    out = tmp_path / "ssne-uci"
    table = (out / "ssne-uci.md").read_text()
    assert "QUICK MODE" in table and "| iris | ours |" in table and "95.78 ± 0.40" in table
    payload = json.loads((out / "ssne-uci.json").read_text())
    assert len(payload["cells"]) == 2 * 3 * 2
    assert payload["summary"]["table1"]["wine"]["itml"]["mean"] > 0.9
    assert all(p.exists() and p.suffix == ".png" for p in summary.plots)
    # a second run reads every cell from the cache: a re-signed altered value shows through
    from rankmetric.bench.grid import result_digest

    cached = next((tmp_path / "cache" / "ssne-uci" / "euclidean" / "iris").glob("fold0-*.json"))
    record = json.loads(cached.read_text())
    record["result"]["accuracy"] = 0.0
    record["digest"] = result_digest(record["result"])
    cached.write_text(json.dumps(record))
    again = run_benchmark("ssne-uci", config, results_dir=tmp_path, verbose=False)
    assert again.payload["table1"]["iris"]["euclidean"]["scores"][0] == 0.0


def test_process_pool_gives_the_serial_results(tmp_path):
    config = BenchConfig(quick=True, datasets=("iris",), methods=("euclidean-scaled", "lmnn"))
    serial = run_benchmark("ssne-uci", config, results_dir=tmp_path / "a", verbose=False)
    pooled = run_benchmark("ssne-uci", config, results_dir=tmp_path / "b", n_jobs=2, verbose=False)
    assert serial.payload == pooled.payload
    cells_a = json.loads((tmp_path / "a" / "ssne-uci" / "ssne-uci.json").read_text())["cells"]
    cells_b = json.loads((tmp_path / "b" / "ssne-uci" / "ssne-uci.json").read_text())["cells"]
    assert [strip_timings(c) for c in cells_a] == [strip_timings(c) for c in cells_b]


def test_mlmnn_cell_scores_its_own_knn_rule_and_tunes_on_validation():
    """mLMNN has no embedding: the cell's accuracy is its own per-class-metric k-NN vote."""
    from rankmetric.estimators.lmnn import MultiMetricLMNN

    config = BenchConfig(quick=False, datasets=("iris",), methods=("mlmnn",), seeds=1)
    cell = ssne.build_cells(config)[0]
    assert cell.options["fixed"]["n_neighbors"] == cell.options["k"] == ssne.K
    result = ssne.run_cv_cell(cell)
    tried = [v["params"]["push_weight"] for v in result["validation"]]
    assert tried == [0.5, 0.25, 0.75] * 2  # the same grid as LMNN's, with k = 3, then k = 5
    assert [v["params"]["n_neighbors"] for v in result["validation"]] == [3] * 3 + [5] * 3
    scores = [v["score"] for v in result["validation"]]
    best = result["validation"][keep_first_unless_better(scores, n_val=25)]
    assert {k: result["params"][k] for k in best["params"]} == best["params"]
    assert result["k"] == result["params"]["n_neighbors"]
    X, y = load_iris(return_X_y=True)
    train, test = ssne.cv_fold(y, 0, n_repeats=1)
    scaler = StandardScaler().fit(X[train])
    model = MultiMetricLMNN(**result["params"], random_state=0, device="cpu")
    model.fit(scaler.transform(X[train]), y[train])
    assert result["accuracy"] == model.score(scaler.transform(X[test]), y[test])
    assert 0.85 < result["accuracy"] <= 1.0


def test_methods_option_runs_the_mlmnn_column_alone(tmp_path, capsys):
    from rankmetric.cli import main

    argv = ["bench", "ssne-uci", "--quick", "--datasets", "iris", "--methods", "mlmnn",
            "--quiet", "--results-dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads((tmp_path / "ssne-uci" / "ssne-uci.json").read_text())
    assert {c["cell"]["method"] for c in payload["cells"]} == {"mlmnn"}
    assert len(payload["cells"]) == 2  # quick mode: 1×2 CV
    assert 0.8 < payload["summary"]["table1"]["iris"]["mlmnn"]["mean"] <= 1.0
    table = (tmp_path / "ssne-uci" / "ssne-uci.md").read_text()
    assert "| data set |  | mLMNN | SSNE − paper |" in table
    assert "not run" not in table.split("## SSNE Table 2")[0]
    assert "--methods mlmnn" in capsys.readouterr().out


def test_table1_keeps_the_papers_mlmnn_column_when_mlmnn_was_not_run():
    cell = ssne.build_cells(BenchConfig(quick=True, datasets=("iris",), methods=("lmnn",)))[0]
    result = {"cell": dataclasses.asdict(cell), "accuracy": 0.9}
    table, payload = ssne._table1([result], BenchConfig(quick=True, datasets=("iris",)))
    assert "| LMNN | mLMNN |" in table and "mLMNN was not run (paper figures only)" in table
    assert "96.00 ± 1.04" in table  # the paper's mLMNN on iris
    assert list(payload["iris"]) == ["lmnn"]


# ----------------------------------------------------------------------------- Table 2's seeds


def test_image_cells_run_several_seeds_per_mode():
    for quick, n_seeds in ((True, 3), (False, 5)):
        cells = [
            c for c in ssne.build_cells(BenchConfig(quick=quick)) if c.benchmark == "ssne-images"
        ]
        assert ssne.IMAGE_SEEDS["quick" if quick else "full"] == n_seeds >= 3
        for dataset in ssne.IMAGE_SETS:
            for method in ssne.IMAGE_METHODS:
                mine = [c for c in cells if (c.dataset, c.method) == (dataset, method)]
                assert [(c.fold, c.seed) for c in mine] == [(0, s) for s in range(n_seeds)]
                assert len({c.key for c in mine}) == n_seeds  # each seed its own cache entry
    # --seeds sets Table 1's repeats and Table 2's seeds alike
    config = BenchConfig(quick=True, datasets=("mnist-5k", "iris"), methods=("ssne",), seeds=2)
    cells = ssne.build_cells(config)
    assert [c.seed for c in cells if c.dataset == "mnist-5k"] == [0, 1]
    assert [c.fold for c in cells if c.dataset == "iris"] == [0, 1, 2, 3]


def _fake_images(monkeypatch, rng, official_split: bool):
    """Small stand-in image arrays for ``load_arrays`` (the real sets are a 60 MB fetch)."""
    y = np.arange(400) % 10
    X = rng.integers(0, 256, size=(400, 36)).astype(float) + 20.0 * y[:, None]
    test = (X[:100] + 1.0, y[:100]) if official_split else (None, None)
    monkeypatch.setattr(ssne, "load_arrays", lambda name: (X, y, *test))
    return X, y


def test_image_seeds_draw_the_subsample_and_mnist_split_but_keep_an_official_split(
    monkeypatch, rng
):
    X, _ = _fake_images(monkeypatch, rng, official_split=True)
    full = [ssne.image_split("fashion-mnist", None, seed) for seed in (0, 1)]
    np.testing.assert_array_equal(full[0][0], full[1][0])  # every training image, each seed
    np.testing.assert_array_equal(full[0][0], X / 255.0)
    sub = [ssne.image_split("fashion-mnist", 100, seed)[0] for seed in (0, 1)]
    assert sub[0].shape == (100, 36) and not np.array_equal(sub[0], sub[1])
    _fake_images(monkeypatch, rng, official_split=False)  # MNIST-5k: a 50/50 split per seed
    halves = [ssne.image_split("mnist-5k", None, seed) for seed in (0, 1)]
    assert halves[0][0].shape == halves[0][2].shape == (200, 36)
    assert not np.array_equal(halves[0][2], halves[1][2])
    np.testing.assert_array_equal(np.bincount(halves[1][1]), np.full(10, 20))  # stratified


def test_image_cells_fit_with_their_seed(monkeypatch, rng):
    """A seed changes the data draw and the learner's seed; the same seed gives the same cell."""
    _fake_images(monkeypatch, rng, official_split=False)
    config = BenchConfig(quick=True, datasets=("mnist-5k",), methods=("euclidean", "ssne"))
    cells = [c for c in ssne.build_cells(config) if c.method == "ssne"]
    small = {"n_train": 150, "pca": 8, "fixed": {"max_iter": 20}}
    cells = [dataclasses.replace(c, options={**c.options, **small}) for c in cells]
    results = [ssne.run_split_cell(c) for c in cells]
    assert all(r["n_train"] == 150 and r["n_test"] == 200 for r in results)
    assert len({r["accuracy"] for r in results}) > 1  # seeds draw other data
    assert ssne.run_split_cell(cells[1])["accuracy"] == results[1]["accuracy"]


def _table2_results(accuracies: dict[str, list[float]], dataset="mnist-5k") -> list[dict]:
    config = BenchConfig(quick=True, datasets=(dataset,), methods=tuple(accuracies))
    results = []
    for cell in ssne.build_cells(config):
        acc = accuracies[cell.method][cell.seed]
        results.append({"cell": dataclasses.asdict(cell), "accuracy": acc, "n_train": 2000,
                        "n_test": 2500})  # fmt: skip
    return results


def test_table2_intervals_tests_and_marks_against_brute_force():
    from scipy import stats

    accuracies = {
        "euclidean": [0.90, 0.91, 0.92],
        "ssne": [0.93, 0.935, 0.945],  # above Euclidean on every seed
        "warca": [0.80, 0.86, 0.83],  # below: marked ▼
        "itml": [0.905, 0.905, 0.925],  # above on average
    }
    config = BenchConfig(quick=True, datasets=("mnist-5k",))
    table, payload = ssne._table2(_table2_results(accuracies), config)
    for method, accs in accuracies.items():
        entry = payload["mnist-5k"][method]
        half = stats.t.ppf(0.975, 2) * np.std(accs, ddof=1) / np.sqrt(3)
        assert entry["mean"] == pytest.approx(np.mean(accs))
        assert entry["ci95"] == pytest.approx(half)
        assert entry["seeds"] == [0, 1, 2]
        if method != "euclidean":
            p_ref = stats.ttest_rel(accs, accuracies["euclidean"]).pvalue
            assert entry["vs_euclidean"]["p"] == pytest.approx(p_ref)
            assert entry["vs_euclidean"]["diff"] == pytest.approx(
                np.mean(accs) - np.mean(accuracies["euclidean"])
            )
        assert entry["below_euclidean"] == (method == "warca")
    p_best = stats.ttest_rel(accuracies["warca"], accuracies["ssne"]).pvalue
    assert payload["mnist-5k"]["warca"]["vs_best"]["p"] == pytest.approx(p_best)
    lines = table.splitlines()
    header = next(line for line in lines if line.startswith("| data set (train"))
    row = next(line for line in lines if line.startswith("| mnist-5k (2000"))
    cells = dict(zip([c.strip() for c in header.split("|")[2:-1]],
                     [c.strip() for c in row.split("|")[2:-1]], strict=True))  # fmt: skip
    assert cells["WARCA"].endswith("▼*") and "▼" not in cells["SSNE"] + cells["ITML"]
    half = stats.t.ppf(0.975, 2) * np.std(accuracies["ssne"], ddof=1) / np.sqrt(3)
    assert cells["SSNE"] == f"{100 * np.mean(accuracies['ssne']):.2f} ± {100 * half:.2f}*"
    assert "over 3 seed(s)" in table and "over data draws and learner seeds" in table
    # the printed list names the row below Euclidean, by how much and with its p-value
    below = table.split("**Learned rows below Euclidean (▼):**")[1]
    assert "**WARCA** is below Euclidean on mnist-5k: -8.0 points" in below
    assert "ITML" not in below and "SSNE" not in below


def test_table2_without_a_learned_row_below_says_so_and_full_mode_names_learner_seeds():
    accuracies = {"euclidean": [0.85, 0.85, 0.85], "ssne": [0.86, 0.855, 0.858]}
    config = BenchConfig(quick=False, datasets=("fashion-mnist",))
    results = _table2_results(accuracies, "fashion-mnist")
    table, payload = ssne._table2(results, config)
    assert "No learned row is below Euclidean." in table
    assert "**not over data draws**" in table
    assert payload["fashion-mnist"]["euclidean"]["ci95"] == 0.0  # deterministic reference


def test_summary_prints_table2_with_its_marks(tmp_path):
    accuracies = {"euclidean": [0.90, 0.91, 0.92], "warca": [0.80, 0.86, 0.83]}
    config = BenchConfig(quick=True, datasets=("mnist-5k",), methods=("euclidean", "warca"))
    summary = ssne.summarise(_table2_results(accuracies), config, tmp_path)
    text = summary.markdown.split("## SSNE Table 2 — images")[1]
    assert "▼ **WARCA** is below Euclidean on mnist-5k" in text
    assert summary.payload["table2"]["mnist-5k"]["warca"]["below_euclidean"] is True
    json.dumps(summary.payload, allow_nan=False)  # strict JSON


def test_cli_prints_table2_over_its_seeds_with_the_below_list(monkeypatch, rng, tmp_path, capsys):
    from rankmetric.cli import main

    _fake_images(monkeypatch, rng, official_split=False)
    monkeypatch.setitem(ssne.IMAGE_TRAIN, "quick", 150)
    monkeypatch.setattr(ssne, "IMAGE_PCA", 8)
    monkeypatch.setitem(ssne.BUDGETS["quick"], "ssne", {"max_iter": 20})
    argv = ["bench", "ssne-uci", "--quick", "--datasets", "mnist-5k", "--methods", "euclidean",
            "ssne", "--results-dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    table2 = out.split("## SSNE Table 2 — images")[1]
    assert "mean ± 95 % t-interval half-width over 3 seed(s)" in table2
    assert "| mnist-5k (150 / 200) |" in table2
    payload = json.loads((tmp_path / "ssne-uci" / "ssne-uci.json").read_text())
    ssne_row = payload["summary"]["table2"]["mnist-5k"]["ssne"]
    assert ssne_row["seeds"] == [0, 1, 2] and len(ssne_row["scores"]) == 3
    if ssne_row["below_euclidean"]:  # the printed list names it, with its paired p-value
        assert "▼ **SSNE** is below Euclidean on mnist-5k" in table2
    else:
        assert "No learned row is below Euclidean." in table2
