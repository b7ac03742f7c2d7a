"""The index folder: plain ``.npy`` arrays, a model file and a JSON manifest; no pickle.

::

    idx/
      index.json     manifest: format and version, size, metric, backend and its parameters,
                     the id and attribute types, and each file's size and SHA-256
      vectors.npy    float32 (n_items, dim): memory-mapped on load
      ids.npy        int64, or fixed-width unicode for string ids
      attr-<i>.npy   one per attribute (numbers or fixed-width unicode)
      model.npz      the model (rankmetric.save_model's format), when it is an estimator
      faiss.bin      the approximate structure (faiss's own serialisation), if any

Saving writes a fresh folder beside the target (each file through
:func:`rankmetric._atomic.atomic_write`, the manifest last) and swaps it in, so a reader sees the
old index or the new one. Loading reads the manifest as a bounded JSON object, refuses any
file that is missing, unexpected, of the wrong size, digest, dtype or shape (the ``.npy`` headers
are read with the model files' reader, :mod:`rankmetric._safe_npz`), and loads the model with
:func:`rankmetric.load_model`: nothing executes code. faiss's structure is parsed by faiss's C++
reader after its digest matched; ``rebuild=True`` rebuilds it from the vectors instead.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .. import __version__
from .._atomic import atomic_write
from .._safe_npz import CorruptFile, read_npy_header, sha256_file
from .._validation import check_finite
from ..neighbors import METRICS

__all__ = ["save_index", "load_index", "FORMAT", "FORMAT_VERSION"]

FORMAT = "rankmetric-index"
FORMAT_VERSION = 1
_MANIFEST = "index.json"
_MAX_MANIFEST_BYTES = 1 << 20
_CHUNK_ROWS = 1 << 16
_KINDS = ("exact", "ivf", "ivfpq", "hnsw")
_PARAMS = ("nlist", "nprobe", "hnsw_m", "ef_search", "pq_m", "refine", "random_state")


# ----------------------------------------------------------------------------- saving


def _write_npy(folder: Path, name: str, a: np.ndarray, files: dict, chunk_rows: int = _CHUNK_ROWS):
    """Write ``a`` as ``.npy`` chunk by chunk (a memory-mapped catalogue is streamed)."""

    def write(fh):
        header = {"descr": np.lib.format.dtype_to_descr(a.dtype), "fortran_order": False}
        header["shape"] = a.shape
        np.lib.format.write_array_header_2_0(fh, header)
        for start in range(0, a.shape[0], chunk_rows):  # chunks of rows
            fh.write(np.ascontiguousarray(a[start : start + chunk_rows]).tobytes())

    atomic_write(folder / name, write)
    _record(folder, name, files)


def _record(folder: Path, name: str, files: dict) -> None:
    """List the written file ``name`` in the manifest's ``files``: its size and SHA-256."""
    files[name] = {"bytes": (folder / name).stat().st_size, "sha256": sha256_file(folder / name)}


def _saveable_ids(ids: np.ndarray) -> tuple[np.ndarray, str]:
    if ids.dtype == np.int64:
        return ids, "int64"
    if all(isinstance(i, str) for i in ids.tolist()):
        return ids.astype(str), "str"
    if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids.tolist()):
        return ids.astype(np.int64), "int64"
    raise ValueError(
        "only integer or string ids can be saved (a file holds no Python objects); this index "
        "mixes types or holds other hashables."
    )


def _save_model(index, folder: Path, files: dict) -> str | None:
    model = index.model
    if model is None:
        return None
    from ..io import registered_class, save_model

    if registered_class(type(model).__name__) is not type(model):
        warnings.warn(
            "the index's model is a plain callable, not a rankmetric estimator: it is not saved, "
            "and the loaded index takes embeddings (add_embeddings, search(..., embedded=True)).",
            UserWarning,
            stacklevel=4,
        )
        return None
    save_model(model, folder / "model.npz")
    _record(folder, "model.npz", files)
    return "model.npz"


def _write_folder(index, folder: Path) -> None:
    rows = index._rows
    files: dict = {}
    ids, id_kind = _saveable_ids(index.ids)
    if rows is None:
        raise ValueError("the index is empty: add items before saving it.")
    _write_npy(folder, "vectors.npy", index.embedding_vectors(), files)
    _write_npy(folder, "ids.npy", ids, files)
    attributes = {}
    for i, (name, values) in enumerate(sorted(index.attributes.items())):
        values = values.astype(str) if values.dtype == object else values
        _write_npy(folder, f"attr-{i}.npy", values, files)
        attributes[name] = f"attr-{i}.npy"
    model_file = _save_model(index, folder, files)
    kind = index.resolved_backend
    if index._ann is not None:
        if rows.n_dead:  # faiss ids are rows: rebuild the structure over the compacted rows
            from .core import Index

            kept = Index(None, metric=index.metric, backend=index.resolved_backend, **index.params)
            index = kept.add_embeddings(index.embedding_vectors())
        blob = index._ann.to_bytes()
        atomic_write(folder / "faiss.bin", lambda fh: fh.write(blob.tobytes()))
        _record(folder, "faiss.bin", files)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "n_items": int(ids.shape[0]),
        "dim": int(rows.dim),
        "metric": index.metric,
        "backend": kind,
        "params": index.params,
        "ids": id_kind,
        "attributes": attributes,
        "model": model_file,
        "files": files,
    }
    data = json.dumps(manifest, indent=1).encode()
    atomic_write(folder / _MANIFEST, lambda fh: fh.write(data))


def save_index(index, path: str | os.PathLike) -> None:
    """Write ``index`` to the folder ``path``, replacing a previous index folder there."""
    path = Path(path)
    if path.exists() and (
        not path.is_dir() or (any(path.iterdir()) and not (path / _MANIFEST).exists())
    ):
        raise ValueError(f"{path} exists and is not an index folder: refusing to replace it.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        _write_folder(index, tmp)
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
            os.replace(path, old / "index")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ----------------------------------------------------------------------------- loading


def _read_manifest(path: Path) -> dict:
    file = path / _MANIFEST
    if not path.is_dir():
        raise CorruptFile("not an index folder")
    if not file.is_file():
        raise CorruptFile(f"no {_MANIFEST}: not a rankmetric index folder")
    if file.stat().st_size > _MAX_MANIFEST_BYTES:
        raise CorruptFile(f"{_MANIFEST} is larger than an index manifest can be")
    try:
        meta = json.loads(file.read_bytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptFile(f"corrupt {_MANIFEST} ({type(exc).__name__})") from exc
    _check_manifest(meta)
    return meta


def _is_count(v, low: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _check_manifest(meta) -> None:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CorruptFile("not a rankmetric index manifest")
    version = meta.get("format_version")
    if not _is_count(version, 1) or version > FORMAT_VERSION:
        raise CorruptFile(
            f"index format version {version!r}; this rankmetric reads versions 1 to "
            f"{FORMAT_VERSION} (a newer file needs a newer rankmetric)"
        )
    params = meta.get("params")
    checks = {
        "n_items": _is_count(meta.get("n_items"), 1),
        "dim": _is_count(meta.get("dim"), 1),
        "metric": meta.get("metric") in METRICS,
        "backend": meta.get("backend") in _KINDS,
        "ids": meta.get("ids") in ("int64", "str"),
        "params": isinstance(params, dict)
        and set(params) == set(_PARAMS)
        and all(
            v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in params.values()
        ),
        "attributes": isinstance(meta.get("attributes"), dict)
        and all(
            isinstance(k, str) and meta["attributes"][k] == f"attr-{i}.npy"
            for i, k in enumerate(sorted(meta["attributes"]))
        ),
        "model": meta.get("model") in (None, "model.npz"),
        "files": isinstance(meta.get("files"), dict),
    }
    bad = [k for k, ok in checks.items() if not ok]
    if bad:
        raise CorruptFile(f"corrupt {_MANIFEST} (bad {', '.join(bad)})")
    expected = {"vectors.npy", "ids.npy", *meta["attributes"].values()}
    expected |= {"model.npz"} if meta["model"] else set()
    expected |= {"faiss.bin"} if meta["backend"] != "exact" else set()
    if set(meta["files"]) != expected:
        raise CorruptFile(
            f"{_MANIFEST} lists files {sorted(meta['files'])}, expected {sorted(expected)}"
        )
    for name, entry in meta["files"].items():
        if not (
            isinstance(entry, dict)
            and _is_count(entry.get("bytes"))
            and isinstance(entry.get("sha256"), str)
            and len(entry["sha256"]) == 64
        ):
            raise CorruptFile(f"corrupt {_MANIFEST} (entry of {name})")


def _check_file(path: Path, name: str, entry: dict, verify: bool) -> None:
    file = path / name
    if not file.is_file():
        raise CorruptFile(f"{name} is missing")
    if file.stat().st_size != entry["bytes"]:
        raise CorruptFile(
            f"{name} has {file.stat().st_size} bytes, the manifest says {entry['bytes']}"
        )
    if verify and sha256_file(file) != entry["sha256"]:
        raise CorruptFile(f"{name} does not match its SHA-256 digest (damaged or altered)")


def _load_npy(path: Path, name: str, kinds: str, shape: tuple, mmap: bool) -> np.ndarray:
    with open(path / name, "rb") as fh:
        try:
            dtype, got, fortran, offset = read_npy_header(fh)
        except ValueError as exc:
            raise CorruptFile(f"{name} is not a .npy array ({exc})") from exc
    if dtype.kind not in kinds or got != shape or fortran or not dtype.isnative:
        raise CorruptFile(f"{name} holds {dtype.str}{got}, expected {kinds!r} of shape {shape}")
    if offset + int(np.prod(shape)) * dtype.itemsize != (path / name).stat().st_size:
        raise CorruptFile(f"{name} has the wrong size for its header")
    return np.load(path / name, mmap_mode="r" if mmap else None, allow_pickle=False)


def _check_finite(vectors: np.ndarray) -> None:
    """The package's one finiteness check (rows in bounded chunks), as a corrupt file."""
    try:
        check_finite(vectors, "vectors.npy")
    except ValueError as exc:
        raise CorruptFile(str(exc)) from None


def load_index(
    path: str | os.PathLike, *, mmap: bool = True, rebuild: bool = False, verify: bool = True
):
    """Read an index folder written by :func:`save_index`; a bad folder raises ``ValueError``."""
    path = Path(path)
    try:
        return _load(path, mmap, rebuild, verify)
    except CorruptFile as exc:
        raise ValueError(f"cannot load the index {path}: {exc}.") from None


def _load(path: Path, mmap: bool, rebuild: bool, verify: bool):
    from ..io import load_model
    from ._ann import ApproximateIndex
    from ._rows import Rows
    from .core import Index

    meta = _read_manifest(path)
    n, dim = meta["n_items"], meta["dim"]
    for name, entry in meta["files"].items():
        if not (rebuild and name == "faiss.bin"):
            _check_file(path, name, entry, verify)
    vectors = _load_npy(path, "vectors.npy", "f", (n, dim), mmap)
    if vectors.dtype != np.float32:
        raise CorruptFile(f"vectors.npy holds {vectors.dtype}, not float32")
    if verify:
        _check_finite(vectors)
    ids = _load_npy(path, "ids.npy", "i" if meta["ids"] == "int64" else "U", (n,), False)
    ids = ids.astype(np.int64) if meta["ids"] == "int64" else ids.astype(object)
    if len(set(ids.tolist())) != n:
        raise CorruptFile("ids.npy repeats ids")
    attributes = {}
    for name, file in meta["attributes"].items():  # strings as objects, as Index keeps them
        values = _load_npy(path, file, "biufU", (n,), False)
        attributes[name] = values.astype(object) if values.dtype.kind == "U" else np.array(values)
    model = load_model(path / "model.npz") if meta["model"] else None
    index = Index(model, metric=meta["metric"], backend=meta["backend"], **meta["params"])
    index._rows = Rows.from_arrays(vectors, ids, attributes or None, meta["metric"])
    if meta["backend"] != "exact":
        if rebuild:
            index._rows, rows = None, index._rows
            index.add_embeddings(rows.vectors, rows.ids, rows.attributes)
        else:
            blob = np.fromfile(path / "faiss.bin", dtype=np.uint8)
            try:
                ann = ApproximateIndex.from_bytes(
                    meta["backend"], blob, index.params, meta["metric"]
                )
            except RuntimeError as exc:
                raise CorruptFile(f"faiss.bin is not a faiss index ({str(exc)[:200]})") from None
            if ann.index.ntotal != n or ann.sub.d != dim:
                raise CorruptFile("faiss.bin does not describe the index's vectors")
            index._ann = ann
    return index
