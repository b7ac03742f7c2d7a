"""``--data PATH``: users' feature files in ``rankmetric fit``, ``evaluate`` and ``bench``, and the
README quick-start commands exactly as written there."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankmetric import load_model
from rankmetric.bench import warca
from rankmetric.cli import main
from rankmetric.datasets import make_multicamera_reid

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


@pytest.fixture
def reid_file(tmp_path):
    """The README's file: a bundled stand-in written as X, y, cameras (small here)."""
    d = make_multicamera_reid(n_identities=40, random_state=0)
    path = tmp_path / "f.npz"
    np.savez(path, X=d.X, y=d.ids, cameras=d.camera)
    return path


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_readme_fit_command_saves_a_model_and_reports_reid_scores(
    reid_file, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "warca", "--data", "f.npz", "--out", "m.npz", "--max-iter", "80"]) == 0
    out = capsys.readouterr().out
    assert "identities held out" in out and "reid_mAP_learned" in out
    assert load_model(tmp_path / "m.npz").transform(np.zeros((2, 64))).shape[0] == 2
    assert main(["fit", "warca", "--data", "f.npz", "--max-iter", "80", "--json"]) == 0
    report = _json(capsys)
    assert report["reid_rank1_learned"] > report["reid_rank1_euclidean"]
    assert report["reid_queries_skipped"] == 0 and "knn3_accuracy_learned" not in report


@pytest.mark.parametrize("method", ["warca", "kissme", "xqda"])
def test_fit_passes_the_files_cameras_for_cross_camera_positives(reid_file, capsys, method):
    argv = ["fit", method, "--data", str(reid_file), "--positives", "cross_camera", "--json"]
    if method == "warca":
        argv += ["--max-iter", "40"]
    assert main(argv) == 0
    report = _json(capsys)
    assert report["reid_rank1_learned"] > report["reid_rank1_euclidean"]


def test_fit_uses_the_split_column_and_knn_without_cameras(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 12)
    X = rng.normal(size=(5, 4))[y] + 0.3 * rng.normal(size=(60, 4))
    split = np.tile(np.r_[["train"] * 8, ["test"] * 4], 5)
    np.savez(tmp_path / "s.npz", X=X, y=y, split=split)
    assert main(["fit", "kissme", "--data", str(tmp_path / "s.npz"), "--json"]) == 0
    report = _json(capsys)
    assert report["split"] == "the file's split column" and report["n_test"] == 20
    assert report["knn3_accuracy_learned"] > 0.8 and not any("reid" in k for k in report)
    np.savez(tmp_path / "plain.npz", X=X, y=y)
    assert main(["fit", "kissme", "--data", str(tmp_path / "plain.npz"), "--json"]) == 0
    assert _json(capsys)["split"].startswith("stratified 30% hold-out")


def test_fit_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), 10)
    X = rng.normal(size=(4, 3))[y] + 0.2 * rng.normal(size=(40, 3))
    lines = ["id,a,b,c"] + [f"{y[i]},{X[i, 0]},{X[i, 1]},{X[i, 2]}" for i in range(40)]
    (tmp_path / "f.csv").write_text("\n".join(lines))
    assert main(["fit", "xqda", "--data", str(tmp_path / "f.csv"), "--json"]) == 0
    assert _json(capsys)["n_train"] == 28


def test_evaluate_prints_reid_scores_when_cameras_are_given(reid_file, tmp_path, capsys):
    assert main(["fit", "kissme", "--data", str(reid_file), "--out", str(tmp_path / "k.npz")]) == 0
    capsys.readouterr()
    argv = ["evaluate", "--data", str(reid_file), "--scores", "knn", "--json"]
    assert main(argv) == 0
    raw = _json(capsys)["scores"]
    assert main([*argv, "--model", str(tmp_path / "k.npz")]) == 0
    learned = _json(capsys)["scores"]
    for key in ("reid_rank1", "reid_rank20", "reid_mAP", "reid_mINP", "reid_queries_valid"):
        assert key in raw and key in learned
    assert learned["reid_mAP"] > raw["reid_mAP"]
    assert main(["evaluate", "--data", str(reid_file), "--scores", "knn"]) == 0
    assert "reid_mAP" in capsys.readouterr().out


def test_evaluate_query_gallery_split_column(tmp_path, capsys):
    X = np.array([[0.0], [0.1], [5.0], [5.2], [0.05], [5.1]])
    y = np.array([0, 0, 1, 1, 0, 1])
    cams = np.array([0, 1, 0, 1, 1, 1])
    split = np.array(["query", "gallery", "query", "gallery", "gallery", "gallery"])
    np.savez(tmp_path / "qg.npz", X=X, y=y, cameras=cams, split=split)
    argv = ["evaluate", "--data", str(tmp_path / "qg.npz"), "--scores", "knn", "--json"]
    assert main(argv) == 0
    scores = _json(capsys)["scores"]
    assert scores["reid_queries_valid"] == 2 and scores["reid_rank1"] == 1.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"X": np.eye(4)}, "no column 'y'"),
        ({"X": np.eye(4), "y": [0, 1, 0]}, "mismatched lengths"),
        ({"X": np.full((4, 2), np.nan), "y": [0, 1, 0, 1]}, "NaN"),
        ({"X": np.eye(4), "y": [3, 3, 3, 3]}, "single identity"),
    ],
)
@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_bad_files_are_reported(tmp_path, capsys, content, message, command):
    np.savez(tmp_path / "bad.npz", **content)
    argv = ["fit", "warca"] if command == "fit" else ["evaluate"]
    assert main([*argv, "--data", str(tmp_path / "bad.npz")]) == 2
    assert message in capsys.readouterr().err


def test_readme_bench_command_on_a_user_file(reid_file, tmp_path, monkeypatch, capsys):
    # the README's exact command; fewer splits and methods than the full protocol here (the
    # full run on this file is in docs/benchmarks.md)
    monkeypatch.setattr(warca, "SPLITS", {"quick": 1, "full": 1})
    monkeypatch.setattr(warca, "METHODS", ("euclidean", "kissme", "warca"))
    monkeypatch.setitem(warca.GRIDS, "warca", {"margin": [1.0]})
    monkeypatch.setitem(warca.BUDGETS["full"], "warca", {"max_iter": 100})
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "warca-reid", "--data", "f.npz"]) == 0
    out = capsys.readouterr().out
    assert "## WARCA — re-identification protocol (your data)" in out
    assert "| WARCA |" in out and "mAP re-rank" in out
    assert (tmp_path / "results" / "warca-reid" / "warca_cmc.png").exists()


def test_evaluate_embeddings_file_with_cameras(tmp_path, capsys):
    d = make_multicamera_reid(n_identities=20, random_state=2)
    np.savez(tmp_path / "emb.npz", X=d.X, y=d.ids, cameras=d.camera)
    assert main(["evaluate", str(tmp_path / "emb.npz"), "--scores", "knn", "--json"]) == 0
    assert _json(capsys)["scores"]["reid_queries_valid"] > 0
    np.savez(tmp_path / "bad.npz", X=d.X, y=d.ids, cameras=d.camera[:5])
    assert main(["evaluate", str(tmp_path / "bad.npz")]) == 2
    assert "cameras has 5 values" in capsys.readouterr().err


def test_evaluate_with_a_model_scores_only_the_rows_fit_held_out(reid_file, tmp_path, capsys):
    """Without a split column, ``evaluate --model`` scores the hold-out ``fit`` made of the same
    file (the identities the model never saw), not every row."""
    model = tmp_path / "k.npz"
    assert main(["fit", "kissme", "--data", str(reid_file), "--out", str(model), "--json"]) == 0
    fitted = _json(capsys)
    argv = ["evaluate", "--data", str(reid_file), "--model", str(model), "--json"]
    assert main([*argv, "--scores", "knn"]) == 0
    report = _json(capsys)
    assert report["n_evaluated"] == fitted["n_test"] < len(np.load(reid_file)["y"])
    assert "hold-out" in report["split"] and "identities held out" in report["split"]
    assert main(["evaluate", "--data", str(reid_file), "--scores", "knn", "--json"]) == 0
    assert _json(capsys)["n_evaluated"] == len(np.load(reid_file)["y"])  # raw: nothing trained


def test_evaluate_embeddings_in_a_table_as_in_a_npz(tmp_path, capsys):
    """Embeddings written to a CSV by another program are evaluated as the same arrays in a
    .npz are (the table is read as --data reads a feature file, with its column options)."""
    d = make_multicamera_reid(n_identities=20, random_state=2)
    np.savez(tmp_path / "emb.npz", X=d.X, y=d.ids)
    columns = [f"e{j}" for j in range(d.X.shape[1])]
    rows = [",".join(["image_path", "pid", *columns])]
    rows += [",".join([f"img{i}.jpg", str(p), *map(repr, map(float, x))])
             for i, (p, x) in enumerate(zip(d.ids, d.X, strict=True))]  # fmt: skip
    (tmp_path / "emb.csv").write_text("\n".join(rows) + "\n")
    assert main(["evaluate", str(tmp_path / "emb.npz"), "--scores", "retrieval", "--json"]) == 0
    from_arrays = _json(capsys)["scores"]
    argv = ["evaluate", str(tmp_path / "emb.csv"), "--feature-columns", "e*", "--json"]
    assert main([*argv, "--scores", "retrieval"]) == 0
    assert _json(capsys)["scores"] == pytest.approx(from_arrays, abs=1e-12)
