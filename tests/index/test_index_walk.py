"""The production walk on a user file, each step one documented call: learn, build, add, filter,
save, load, query, evaluate, export; and the same through ``rankmetric index``."""

import json
import warnings

import numpy as np
import pytest

from rankmetric import WARCA, load_model
from rankmetric.cli import main
from rankmetric.datasets import load_features
from rankmetric.index import Index


@pytest.fixture
def user_file(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(40, 12)) * 3
    y = np.repeat(np.arange(40), 25)
    X = centres[y] + rng.normal(size=(1000, 12))
    X[:, 6:] = rng.normal(size=(1000, 6)) * 8  # noise the metric must learn to ignore
    np.savez(tmp_path / "items.npz", X=X, y=y)
    return tmp_path / "items.npz"


def test_walk_end_to_end(user_file, tmp_path):
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    data = load_features(str(user_file))
    X, y = data.X, data.y
    train, catalogue, queries = np.arange(0, 1000, 3), np.arange(1, 1000, 3), np.arange(2, 1000, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = WARCA(n_components=6, max_iter=200, random_state=0).fit(X[train], y[train])
    index = Index.build(model, X[catalogue[:200]], attributes={"label": y[catalogue[:200]]})
    index.add(X[catalogue[200:]], attributes={"label": y[catalogue[200:]]})
    _, ids = index.search(X[queries[:5]], 3, filter=lambda a: a["label"] < 20)
    assert (y[catalogue][ids] < 20).all()
    index.save(tmp_path / "idx")
    served = Index.load(tmp_path / "idx")
    d, ids = served.search(X[queries], 10)
    assert ids.shape == (len(queries), 10) and (np.diff(d, axis=1) >= 0).all()
    report = served.evaluate(X[queries], y[queries], k=10)
    euclid = Index.from_embeddings(X[catalogue], attributes={"label": y[catalogue]})
    baseline = euclid.evaluate(X[queries], y[queries], k=10)
    assert report["exact"]["map@r"] > baseline["exact"]["map@r"]  # the learned metric helps
    served.export_onnx(tmp_path / "m.onnx")
    emb = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"X": X[:4].astype(np.float32)})
    np.testing.assert_allclose(emb[0], served.embed(X[:4]), rtol=1e-5, atol=1e-5)


def test_cli_build_add_query_evaluate(user_file, tmp_path, capsys):
    with np.load(user_file) as f:
        order = np.random.default_rng(1).permutation(1000)
        X, y = f["X"][order], f["y"][order]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        WARCA(n_components=6, max_iter=50).fit(X, y).save(tmp_path / "m.npz")
    np.savez(
        tmp_path / "cat.npz", X=X[:800], y=y[:800], ids=np.array([f"a{i}" for i in range(800)])
    )
    np.savez(
        tmp_path / "more.npz",
        X=X[800:900],
        y=y[800:900],
        ids=np.array([f"b{i}" for i in range(100)]),
    )
    np.savez(tmp_path / "q.npz", X=X[900:], y=y[900:])
    out = tmp_path / "idx"
    assert (
        main(
            [
                "index",
                "build",
                "--model",
                str(tmp_path / "m.npz"),
                "--data",
                str(tmp_path / "cat.npz"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert main(["index", "add", "--index", str(out), "--data", str(tmp_path / "more.npz")]) == 0
    assert len(Index.load(out)) == 900
    assert (
        main(
            [
                "index",
                "query",
                "--index",
                str(out),
                "--data",
                str(tmp_path / "q.npz"),
                "--k",
                "5",
                "--out",
                str(tmp_path / "nn.npz"),
            ]
        )
        == 0
    )
    with np.load(tmp_path / "nn.npz") as nn:
        assert nn["ids"].shape == (100, 5) and nn["ids"].dtype.kind == "U"
    capsys.readouterr()
    assert main(["index", "evaluate", "--index", str(out), "--data", str(tmp_path / "q.npz")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recall@k"] == 1.0 and 0 < report["exact"]["map@r"] <= 1
    assert (
        main(
            [
                "index",
                "query",
                "--index",
                str(tmp_path / "nowhere"),
                "--data",
                str(tmp_path / "q.npz"),
            ]
        )
        == 2
    )
    assert "not an index folder" in capsys.readouterr().err
    assert load_model(tmp_path / "m.npz") is not None


def _table(path, X, y=None, items=None):
    """A CSV table as users keep them: an item column (text), a label column, features."""
    import csv

    header = (["image_path"] if items is not None else []) + (["pid"] if y is not None else [])
    header += [f"feat_{j}" for j in range(X.shape[1])]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for i, row in enumerate(X):
            head = ([items[i]] if items is not None else []) + ([y[i]] if y is not None else [])
            writer.writerow(head + [repr(float(v)) for v in row])


def test_cli_index_reads_a_table_as_fit_does(user_file, tmp_path, capsys):
    """A catalogue and queries in CSV (an image_path column, labels, features): the same
    index and the same neighbours as from the .npz arrays; labels optional for build/query."""
    with np.load(user_file) as f:
        order = np.random.default_rng(1).permutation(1000)
        X, y = f["X"][order], f["y"][order]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        WARCA(n_components=6, max_iter=30, random_state=0).fit(X, y).save(tmp_path / "m.npz")
    paths = np.array([f"img/{i:04d}.jpg" for i in range(800)])
    _table(tmp_path / "cat.csv", X[:800], y[:800], paths)
    _table(tmp_path / "q.csv", X[900:])  # queries without labels or ids
    _table(tmp_path / "q_labelled.csv", X[900:], y[900:])
    np.savez(tmp_path / "cat.npz", X=X[:800], y=y[:800], ids=paths)
    model = str(tmp_path / "m.npz")
    table = ["--item-column", "image_path", "--id-column", "pid", "--feature-columns", "feat_*"]
    for name, data, extra in (("t", "cat.csv", table), ("n", "cat.npz", [])):
        argv = ["index", "build", "--model", model, "--data", str(tmp_path / data)]
        assert main([*argv, "--out", str(tmp_path / name), *extra]) == 0
    from_table, from_arrays = Index.load(tmp_path / "t"), Index.load(tmp_path / "n")
    queries = X[900:]
    d_t, ids_t = from_table.search(queries, 5)
    d_n, ids_n = from_arrays.search(queries, 5)
    np.testing.assert_array_equal(ids_t, ids_n)
    np.testing.assert_allclose(d_t, d_n, rtol=1e-6)
    assert str(ids_t[0, 0]).startswith("img/")  # the item column, not row numbers
    argv = ["index", "query", "--index", str(tmp_path / "t"), "--data", str(tmp_path / "q.csv")]
    assert main([*argv, "--k", "5", "--out", str(tmp_path / "nn.npz")]) == 0
    with np.load(tmp_path / "nn.npz") as nn:
        np.testing.assert_array_equal(nn["ids"], ids_t)
    capsys.readouterr()
    argv = ["index", "evaluate", "--index", str(tmp_path / "t"), "--data"]
    assert main([*argv, str(tmp_path / "q_labelled.csv")]) == 0
    assert json.loads(capsys.readouterr().out)["n_queries"] == 100
    assert main([*argv, str(tmp_path / "q.csv")]) == 2  # no labels to evaluate with
    assert "needs the queries' labels" in capsys.readouterr().err
    build = ["index", "build", "--data", str(tmp_path / "cat.npz"), "--out", str(tmp_path / "x")]
    assert main([*build, "--item-column", "image_path"]) == 2
    err = capsys.readouterr().err
    assert "--item-column" in err and "for a table" in err


def test_cli_query_names_the_queries_and_writes_a_csv(user_file, tmp_path, capsys):
    """Queries from a table with their own identifiers (``--item-column``): printed by name,
    written as ``query_ids`` in a .npz, and as one row per (query, neighbour) in a .csv."""
    import csv

    with np.load(user_file) as f:
        X = f["X"][:300]
    np.savez(tmp_path / "cat.npz", X=X[:250], ids=np.array([f"c{i}" for i in range(250)]))
    assert main(["index", "build", "--data", str(tmp_path / "cat.npz"), "--backend", "exact",
                 "--out", str(tmp_path / "idx")]) == 0  # fmt: skip
    names = np.array([f"q/{i:02d}.jpg" for i in range(50)])
    _table(tmp_path / "q.csv", X[250:], items=names)
    argv = ["index", "query", "--index", str(tmp_path / "idx"), "--data", str(tmp_path / "q.csv"),
            "--item-column", "image_path", "--k", "3"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("query q/00.jpg: c") and len(lines) == 50
    assert main([*argv, "--out", str(tmp_path / "nn.npz")]) == 0
    assert main([*argv, "--out", str(tmp_path / "nn.csv")]) == 0
    with np.load(tmp_path / "nn.npz") as nn:
        ids, distances = nn["ids"], nn["distances"]
        np.testing.assert_array_equal(nn["query_ids"], names)
    with open(tmp_path / "nn.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 150 and list(rows[0]) == ["query", "rank", "item", "distance"]
    assert [r["query"] for r in rows[:4]] == [names[0]] * 3 + [names[1]]
    assert [int(r["rank"]) for r in rows[:4]] == [1, 2, 3, 1]
    np.testing.assert_array_equal([r["item"] for r in rows], ids.ravel())
    np.testing.assert_array_equal(np.array([r["distance"] for r in rows], np.float32),
                                  distances.ravel())  # fmt: skip
