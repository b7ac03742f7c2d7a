"""Model files that execute no code when loaded.

A model file is a NumPy ``.npz`` archive read with ``allow_pickle=False``: the estimator's
hyper-parameters and scalar fitted attributes as JSON, its fitted arrays as plain arrays, and a
SHA-256 digest of each array so that a tampered or truncated file is rejected.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from typing import Any

import numpy as np

from . import __version__

__all__ = ["save_model", "load_model", "register_estimator"]

FORMAT = "rankmetric-model"
FORMAT_VERSION = 1
_REGISTRY: dict[str, type] = {}


def register_estimator(cls: type) -> type:
    """Class decorator: allow ``load_model`` to rebuild instances of ``cls``."""
    _REGISTRY[cls.__name__] = cls
    return cls


def _registered_class(name) -> type | None:
    """The registered class called ``name``, importing rankmetric's lazy estimators if needed."""
    if name not in _REGISTRY and isinstance(name, str):
        import rankmetric

        if name in getattr(rankmetric, "_LAZY", {}):
            getattr(rankmetric, name)
    return _REGISTRY.get(name)


def _digest(a: np.ndarray) -> str:
    return (
        hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() + f":{a.dtype.str}:{a.shape}"
    )


def _is_json_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _to_json(v: Any, what: str):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, os.PathLike):  # e.g. checkpoint_dir=Path(...)
        return os.fspath(v)
    if _is_json_scalar(v):
        return v
    if isinstance(v, (list, tuple)):
        return [_to_json(x, f"{what}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _to_json(x, f"{what}[{k!r}]") for k, x in v.items()}
    raise ValueError(f"cannot save {what} of type {type(v).__name__} in a model file.")


def _fitted_attributes(est) -> dict[str, Any]:
    return {
        k: v
        for k, v in vars(est).items()
        if k.endswith("_") and not k.startswith("_") and not k.endswith("__")
    }


def save_model(est, path: str | os.PathLike) -> None:
    """Write a fitted estimator to ``path`` (an ``.npz`` file).

    Fitted attributes may be arrays, lists of arrays, JSON-compatible values (numbers,
    strings, lists, string-keyed dicts) or ``None``; anything else is refused with a
    ``ValueError`` rather than pickled.
    """
    cls = type(est).__name__
    if cls not in _REGISTRY:
        raise ValueError(f"{cls} is not a registered rankmetric estimator.")
    attrs = _fitted_attributes(est)
    if not attrs:
        raise ValueError(f"{cls} is not fitted: nothing to save.")
    arrays: dict[str, np.ndarray] = {}
    kinds: dict[str, Any] = {}
    for name, value in attrs.items():
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise ValueError(f"cannot save object array {name!r} in a model file.")
            arrays[f"attr/{name}"] = value
            kinds[name] = "array"
        elif (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, np.ndarray) for v in value)
        ):
            for i, v in enumerate(value):
                arrays[f"attr/{name}/{i}"] = v
            kinds[name] = {"array_list": len(value)}
        else:
            kinds[name] = {"json": _to_json(value, name)}
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "class": cls,
        "params": {k: _to_json(v, f"parameter {k}") for k, v in est.get_params(deep=False).items()},
        "attributes": kinds,
        "digests": {k: _digest(v) for k, v in arrays.items()},
    }
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_model(path: str | os.PathLike):
    """Read an estimator written by :func:`save_model`; no code from the file is executed."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            data = {k: archive[k] for k in archive.files}
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        ValueError,
        KeyError,
        NotImplementedError,
        RuntimeError,  # a damaged zip header can claim an unsupported method or encryption
    ) as exc:
        raise ValueError(f"{path}: not a readable rankmetric model file ({exc}).") from exc
    if "__meta__" not in data:
        raise ValueError(f"{path}: not a rankmetric model file (no metadata).")
    try:
        meta = json.loads(data.pop("__meta__").tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: corrupt model metadata ({exc}).") from exc
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: corrupt model metadata (not a JSON object).")
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: unknown model format {meta.get('format')!r}.")
    cls = _registered_class(meta.get("class"))
    if cls is None:
        raise ValueError(f"{path}: unknown estimator class {meta.get('class')!r}.")
    if not all(isinstance(meta.get(k), dict) for k in ("digests", "params", "attributes")):
        raise ValueError(f"{path}: corrupt model metadata (digests, params or attributes missing).")
    if set(meta["digests"]) != set(data):
        raise ValueError(f"{path}: the arrays in the file do not match its metadata.")
    for key, digest in meta["digests"].items():
        if _digest(data[key]) != digest:
            raise ValueError(f"{path}: array {key!r} fails its checksum (file altered or damaged).")
    try:
        est = cls(**meta["params"])
        for name, kind in meta["attributes"].items():
            setattr(est, _fitted_name(name), _attribute_value(name, kind, data))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: corrupt model metadata ({type(exc).__name__}: {exc}).") from exc
    return est


def _fitted_name(name: str) -> str:
    """``name`` if it is a fitted-attribute name (``coef_``), else a ``ValueError``."""
    if not (isinstance(name, str) and name.endswith("_") and name[:1].isalpha()):
        raise ValueError(f"{name!r} is not a fitted-attribute name.")
    return name


def _attribute_value(name: str, kind, data: dict[str, np.ndarray]):
    """The value of fitted attribute ``name`` described by ``kind`` in the metadata."""
    if kind == "array":
        return data[f"attr/{name}"]
    if isinstance(kind, dict) and "array_list" in kind:
        return [data[f"attr/{name}/{i}"] for i in range(int(kind["array_list"]))]
    if isinstance(kind, dict) and "json" in kind:
        return kind["json"]
    raise TypeError(f"unknown kind {kind!r} of attribute {name!r}")
