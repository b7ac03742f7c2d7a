"""The ``.parquet`` and MATLAB v7.3 readers with their real libraries (pyarrow, h5py).

Both are in the ``test`` extra, so these run wherever ``make test`` runs; the messages for a
missing reader are tested in ``test_user_features.py`` by hiding the package.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankmetric.datasets import load_features

h5py = pytest.importorskip("h5py", reason="h5py is in the test extra (pip install -e '.[test]')")
pq = pytest.importorskip(
    "pyarrow.parquet", reason="pyarrow is in the test extra (pip install -e '.[test]')"
)


def _data(rng):
    X = rng.standard_normal((12, 5))
    y = np.repeat(np.arange(4), 3)
    cameras = np.tile([0, 1, 2], 4)
    return X, y, cameras


def test_parquet_file_reads_features_labels_and_cameras(tmp_path):
    import pyarrow as pa

    X, y, cameras = _data(np.random.default_rng(0))
    columns = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    table = pa.table({"y": y, "cameras": cameras, **columns})
    pq.write_table(table, tmp_path / "feat.parquet")
    data = load_features(tmp_path / "feat.parquet")
    np.testing.assert_array_equal(data.X, X)  # exact: no value changed on the way
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.cameras, cameras)


def _write_mat73(path, arrays: dict) -> None:
    """A MATLAB v7.3 file as MATLAB writes it: a 512-byte MAT header, then HDF5, column-major."""
    with h5py.File(path, "w", userblock_size=512) as f:
        for name, value in arrays.items():
            f.create_dataset(name, data=np.asarray(value).T)
    text = (
        b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Fri Nov 27 06:00:00 2026 "
        b"HDF5 schema 1.00 ."
    )
    header = text.ljust(116, b" ") + b"\0" * 8 + b"\x00\x02" + b"IM"
    with open(path, "r+b") as handle:
        handle.write(header)


def test_matlab_v73_file_reads_through_h5py_in_row_major_order(tmp_path):
    import scipy.io

    X, y, cameras = _data(np.random.default_rng(1))
    path = tmp_path / "lomo.mat"
    _write_mat73(path, {"X": X, "y": y[:, None].astype(float), "cameras": cameras[:, None]})
    with pytest.raises(NotImplementedError):  # the file really is v7.3 to SciPy
        scipy.io.loadmat(path)
    data = load_features(path)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.cameras, cameras)
