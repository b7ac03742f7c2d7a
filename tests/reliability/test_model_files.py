"""Model files for every estimator: exact round trips, no code run on load, damage rejected."""

from __future__ import annotations

import json
import pickle
import struct
import zipfile

import numpy as np
import pytest

import rankmetric
from rankmetric.io import load_model, save_model

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _assert_same_fitted_arrays(a, b, names) -> None:
    for name in names:
        left, right = getattr(a, name), getattr(b, name)
        if isinstance(left, list):
            assert len(left) == len(right)
            for u, v in zip(left, right, strict=True):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(left, right)


@pytest.fixture
def saved(spec, fitted_models, tmp_path):
    """``(path, fitted estimator, X)`` with the model written by ``est.save``."""
    est, X, _ = fitted_models(spec)
    path = tmp_path / f"{spec.name}.npz"
    est.save(path)
    return path, est, X


def test_round_trip_gives_identical_transform(spec, saved):
    path, est, X = saved
    loaded = spec.cls.load(path)
    assert type(loaded) is type(est)
    assert loaded.get_params() == est.get_params()
    assert loaded.n_features_in_ == est.n_features_in_
    _assert_same_fitted_arrays(loaded, est, spec.fitted_arrays)
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(loaded.transform(X32), est.transform(X32))
    np.testing.assert_array_equal(
        loaded.pair_distances(X[:5], X[5:10]), est.pair_distances(X[:5], X[5:10])
    )


def test_pickle_round_trip_gives_identical_transform(spec, fitted_models):
    est, X, _ = fitted_models(spec)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.transform(X), est.transform(X))


def test_file_is_plain_arrays_plus_json_metadata_with_the_library_version(spec, saved):
    path, est, _ = saved
    with np.load(path, allow_pickle=False) as archive:  # would raise on any pickled member
        arrays = {name: archive[name] for name in archive.files}
    assert all(a.dtype != object for a in arrays.values())
    meta = json.loads(arrays["__meta__"].tobytes().decode())
    assert meta["library_version"] == rankmetric.__version__
    assert meta["class"] == spec.name
    assert meta["params"] == json.loads(json.dumps(est.get_params(deep=False)))


class _Payload:
    """Unpickling this runs code: it would create the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_loading_a_file_with_a_pickled_payload_runs_no_code(spec, saved, tmp_path):
    path, _, _ = saved
    marker = tmp_path / "code-was-run"
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    evil = tmp_path / "evil.npz"
    first = next(name for name in arrays if name.startswith("attr/"))
    arrays[first] = np.array([_Payload(marker)], dtype=object)
    np.savez(evil, **arrays)  # numpy pickles the object array
    refused = "not a readable rankmetric model file|but its metadata describes|holds Python objects"
    with pytest.raises(ValueError, match=refused):
        load_model(evil)
    assert not marker.exists()


def test_tampered_array_fails_its_checksum(spec, saved, tmp_path):
    path, _, _ = saved
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    name = next(n for n in arrays if n.startswith("attr/") and arrays[n].size > 0)
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] = arrays[name].flat[0] + 1  # same shape and dtype, other content
    tampered = tmp_path / "tampered.npz"
    np.savez(tampered, **arrays)
    with pytest.raises(ValueError, match="fails its checksum"):
        load_model(tampered)


def test_tampered_metadata_is_rejected(spec, saved, tmp_path):
    path, _, _ = saved
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays["__meta__"].tobytes().decode())
    for key, value, message in [
        ("class", "os.system", "unknown estimator class"),
        ("format", "pickle", "unknown model format"),
    ]:
        changed = {**meta, key: value}
        arrays["__meta__"] = np.frombuffer(json.dumps(changed).encode(), dtype=np.uint8)
        bad = tmp_path / f"bad-{key}.npz"
        np.savez(bad, **arrays)
        with pytest.raises(ValueError, match=message):
            load_model(bad)
    arrays["__meta__"] = np.frombuffer(b"{not json", dtype=np.uint8)
    np.savez(tmp_path / "garbled.npz", **arrays)
    with pytest.raises(ValueError, match="corrupt model metadata"):
        load_model(tmp_path / "garbled.npz")


def test_loading_as_another_class_is_refused(spec, saved, all_specs):
    path, _, _ = saved
    other = next(s for s in all_specs if s.name != spec.name)
    with pytest.raises(ValueError, match=f"holds a {spec.name}, not a {other.name}"):
        other.cls.load(path)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_truncated_file_is_rejected(spec, saved, fraction):
    path, _, _ = saved
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ValueError, match="not a readable rankmetric model file"):
        load_model(path)


def _header_offsets(path) -> list[int]:
    """Byte offsets of the fixed-size zip records of ``path``: every local file header (30 bytes),
    central directory entry (46 bytes) and the end-of-directory record (22 bytes)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        local = [info.header_offset for info in archive.infolist()]
        position = archive.start_dir
    offsets = {o for start in local for o in range(start, start + 30)}
    while data[position : position + 4] == b"PK\x01\x02":  # central directory entries
        offsets.update(range(position, position + 46))
        n, m, k = struct.unpack("<HHH", data[position + 28 : position + 34])
        position += 46 + n + m + k
    offsets.update(range(len(data) - 22, len(data)))
    return sorted(offsets)


def test_any_flipped_byte_is_rejected_or_harmless(all_specs, fitted_models, tmp_path):
    """Flip each zip-header byte and a sample of the others: ValueError, or the very same model.

    The file format does not depend on the estimator, so one (WARCA) stands for all.
    """
    name = "WARCA"
    spec = next(s for s in all_specs if s.name == name)
    est, X, _ = fitted_models(spec)
    path = tmp_path / "model.npz"
    est.save(path)
    original = path.read_bytes()
    X = X[:8]
    reference = est.transform(X)
    offsets = sorted(set(_header_offsets(path)) | set(range(0, len(original), 23)))
    undetected = []
    for offset in offsets:
        damaged = bytearray(original)
        damaged[offset] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            loaded = load_model(path)
        except ValueError:
            continue
        if not np.array_equal(loaded.transform(X), reference):
            undetected.append(offset)
    assert not undetected, f"altered models loaded silently (byte offsets {undetected[:10]})"


def test_saved_file_is_a_zip_archive_of_npy_members(spec, saved):
    path, _, _ = saved
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert "__meta__.npy" in names
    assert all(name.endswith(".npy") for name in names)


def test_save_before_fit_is_refused(spec, tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        spec.make().save(tmp_path / "unfitted.npz")
    with pytest.raises(ValueError, match="not fitted"):
        save_model(spec.make(), tmp_path / "unfitted.npz")


def test_a_path_valued_parameter_is_saved_as_its_string(torch_spec, tmp_path):
    """``checkpoint_dir=Path(...)`` must not make the model unsavable."""
    X, y = torch_spec.data()
    est = torch_spec.make(max_iter=3, checkpoint_dir=tmp_path / "ckpt").fit(X, y)
    est.save(tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")
    assert loaded.get_params()["checkpoint_dir"] == str(tmp_path / "ckpt")
    np.testing.assert_array_equal(loaded.transform(X), est.transform(X))
