"""read_pair_table: a table of pairs of item identifiers and labels, beside the items' features."""

from __future__ import annotations

import numpy as np
import pytest

from rankmetric.datasets import FeatureData, holdout_pairs, load_features, read_pair_table


def _items(tmp_path, ids=True):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    names = [f"p{i // 2}/img{i % 2}.jpg" for i in range(6)]
    lines = ["image_path,f1,f2,f3" if ids else "f1,f2,f3"]
    lines += [",".join(([n] if ids else []) + [repr(float(v)) for v in row])
              for n, row in zip(names, X, strict=True)]  # fmt: skip
    path = tmp_path / "items.csv"
    path.write_text("\n".join(lines) + "\n")
    items = load_features(path, items="image_path" if ids else None, require_labels=False)
    return items, X, names


def _write(path, header, rows):
    path.write_text("\n".join([header, *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


PAIRS = [(0, 1, 1), (2, 3, 1), (4, 5, 1), (0, 2, 0), (1, 4, 0), (3, 5, 0)]


@pytest.mark.parametrize(
    "header, same, different",
    [("img1,img2,same", "true", "false"), ("a,b,y", 1, -1), ("image_a,image_b,label", 1, 0),
     ("left,right,similarity", 0.8, -0.2)],
)  # fmt: skip
def test_identifiers_become_rows_of_the_items(tmp_path, header, same, different):
    items, X, names = _items(tmp_path)
    rows = [(names[a], names[b], same if s else different) for a, b, s in PAIRS]
    data = read_pair_table(_write(tmp_path / "pairs.csv", header, rows), items)
    assert data.pairs.tolist() == [[a, b] for a, b, _ in PAIRS]
    assert (data.y > 0).tolist() == [bool(s) for *_, s in PAIRS]
    assert np.array_equal(data.X, X) and data.test is None
    assert np.array_equal(data.stacked()[:, 0], X[[a for a, _, _ in PAIRS]])


def test_row_numbers_without_identifiers_and_a_split_column(tmp_path):
    items, X, _ = _items(tmp_path, ids=False)
    rows = [(a, b, s, "test" if i >= 4 else "train") for i, (a, b, s) in enumerate(PAIRS)]
    data = read_pair_table(_write(tmp_path / "pairs.csv", "a,b,same,split", rows), items)
    assert data.pairs.tolist() == [[0, 1], [2, 3], [4, 5], [0, 2]]
    stacked, y_test = data.test
    assert np.array_equal(stacked[:, 1], X[[4, 5]]) and y_test.tolist() == [0, 0]
    assert data.how == "pairs_test"


def test_a_table_splits_as_the_same_pairs_in_a_npz(tmp_path):
    from rankmetric.datasets import read_pair_file

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4))
    i, j = np.triu_indices(40, 1)
    same = np.where(i // 4 == j // 4, 1, -1)
    np.savez(tmp_path / "pairs.npz", X=X, pairs=np.c_[i, j], y=same)
    items = FeatureData(X, None, None, None, "items")
    table = _write(tmp_path / "pairs.csv", "a,b,y", zip(i, j, same, strict=True))
    a = holdout_pairs(read_pair_table(table, items), 0.3)
    b = holdout_pairs(read_pair_file(tmp_path / "pairs.npz"), 0.3)
    assert np.array_equal(a.pairs, b.pairs) and np.array_equal(a.test[0], b.test[0])


def test_parquet_and_named_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    items, X, names = _items(tmp_path)
    table = pa.table({"q": [names[a] for a, _, _ in PAIRS], "r": [names[b] for _, b, _ in PAIRS],
                      "match": [bool(s) for *_, s in PAIRS]})  # fmt: skip
    pq.write_table(table, tmp_path / "pairs.parquet")
    data = read_pair_table(tmp_path / "pairs.parquet", items, columns=("q", "r", "match"))
    assert data.pairs.tolist() == [[a, b] for a, b, _ in PAIRS]
    assert data.y.tolist() == [1, 1, 1, 0, 0, 0]


@pytest.mark.parametrize(
    "header, rows, message",
    [
        ("img1,img2,same", [("p0/img0.jpg", "nobody.jpg", 1)],
         r"pair 0, column 'img2': 'nobody.jpg' is not an item of .*items.csv"),
        ("img1,img2,same", [("p0/img0.jpg", "p0/img1.jpg", "maybe")],
         r"label column 'same' holds 'maybe' \(pair 0\)"),
        ("img1,img2,same,split", [("p0/img0.jpg", "p0/img1.jpg", 1, "fold1")],
         r"the split column holds 'fold1'"),
        ("x,y,z", [("p0/img0.jpg", "p0/img1.jpg", 1)], r"cannot tell the item columns"),
        ("img1,img2,z", [("p0/img0.jpg", "p0/img1.jpg", 1)], r"cannot tell the label columns"),
    ],
)  # fmt: skip
def test_bad_tables_name_the_problem(tmp_path, header, rows, message):
    items, _, _ = _items(tmp_path)
    with pytest.raises(ValueError, match=message):
        read_pair_table(_write(tmp_path / "pairs.csv", header, rows), items)


def test_an_identifier_used_twice_and_columns_not_found(tmp_path):
    items, X, names = _items(tmp_path)
    twice = FeatureData(X, None, None, None, "items.csv", np.array([*names[:5], names[0]]))
    path = _write(tmp_path / "pairs.csv", "img1,img2,same", [(names[0], names[1], 1)])
    with pytest.raises(ValueError, match=r"'p0/img0.jpg' appears more than once"):
        read_pair_table(path, twice)
    with pytest.raises(ValueError, match=r"has no column 'left'"):
        read_pair_table(path, items, columns=("left", "img2", "same"))
    with pytest.raises(ValueError, match=r"columns must name three columns"):
        read_pair_table(path, items, columns=("img1", "img2"))
    with pytest.raises(ValueError, match=r"a pair table is a .csv or .parquet"):
        read_pair_table(tmp_path / "pairs.npz", items)
