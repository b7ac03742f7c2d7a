"""The WARCA table: stand-in identity data, identity splits, CMC cells and fit-time cells."""

import json
from dataclasses import asdict

import numpy as np
import pytest
from scipy.ndimage import uniform_filter

from rankmetric.bench import BenchConfig, reid_data, warca
from rankmetric.bench.reid_data import make_image_views, make_synthetic_reid
from rankmetric.datasets.synthetic import _box_blur, _shift


def test_synthetic_reid_layout():
    data = make_synthetic_reid(n_identities=50, random_state=1)
    assert data.X.shape == (100, 64) and data.n_identities == 50
    np.testing.assert_array_equal(data.ids[:50], data.ids[50:])
    np.testing.assert_array_equal(data.camera, np.repeat([0, 1], 50))
    again = make_synthetic_reid(n_identities=50, random_state=1)
    np.testing.assert_array_equal(data.X, again.X)


def test_identity_splits_are_disjoint_halves_and_differ():
    data = make_synthetic_reid(n_identities=40)
    train, test = data.split(0)
    assert len(train) == len(test) == 20 and not set(train) & set(test)
    assert set(train) | set(test) == set(range(40))
    assert not np.array_equal(train, data.split(1)[0])
    probe, gallery = data.rows(test, camera=0), data.rows(test, camera=1)
    np.testing.assert_array_equal(data.ids[probe], data.ids[gallery])
    assert np.all(data.camera[probe] == 0) and np.all(data.camera[gallery] == 1)


def test_shift_matches_a_padded_roll(rng):
    images = rng.random((4, 6, 6))
    dy, dx = np.array([0, 1, -2, 2]), np.array([0, -1, 2, 1])
    got = _shift(images, dy, dx)
    for i in range(4):
        padded = np.pad(images[i], 2)
        ref = np.roll(padded, (dy[i], dx[i]), axis=(0, 1))[2:-2, 2:-2]
        np.testing.assert_array_equal(got[i], ref)


def test_box_blur_matches_scipy(rng):
    images = rng.random((3, 7, 7))
    ref = np.stack([uniform_filter(im, size=3, mode="constant") for im in images])
    np.testing.assert_allclose(_box_blur(images), ref, atol=1e-12)


def test_image_views_are_two_noisy_copies(rng):
    images = rng.random((5, 28, 28))
    data = make_image_views(images, random_state=0)
    assert data.X.shape == (10, 784)
    a, b = data.X[:5], data.X[5:]
    own = np.linalg.norm(a - b, axis=1)
    other = np.linalg.norm(a - b[::-1], axis=1)
    assert np.all(np.isfinite(data.X)) and not np.allclose(a, b)
    assert own.mean() < other.mean()


def test_identity_holdout_keeps_identities_whole():
    ids = np.repeat(np.arange(30), 2)
    inner, val = warca.identity_holdout(ids, seed=0)
    assert not set(ids[inner]) & set(ids[val])
    assert len(set(ids[val])) == 6 and len(inner) + len(val) == 60


def test_cells_follow_the_mode():
    full = warca.build_cells(BenchConfig(quick=False))
    cmc = [c for c in full if c.benchmark == "warca-reid"]
    assert len(cmc) == len(warca.METHODS) * len(warca.REID_SETS) * 10
    kernels = {c.dataset: c.options["fixed"]["kernel"] for c in cmc if c.method == "kernel-warca"}
    assert kernels == {"synthetic-reid": "rbf", "fmnist-views": "rbf", "fmnist-hist": "chi2_rbf",
                       "multicam-reid": "rbf"}  # fmt: skip
    grids = {c.dataset: c.options["grid"] for c in cmc if c.method == "kernel-warca"}
    assert grids["fmnist-hist"] == warca.HISTOGRAM_GRIDS["kernel-warca"]
    assert grids["fmnist-views"] == warca.GRIDS["kernel-warca"]
    for method in ("kissme", "warca"):  # a PCA dimension on the PCA-ordered image views only
        grids = {c.dataset: c.options["grid"] for c in cmc if c.method == method}
        assert grids["fmnist-views"] == warca.PCA_GRIDS[method]
        assert grids["synthetic-reid"] == warca.GRIDS[method]
        assert warca.PCA_KEY not in grids["synthetic-reid"]
    scaling = [c for c in full if c.benchmark == "warca-scaling"]
    assert max(c.fold for c in scaling if c.method == "nca") <= warca.NCA_MAX_N
    assert max(c.fold for c in scaling if c.method == "warca") == warca.SIZES["full"][-1]
    quick = [c for c in warca.build_cells(BenchConfig(quick=True)) if c.benchmark == "warca-reid"]
    pca_kissme = [c for c in quick if c.method == "kissme" and c.dataset in warca.PCA_SETS]
    assert all(c.options["grid"] == {} for c in quick if c not in pca_kissme)
    # quick KISSME's fixed PCA dimension is the protocol's on the PCA-ordered views: one candidate
    assert pca_kissme and all(
        c.options["grid"] == {warca.PCA_KEY: [32]} and "n_components" not in c.options["fixed"]
        for c in pca_kissme
    )


def test_cmc_cells_on_synthetic_identities(tmp_path):
    config = BenchConfig(quick=True, datasets=("synthetic-reid",),
                         methods=("euclidean", "kissme"), seeds=2)  # fmt: skip
    cells = warca.build_cells(config)
    results = [{"cell": asdict(c), **warca.run_cmc_cell(c)} for c in cells]
    by = {(r["cell"]["method"], r["cell"]["fold"]): r for r in results}
    for r in results:
        values = [r["cmc"][str(k)] for k in warca.RANKS]
        assert values == sorted(values) and r["n_test_identities"] == 316
        assert r["curve"][0] == r["cmc"]["1"] and len(r["curve"]) == warca.CURVE_LENGTH
    # the nuisance directions defeat the Euclidean distance; KISSME removes them
    for split in range(2):
        assert by[("kissme", split)]["cmc"]["1"] > by[("euclidean", split)]["cmc"]["1"] + 0.2
    summary = warca.summarise(results, config, tmp_path)
    assert "STAND-IN" in summary.markdown and "45.2/68.2/76.0" in summary.markdown
    assert summary.payload["cmc"]["synthetic-reid"]["kissme"]["1"]["mean"] > 0.3
    assert summary.plots[0].exists()


def test_tuned_cmc_cell_reports_its_choice():
    config = BenchConfig(quick=False, datasets=("synthetic-reid",), methods=("kissme",), seeds=1)
    result = warca.run_cmc_cell(warca.build_cells(config)[0])
    tried = [v["params"]["n_components"] for v in result["validation"]]
    assert tried == warca.GRIDS["kissme"]["n_components"]
    assert result["params"]["n_components"] in tried


def test_fit_time_cells_and_table(tmp_path, monkeypatch, rng):
    # stand-in for Fashion-MNIST's training images (the real ones are a 30 MB fetch)
    pixels = rng.integers(0, 256, size=(1500, 784)).astype(float)
    labels = np.arange(1500) % 10
    monkeypatch.setattr(warca, "load_arrays", lambda name: (pixels, labels, None, None))
    config = BenchConfig(quick=True, datasets=(warca.SCALING,), methods=("kissme", "itml"),
                         seeds=1)  # fmt: skip
    cells = [c for c in warca.build_cells(config) if c.fold <= 1000]
    results = [{"cell": asdict(c), **warca.run_scaling_cell(c)} for c in cells]
    assert {r["n_train"] for r in results} == {500, 1000}
    assert all(r["seconds"] > 0 for r in results)
    summary = warca.summarise(results, config, tmp_path)
    assert "| KISSME |" in summary.markdown and "N=1000" in summary.markdown
    assert set(summary.payload["fit_time"]) == {"kissme", "itml"}


def test_histogram_stand_in_is_stripe_histograms_of_the_views(monkeypatch, rng):
    views = make_image_views(rng.random((6, 28, 28)), random_state=0)
    real = reid_data.load_reid
    monkeypatch.setattr(
        reid_data, "load_reid", lambda name: views if name == "fmnist-views" else real(name)
    )
    hist = reid_data.load_reid("fmnist-hist")
    assert hist.X.shape == (12, 156) and np.all(hist.X >= 0)
    np.testing.assert_array_equal(hist.ids, views.ids)
    np.testing.assert_array_equal(hist.camera, views.camera)


def test_kernel_warca_gets_raw_histograms_and_others_standardised(rng):
    data = reid_data.ReidData(rng.random((20, 5)), np.tile(np.arange(10), 2),
                              np.repeat([0, 1], 10))  # fmt: skip
    rows = np.arange(10)
    raw = warca._features("fmnist-hist", data, rows, "kernel-warca")
    np.testing.assert_array_equal(raw, data.X)
    scaled = warca._features("fmnist-hist", data, rows, "warca")
    np.testing.assert_allclose(scaled[rows].mean(axis=0), 0.0, atol=1e-12)


def test_pca_dims_is_tuned_on_held_out_identities_and_applied_to_full_rows(rng):
    # identities live in the first two columns; the last four are loud noise
    ids = np.tile(np.arange(40), 2)
    centres = 3.0 * rng.normal(size=(40, 2))
    X = np.hstack([centres[ids] + 0.1 * rng.normal(size=(80, 2)), 10 * rng.normal(size=(80, 4))])
    fitted = warca.fit_reid_learner(
        "euclidean", X, ids, fixed={}, grid={warca.PCA_KEY: [6, 2]}, seed=0, device="cpu"
    )
    tried = [v["params"][warca.PCA_KEY] for v in fitted.validation]
    assert tried == [6, 2] and fitted.params[warca.PCA_KEY] == 2
    scores = {v["params"][warca.PCA_KEY]: v["score"] for v in fitted.validation}
    _, val = warca.identity_holdout(ids, 0)
    assert scores[2] == warca.loo_recall_at_1(None, None, X[val, :2], ids[val]) > scores[6]
    np.testing.assert_array_equal(fitted.transform(X), X[:, :2])


def test_pca_dims_combines_with_estimator_parameters(rng):
    ids = np.tile(np.arange(30), 2)
    X = rng.normal(size=(30, 5))[ids] + 0.3 * rng.normal(size=(60, 5))
    grid = {warca.PCA_KEY: [3, 5], "regularization": [1e-6]}
    fitted = warca.fit_reid_learner("kissme", X, ids, fixed={}, grid=grid, seed=0, device="cpu")
    assert [v["params"] for v in fitted.validation] == [
        {warca.PCA_KEY: 3, "regularization": 1e-6},
        {warca.PCA_KEY: 5, "regularization": 1e-6},
    ]
    d = fitted.params[warca.PCA_KEY]
    assert fitted.params["regularization"] == 1e-6 and fitted.transform(X).shape == (60, d)
    single = warca.fit_reid_learner(
        "kissme", X, ids, fixed={}, grid={warca.PCA_KEY: [3]}, seed=0, device="cpu"
    )
    assert single.validation == [] and single.params == {warca.PCA_KEY: 3}
    assert single.transform(X).shape == (60, 3)
    without = warca.fit_reid_learner("kissme", X, ids, fixed={}, grid={}, seed=0, device="cpu")
    assert warca.PCA_KEY not in without.params and without.transform(X).shape == (60, 5)


def test_two_view_cells_keep_the_probe_gallery_cmc_and_add_map_and_reranking():
    from rankmetric.evaluate import cmc_curve

    config = BenchConfig(quick=True, datasets=("synthetic-reid",), methods=("euclidean",), seeds=1)
    cell = warca.build_cells(config)[0]
    result = warca.run_cmc_cell(cell)
    data = warca.load_reid("synthetic-reid")
    _, test = data.split(0)
    X = warca._features("synthetic-reid", data, data.rows(data.split(0)[0]))
    probe, gallery = data.rows(test, camera=0), data.rows(test, camera=1)
    expected = cmc_curve(X[probe], data.ids[probe], X[gallery], data.ids[gallery],
                         ranks=warca.RANKS)  # fmt: skip
    assert {int(k): v for k, v in result["cmc"].items()} == pytest.approx(expected)
    assert 0 < result["map"] <= 1 and 0 < result["minp"] <= 1
    assert set(result["rerank"]) == {"cmc", "map", "minp"} and result["n_queries_skipped"] == 0


def test_multi_camera_stand_in_uses_the_market_protocol(tmp_path):
    data = warca.load_reid("multicam-reid")
    assert len(np.unique(data.camera)) == 6 and data.n_identities == 600
    _, test = data.split(0)
    probe, gallery = warca._query_gallery(data, test, 0)
    assert not set(probe) & set(gallery)
    tracks = set(zip(data.ids[probe], data.camera[probe], strict=True))
    assert len(tracks) == len(probe)  # one query per (identity, camera) track
    config = BenchConfig(quick=True, datasets=("multicam-reid",), methods=("euclidean", "kissme"),
                         seeds=1)  # fmt: skip
    results = [{"cell": asdict(c), **warca.run_cmc_cell(c)} for c in warca.build_cells(config)]
    by = {r["cell"]["method"]: r for r in results}
    assert by["kissme"]["map"] > by["euclidean"]["map"] + 0.3
    summary = warca.summarise(results, config, tmp_path)
    assert "one query per (identity, camera) track" in summary.markdown
    assert "| mAP | rank 1 re-rank | mAP re-rank |" in summary.markdown
    assert summary.payload["cmc"]["multicam-reid"]["kissme"]["rerank"]["map"]["mean"] > 0.5


def test_cells_on_a_user_file(tmp_path):
    from rankmetric.datasets import make_multicamera_reid

    d = make_multicamera_reid(n_identities=40, random_state=1)
    path = tmp_path / "mine.npz"
    np.savez(path, X=d.X, y=d.ids, cameras=d.camera)
    config = BenchConfig(quick=True, datasets=(str(path),), methods=("euclidean",), seeds=2)
    cells = warca.build_cells(config)
    assert len(cells) == 2 and all(c.benchmark == warca.NAME for c in cells)
    assert cells[0].dataset.startswith("mine.npz@") and cells[0].options["path"] == str(path)
    results = [{"cell": asdict(c), **warca.run_cmc_cell(c)} for c in cells]
    assert all(r["n_test_identities"] == 20 for r in results)
    summary = warca.summarise(results, config, tmp_path)
    assert "your data" in summary.markdown and "not a stand-in" in summary.markdown
    np.savez(path, X=d.X + 1, y=d.ids, cameras=d.camera)  # a changed file: new cache keys
    assert warca.build_cells(config)[0].dataset != cells[0].dataset


def _fake_cmc(method: str, fold: int, rank1: float) -> dict:
    cell = {"benchmark": warca.NAME, "method": method, "dataset": "synthetic-reid", "fold": fold,
            "seed": 0, "options": {}}  # fmt: skip
    cmc = {str(r): min(1.0, rank1 + 0.1 * i) for i, r in enumerate(warca.RANKS)}
    return {"cell": cell, "cmc": cmc, "curve": [rank1] * 5, "map": rank1, "minp": rank1,
            "n_queries_skipped": 0, "rerank": {"cmc": {"1": rank1}, "map": rank1},
            "fit_seconds": 0.1, "n_test_identities": 316}  # fmt: skip


def test_cmc_table_marks_and_lists_learned_rows_below_euclidean(tmp_path):
    from rankmetric.bench import BELOW_MARK, BenchConfig

    results = [_fake_cmc("euclidean", f, 0.30 + 0.01 * f) for f in range(3)]
    results += [_fake_cmc("kissme", f, 0.40 + 0.02 * f) for f in range(3)]
    results += [_fake_cmc("kernel-warca", f, 0.10 + 0.02 * f) for f in range(3)]
    summary = warca.summarise(results, BenchConfig(quick=True), tmp_path)
    text = summary.markdown
    assert f"| Kernel WARCA {BELOW_MARK} |" in text and "| KISSME |" in text
    assert "Learned rows below Euclidean" in text and "**Kernel WARCA** is below Euclidean" in text
    assert "95 % Student-t interval" in text and "Δ rank 1 vs Euclidean" in text
    entry = summary.payload["cmc"]["synthetic-reid"]["kernel-warca"]
    assert entry["below_euclidean"] and entry["rank1_vs_euclidean"]["diff"] == pytest.approx(-0.19)
    assert entry["rank1_vs_euclidean"]["p"] < 0.05
    assert not summary.payload["cmc"]["synthetic-reid"]["kissme"]["below_euclidean"]
    assert entry["1"]["ci95"] > 0


def test_fit_time_cells_run_at_least_three_seeds_per_mode():
    for quick in (True, False):
        config = BenchConfig(quick=quick, datasets=(warca.SCALING,), methods=("warca",))
        cells = warca.build_cells(config)
        seeds = {n: sorted(c.seed for c in cells if c.fold == n) for n in {c.fold for c in cells}}
        assert all(s == list(range(warca.SCALING_SEEDS[config.mode])) for s in seeds.values())
        assert warca.SCALING_SEEDS[config.mode] >= 3


def test_fit_time_table_intervals_and_paired_ratios_against_brute_force(tmp_path):
    from scipy import stats

    times = {  # method -> N -> seconds of seeds 0, 1, 2
        "warca": {500: [2.0, 3.0, 2.5], 1000: [2.2, 2.9, 2.6]},
        "lmnn": {500: [1.0, 1.8, 1.1], 1000: [4.0, 6.5, 5.0]},
        "kissme": {500: [0.010, 0.012, 0.011], 1000: [0.02, 0.021, 0.025]},
    }
    config = BenchConfig(quick=True, datasets=(warca.SCALING,), methods=tuple(times))
    results = [
        {"cell": asdict(c), "seconds": times[c.method][c.fold][c.seed], "n_train": c.fold}
        for c in warca.build_cells(config)
        if c.fold in (500, 1000)
    ]

    def brute(values):  # geometric mean and the t-interval of the mean log, by hand
        logs = np.log(values)
        half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
        return np.exp(logs.mean()), np.exp(logs.mean() - half), np.exp(logs.mean() + half)

    text, payload = warca._scaling_table(results)
    for method, by_n in times.items():
        for n, secs in by_n.items():
            entry = payload[method][n]
            geo, low, high = brute(secs)
            assert entry["geo_mean"] == pytest.approx(geo)
            assert entry["ci95"] == pytest.approx([low, high])
            assert entry["median"] == pytest.approx(np.median(secs))
            if method == "warca":
                assert "ratio_to_warca" not in entry
                continue
            # paired: each seed's time over WARCA's on the same seed's N points
            ratio = brute(np.divide(secs, times["warca"][n]))
            assert entry["ratio_to_warca"]["geo_mean"] == pytest.approx(ratio[0])
            assert entry["ratio_to_warca"]["ci95"] == pytest.approx(list(ratio[1:]))
    lmnn = payload["lmnn"][1000]
    row = next(line for line in text.splitlines() if line.startswith("| LMNN / WARCA |"))
    low, high = lmnn["ratio_to_warca"]["ci95"]
    assert f"{lmnn['ratio_to_warca']['geo_mean']:.2f} [{low:.2f}, {high:.2f}]" in row
    kissme = next(line for line in text.splitlines() if line.startswith("| KISSME |"))
    assert f"{payload['kissme'][500]['geo_mean']:.3f} [" in kissme  # small times: 3 digits
    assert "over 3 seed(s)" in text and "do not apply to times" in text
    assert "▼" not in text.split("\n\n", 1)[1]  # no row is marked
    summary = warca.summarise(results, config, tmp_path)
    assert "geometric mean [95 % interval]" in summary.markdown
    assert (tmp_path / "warca_fit_time.png").is_file()
    json.dumps(summary.payload, allow_nan=False)  # strict JSON


def test_fit_time_table_with_one_seed_prints_no_interval():
    cell = warca.build_cells(BenchConfig(quick=True, datasets=(warca.SCALING,), seeds=1))[0]
    text, payload = warca._scaling_table([{"cell": asdict(cell), "seconds": 0.5}])
    assert payload[cell.method][cell.fold]["ci95"] == [None, None]
    assert f"| {warca.LABELS[cell.method]} | 0.50 |" in text
