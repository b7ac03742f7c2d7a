"""Users' files are untrusted input (issue #34): bounded reading, nothing dropped, no traceback.

Every file here is one a careless user or an attacker could hand to ``--data`` or ``--pairs``:
decompression bombs and forged headers (``.npz``, MATLAB v5 and v7.3) are refused before anything
is inflated, within 1 s and 100 MB; damaged files of every kind give one ``ValueError`` naming the
file (exit status 2 on the command line, no traceback); nothing is dropped or converted silently.
"""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

from rankmetric.cli import main
from rankmetric.datasets import load_features
from rankmetric.resources import memory_limit

pytestmark = pytest.mark.timeout(120)


def _bounded(fn, seconds: float = 1.0, megabytes: float = 100.0):
    """Run ``fn`` (which must raise ValueError); check time and Python-traced peak memory."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError) as info:
            fn()
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    assert peak < megabytes * 2**20, f"peaked at {peak / 2**20:.0f} MiB"
    return str(info.value)


def _cli(capsys, *argv) -> str:
    """``rankmetric ARGV`` must exit with status 2 and one line of error, no traceback."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankmetric: error: ") and "Traceback" not in err
    assert err.count("\n") == 1
    return err


def _npy(a: np.ndarray, shape=None) -> bytes:
    buf = io.BytesIO()
    header = {"descr": a.dtype.str, "fortran_order": False, "shape": shape or a.shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + a.tobytes()


def _zip(path, members: dict, compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.fixture
def good(tmp_path):
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), np.repeat(np.arange(4), 3)


# --- decompression bombs and forged headers: refused unread ----------------------------------


def test_npz_zip_bomb_is_refused_unread(tmp_path, capsys, good):
    _, y = good
    path = tmp_path / "bomb.npz"
    zeros = np.zeros(8 * 2**20)  # 64 MiB of zeros deflate to about 64 KiB
    _zip(path, {"X.npy": _npy(zeros.reshape(-1, 8)), "y.npy": _npy(y)}, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 2**20
    message = _bounded(lambda: load_features(path))
    assert "decompression bomb" in message and str(path) in message
    assert "decompression bomb" in _cli(capsys, "fit", "kissme", "--data", str(path))


def test_npz_forged_header_shape_is_refused(tmp_path, capsys, good):
    X, y = good
    path = tmp_path / "forged.npz"  # 834 bytes asking for 8 TiB
    _zip(path, {"X.npy": _npy(X, shape=(2**40, 1)), "y.npy": _npy(y)})
    message = _bounded(lambda: load_features(path))
    assert "wrong size for its header" in message and str(path) in message
    _cli(capsys, "fit", "kissme", "--data", str(path))
    pairs = tmp_path / "pairs.npz"
    _zip(pairs, {"pairs.npy": _npy(X, shape=(2**40, 2, 3)), "y.npy": _npy(y)})
    assert "--pairs" in _cli(capsys, "evaluate", "--pairs", str(pairs))


def test_npz_forged_directory_size_is_refused_before_reading(tmp_path, good):
    X, y = good
    path = tmp_path / "big.npz"
    _zip(path, {"X.npy": _npy(X), "y.npy": _npy(y)})
    raw = bytearray(path.read_bytes())
    # the central directory's "uncompressed size" of X.npy claims 1 TiB (more than the file)
    at = raw.rindex(b"PK\x01\x02X.npy"[:4], 0, raw.rindex(b"y.npy"))
    struct.pack_into("<I", raw, at + 24, 2**32 - 1)
    path.write_bytes(bytes(raw))
    message = _bounded(lambda: load_features(path))
    assert str(path) in message


def _mat_v5(X: np.ndarray, y: np.ndarray, dims, compress: bool) -> bytes:
    """A MATLAB v5 file whose variable X declares ``dims`` (its data stay those of X)."""
    from scipy.io import savemat

    buf = io.BytesIO()
    savemat(buf, {"X": X, "y": y}, do_compression=False)
    raw = bytearray(buf.getvalue())
    struct.pack_into("<2i", raw, 128 + 8 + 16 + 8, *dims)  # X is the first variable
    if not compress:
        return bytes(raw)
    head, elements, pos = bytes(raw[:128]), [], 128
    while pos < len(raw):
        count = struct.unpack_from("<I", raw, pos + 4)[0]
        body = zlib.compress(bytes(raw[pos : pos + 8 + count]))
        elements.append(struct.pack("<II", 15, len(body)) + body)
        pos += 8 + count
    return head + b"".join(elements)


@pytest.mark.parametrize("compress", [False, True], ids=["v5", "v5-compressed"])
def test_mat_forged_dimensions_are_refused_unread(tmp_path, capsys, good, compress):
    X, y = good
    path = tmp_path / "forged.mat"  # 2.6 KB declaring 74.5 GiB
    path.write_bytes(_mat_v5(X, y.astype(float), (100_000, 100_000), compress))
    assert path.stat().st_size < 4096
    with memory_limit("8G"):
        message = _bounded(lambda: load_features(path))
        assert str(path) in message
        assert "74.5 GiB" in message or "80000000000 bytes" in message
        _cli(capsys, "fit", "kissme", "--data", str(path))


def test_mat_compressed_data_beyond_its_dimensions_are_refused(tmp_path):
    """A variable declaring 2 × 2 whose compressed data inflate to 16 MB: not inflated by SciPy."""
    path = tmp_path / "liar.mat"
    path.write_bytes(_mat_v5(np.zeros((2000, 1000)), np.arange(4.0), (2, 2), compress=True))
    message = _bounded(lambda: load_features(path))
    assert "inflate to more" in message and str(path) in message


def test_mat_compressed_bomb_is_refused_unread(tmp_path, good):
    X, y = good
    from scipy.io import savemat

    path = tmp_path / "bomb.mat"
    savemat(path, {"X": np.zeros((4096, 2048)), "y": np.arange(4096)}, do_compression=True)
    assert path.stat().st_size < 2**20
    message = _bounded(lambda: load_features(path))
    assert "decompression bomb" in message


def test_mat73_forged_dataset_shape_is_refused(tmp_path, capsys):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "forged73.mat"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("X", shape=(2**16, 2**20), dtype="f8", chunks=(64, 64))  # 512 GiB
        f.create_dataset("y", data=np.arange(2**20, dtype=float)[None, :])
    with open(path, "r+b") as f:
        f.write(b"MATLAB 7.3 MAT-file".ljust(124) + b"\x00\x02IM")
    assert path.stat().st_size < 2**24
    message = _bounded(lambda: load_features(path), megabytes=100)
    assert str(path) in message and ("decompression bomb" in message or "GiB" in message)
    _cli(capsys, "fit", "kissme", "--data", str(path))


# --- damaged files: one clear error naming the file, exit 2 ------------------------------------


def test_truncated_and_empty_npz(tmp_path, capsys, good):
    X, y = good
    np.savez(tmp_path / "whole.npz", X=X, y=y)
    raw = (tmp_path / "whole.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "empty.npz").write_bytes(b"")
    for name, expected in (("cut.npz", "truncated or damaged"), ("empty.npz", "empty")):
        path = str(tmp_path / name)
        with pytest.raises(ValueError, match=expected) as info:
            load_features(path)
        assert path in str(info.value)
        assert expected in _cli(capsys, "fit", "kissme", "--data", path)
        assert expected in _cli(capsys, "evaluate", "--pairs", path)


def test_csv_field_over_the_limit(tmp_path, capsys):
    path = tmp_path / "long.csv"
    path.write_text("y,f\n0,1\n1," + "9" * 200_000 + "\n")
    with pytest.raises(ValueError, match=r"line 3: a field longer than 131072 characters"):
        load_features(path)
    _cli(capsys, "fit", "kissme", "--data", str(path))


def test_csv_too_many_columns(tmp_path, monkeypatch):
    from rankmetric.datasets import _user_readers

    monkeypatch.setattr(_user_readers, "MAX_CSV_COLUMNS", 4)
    (tmp_path / "wide.csv").write_text("y,a,b,c,d\n0,1,2,3,4\n1,1,2,3,4\n")
    with pytest.raises(ValueError, match="5 columns, more than MAX_CSV_COLUMNS=4"):
        load_features(tmp_path / "wide.csv")


def test_truncated_mat_names_the_file(tmp_path, capsys, good):
    from scipy.io import savemat

    X, y = good
    for compress in (False, True):
        savemat(tmp_path / "whole.mat", {"X": X, "y": y}, do_compression=compress)
        raw = (tmp_path / "whole.mat").read_bytes()
        path = tmp_path / "cut.mat"
        path.write_bytes(raw[: len(raw) - 40])
        with pytest.raises(ValueError, match="cut.mat") as info:
            load_features(path)
        assert "truncated" in str(info.value) or "not a readable MATLAB" in str(info.value)
        _cli(capsys, "fit", "kissme", "--data", str(path))


def test_truncated_hdf5_mat_names_the_file(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "v73.mat"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("X", data=np.ones((3, 12)))
    with open(path, "r+b") as f:
        f.write(b"MATLAB 7.3 MAT-file".ljust(124) + b"\x00\x02IM")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"v73.mat is not a readable MATLAB v7.3"):
        load_features(path)


def test_folder_fifo_and_device_are_named_for_what_they_are(tmp_path, capsys):
    (tmp_path / "folder.npz").mkdir()
    os.mkfifo(tmp_path / "pipe.npz")
    cases = [
        (tmp_path / "folder.npz", "is a folder"),
        (tmp_path / "pipe.npz", "is a FIFO"),
        (tmp_path, "is a folder"),
        ("/dev/zero", "/dev/zero is not a feature file"),
    ]
    for path, expected in cases:
        assert expected in _cli(capsys, "fit", "kissme", "--data", str(path))
    assert "is a FIFO" in _cli(capsys, "evaluate", "--pairs", str(tmp_path / "pipe.npz"))
    with pytest.raises(ValueError, match="is a FIFO"):
        load_features(tmp_path / "pipe.npz")


# --- nothing silently dropped or changed ---------------------------------------------------------


def test_duplicate_csv_columns_are_refused_by_name(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("y,f1,f1,f2\n0,1,2,3\n1,4,5,6\n")
    with pytest.raises(ValueError, match=r"column\(s\) \['f1'\] more than once"):
        load_features(path)
    _cli(capsys, "fit", "kissme", "--data", str(path))


def test_duplicate_parquet_columns_are_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([0, 1]), pa.array([1.0, 2.0]), pa.array([3.0, 4.0])],
                                 names=["y", "f", "f"])  # fmt: skip
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(ValueError, match=r"\['f'\] more than once"):
        load_features(tmp_path / "dup.parquet")


@pytest.mark.parametrize(
    "X, expected",
    [
        (np.eye(4) * 1j, "complex numbers"),
        (np.array(["2024-01-01"] * 8, dtype="datetime64[D]").reshape(4, 2), "dates and times"),
        (np.full((4, 2), 2**60, dtype=np.int64), "beyond 2\\*\\*53"),
        (np.array([["a", "b"]] * 4), "text"),
    ],
    ids=["complex", "datetime", "huge-int", "text"],
)
def test_features_that_cannot_be_converted_exactly_are_refused(tmp_path, X, expected):
    np.savez(tmp_path / "f.npz", X=X, y=[0, 0, 1, 1])
    with pytest.raises(ValueError, match=expected):
        load_features(tmp_path / "f.npz")


def test_object_arrays_are_never_unpickled(tmp_path):
    np.savez(tmp_path / "obj.npz", X=np.array([[1, None]] * 4, dtype=object), y=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="Python objects"):
        load_features(tmp_path / "obj.npz")


def test_csv_labels_keep_every_digit(tmp_path):
    path = tmp_path / "ids.csv"  # two ids that float64 would make one
    path.write_text("y,f\n12345678901234567890,1\n12345678901234567891,2\n")
    data = load_features(path)
    assert data.n_identities == 2


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_float_labels_beyond_2_53_are_not_cast(tmp_path):
    # not cast to int64 (which wrapped both to one value: "a single identity")
    np.savez(tmp_path / "f.npz", X=np.eye(2), y=np.array([1e20, 3e20]))
    with pytest.raises(ValueError, match="class labels"):
        load_features(tmp_path / "f.npz")


def test_csv_header_without_rows_says_no_rows(tmp_path, capsys):
    (tmp_path / "head.csv").write_text("y,f1,f2\n")
    with pytest.raises(ValueError, match="no rows"):
        load_features(tmp_path / "head.csv")
    np.savez(tmp_path / "none.npz", X=np.empty((0, 3)), y=np.empty(0, int))
    with pytest.raises(ValueError, match="no rows"):
        load_features(tmp_path / "none.npz")


def test_uncompressed_npz_is_memory_mapped_copy_on_write(tmp_path, good):
    X, y = good
    path = tmp_path / "f.npz"
    np.savez(path, X=X, y=y)
    before = path.read_bytes()
    data = load_features(path)
    base = data.X
    while base.base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)
    data.X[0, 0] = 1e9  # a private copy of the page: the user's file is untouched
    assert path.read_bytes() == before
    np.testing.assert_array_equal(load_features(path).X, X)
