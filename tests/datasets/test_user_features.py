"""load_features: .npz, .csv, .mat (and the messages for .parquet / v7.3 without their readers)."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from scipy.io import savemat

from rankmetric.datasets import is_feature_file, load_features


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), np.repeat(np.arange(4), 3), np.tile([0, 1, 2], 4)


def _write_csv(path, X, y, cams=None, split=None, header=None):
    cols = [f"f{j}" for j in range(X.shape[1])]
    header = header or ["y", *cols] + (["cameras"] if cams is not None else []) + (
        ["split"] if split is not None else []
    )
    lines = [",".join(header)]
    for i in range(len(y)):
        row = [str(y[i]), *(repr(float(v)) for v in X[i])]
        row += [str(cams[i])] if cams is not None else []
        row += [str(split[i])] if split is not None else []
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + "\n")


def test_npz_with_cameras_and_split(tmp_path, arrays):
    X, y, cams = arrays
    split = np.where(y < 2, "train", "Test")
    np.savez(tmp_path / "f.npz", X=X, y=y, cameras=cams, split=split)
    data = load_features(tmp_path / "f.npz")
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.cameras, cams)
    assert set(data.split) == {"train", "test"}
    np.testing.assert_array_equal(data.rows("train"), np.flatnonzero(y < 2))
    assert data.n_identities == 4


def test_npz_aliases_and_numeric_split(tmp_path, arrays):
    X, y, cams = arrays
    np.savez(tmp_path / "f.npz", features=X, pid=y, camid=cams, split=(y >= 2).astype(int))
    data = load_features(tmp_path / "f.npz")
    assert data.X.shape == (12, 3) and data.cameras is not None
    assert data.split.tolist().count("test") == 6


def test_csv_named_columns_and_string_ids(tmp_path, arrays):
    X, y, cams = arrays
    names = np.array(["ann", "bob", "cy", "dee"])[y]
    _write_csv(tmp_path / "f.csv", X, names, cams)
    data = load_features(tmp_path / "f.csv")
    np.testing.assert_allclose(data.X, X)
    assert data.y.tolist() == names.tolist()
    np.testing.assert_array_equal(data.cameras, cams)
    assert data.split is None and data.rows("train").shape == (12,)


def test_csv_explicit_column_names(tmp_path, arrays):
    X, y, _ = arrays
    _write_csv(tmp_path / "f.csv", X, y, header=["person", "a", "b", "c"])
    data = load_features(tmp_path / "f.csv", y="person")
    assert data.X.shape == (12, 3)
    with pytest.raises(ValueError, match="no column 'y' or 'labels'"):
        load_features(tmp_path / "f.csv")


def test_mat_lomo_layout_is_transposed(tmp_path, arrays):
    X, y, cams = arrays
    savemat(tmp_path / "lomo.mat", {"descriptors": X.T, "labels": y[None, :].astype(float),
                                    "cams": cams[:, None]})  # fmt: skip
    data = load_features(tmp_path / "lomo.mat")
    np.testing.assert_allclose(data.X, X)
    assert data.y.dtype.kind == "i" and data.y.tolist() == y.tolist()
    assert data.cameras.tolist() == cams.tolist()


def test_errors_name_the_problem(tmp_path, arrays):
    X, y, cams = arrays
    np.savez(tmp_path / "nolabel.npz", X=X)
    with pytest.raises(ValueError, match="no column 'y'.*found: X"):
        load_features(tmp_path / "nolabel.npz")
    np.savez(tmp_path / "short.npz", X=X, y=y[:-1])
    with pytest.raises(ValueError, match="mismatched lengths: 12 feature rows but 11 labels"):
        load_features(tmp_path / "short.npz")
    np.savez(tmp_path / "cams.npz", X=X, y=y, cameras=cams[:5])
    with pytest.raises(ValueError, match="mismatched lengths: 5 values in 'cameras'"):
        load_features(tmp_path / "cams.npz")
    Xn = X.copy()
    Xn[3, 1] = np.nan
    np.savez(tmp_path / "nan.npz", X=Xn, y=y)
    with pytest.raises(ValueError, match="NaN"):
        load_features(tmp_path / "nan.npz")
    np.savez(tmp_path / "one.npz", X=X, y=np.zeros(12, int))
    with pytest.raises(ValueError, match="single identity"):
        load_features(tmp_path / "one.npz")
    np.savez(tmp_path / "split.npz", X=X, y=y, split=np.repeat(["train", "val"], 6))
    with pytest.raises(ValueError, match="split values must be one of"):
        load_features(tmp_path / "split.npz")
    with pytest.raises(ValueError, match="no such file"):
        load_features(tmp_path / "absent.npz")
    with pytest.raises(ValueError, match="unknown feature file type '.txt'"):
        load_features(tmp_path / "f.txt")


def test_csv_errors(tmp_path, arrays):
    X, y, _ = arrays
    _write_csv(tmp_path / "f.csv", X, y)
    text = (tmp_path / "f.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ","  # an empty cell: a missing value
    (tmp_path / "missing.csv").write_text("\n".join(text))
    with pytest.raises(ValueError, match="line 4: feature column 'f2' holds an empty cell"):
        load_features(tmp_path / "missing.csv")
    text = (tmp_path / "f.csv").read_text().splitlines()
    text[2] += ",9"
    (tmp_path / "ragged.csv").write_text("\n".join(text))
    with pytest.raises(ValueError, match="line 3: 5 fields but the header names 4"):
        load_features(tmp_path / "ragged.csv")
    _write_csv(tmp_path / "text.csv", X, y, header=["y", "f0", "f1", "name"])
    lines = (tmp_path / "text.csv").read_text().splitlines()
    lines = [lines[0]] + [ln.rsplit(",", 1)[0] + ",abc" for ln in lines[1:]]
    (tmp_path / "text.csv").write_text("\n".join(lines))
    with pytest.raises(ValueError, match="feature column 'name' holds 'abc'"):
        load_features(tmp_path / "text.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_features(tmp_path / "empty.csv")


def _hide(monkeypatch, module: str):
    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {module!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "f.parquet").write_bytes(b"PAR1")
    _hide(monkeypatch, "pyarrow")
    with pytest.raises(ImportError, match=r"pip install \"rankmetric\[parquet\]\""):
        load_features(tmp_path / "f.parquet")


def test_mat73_without_h5py_says_what_to_install(tmp_path, monkeypatch):
    import scipy.io

    def v73(*args, **kwargs):
        raise NotImplementedError("Please use HDF reader for matlab v7.3 files")

    monkeypatch.setattr(scipy.io, "loadmat", v73)
    header = b"MATLAB 7.3 MAT-file".ljust(124) + b"\x00\x02IM"  # version 0x0200: HDF5
    (tmp_path / "f.mat").write_bytes(header + b"\0" * 512)
    _hide(monkeypatch, "h5py")
    with pytest.raises(ImportError, match=r"v7.3.*rankmetric\[mat73\]"):
        load_features(tmp_path / "f.mat")


def test_is_feature_file():
    assert is_feature_file("my/feat.NPZ") and is_feature_file("x.parquet")
    assert not is_feature_file("iris") and not is_feature_file("fashion-mnist")


def test_feature_columns_by_name_or_pattern_ignore_the_other_columns(tmp_path, arrays):
    """Column mapping (issue 35): an image_path column is ignored once the features are named."""
    X, y, cams = arrays
    path = tmp_path / "mapped.csv"
    with open(path, "w") as handle:
        handle.write("image_path,person,cam,feat_0,feat_1,feat_2,extra\n")
        for i in range(len(y)):
            handle.write(f"img/{i}.jpg,{y[i]},{cams[i]},{X[i, 0]},{X[i, 1]},{X[i, 2]},7\n")
    data = load_features(path, y="person", cameras="cam", features=["feat_*"])
    np.testing.assert_allclose(data.X, X[:, :3])
    assert data.cameras.tolist() == cams.tolist()
    same = load_features(path, y="person", cameras="cam", features="feat_2,feat_0")
    np.testing.assert_allclose(same.X, X[:, [0, 2]])  # the file's order, each column once
    with pytest.raises(ValueError, match=r"'image_path' holds 'img/0.jpg'.*--feature-columns"):
        load_features(path, y="person", cameras="cam")
    with pytest.raises(ValueError, match="no column matches the feature column 'f_\\*'"):
        load_features(path, y="person", features=["f_*"])
    with pytest.raises(ValueError, match="no column 'pid' for y.*--id-column"):
        load_features(path, y="pid")


def test_a_missing_column_names_a_few_columns_not_all(tmp_path, arrays):
    X, y, _ = arrays
    wide = np.hstack([X] * 67)[:, :200]  # 200 feature columns
    _write_csv(tmp_path / "wide.csv", wide, y, header=["person", *(f"f{j}" for j in range(200))])
    with pytest.raises(ValueError) as caught:
        load_features(tmp_path / "wide.csv")
    message = str(caught.value)
    assert "person, f0" in message and "f6" in message and "f7" not in message
    assert "(201 in all)" in message
    assert "--id-column" in message and len(message) < 400


def test_items_and_optional_labels_for_a_catalogue(tmp_path):
    """``items=`` keeps an identifier column out of the features; ``require_labels=False``
    reads a table without labels (``y`` None) and one whose labels hold a single identity."""
    path = tmp_path / "catalogue.csv"
    path.write_text("image_path,f1,f2\na.jpg,1.0,2.0\nb.jpg,3.0,4.0\nc.jpg,5.0,6.5\n")
    data = load_features(path, items="image_path", require_labels=False)
    assert data.y is None and data.n_identities == 0 and data.X.shape == (3, 2)
    assert data.items.tolist() == ["a.jpg", "b.jpg", "c.jpg"]
    assert data.rows().tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="no column 'y' or 'labels'"):
        load_features(path, items="image_path")  # labels required by default: named missing
    with pytest.raises(ValueError, match="no column 'sku' for items"):
        load_features(path, items="sku", require_labels=False)
    one = tmp_path / "one.csv"
    one.write_text("pid,f1\n7,1.0\n7,2.0\n")
    assert load_features(one, require_labels=False).y.tolist() == [7, 7]
    with pytest.raises(ValueError, match="single identity"):
        load_features(one)


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity"])
def test_a_csv_missing_value_is_named_by_its_line(tmp_path, value):
    """The row counts data rows from 0; the line is the file's, blank lines and the header
    counted, as a spreadsheet or an editor shows it."""
    path = tmp_path / "f.csv"
    path.write_text(f"y,f1,f2\n0,1,2\n\n0,1,3\n1,3,{value}\n1,5,6\n")
    with pytest.raises(ValueError, match=r"'f2' contains NaN or infinity \(row 2; .*line 5 of"):
        load_features(path)
    np.savez(tmp_path / "f.npz", X=np.array([[1.0, 2.0], [1.0, np.nan]]), y=[0, 1])
    with pytest.raises(ValueError, match=r"row 1; a missing value\?\)\.$"):  # no line: arrays
        load_features(tmp_path / "f.npz")


def test_a_npy_of_rows_is_read_without_labels_only(tmp_path):
    """A ``.npy`` holds feature rows (a network's output): read when no labels are required
    (the items of a table of pairs), refused where labels or named columns are expected."""
    X = np.arange(12.0).reshape(4, 3)
    np.save(tmp_path / "rows.npy", X)
    data = load_features(tmp_path / "rows.npy", require_labels=False)
    assert np.array_equal(data.X, X) and data.y is None and data.items is None
    with pytest.raises(ValueError, match=r"feature rows only \(a .npy\), without labels"):
        load_features(tmp_path / "rows.npy")
    with pytest.raises(ValueError, match=r"without named columns \(items\)"):
        load_features(tmp_path / "rows.npy", items="image_path", require_labels=False)
    np.save(tmp_path / "bad.npy", np.array([1.0, np.nan]).reshape(1, 2))
    with pytest.raises(ValueError, match=r"bad.npy contains NaN or infinity \(row 0"):
        load_features(tmp_path / "bad.npy", require_labels=False)
