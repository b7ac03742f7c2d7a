"""``rankmetric fit METHOD --pairs`` and ``rankmetric evaluate --pairs``."""

import json
import re

import numpy as np
import pytest

from rankmetric import load_model
from rankmetric.cli import main
from rankmetric.evaluate import verification_scores

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _pair_file(path, stacked=False, with_test=True, similarities=False):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 20)
    X = np.c_[2.0 * y + 0.1 * rng.normal(size=80), 5.0 * rng.normal(size=(80, 3))]
    p = rng.integers(0, 80, size=(500, 2))
    p = p[p[:, 0] != p[:, 1]]
    labels = np.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)
    if similarities:
        labels = np.where(labels > 0, 0.9, -0.3)
    train, test = slice(0, 350), slice(350, None)
    if stacked:
        arrays = {"pairs": X[p[train]], "y": labels[train]}
        if with_test:
            arrays |= {"pairs_test": X[p[test]], "y_test": labels[test]}
    else:
        arrays = {"X": X, "pairs": p[train], "y": labels[train]}
        if with_test:
            arrays |= {"pairs_test": p[test], "y_test": labels[test]}
    np.savez(path, **arrays)
    return X, p[test], labels[test]


@pytest.mark.parametrize(
    "method, extra",
    [("itml", ["--max-iter", "50"]), ("kissme", []), ("ssne", ["--max-iter", "100"])],
)
@pytest.mark.parametrize("stacked", [False, True])
def test_fit_pairs_reports_learned_vs_euclidean(method, extra, stacked, tmp_path, capsys):
    path = tmp_path / "pairs.npz"
    X, test_pairs, test_labels = _pair_file(path, stacked, similarities=method == "ssne")
    out = tmp_path / "model.npz"
    args = ["fit", method, "--pairs", str(path), "--out", str(out), "--json", *extra]
    assert main([*args, "--random-state", "0"] if method != "kissme" else args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["evaluated_on"] == "pairs_test" and report["n_evaluated_pairs"] == len(
        test_labels
    )
    learned, euclid = report["learned"], report["euclidean"]
    assert learned["roc_auc"] > euclid["roc_auc"] + 0.1
    # Euclidean on the features the learned part receives (standardised by WARCA and SSNE)
    standardises = method in ("warca", "ssne")
    assert report["preprocessing"].startswith("standardised") == standardises
    assert ("euclidean_raw" in report) == standardises
    # the saved model reproduces the reported scores, and the report says its held-out check
    model = load_model(out)
    check = model.held_out_check_
    said = f"{check['verdict']}: {check['summary']}" if check["status"] == "done" else None
    assert report["held_out_check"] == (said or f"skipped: {check['reason']}")
    d = model.pair_distances(X[test_pairs[:, 0]], X[test_pairs[:, 1]])
    assert learned["roc_auc"] == pytest.approx(
        verification_scores(d, test_labels > 0)["roc_auc"], abs=1e-9
    )
    assert main(["evaluate", "--pairs", str(path), "--model", str(out), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["scores"]["roc_auc"] == pytest.approx(learned["roc_auc"], abs=1e-9)
    assert set(again["scores"]) == {
        "roc_auc",
        "eer",
        "tar_at_far_0.1",
        "tar_at_far_0.01",
        "tar_at_far_0.001",
    }


def test_evaluate_pairs_euclidean_and_text_output(tmp_path, capsys):
    path = tmp_path / "pairs.npz"
    X, test_pairs, test_labels = _pair_file(path, with_test=False)
    assert main(["evaluate", "--pairs", str(path), "--far", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "Euclidean distance" in out and "tar_at_far_0.05" in out and "(pairs)" in out
    assert main(["fit", "kissme", "--pairs", str(path), "--test-size", "0"]) == 0
    assert "the training pairs (the file has no pairs_test; --test-size 0)" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize("stacked", [False, True])
def test_fit_pairs_without_test_pairs_holds_items_out(stacked, tmp_path, capsys):
    """Without pairs_test, fit scores pairs of held-out items only, and evaluate --model scores
    the same pairs (never the training ones); without a model, evaluate scores every pair."""
    from rankmetric.datasets import holdout_pairs, read_pair_file

    path, out = tmp_path / "pairs.npz", tmp_path / "kissme.npz"
    _pair_file(path, stacked=stacked, with_test=False)
    assert main(["fit", "kissme", "--pairs", str(path), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    split = holdout_pairs(read_pair_file(path), 0.3)
    assert report["evaluated_on"] == split.how and "held out" in split.how
    assert report["n_evaluated_pairs"] == len(split.test[1])
    assert report["n_train_pairs"] == len(split.y) and report["n_pairs_left_out"] > 0
    assert report["learned"]["roc_auc"] > report["euclidean"]["roc_auc"] + 0.1
    assert main(["evaluate", "--pairs", str(path), "--model", str(out), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["n_pairs"] == len(split.test[1]) and split.how in again["pairs"]
    assert again["scores"]["roc_auc"] == pytest.approx(report["learned"]["roc_auc"], abs=1e-12)
    assert main(["evaluate", "--pairs", str(path), "--json"]) == 0  # Euclidean: every pair
    assert json.loads(capsys.readouterr().out)["n_pairs"] == 350


def test_a_pair_file_that_cannot_be_split_names_test_size(tmp_path, capsys):
    """One group of similar pairs holding every item: no hold-out can keep similar pairs on
    both sides; the error names --test-size and what to do."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    chain = np.stack([np.arange(29), np.arange(1, 30)], axis=1)  # one component
    pairs = np.concatenate([chain, rng.integers(0, 30, size=(40, 2))])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    y = np.r_[np.ones(29), -np.ones(len(pairs) - 29)]
    np.savez(tmp_path / "chain.npz", X=X, pairs=pairs, y=y)
    assert main(["fit", "kissme", "--pairs", str(tmp_path / "chain.npz")]) == 2
    err = capsys.readouterr().err
    assert (
        "--test-size: holding out 30% of the items" in err and "pairs_test" in err and "or 0" in err
    )


@pytest.mark.parametrize(
    "command, arrays, match",
    [
        ("evaluate", {"pairs": np.zeros((3, 2), int)}, "no array 'y'"),
        ("evaluate", {"pairs": np.zeros((3, 2), int), "y": np.ones(3)}, "no X"),
        (
            "evaluate",
            {"X": np.zeros((4, 2)), "pairs": np.array([[0, 9]]), "y": np.ones(1)},
            r"lie in \[0, 4\)",
        ),
        (
            "fit",
            {"X": np.eye(4), "pairs": np.array([[0, 1], [2, 3]]), "y": np.ones(2)},
            "all 2 usable pairs are similar",
        ),
        (  # a missing value, named by its array and row before anything is fitted
            "fit",
            {
                "X1": np.eye(4),
                "X2": np.r_[np.eye(4)[:2], [[0, np.nan, 0, 0]], np.eye(4)[3:]],
                "y": np.array([1, -1, 1, -1]),
            },
            r"X2 contains NaN or infinity \(row 2;",
        ),
        (
            "evaluate",
            {"X": np.r_[np.eye(3), [[np.inf, 0, 0]]], "pairs": np.array([[0, 3]]), "y": [1]},
            r"X contains NaN or infinity \(row 3;",
        ),
        (
            "fit",
            {"pairs": np.zeros((2, 2, 3)), "y": np.array([1.0, np.nan])},
            r"y contains NaN or infinity \(row 1;",
        ),
    ],
)
def test_bad_pair_files_name_the_problem(command, arrays, match, tmp_path, capsys):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    argv = ["fit", "kissme"] if command == "fit" else ["evaluate"]
    assert main([*argv, "--pairs", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err


def test_fit_needs_data_or_pairs(tmp_path, capsys):
    assert main(["fit", "kissme"]) == 2
    assert "--data NAME is required" in capsys.readouterr().err
    path = tmp_path / "pairs.npz"
    _pair_file(path)
    assert main(["fit", "kissme", "--pairs", str(path), "--data", "wine"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["fit", "kissme", "--pairs", str(tmp_path / "missing.npz")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_pair_file_with_the_two_members_x1_x2(tmp_path, capsys):
    """``X1``, ``X2`` (the ``pair_distances(X1, X2)`` convention) equal the stacked layout."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(6, 5)) * 3
    a, b = rng.integers(0, 6, 200), rng.integers(0, 6, 200)
    X1 = centers[a] + rng.normal(size=(200, 5))
    X2 = centers[b] + rng.normal(size=(200, 5))
    y = np.where(a == b, 1, -1)
    np.savez(tmp_path / "members.npz", X1=X1, X2=X2, y=y, X1_test=X1[:50], X2_test=X2[:50],
             y_test=y[:50])  # fmt: skip
    np.savez(tmp_path / "stacked.npz", pairs=np.stack([X1, X2], 1), y=y,
             pairs_test=np.stack([X1[:50], X2[:50]], 1), y_test=y[:50])  # fmt: skip
    reports = []
    for name in ("members", "stacked"):
        assert main(["fit", "kissme", "--pairs", str(tmp_path / f"{name}.npz"), "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["learned"] == reports[1]["learned"]
    np.savez(tmp_path / "bad.npz", X1=X1, X2=X2[:10], y=y)
    assert main(["fit", "kissme", "--pairs", str(tmp_path / "bad.npz")]) == 2
    assert "X1 and X2 must both have shape" in capsys.readouterr().err


def _pair_table(tmp_path):
    """The index-form pair file of ``_pair_file`` written as a verification user has it: a CSV
    of the items (an ``image`` column and features) and a CSV of pairs naming them."""
    path = tmp_path / "pairs.npz"
    _pair_file(path, with_test=False)
    data = np.load(path)
    names = [f"img{i:03d}.jpg" for i in range(len(data["X"]))]
    rows = [
        f"{n}," + ",".join(repr(float(v)) for v in x) for n, x in zip(names, data["X"], strict=True)
    ]
    (tmp_path / "items.csv").write_text("image,f0,f1,f2,f3\n" + "\n".join(rows) + "\n")
    same = ["true" if s > 0 else "false" for s in data["y"]]
    rows = [f"{names[a]},{names[b]},{s}" for (a, b), s in zip(data["pairs"], same, strict=True)]
    (tmp_path / "pairs.csv").write_text("img1,img2,same\n" + "\n".join(rows) + "\n")
    return path, tmp_path / "pairs.csv", tmp_path / "items.csv"


def test_a_table_of_pairs_beside_a_feature_file(tmp_path, capsys):
    """``--pairs PAIRS.csv --data ITEMS.csv --item-column``: the same split and scores as the
    same pairs in a ``.npz``; ``evaluate`` scores the model's held-out pairs again."""
    npz, table, items = _pair_table(tmp_path)
    model = tmp_path / "k.npz"
    from_npz = _json_run(["fit", "kissme", "--pairs", str(npz)], capsys)
    argv = ["--pairs", str(table), "--data", str(items), "--item-column", "image"]
    from_table = _json_run(["fit", "kissme", *argv, "--out", str(model)], capsys)
    for key in ("n_train_pairs", "n_pairs_left_out", "n_evaluated_pairs", "evaluated_on"):
        assert from_table[key] == from_npz[key]
    assert from_table["learned"] == pytest.approx(from_npz["learned"], abs=1e-12)
    again = _json_run(["evaluate", *argv, "--model", str(model)], capsys)
    assert again["scores"]["roc_auc"] == pytest.approx(from_table["learned"]["roc_auc"], abs=1e-12)


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "lists pairs of items: give the items' features with --data"),
        (["--data", "ITEMS"], r"--data .*items.csv, line 2: feature column 'image' holds"),
        (["--data", "ITEMS", "--item-column", "image", "--pair-columns", "a", "b", "c"],
         r"--pairs .*pairs.csv has no column 'a'"),
    ],
)  # fmt: skip
def test_a_table_of_pairs_needs_its_items(tmp_path, capsys, extra, message):
    _, table, items = _pair_table(tmp_path)
    extra = [str(items) if e == "ITEMS" else e for e in extra]
    assert main(["fit", "kissme", "--pairs", str(table), *extra]) == 2
    assert re.search(message, capsys.readouterr().err)


def _json_run(argv, capsys) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv, said",
    [
        (["fit", "kissme", "--pairs", "TABLE", "--data", "ITEMS", "--tune", "4"],
         "--tune: for --data with class labels, not with --pairs"),
        (["fit", "kissme", "--pairs", "TABLE", "--data", "ITEMS", "--id-column", "pid",
          "--rerank"], "--id-column, --rerank: for --data with class labels"),
        (["evaluate", "--pairs", "TABLE", "--data", "ITEMS", "--camera-column", "cam"],
         "--camera-column: for --data with class labels"),
        (["fit", "kissme", "--pairs", "NPZ", "--pair-columns", "a", "b", "c"],
         "--pair-columns: for a table of pairs"),
        (["fit", "kissme", "--data", "wine", "--item-column", "image"],
         "--item-column: for a table of pairs"),
        (["evaluate", "--data", "wine", "--item-column", "image"],
         "--item-column: for a table of pairs"),
    ],
)  # fmt: skip
def test_options_the_pairs_leave_unused_are_refused_not_ignored(tmp_path, capsys, argv, said):
    """``--tune`` or ``--id-column`` beside ``--pairs`` would read as if it took effect."""
    npz, table, items = _pair_table(tmp_path)
    names = {"TABLE": str(table), "ITEMS": str(items), "NPZ": str(npz)}
    assert main([names.get(a, a) for a in argv]) == 2
    assert said in capsys.readouterr().err


def test_a_table_of_pairs_of_the_rows_of_a_npy(tmp_path, capsys):
    """Features in a ``.npy`` (a network's output) and pairs of row numbers with a ``split``
    column: the scores of the same pairs in a ``.npz`` with ``pairs_test``."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 6)
    X = np.c_[y + 0.2 * rng.normal(size=60), rng.normal(size=(60, 3))]
    i, j = np.triu_indices(60, 1)
    keep = rng.random(len(i)) < 0.2
    i, j = i[keep], j[keep]
    same = (y[i] == y[j]).astype(int)
    test = (i >= 40) & (j >= 40)
    train = (i < 40) & (j < 40)
    np.save(tmp_path / "features.npy", X)
    rows = [f"{a},{b},{s},{'test' if t else 'train'}" for a, b, s, t, r
            in zip(i, j, same, test, train | test, strict=True) if r]  # fmt: skip
    (tmp_path / "pairs.csv").write_text("left,right,same,split\n" + "\n".join(rows) + "\n")
    np.savez(tmp_path / "pairs.npz", X=X, pairs=np.c_[i, j][train], y=same[train],
             pairs_test=np.c_[i, j][test], y_test=same[test])  # fmt: skip
    from_npz = _json_run(["fit", "kissme", "--pairs", str(tmp_path / "pairs.npz")], capsys)
    argv = ["fit", "kissme", "--pairs", str(tmp_path / "pairs.csv"), "--data"]
    from_table = _json_run([*argv, str(tmp_path / "features.npy")], capsys)
    assert from_table["evaluated_on"] == "pairs_test"
    assert from_table["n_evaluated_pairs"] == from_npz["n_evaluated_pairs"] == test.sum()
    assert from_table["learned"] == pytest.approx(from_npz["learned"], abs=1e-12)
    assert main([*argv, str(tmp_path / "features.npy"), "--item-column", "x"]) == 2
    assert "holds feature rows only (a .npy), without named columns (items)" in (
        capsys.readouterr().err
    )
