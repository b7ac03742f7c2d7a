"""Index folders: round trip, memory-mapped vectors, and damaged or hostile folders refused."""

import json
import warnings

import numpy as np
import pytest

from rankmetric import KISSME
from rankmetric.index import Index

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


@pytest.fixture
def saved(rng, tmp_path):
    X, y = rng.normal(size=(300, 6)), np.repeat(np.arange(30), 10)
    model = KISSME(n_components=4).fit(X, y)
    index = Index.build(model, X, ids=[f"item{i}" for i in range(300)], attributes={"label": y})
    index.remove(["item3"])
    index.save(tmp_path / "idx")
    return index, X, tmp_path / "idx"


def test_round_trip_memory_mapped(saved):
    index, X, path = saved
    loaded = Index.load(path)
    assert isinstance(loaded._rows.vectors, np.memmap)
    assert len(loaded) == 299 and loaded.ids.dtype == object
    np.testing.assert_array_equal(loaded.ids, index.ids)
    np.testing.assert_array_equal(loaded.attributes["label"], index.attributes["label"])
    d0, i0 = index.search(X[:20], 5)
    d1, i1 = loaded.search(X[:20], 5)  # raw rows: the model came back too
    np.testing.assert_array_equal(i0, i1)
    np.testing.assert_array_equal(d0, d1)
    loaded.add(X[:2], ids=["new0", "new1"], attributes={"label": [0, 1]})  # a memmap grows
    assert loaded.search(X[:1], 1)[1][0, 0] in ("item0", "new0")
    loaded.save(path)  # replacing the folder it was loaded from
    assert len(Index.load(path, mmap=False)) == 301


def test_callable_model_not_saved(rng, tmp_path):
    index = Index(lambda X: X * 2).add(rng.normal(size=(10, 3)))
    with pytest.warns(UserWarning, match="not saved"):
        index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    assert loaded.model is None and len(loaded) == 10
    with pytest.raises(ValueError, match="mixes types"):
        Index.from_embeddings(np.ones((2, 2)), ids=[1, "a"]).save(tmp_path / "mixed")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("user data")
    with pytest.raises(ValueError, match="not an index folder"):
        index.save(tmp_path / "data")


def _manifest(path):
    return json.loads((path / "index.json").read_text())


def _write_manifest(path, meta):
    (path / "index.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: (p / "index.json").unlink(), "no index.json"),
        (lambda p: (p / "index.json").write_text("{not json"), "corrupt index.json"),
        (lambda p: (p / "index.json").write_bytes(b" " * (2 << 20)), "larger than"),
        (lambda p: _write_manifest(p, _manifest(p) | {"format_version": 99}), "newer rankmetric"),
        (lambda p: _write_manifest(p, _manifest(p) | {"metric": "evil"}), "bad metric"),
        (lambda p: _write_manifest(p, _manifest(p) | {"n_items": -1}), "bad n_items"),
        (lambda p: (p / "vectors.npy").unlink(), "vectors.npy is missing"),
        (lambda p: (p / "ids.npy").write_bytes(b"x"), "ids.npy has 1 bytes"),
        (lambda p: _flip_byte(p / "vectors.npy"), "SHA-256"),
        (lambda p: _write_manifest(p, _with_file(_manifest(p), "../../etc/passwd")), "lists files"),
    ],
)
def test_damaged_folders_refused(saved, damage, message):
    _, _, path = saved
    damage(path)
    with pytest.raises(ValueError, match=message):
        Index.load(path)


def _flip_byte(file):
    data = bytearray(file.read_bytes())
    data[-3] ^= 0xFF
    file.write_bytes(bytes(data))


def _with_file(meta, name):
    meta["files"][name] = {"bytes": 1, "sha256": "0" * 64}
    return meta


def _rewrite(path, name, array):
    """Replace a member by ``array`` and make the manifest agree (a forged, consistent folder)."""
    import hashlib

    np.save(path / name, array, allow_pickle=True)
    data = (path / name).read_bytes()
    meta = _manifest(path)
    meta["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _write_manifest(path, meta)


def test_hostile_consistent_folders_refused(saved):
    _, _, path = saved
    _rewrite(path, "ids.npy", np.array([object()] * 299, dtype=object))
    with pytest.raises(ValueError, match="Python objects"):
        Index.load(path)
    _rewrite(path, "ids.npy", np.array(["a"] * 299))
    with pytest.raises(ValueError, match="repeats ids"):
        Index.load(path)
    _rewrite(path, "ids.npy", np.array([str(i) for i in range(299)]))
    _rewrite(path, "vectors.npy", np.full((299, 4), np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        Index.load(path)
    _rewrite(path, "vectors.npy", np.zeros((299, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="expected"):
        Index.load(path)


def test_faiss_structure_round_trip_and_damage(rng, tmp_path):
    E = rng.normal(size=(3000, 8)).astype(np.float32)
    index = Index.from_embeddings(E, backend="ivf", nlist=16, nprobe=16)
    index.remove([5])
    index.save(tmp_path / "ivf")
    loaded = Index.load(tmp_path / "ivf")
    assert loaded.resolved_backend == "ivf"
    Q = rng.normal(size=(10, 8)).astype(np.float32)
    np.testing.assert_array_equal(loaded.search(Q, 5)[1], index.search(Q, 5)[1])
    rebuilt = Index.load(tmp_path / "ivf", rebuild=True)
    np.testing.assert_array_equal(rebuilt.search(Q, 5)[1], index.search(Q, 5)[1])
    _flip_byte(tmp_path / "ivf" / "faiss.bin")
    with pytest.raises(ValueError, match="faiss.bin does not match"):
        Index.load(tmp_path / "ivf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Index.load(tmp_path / "ivf", rebuild=True)  # the damaged structure is not read
