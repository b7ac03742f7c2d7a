"""Hostile and malformed model files: bounded memory, only ``ValueError``, no silent garbage.

Issue #15, findings 5, 6 and 14 (model files). A model file is checked against its metadata
before any array data is read; these tests build files that a careless tool or an attacker could
write and check that loading refuses them with a ``ValueError`` naming the problem, using memory
in proportion to the real model.
"""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest

from rankmetric.io import load_model

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]


@pytest.fixture(scope="module")
def warca_file(tmp_path_factory):
    """A small fitted WARCA saved to disk, and its data."""
    from rankmetric import WARCA
    from rankmetric.datasets import make_gaussian_clusters

    X, y = make_gaussian_clusters(48, 5, 3, n_informative=2, random_state=0)
    est = WARCA(n_components=3, max_iter=5, random_state=0, device="cpu").fit(X, y)
    path = tmp_path_factory.mktemp("model") / "warca.npz"
    est.save(path)
    return path, est, X


def _members(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _meta(arrays) -> dict:
    return json.loads(arrays["__meta__"].tobytes().decode())


def _with_meta(arrays, meta) -> dict[str, np.ndarray]:
    return {**arrays, "__meta__": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}


def _digest(a: np.ndarray) -> str:
    # recomputed the way anyone could: the digests protect against damage, not against forgery
    return (
        hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() + f":{a.dtype.str}:{a.shape}"
    )


def _forge(arrays, name, value) -> dict[str, np.ndarray]:
    """``arrays`` with member ``name`` replaced by ``value`` and its digest recomputed."""
    meta = _meta(arrays)
    meta["digests"][name] = _digest(value)
    return _with_meta({**arrays, name: value}, meta)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _npy_bytes(a: np.ndarray, shape=None) -> bytes:
    """An ``.npy`` file of ``a`` whose header may claim another ``shape``."""
    buf = io.BytesIO()
    header = {"descr": a.dtype.str, "fortran_order": False, "shape": shape or a.shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + a.tobytes()


def test_an_unlisted_zip_bomb_member_is_refused_without_decompressing_it(warca_file, tmp_path):
    path, _, _ = warca_file
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(path.read_bytes())
    chunk = bytes(2**20)
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("extra.npy", "w", force_zip64=True) as member:
            member.write(_npy_bytes(np.zeros(0, np.uint8), shape=(256 * 2**20,)))
            for _ in range(256):  # 256 MiB of zeros, about 256 KiB deflated
                member.write(chunk)
    assert bomb.stat().st_size < 4 * 2**20

    def load():
        with pytest.raises(ValueError, match="ratio 1028:1.*decompression bomb"):
            load_model(bomb)

    assert _peak_bytes(load) < 16 * 2**20


def test_an_unlisted_incompressible_member_is_refused_unread(warca_file, tmp_path):
    path, _, _ = warca_file
    bad = tmp_path / "extra.npz"
    bad.write_bytes(path.read_bytes())
    with zipfile.ZipFile(bad, "a") as archive:
        archive.writestr("extra.npy", np.random.default_rng(0).bytes(2**20))
    with pytest.raises(ValueError, match="unlisted members \\['extra.npy'\\]"):
        load_model(bad)


def test_a_header_claiming_2_to_the_40_elements_is_refused_before_allocating(warca_file, tmp_path):
    path, _, _ = warca_file
    original = path.read_bytes()
    bad = tmp_path / "huge.npz"
    with zipfile.ZipFile(io.BytesIO(original)) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "attr/components_.npy":
                components = np.load(io.BytesIO(data))
                data = _npy_bytes(components, shape=(2**40,))
            dst.writestr(info.filename, data)

    def load():
        with pytest.raises(ValueError, match="holds <f4\\(1099511627776,\\)"):
            load_model(bad)

    assert _peak_bytes(load) < 16 * 2**20


def test_metadata_claiming_a_huge_array_is_refused_by_the_size_check(warca_file, tmp_path):
    path, _, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    sha = meta["digests"]["attr/components_"].split(":")[0]
    meta["digests"]["attr/components_"] = f"{sha}:<f4:(1099511627776,)"
    bad = tmp_path / "huge-meta.npz"
    np.savez(bad, **_with_meta(arrays, meta))
    with pytest.raises(
        ValueError, match=r"declares 188 bytes, but its metadata describes <f4:\(1099511627776,\)"
    ):
        load_model(bad)


def test_a_consistent_but_too_large_model_is_refused_by_max_bytes(warca_file, tmp_path):
    path, est, _ = warca_file
    with pytest.raises(ValueError, match="max_bytes=100"):
        load_model(path, max_bytes=100)
    assert np.array_equal(load_model(path, max_bytes=10_000).components_, est.components_)


def test_a_duplicate_member_is_refused(warca_file, tmp_path):
    path, _, _ = warca_file
    dup = tmp_path / "dup.npz"
    dup.write_bytes(path.read_bytes())
    with zipfile.ZipFile(dup, "a") as archive, pytest.warns(UserWarning, match="Duplicate"):
        archive.writestr("attr/components_.npy", _npy_bytes(np.zeros((3, 5), np.float32)))
    with pytest.raises(ValueError, match="duplicate members"):
        load_model(dup)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_fitted_arrays_are_refused(warca_file, tmp_path, value):
    path, _, _ = warca_file
    arrays = _members(path)
    components = arrays["attr/components_"].copy()
    components[0, 0] = value
    bad = tmp_path / "nan.npz"
    np.savez(bad, **_forge(arrays, "attr/components_", components))
    with pytest.raises(ValueError, match="'components_' holds NaN or infinite values"):
        load_model(bad)


@pytest.mark.parametrize(
    "name, value",
    [
        ("attr/components_", np.ones((3, 4), np.float32)),  # n_features_in_ is 5
        ("attr/components_", np.ones(15, np.float32)),
        ("attr/mean_", np.ones(7)),
    ],
)
def test_fitted_arrays_of_the_wrong_shape_are_refused(warca_file, tmp_path, name, value):
    path, _, _ = warca_file
    arrays = _members(path)
    bad = tmp_path / "shape.npz"
    np.savez(bad, **_forge(arrays, name, value))
    with pytest.raises(ValueError, match="fitted arrays do not fit together"):
        load_model(bad)


METADATA_CASES = {
    # mutation of the metadata dict -> what used to escape as another exception type
    "class is a list (TypeError)": lambda m: {**m, "class": ["WARCA"]},
    "digest is a number (AttributeError)": lambda m: {
        **m,
        "digests": {k: 5 for k in m["digests"]},
    },
    "array_list count is 1e308 (OverflowError)": lambda m: {
        **m,
        "attributes": {**m["attributes"], "extra_": {"array_list": 1e308}},
    },
    "attribute name is a number": lambda m: {**m, "attributes": {"7": "array"}},
    "unknown parameter (TypeError)": lambda m: {**m, "params": {**m["params"], "nosuch": 1}},
    "parameters are a list": lambda m: {**m, "params": [1, 2]},
    "special parameter of unknown kind": lambda m: {
        **m,
        "special_params": {"random_state": {"kind": "pickle"}},
    },
    "bit generator is not NumPy's": lambda m: {
        **m,
        "special_params": {"random_state": {"kind": "generator", "state": {"bit_generator": "os"}}},
    },
}


@pytest.mark.parametrize("case", sorted(METADATA_CASES))
def test_malformed_metadata_raises_only_value_error(warca_file, tmp_path, case):
    path, _, _ = warca_file
    arrays = _members(path)
    bad = tmp_path / "meta.npz"
    np.savez(bad, **_with_meta(arrays, METADATA_CASES[case](_meta(arrays))))
    with pytest.raises(ValueError, match=str(bad)):
        load_model(bad)


def test_deeply_nested_metadata_raises_value_error_not_recursion_error(warca_file, tmp_path):
    path, _, _ = warca_file
    arrays = _members(path)
    text = '{"format": ' + "[" * 200_000 + "]" * 200_000 + "}"
    bad = tmp_path / "deep.npz"
    np.savez(bad, **{**arrays, "__meta__": np.frombuffer(text.encode(), dtype=np.uint8)})
    with pytest.raises(ValueError, match="corrupt model metadata"):
        load_model(bad)


def test_metadata_that_is_not_a_byte_string_is_refused(warca_file, tmp_path):
    path, _, _ = warca_file
    arrays = _members(path)
    bad = tmp_path / "meta-float.npz"
    np.savez(bad, **{**arrays, "__meta__": np.zeros(4)})
    with pytest.raises(ValueError, match="not a bounded byte string"):
        load_model(bad)


def test_a_missing_file_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="no such model file"):
        load_model(tmp_path / "nosuch.npz")


def _append_deflated_zeros(path, name: str, n_bytes: int, header: bytes = b"") -> None:
    chunk = bytes(16 * 2**20)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(name, "w", force_zip64=True) as member:
            member.write(header)
            for _ in range(n_bytes // len(chunk)):
                member.write(chunk)


@pytest.fixture(scope="module")
def gib_bomb(warca_file, tmp_path_factory):
    """The issue's file: about 1 MiB holding a 1 GiB deflated member the metadata does not list."""
    path, _, _ = warca_file
    bomb = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    bomb.write_bytes(path.read_bytes())
    _append_deflated_zeros(bomb, "payload.npy", 2**30)
    return bomb


@pytest.mark.slow
def test_a_1_gib_bomb_is_refused_in_milliseconds_and_bounded_memory(gib_bomb):
    """Issue #27: it was refused only after 2.5 s spent inflating it; the directory says enough."""
    import time

    assert gib_bomb.stat().st_size < 2 * 2**20
    times = []

    def load():
        start = time.perf_counter()
        with pytest.raises(ValueError, match="decompression bomb"):
            load_model(gib_bomb)
        times.append(time.perf_counter() - start)

    assert _peak_bytes(load) < 4 * 2**20
    assert min(times) < 0.5, times  # inflating it took 2.5 s; the check takes about a millisecond


def test_a_listed_bomb_is_refused_before_decompression(warca_file, tmp_path):
    """Metadata forged to list a 256 MiB array whose member is deflated zeros."""
    path, _, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    shape = (2**26,)
    meta["digests"]["attr/extra_"] = "0" * 64 + f":<f4:{shape}"
    bad = tmp_path / "listed.npz"
    np.savez(bad, **_with_meta(arrays, meta))
    header = _npy_bytes(np.zeros(0, np.float32), shape=shape)
    _append_deflated_zeros(bad, "attr/extra_.npy", 4 * 2**26, header)

    def load():
        with pytest.raises(ValueError, match="decompression bomb"):
            load_model(bad)

    assert _peak_bytes(load) < 4 * 2**20


def test_a_member_whose_declared_size_disagrees_with_the_metadata_is_refused(warca_file, tmp_path):
    path, _, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    sha = meta["digests"]["attr/components_"].split(":")[0]
    meta["digests"]["attr/components_"] = f"{sha}:<f4:(3, 50)"
    bad = tmp_path / "smaller.npz"
    np.savez(bad, **_with_meta(arrays, meta))
    with pytest.raises(
        ValueError, match=r"declares 188 bytes, but its metadata describes <f4:\(3, 50\)"
    ):
        load_model(bad)


@pytest.mark.parametrize(
    "digest", ["abc", "x:|O:(3,)", "x:<f4:(3, -1)", "x:<f4:[3]", "x:<f4:(" * 99]
)
def test_malformed_digests_are_refused(warca_file, tmp_path, digest):
    path, _, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    meta["digests"]["attr/components_"] = digest
    bad = tmp_path / "digest.npz"
    np.savez(bad, **_with_meta(arrays, meta))
    with pytest.raises(ValueError, match="corrupt model metadata"):
        load_model(bad)


def test_arrays_beyond_the_memory_budget_are_refused_before_reading(warca_file):
    import rankmetric

    path, _, _ = warca_file
    with rankmetric.memory_limit(100), pytest.raises(ValueError, match=r"rankmetric.memory_limit"):
        load_model(path)


@pytest.mark.parametrize("version", [99, 2, 0])
def test_a_file_of_another_format_version_is_refused_naming_both_versions(
    warca_file, tmp_path, version
):
    from rankmetric.io import FORMAT_VERSION

    path, _, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    meta["format_version"] = version
    meta["library_version"] = "9.9.9"
    bad = tmp_path / "future.npz"
    np.savez(bad, **_with_meta(arrays, meta))
    action = "upgrade rankmetric" if version > FORMAT_VERSION else "save it again"
    pattern = (
        rf"model format version {version} \(written by rankmetric 9\.9\.9\).*reads format "
        rf"versions 1 to {FORMAT_VERSION}: .*{action}"
    )
    with pytest.raises(ValueError, match=pattern):
        load_model(bad)


def test_a_newer_library_version_in_the_same_format_loads(warca_file, tmp_path):
    path, est, _ = warca_file
    arrays = _members(path)
    meta = _meta(arrays)
    meta["library_version"] = "9.9.9"
    newer = tmp_path / "newer.npz"
    np.savez(newer, **_with_meta(arrays, meta))
    assert np.array_equal(load_model(newer).components_, est.components_)
