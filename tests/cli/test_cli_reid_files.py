"""Re-id files as they come (issue 35): column mapping, junk ids, re-ranking, and the
learned-vs-Euclidean comparison on the model's own preprocessing (issue 32)."""

from __future__ import annotations

import csv
import json
import re

import pytest

from rankmetric.cli import main
from rankmetric.datasets import load_dataset, make_multicamera_reid
from rankmetric.evaluate import knn_accuracy


def _write_table(path, ids, n_features=16, seed=0):
    """A CSV as exported by a re-id pipeline: image_path, person_id, camera_index, f0..f15."""
    d = make_multicamera_reid(n_identities=40, n_cameras=3, n_features=n_features,
                              random_state=seed)  # fmt: skip
    names = [f"f{j}" for j in range(n_features)]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_path", "person_id", "camera_index", *names])
        for i, row in enumerate(d.X):
            person = ids(d.ids[i])
            writer.writerow([f"imgs/{person}_{i}.jpg", person, d.camera[i], *row.round(5)])
    return path


MAPPING = ["--id-column", "person_id", "--camera-column", "camera_index"]


@pytest.fixture
def table(tmp_path):
    return _write_table(tmp_path / "feats.csv", lambda i: i)


def test_unknown_columns_are_named_briefly_with_the_option_to_use(table, capsys):
    assert main(["fit", "xqda", "--data", str(table)]) == 2
    err = capsys.readouterr().err
    assert "no column 'y' or 'labels'" in err and "--id-column" in err
    assert "(19 in all)" in err and "f15" not in err  # a few names, not every column
    assert main(["fit", "xqda", "--data", str(table), "--id-column", "person"]) == 2
    assert "no column 'person' for y" in capsys.readouterr().err


def test_text_columns_are_refused_clearly_then_ignored_when_features_are_named(table, capsys):
    assert main(["fit", "xqda", "--data", str(table), *MAPPING]) == 2
    err = capsys.readouterr().err
    assert "every feature must be a number" in err and "--feature-columns" in err
    argv = ["fit", "xqda", "--data", str(table), *MAPPING, "--feature-columns", "f*", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reid_rank1_learned"] > report["reid_rank1_euclidean"]
    said = r"(better|level|not better|below): mAP .* identities held out of the fit"
    assert re.fullmatch(said, report["held_out_check"]), report["held_out_check"]
    assert main([*argv[:-3], "--feature-columns", "g*"]) == 2
    assert "no column matches the feature column 'g*'" in capsys.readouterr().err


def test_feature_columns_choose_the_features(table, capsys):
    argv = ["evaluate", "--data", str(table), *MAPPING, "--json", "--scores", "knn"]
    assert main([*argv, "--feature-columns", "f0", "f1,f2"]) == 0
    assert json.loads(capsys.readouterr().out)["n_features"] == 3


def test_column_options_apply_to_feature_files_only(capsys):
    assert main(["fit", "xqda", "--data", "iris", "--id-column", "species"]) == 2
    assert "--id-column: for your own feature file" in capsys.readouterr().err


def _reid(capsys, argv):
    assert main([*argv, "--json", "--scores", "knn"]) == 0
    return json.loads(capsys.readouterr().out)["scores"]


def test_string_ids_with_junk_minus_one_are_junk_by_default(tmp_path, capsys):
    """Ids read as text ("p3", "-1"): the default junk id -1 matches "-1" (issue 35)."""
    path = _write_table(tmp_path / "s.csv", lambda i: "-1" if i % 5 == 0 else f"p{i}")
    base = ["evaluate", "--data", str(path), *MAPPING, "--feature-columns", "f*"]
    default = _reid(capsys, base)
    assert default == _reid(capsys, [*base, "--junk-id", "-1"])
    kept = _reid(capsys, [*base, "--junk-id", "none"])
    assert kept["reid_mAP"] != default["reid_mAP"]
    numeric = _write_table(tmp_path / "n.csv", lambda i: -1 if i % 5 == 0 else i)
    as_numbers = _reid(capsys, ["evaluate", "--data", str(numeric), *MAPPING,
                                "--feature-columns", "f*"])  # fmt: skip
    assert as_numbers["reid_mAP"] == pytest.approx(default["reid_mAP"])


def test_rerank_and_junk_id_reach_fit_and_evaluate(table, capsys):
    base = ["--data", str(table), *MAPPING, "--feature-columns", "f*"]
    plain = _reid(capsys, ["evaluate", *base])
    reranked = _reid(capsys, ["evaluate", *base, "--rerank"])
    assert reranked["reid_mAP"] != plain["reid_mAP"]
    junk = _reid(capsys, ["evaluate", *base, "--junk-id", "3", "7"])
    assert junk["reid_mAP"] != plain["reid_mAP"]
    assert main(["fit", "xqda", *base, "--rerank", "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert main(["fit", "xqda", *base, "--json"]) == 0
    assert fitted["reid_mAP_learned"] != json.loads(capsys.readouterr().out)["reid_mAP_learned"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a short fit
def test_fit_compares_with_euclidean_on_the_models_preprocessing(capsys):
    """WARCA standardises its inputs: the Euclidean baseline is scored on the same standardised
    features (and on the raw ones, labelled), so the gain printed is the learned part's."""
    argv = ["fit", "warca", "--data", "wdbc", "--max-iter", "30", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["preprocessing"].startswith("standardised")
    data = load_dataset("wdbc")
    from sklearn.model_selection import train_test_split

    X_tr, X_te, y_tr, y_te = train_test_split(data.X, data.y, test_size=0.3, stratify=data.y,
                                              random_state=0)  # fmt: skip
    mean, std = X_tr.mean(0), X_tr.std(0)
    standardised = knn_accuracy((X_tr - mean) / std, y_tr, (X_te - mean) / std, y_te, k=3)
    assert report["knn3_accuracy_euclidean"] == pytest.approx(standardised)
    assert report["knn3_accuracy_euclidean_raw"] == pytest.approx(
        knn_accuracy(X_tr, y_tr, X_te, y_te, k=3)
    )
    assert main(["fit", "xqda", "--data", "wdbc", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["preprocessing"] == "none" and "knn3_accuracy_euclidean_raw" not in report


def test_fit_prints_progress_lines(capsys):
    assert main(["fit", "xqda", "--data", "wine"]) == 0
    err = capsys.readouterr().err
    assert "[fit" in err and "XQDA fitted" in err and "scored" in err
