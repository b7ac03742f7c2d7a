"""Model files that execute no code when loaded.

A model file is a NumPy ``.npz`` archive of plain ``.npy`` members: the estimator's
hyper-parameters and scalar fitted attributes as JSON (``__meta__``), its fitted arrays (and
array-valued hyper-parameters) as plain arrays, and a SHA-256 digest of each array so that a
tampered or truncated file is rejected.

Saving is atomic (``atomic_write`` of the private :mod:`rankmetric._atomic`): the
archive is written to a unique temporary file in the target's folder, flushed to disk and renamed
over the target, so a failed or killed save leaves the previous file intact and a concurrent
reader sees either the old or the new model, never a mix.

The format knows no estimator's attribute names. An estimator declares the shapes of its fitted
arrays in the class attribute ``_fitted_arrays`` (``{"mean_": ("n_features_in_",)}``, merged
along the class hierarchy; see :class:`rankmetric.estimators.base.MetricLearnerMixin`):
:func:`save_model` refuses to write, and :func:`load_model` to return, a model whose declared
arrays have another shape.

Loading checks the archive's directory before it decompresses anything (no duplicate names, the
metadata's declared size, no member whose declared size is out of proportion to its compressed
size, a cap on the declared total), then reads the metadata and checks every member against it
(only listed members, each member's declared size against the array the metadata describes, the
total against ``max_bytes`` and the process's memory budget) before it decompresses any array;
then the dtype and shape of each ``.npy`` header. So a hostile file is refused in milliseconds and
the memory used is that of the model the metadata describes, never more than ``max_bytes``.

Format versions: a file records ``format_version``; this version of the library reads versions
``MIN_FORMAT_VERSION`` to ``FORMAT_VERSION`` and refuses others with a ``ValueError`` naming both
(a newer file needs a newer rankmetric). The library version that wrote a file is recorded
(``library_version``) but does not decide whether it loads. The loaded estimator must hold
finite arrays and transform a probe input to finite values. Every problem with a file is
reported as a ``ValueError`` naming the file.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import warnings
import zipfile
from typing import Any

import numpy as np

from . import __version__
from ._atomic import atomic_write
from ._registry import module_of
from ._safe_npz import (
    MAX_COMPRESSION_RATIO,
    META,
    CorruptFile,
    digest,
    read_model_arrays,
    read_model_meta,
)

__all__ = [
    "save_model",
    "load_model",
    "register_estimator",
    "FORMAT_VERSION",
    "MIN_FORMAT_VERSION",
    "MAX_LOAD_BYTES",
    "MAX_COMPRESSION_RATIO",
]

FORMAT = "rankmetric-model"
FORMAT_VERSION = 1
"""The model-file format this version writes, and the newest it reads."""
MIN_FORMAT_VERSION = 1
"""The oldest model-file format this version reads."""
MAX_LOAD_BYTES = 8 * 2**30
"""Default cap on the array bytes :func:`load_model` allocates (8 GiB); see ``max_bytes``."""
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_REGISTRY: dict[str, type] = {}


def register_estimator(cls: type) -> type:
    """Class decorator: allow ``load_model`` to rebuild instances of ``cls``."""
    _REGISTRY[cls.__name__] = cls
    return cls


def registered_class(name) -> type | None:
    """The registered class called ``name``, importing its module (``_registry``) if needed
    (``None`` for a name no model file may hold); :mod:`rankmetric.index` asks it too."""
    if not isinstance(name, str):
        return None
    if name not in _REGISTRY and (module := module_of(name)) is not None:
        importlib.import_module(module)  # its @register_estimator registers the class
    return _REGISTRY.get(name)


# ----------------------------------------------------------------------------- saving


def _to_json(v: Any, what: str):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, os.PathLike):  # e.g. checkpoint_dir=Path(...)
        return os.fspath(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_to_json(x, f"{what}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _to_json(x, f"{what}[{k!r}]") for k, x in v.items()}
    raise ValueError(f"cannot save {what} of type {type(v).__name__} in a model file.")


def _state_to_json(v: Any):
    """A bit-generator state (nested dicts of ints, strings and small arrays) as JSON."""
    if isinstance(v, dict):
        return {k: _state_to_json(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return {"__ndarray__": v.tolist(), "dtype": v.dtype.str}
    return _to_json(v, "random_state")


def _state_from_json(v: Any):
    if isinstance(v, dict) and "__ndarray__" in v:
        return np.asarray(v["__ndarray__"], dtype=np.dtype(v["dtype"]))
    if isinstance(v, dict):
        return {k: _state_from_json(x) for k, x in v.items()}
    return v


def _split_params(est, arrays: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """JSON parameters and the special ones: arrays (stored as members) and random generators."""
    params, special = {}, {}
    for name, value in est.get_params(deep=False).items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            arrays[f"param/{name}"] = value
            special[name] = {"kind": "array"}
        elif isinstance(value, (np.random.Generator, np.random.RandomState)):
            generator = isinstance(value, np.random.Generator)
            state = value.bit_generator.state if generator else value.get_state(legacy=False)
            kind = "generator" if generator else "random_state"
            special[name] = {"kind": kind, "state": _state_to_json(state)}
        else:
            params[name] = _to_json(value, f"parameter {name}")
    return params, special


def _fitted_attributes(est) -> dict[str, Any]:
    return {
        k: v
        for k, v in vars(est).items()
        if k.endswith("_") and not k.startswith("_") and not k.endswith("__")
    }


def _declared_arrays(cls: type) -> dict[str, tuple]:
    """``{name: shape}`` of the fitted arrays ``cls`` declares (``_fitted_arrays``, merged
    along its class hierarchy, a subclass's declaration winning)."""
    declared: dict[str, tuple] = {}
    for klass in reversed(cls.__mro__):
        declared.update(vars(klass).get("_fitted_arrays", {}))
    return declared


def _declared_shape_problem(est) -> str | None:
    """What is wrong with ``est``'s declared fitted arrays (present ones), or ``None``."""
    for name, shape in _declared_arrays(type(est)).items():
        value = getattr(est, name, None)
        if value is None:
            continue
        if not isinstance(value, np.ndarray):
            return f"{name} is a {type(value).__name__}, not an array"
        expected = [getattr(est, d, None) if isinstance(d, str) else d for d in shape]
        if value.ndim != len(shape) or any(
            e is not None and e != n for e, n in zip(expected, value.shape, strict=True)
        ):
            want = tuple("any" if d is None else d for d in shape)
            return f"{name} has shape {value.shape}, not {want}"
    return None


def _fitted_payload(est, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The metadata ``kinds`` of the fitted attributes; their arrays go into ``arrays``."""
    kinds: dict[str, Any] = {}
    for name, value in _fitted_attributes(est).items():
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise ValueError(f"cannot save object array {name!r} in a model file.")
            arrays[f"attr/{name}"] = value
            kinds[name] = "array"
        elif (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, np.ndarray) and v.dtype != object for v in value)
        ):
            for i, v in enumerate(value):
                arrays[f"attr/{name}/{i}"] = v
            kinds[name] = {"array_list": len(value)}
        else:
            kinds[name] = {"json": _to_json(value, name)}
    return kinds


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def save_model(est, path: str | os.PathLike) -> None:
    """Write a fitted estimator to ``path`` (an ``.npz`` file), atomically.

    Fitted attributes may be arrays, lists of arrays, JSON-compatible values (numbers,
    strings, lists, string-keyed dicts) or ``None``; anything else is refused with a
    ``ValueError`` rather than pickled. Hyper-parameters may also be arrays (``ITML(prior=M)``)
    or a NumPy ``Generator`` / ``RandomState`` (saved as its current state). The file is
    written to a temporary file next to ``path`` and renamed over it: a failed or interrupted
    save leaves any previous file at ``path`` untouched.

    Parameters
    ----------
    est : estimator
        A fitted rankmetric estimator.
    path : str or path-like
        The ``.npz`` file to write.

    Returns
    -------
    None
        The model is in the file.

    Raises
    ------
    ValueError
        If ``est`` is not a fitted rankmetric estimator or holds an attribute that cannot be
        saved without pickle.

    See Also
    --------
    rankmetric.load_model : Read the file back.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import KISSME, load_model, save_model
    >>> X, y = load_iris(return_X_y=True)
    >>> model = KISSME().fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "kissme.npz")
    >>> save_model(model, path)
    >>> bool((load_model(path).transform(X) == model.transform(X)).all())
    True
    """
    cls = type(est).__name__
    if cls not in _REGISTRY:
        raise ValueError(f"{cls} is not a registered rankmetric estimator.")
    if not _fitted_attributes(est):
        raise ValueError(f"{cls} is not fitted: nothing to save.")
    problem = _declared_shape_problem(est)
    if problem is not None:
        raise ValueError(
            f"cannot save this {cls}: its fitted arrays do not fit together ({problem})."
        )
    arrays: dict[str, np.ndarray] = {}
    kinds = _fitted_payload(est, arrays)
    params, special = _split_params(est, arrays)
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "class": cls,
        "params": params,
        "special_params": special,
        "attributes": kinds,
        "digests": {k: digest(v) for k, v in arrays.items()},
    }
    arrays[META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    atomic_write(path, lambda fh: np.savez(fh, **arrays))


# ----------------------------------------------------------------------------- loading


def _check_format_version(meta: dict) -> None:
    """The format-version policy: read ``MIN_FORMAT_VERSION..FORMAT_VERSION``, refuse others."""
    if meta.get("format") != FORMAT:
        raise CorruptFile(f"unknown model format {str(meta.get('format'))[:80]!r}")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptFile(f"corrupt model metadata (format_version {str(version)[:40]!r})")
    if not MIN_FORMAT_VERSION <= version <= FORMAT_VERSION:
        writer = str(meta.get("library_version", "an unknown version"))[:40]
        action = (
            "upgrade rankmetric to load it"
            if version > FORMAT_VERSION
            else "load it with the rankmetric that wrote it and save it again"
        )
        raise CorruptFile(
            f"it is in model format version {version} (written by rankmetric {writer}), but "
            f"rankmetric {__version__} reads format versions {MIN_FORMAT_VERSION} to "
            f"{FORMAT_VERSION}: {action}"
        )


def _check_meta(meta: dict) -> type:
    """The estimator class of valid metadata ``meta``."""
    _check_format_version(meta)
    cls = registered_class(meta.get("class"))
    if cls is None:
        raise CorruptFile(f"unknown estimator class {str(meta.get('class'))[:80]!r}")
    meta.setdefault("special_params", {})
    if not all(
        isinstance(meta.get(k), dict) for k in ("digests", "params", "attributes", "special_params")
    ):
        raise CorruptFile("corrupt model metadata (digests, params or attributes missing)")
    if not all(isinstance(v, str) and v.count(":") >= 2 for v in meta["digests"].values()):
        raise CorruptFile("corrupt model metadata (malformed digests)")
    return cls


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def load_model(path: str | os.PathLike, *, max_bytes: int = MAX_LOAD_BYTES):
    """Read an estimator written by :func:`save_model`; no code from the file is executed.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` model file.
    max_bytes : int, default=MAX_LOAD_BYTES (8 GiB)
        Refuse files whose arrays need more memory than this (checked before reading them).

    Returns
    -------
    estimator
        The fitted estimator, of the class that was saved.

    Raises
    ------
    ValueError
        For every problem with the file (unreadable, truncated, altered, unknown class or
        format, a format version newer than ``FORMAT_VERSION``, members the metadata does not
        list or whose declared sizes do not match it, a member compressed more than
        ``MAX_COMPRESSION_RATIO``, arrays larger than ``max_bytes`` or than the memory
        budget (:func:`rankmetric.resources.memory_budget`), fitted
        arrays that are not finite or do not fit together), naming ``path``.

    See Also
    --------
    rankmetric.save_model : Write a fitted estimator.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import LMNN, load_model
    >>> X, y = load_iris(return_X_y=True)
    >>> path = os.path.join(tempfile.mkdtemp(), "lmnn.npz")
    >>> LMNN(n_components=2, random_state=0).fit(X, y).save(path)
    >>> model = load_model(path)
    >>> type(model).__name__, model.components_.shape
    ('LMNN', (2, 4))
    """
    return _reading(path, lambda: _load(path, max_bytes))


def _load(path, max_bytes: int):
    with zipfile.ZipFile(path) as archive:
        meta = read_model_meta(archive, max_bytes)
        cls = _check_meta(meta)
        data = read_model_arrays(archive, meta, max_bytes)
    est = _build(cls, meta, data)
    _check_fitted(est)
    return est


def model_file_version(path: str | os.PathLike) -> str:
    """Which rankmetric wrote the model file ``path``, in which format (its metadata only)."""

    def read() -> str:
        with zipfile.ZipFile(path) as archive:
            meta = read_model_meta(archive, MAX_LOAD_BYTES)
        _check_format_version(meta)
        writer = str(meta.get("library_version", "an unknown version"))[:40]
        return f"rankmetric {writer} (model format {meta['format_version']})"

    return _reading(path, read)


def _reading(path, read):
    """``read()``, every problem of the file ``path`` raised as a ``ValueError`` naming it."""
    try:
        return read()
    except CorruptFile as exc:
        raise ValueError(f"{path}: {exc}.") from exc
    except FileNotFoundError as exc:
        raise ValueError(f"{path}: no such model file.") from exc
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        OSError,
        EOFError,
        ValueError,  # UnicodeError too
        LookupError,  # KeyError, IndexError
        TypeError,
        AttributeError,
        OverflowError,
        MemoryError,
        RuntimeError,  # RecursionError, NotImplementedError; a damaged zip header's method
    ) as exc:
        raise ValueError(
            f"{path}: not a readable rankmetric model file ({type(exc).__name__}: "
            f"{str(exc)[:200]})."
        ) from exc


def _special_param(name: str, spec, data: dict[str, np.ndarray]):
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "array":
        return data[f"param/{name}"]
    if kind in ("generator", "random_state"):
        state = _state_from_json(spec["state"])
        if state.get("bit_generator") not in _BIT_GENERATORS:
            raise CorruptFile(f"unknown bit generator in parameter {name!r}")
        bit_generator = getattr(np.random, state["bit_generator"])()
        bit_generator.state = state
        if kind == "generator":
            return np.random.Generator(bit_generator)
        return np.random.RandomState(bit_generator)
    raise CorruptFile(f"unknown kind of parameter {name!r}")


def _build(cls: type, meta: dict, data: dict[str, np.ndarray]):
    """The estimator described by ``meta``, with its fitted attributes from ``data``."""
    params = dict(meta["params"])
    for name, spec in meta["special_params"].items():
        params[name] = _special_param(name, spec, data)
    est = cls(**params)
    for name, kind in meta["attributes"].items():
        if not (isinstance(name, str) and name.endswith("_") and name[:1].isalpha()):
            raise CorruptFile(f"{str(name)[:80]!r} is not a fitted-attribute name")
        setattr(est, name, _attribute_value(name, kind, data))
    return est


def _attribute_value(name: str, kind, data: dict[str, np.ndarray]):
    """The value of fitted attribute ``name`` described by ``kind`` in the metadata."""
    if kind == "array":
        return data[f"attr/{name}"]
    if isinstance(kind, dict) and "array_list" in kind:
        n = kind["array_list"]
        if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= len(data):
            raise CorruptFile(f"corrupt model metadata (array_list of {name!r})")
        return [data[f"attr/{name}/{i}"] for i in range(n)]
    if isinstance(kind, dict) and "json" in kind:
        return kind["json"]
    raise CorruptFile(f"unknown kind of attribute {name!r}")


def probe_input(est) -> np.ndarray:
    """A small valid input for ``est``: ones (2, n_features) or identity matrices (2, c, c)."""
    n = est.n_features_in_
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= 1_000_000:
        raise CorruptFile("corrupt model metadata (n_features_in_)")
    if est.__sklearn_tags__().input_tags.three_d_array:
        return np.broadcast_to(np.eye(n), (2, n, n)).copy()
    return np.ones((2, n))


def _check_fitted(est) -> None:
    """Fitted arrays are finite and fit together: a probe input maps to finite values."""
    for name, value in _fitted_attributes(est).items():
        for a in value if isinstance(value, list) else [value]:
            if isinstance(a, np.ndarray) and a.dtype.kind in "fc" and not np.isfinite(a).all():
                raise CorruptFile(f"fitted array {name!r} holds NaN or infinite values")
    if not hasattr(est, "n_features_in_"):
        return
    problem = _declared_shape_problem(est)  # whether or not transform reads them
    if problem is not None:
        raise CorruptFile(f"its fitted arrays do not fit together ({problem})")
    probe = copy.copy(est)  # on the CPU: a model saved on a GPU machine loads anywhere
    if "device" in probe.get_params(deep=False):
        probe.set_params(device="cpu")
    method = getattr(probe, "transform", None) or probe.predict_proba
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.asarray(method(probe_input(probe)))
    except Exception as exc:  # any failure here means the arrays do not fit together
        raise CorruptFile(
            f"its fitted arrays do not fit together ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc
    if not np.isfinite(out).all():
        raise CorruptFile("its fitted arrays give non-finite outputs")
