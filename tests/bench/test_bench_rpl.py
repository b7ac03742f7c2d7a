"""The RPL table: the SPDNet baselines, the cells and the report, on synthetic SPD data."""

from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from rankmetric.bench import BELOW_MARK, BenchConfig, rpl, spd_pipelines
from rankmetric.bench.spdnet_baselines import ROWS, fit_spdnet_row, log_vectors
from rankmetric.evaluate import clustering_scores, recall_at_k
from rankmetric.geometry import mean_whitening as whiten

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

TINY = {**rpl.SHARED_BUDGET, "max_iter": 4, "validation_every": 2, "n_iter_no_change": 2}


@pytest.fixture(scope="module")
def spd():
    return rpl.load_spd_split("synthetic-spd")


def test_paper_table_is_complete():
    for rows in rpl.PAPER_TABLE.values():
        assert len(rows) == 8 and all(len(v) == 4 for v in rows.values())
    assert rpl.PAPER_TABLE["HDM05"]["RPL"] == (59.4, 66.7, 68.8, 65.4)
    named = {paper for _, paper in rpl.METHOD_INFO.values() if paper}
    assert named <= set(rpl.PAPER_TABLE["DEAP-4"])


@pytest.mark.parametrize("row", list(ROWS))
def test_each_row_trains_the_same_network(spd, row):
    X, y, X_test, _ = spd
    est, record = fit_spdnet_row(X, y, row, TINY, seed=0)
    Z = est.transform(X_test)
    assert [w.shape for w in est.weights_] == [(5, 5), (5, 5)]  # the default (c, c) network
    assert Z.shape == (len(X_test), 15) and np.all(np.isfinite(Z))
    assert 1 <= record["n_iter"] <= TINY["max_iter"]
    assert record["initial_validation_score"] <= record["validation_score"]


def test_every_row_starts_from_the_untrained_reference(spd):
    """One step at a vanishing learning rate: every row's embedding is the reference's."""
    X, y, X_test, _ = spd
    W = whiten(torch.as_tensor(X, dtype=torch.float64))
    reference = log_vectors(W @ torch.as_tensor(X_test) @ W).numpy()
    budget = {**TINY, "max_iter": 1, "learning_rate": 1e-12, "validation_fraction": 0.0,
              "eps": 1e-6}  # fmt: skip
    for row in ("lifted", "rpl"):
        est, _ = fit_spdnet_row(X, y, row, budget, seed=0)
        np.testing.assert_allclose(est.transform(X_test), reference, rtol=1e-4, atol=1e-4)


def test_baseline_is_deterministic_per_seed(spd):
    X, y, X_test, _ = spd
    budget = {**TINY, "init": "random"}  # the identity start draws nothing from the seed
    a, b, c = (fit_spdnet_row(X, y, "triplet-random", budget, seed=s)[0] for s in (3, 3, 4))
    np.testing.assert_array_equal(a.transform(X_test), b.transform(X_test))
    assert not np.allclose(a.transform(X_test), c.transform(X_test))


def test_baseline_training_improves_on_its_start(spd):
    X, y, X_test, y_test = spd
    start, _ = fit_spdnet_row(
        X, y, "lifted", {**TINY, "max_iter": 1, "validation_fraction": 0.0}, seed=0
    )
    trained, _ = fit_spdnet_row(
        X,
        y,
        "lifted",
        {**TINY, "max_iter": 60, "validation_every": 10, "n_iter_no_change": None},
        seed=0,
    )
    before = recall_at_k(start.transform(X_test), y_test, ks=(1,), device="cpu")[1]
    after = recall_at_k(trained.transform(X_test), y_test, ks=(1,), device="cpu")[1]
    assert after >= before


def test_whitening_centres_the_riemannian_mean(spd):
    X = torch.as_tensor(spd[0], dtype=torch.float64)
    W = whiten(X)
    centred = log_vectors(W @ X @ W)
    # the log-vectors of whitened matrices average to ~0 only approximately (Karcher vs log mean),
    # but the Riemannian mean of the whitened stack is the identity
    from rankmetric.geometry.means import riemannian_mean

    mean = riemannian_mean(W @ X @ W)
    torch.testing.assert_close(mean, torch.eye(X.shape[1], dtype=torch.float64), atol=1e-6, rtol=0)
    assert centred.shape == (len(X), 15)


def test_embedding_scores_match_the_evaluate_functions(rng):
    Z = rng.normal(size=(40, 3))
    y = np.repeat([0, 1], 20)
    Z[y == 1] += 2.0
    scores = rpl.embedding_scores(Z, y, seed=0)
    clusters = clustering_scores(Z, y, random_state=0)
    assert scores["F1"] == clusters["f1"] and scores["NMI"] == clusters["nmi"]
    recalls = recall_at_k(Z, y, ks=(1, 3), device="cpu")
    assert (scores["R@1"], scores["R@3"]) == (recalls[1], recalls[3])


def test_cells_share_one_budget():
    cells = rpl.build_cells(BenchConfig(quick=False))
    assert len(cells) == len(rpl.FULL_SETS) * len(rpl.METHODS) * 5
    assert len({repr(c.options) for c in cells}) == 1
    budget = cells[0].options["budget"]
    assert (budget["max_iter"], budget["n_iter_no_change"]) == (3000, 20)  # early stopping decides
    quick = rpl.build_cells(BenchConfig(quick=True))
    assert {c.dataset for c in quick} == set(rpl.QUICK_SETS)
    with pytest.raises(ValueError, match="unknown methods"):
        rpl.build_cells(BenchConfig(methods=("nope",)))


def test_run_cell_and_summary(tmp_path):
    config = BenchConfig(quick=True, datasets=("synthetic-spd",),
                         methods=("log-euclidean", "dsml-triplet", "npair", "rpl", "mdm", "ts-lr",
                                  "ts-warca"),
                         seeds=1)  # fmt: skip
    results = []
    for cell in rpl.build_cells(config):
        budget = {**cell.options["budget"], "max_iter": 6, "validation_every": 3}
        cell = replace(cell, options={**cell.options, "budget": budget})
        result = rpl.run_cell(cell)
        assert set(result["scores"]) == {
            *rpl.METRICS, rpl.TRAIN_METRIC, rpl.ACCURACY, "chance R@1"
        }  # fmt: skip
        assert all(0.0 <= v <= 1.0 for v in result["scores"].values())
        assert result["fit_seconds"] > 0
        if cell.method in ("log-euclidean", "dsml-triplet"):  # AIRM, not the vector R@1
            assert result["scores"][rpl.TRAIN_METRIC] is not None
        results.append({"cell": asdict(cell), **result})
    summary = rpl.summarise(results, config, tmp_path)
    assert (
        "RPL (ours" in summary.markdown
        and rpl.TRAIN_METRIC in summary.markdown
        and "different data sets" in summary.markdown
    )
    assert set(summary.payload["synthetic-spd"]) == {
        "log-euclidean",
        "dsml-triplet",
        "npair",
        "rpl",
        "mdm",
        "ts-lr",
        "ts-warca",
        "discriminating",
    }
    assert f"| {rpl.ACCURACY} | {rpl.FIT_TIME} |" in summary.markdown
    for label in ("MDM", "TangentSpace + LogReg", "TangentSpace + WARCA"):
        # a row below the Log-Euclidean reference carries the mark
        assert any(f"| {label}{m} |" in summary.markdown for m in ("", f" {BELOW_MARK}"))
    assert "Δ R@1 vs Log-Euclidean" in summary.markdown
    assert "below Log-Euclidean in R@1" in summary.markdown
    assert "fit s" in summary.payload["synthetic-spd"]["mdm"]
    assert summary.payload["synthetic-spd"]["discriminating"] is True
    assert summary.plots[0].exists()


# ---------------------------------------------------------------- the rows an EEG user would pick


def test_knn_accuracy_column_is_a_vote_on_training_embeddings(spd):
    X, y, X_test, y_test = spd
    transform, _, _, predict = rpl._fit("log-euclidean", X, y, TINY, 0, "cpu")
    assert predict is None
    from sklearn.neighbors import KNeighborsClassifier

    knn = KNeighborsClassifier(rpl.KNN_K).fit(transform(X), y)
    expected = knn.score(transform(X_test), y_test)
    assert rpl.knn_accuracy(transform(X), y, transform(X_test), y_test, k=rpl.KNN_K) == expected


def test_tangent_space_logreg_is_pyriemanns_pipeline(spd):
    """TS + LR predicts as pyRiemann's TangentSpace + scikit-learn's LR with the chosen C."""
    tangentspace = pytest.importorskip("pyriemann.tangentspace")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    X, y, X_test, _ = spd
    embed, predict, record = spd_pipelines.fit_pipeline("ts-lr", X, y, seed=0)
    assert record["params"]["C"] in spd_pipelines.GRIDS["ts-lr"]["C"]
    assert [v["params"]["C"] for v in record["validation"]] == spd_pipelines.GRIDS["ts-lr"]["C"]
    theirs = make_pipeline(tangentspace.TangentSpace(metric="riemann"),
                           LogisticRegression(C=record["params"]["C"], max_iter=1000))  # fmt: skip
    theirs.fit(X, y)
    np.testing.assert_array_equal(predict(X_test), theirs.predict(X_test))
    np.testing.assert_allclose(embed(X_test), theirs.decision_function(X_test), atol=1e-6)


def test_mdm_row_is_pyriemanns_mdm(spd):
    classification = pytest.importorskip("pyriemann.classification")
    X, y, X_test, _ = spd
    embed, predict, record = spd_pipelines.fit_pipeline("mdm", X, y, seed=0)
    theirs = classification.MDM(metric="riemann").fit(X, y)
    np.testing.assert_array_equal(predict(X_test), theirs.predict(X_test))
    assert embed(X_test).shape == (len(X_test), 3) and record["seconds"] > 0


def test_mdm_row_needs_no_pyriemann(spd, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyriemann.classification", None)
    _, predict, _ = spd_pipelines.fit_pipeline("mdm", *spd[:2], seed=0)
    assert predict(spd[2]).shape == spd[3].shape


@pytest.mark.parametrize("method", ["ts-warca", "ts-lmnn"])
def test_metric_rows_tune_on_the_networks_validation_split(spd, method):
    X, y, X_test, _ = spd
    embed, predict, record = spd_pipelines.fit_pipeline(method, X, y, seed=1, mode="quick")
    assert predict is None and np.all(np.isfinite(embed(X_test)))
    ((name, values),) = spd_pipelines.GRIDS[method].items()
    assert [v["params"][name] for v in record["validation"]] == values
    assert record["params"][name] in values
    # the split is the one SPDNetEmbedding(random_state=1) holds out (drawn first from its seed)
    from rankmetric._utils import make_rng
    from rankmetric.training import split_validation

    inner, val = spd_pipelines.validation_split(y, 1)
    codes = np.unique(y, return_inverse=True)[1]
    expected = split_validation(codes, 0.2, "stratified", make_rng(1))
    np.testing.assert_array_equal(inner, expected[0])
    np.testing.assert_array_equal(val, expected[1])
    assert 0 < len(val) < len(y) / 3


def test_unknown_pipeline_is_named(spd):
    with pytest.raises(ValueError, match="unknown SPD pipeline 'nope'"):
        spd_pipelines.fit_pipeline("nope", *spd[:2], seed=0)


# ---------------------------------------------------------------- a user's own trials (--data)


def _session_trials(path, *, names=("X", "y", "domains"), seed=0):
    """Two days of two-class trials, the second day mixed by a congruence (the guide's case)."""
    rng = np.random.default_rng(seed)
    n, c = 40, 4
    y = np.tile(["left", "right"], n)
    day = np.repeat(["day1", "day2"], n)
    gains = np.where((y == "right")[:, None], [2.0, 1.0, 1.0, 1.0], [1.0, 1.0, 2.0, 1.0])
    X = rng.normal(size=(2 * n, c, 64)) * gains[:, :, None]
    X[day == "day2"] = (np.eye(c) + 0.4 * rng.normal(size=(c, c))) @ X[day == "day2"]
    np.savez(path, **dict(zip(names, (X, y, day), strict=True)))
    return X, y, day


def test_bench_on_a_users_trial_file_puts_mdm_ts_lr_and_rpl_side_by_side(tmp_path, capsys):
    from rankmetric.cli import main

    path = tmp_path / "my_trials.npz"
    _session_trials(path, names=("trials", "labels", "session"))  # aliases, as EEG tools save
    argv = ["bench", "rpl-spd", "--data", str(path), "--quick", "--seeds", "1", "--quiet",
            "--results-dir", str(tmp_path / "results")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "RPL beside the EEG baselines — your trials" in out and "Paper (RPL" not in out
    assert "session 'day2' held out (cross-session)" in out
    tables = [line for line in out.splitlines() if line.startswith(("**", "|"))]
    assert any(line.startswith("**my_trials.npz@") for line in tables)  # name and digest
    assert not any(str(tmp_path) in line for line in tables)  # no folder in the tables
    for label in ("MDM", "TangentSpace + LogReg", "RPL (ours, default potato)"):
        assert f"| {label} |" in out
    # the split: day 2 re-centred at its own mean, as DomainRecentering does
    C_tr, y_tr, C_te, y_te = rpl.user_split(str(path))
    assert len(C_tr) == len(C_te) == 40 and set(y_te) == {"left", "right"}
    mean = torch.linalg.eigvalsh(torch.as_tensor(C_te).mean(0))
    assert mean.max() / mean.min() < 1.5  # close to the identity


def test_bench_on_a_file_of_spd_matrices_uses_them_as_given(tmp_path, capsys):
    from rankmetric.cli import main

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    A = rng.normal(size=(60, 4, 12)) + y[:, None, None] * np.eye(4, 12)
    C = A @ A.transpose(0, 2, 1) / 12
    path = tmp_path / "covs.npz"
    np.savez(path, covariances=C, labels=y)
    C_tr, _, C_te, _ = rpl.user_split(str(path))
    rows = {m.tobytes() for m in C}
    assert all(m.tobytes() in rows for m in np.concatenate([C_tr, C_te]))  # not re-estimated
    argv = ["bench", "rpl-spd", "--data", str(path), "--quick", "--seeds", "1", "--quiet",
            "--results-dir", str(tmp_path / "results")]  # fmt: skip
    argv += ["--methods", "log-euclidean", "mdm"]
    assert main(argv) == 0
    assert "your SPD matrices, as given" in capsys.readouterr().out


def test_bench_data_errors_name_the_problem(tmp_path, capsys):
    from rankmetric.cli import main

    bad = tmp_path / "bad.npz"
    np.savez(bad, trials=np.zeros((4, 2, 8)))
    assert main(["bench", "rpl-spd", "--data", str(bad), "--quick"]) == 2
    assert "missing array(s) ['y']" in capsys.readouterr().err
    good = tmp_path / "good.npz"
    _session_trials(good)
    assert main(["bench", "ssne-uci", "--data", str(good), "--quick"]) == 2
    assert "rpl-spd (trial files)" in capsys.readouterr().err
