"""Your own feature files: ``.npz``, ``.csv``, ``.parquet`` and MATLAB ``.mat``.

One function, :func:`load_features`, reads a file of features (rows = items), identities or class
labels, and optionally the camera of each item and a per-item split, and checks them; the
command line's ``--data PATH`` (``rankmetric fit``, ``evaluate``, ``bench warca-reid``) calls it.

=============  ==============================================================================
format         what is read
=============  ==============================================================================
``.npz``       arrays ``X`` (n, d), ``y`` (n,), optional ``cameras`` (n,), ``split`` (n,)
``.csv``       a header row; columns ``y``, optional ``cameras``, ``split``; every other
               column is a feature (all must be numeric)
``.parquet``   the same columns (needs ``pyarrow``: ``pip install "rankmetric[parquet]"``)
``.mat``       MATLAB variables as in ``.npz`` (``X`` may be stored d × n, as LOMO's
               ``descriptors``: it is transposed when only that orientation fits ``y``).
               v7.3 files are HDF5 and need ``h5py`` (``pip install "rankmetric[mat73]"``)
=============  ==============================================================================

Accepted aliases (first found wins): features ``X``, ``features``, ``descriptors``, ``feat``;
labels ``y``, ``labels``, ``label``, ``ids``, ``id``, ``pid``, ``pids``, ``identity``;
cameras ``cameras``, ``camera``, ``cams``, ``cam``, ``camid``, ``camids``; split ``split``.
``split`` values: ``"train"``, ``"test"``, ``"query"``, ``"gallery"`` (any case), or 0 (train)
and 1 (test). Columns called otherwise are named (``y=``, ``cameras=``, ``split=``; for a
table, ``features=`` picks the feature columns by name or pattern and ignores the others, such
as an ``image_path``): the command line's ``--id-column``, ``--camera-column``,
``--split-column`` and ``--feature-columns``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._safe_npz import read_data_npy, read_data_npz
from .._validation import NonFiniteError, check_finite, check_labels
from ._user_readers import UnparsedColumn, csv_line, read_csv_table, read_mat, read_parquet_table

__all__ = ["FEATURE_SUFFIXES", "FeatureData", "is_feature_file", "load_features"]

FEATURE_SUFFIXES = (".npz", ".csv", ".parquet", ".mat")
ALIASES = {
    "X": ("X", "features", "descriptors", "feat"),
    "y": ("y", "labels", "label", "ids", "id", "pid", "pids", "identity"),
    "cameras": ("cameras", "camera", "cams", "cam", "camid", "camids"),
    "split": ("split",),
}
SPLITS = ("train", "test", "query", "gallery")


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
@dataclass(frozen=True)
class FeatureData:
    """Features read from a user's file, checked.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features), float
    y : ndarray of shape (n_samples,) or None
        Identities (re-identification) or class labels; at least two distinct values (None:
        read with ``require_labels=False`` from a file without labels).
    cameras : ndarray of shape (n_samples,) or None
    split : ndarray of shape (n_samples,) of str, or None
        ``"train"``, ``"test"``, ``"query"`` or ``"gallery"`` per row.
    source : str
        The file's path.
    items : ndarray of shape (n_samples,) or None
        The item identifiers (``load_features(items=...)``), what an index returns.

    See Also
    --------
    rankmetric.datasets.load_features : Returns one.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import FeatureData
    >>> data = FeatureData(np.eye(4), np.array([0, 0, 1, 1]), None, None, source="<memory>")
    >>> data.n_identities
    2
    """

    X: np.ndarray
    y: np.ndarray
    cameras: np.ndarray | None
    split: np.ndarray | None
    source: str
    items: np.ndarray | None = None

    @property
    def n_identities(self) -> int:
        return 0 if self.y is None else int(np.unique(self.y).shape[0])

    def rows(self, *splits: str) -> np.ndarray:
        """Indices of the rows whose split is one of ``splits`` (all rows without a split)."""
        if self.split is None:
            return np.arange(self.X.shape[0])
        return np.flatnonzero(np.isin(self.split, splits))


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def is_feature_file(name) -> bool:
    """Whether ``name`` (a ``--data`` value) names a feature file rather than a bundled set.

    Parameters
    ----------
    name : str or path-like
        A ``--data`` value of the command line.

    Returns
    -------
    bool
        True when its suffix is one of ``.npz``, ``.csv``, ``.parquet``, ``.mat``.

    See Also
    --------
    rankmetric.datasets.load_features : Read such a file.

    Examples
    --------
    >>> from rankmetric.datasets import is_feature_file
    >>> is_feature_file("features.npz"), is_feature_file("iris")
    (True, False)
    """
    return Path(str(name)).suffix.lower() in FEATURE_SUFFIXES


def first_present(names, available) -> str | None:
    """The first of ``names`` that ``available`` holds (None when it holds none of them)."""
    return next((name for name in names if name in available), None)


def _find(available, wanted: str | None, kind: str, path: str, required: bool):
    names = (wanted,) if wanted else ALIASES.get(kind, ())
    found = first_present(names, available)
    if found is None and (required or wanted):
        raise ValueError(
            f"{path} has no {'column' if kind != 'X' else 'array'} "
            f"{' or '.join(repr(n) for n in names)} for {kind} "
            f"(found: {_few(available)}){_MAPPING_HINT.get(kind, '')}."
        )
    return found


#: How to name a column that has none of the aliases (the command line's options).
_MAPPING_HINT = {
    "y": "; name the identity column with y=... (--id-column on the command line)",
    "cameras": "; name it with cameras=... (--camera-column on the command line)",
    "split": "; name it with split=... (--split-column on the command line)",
    "items": " (--item-column on the command line)",
}


def _few(names, shown: int = 8) -> str:
    """Up to ``shown`` names, then how many more: a file of 259 columns is not listed whole."""
    names = [str(n) for n in names]
    if not names:
        return "nothing"
    more = f", … ({len(names)} in all)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _candidates(X, y, cameras, split) -> set:
    """Every name :func:`load_features` may read (the ones given, else the aliases)."""
    given = {"X": X, "y": y, "cameras": cameras, "split": split}
    return {n for kind, name in given.items() for n in ((name,) if name else ALIASES[kind])}


def label_values(values, name: str, path: str) -> np.ndarray:
    """One value per item (labels, cameras, identifiers), checked: float integers become
    int64 (exactly), text stays text, NaN and unusable kinds are refused, naming ``name``."""
    values = np.asarray(values)
    if values.ndim == 2 and 1 in values.shape:  # MATLAB vectors are 1 × n or n × 1
        values = values.ravel()
    if values.ndim != 1:
        raise ValueError(f"{path}: {name} must be one value per item, got shape {values.shape}.")
    _refuse_kind(values, name, path, objects=True)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{path}: {name} contains NaN or infinity (a missing value?).")
        if np.all(values == np.round(values)) and np.all(np.abs(values) <= _EXACT_INT):
            values = values.astype(np.int64)  # exact: every value is an integer below 2**53
    if values.dtype.kind == "O":
        values = values.astype(str)
    return values


_EXACT_INT = 2**53  # integers up to this are exact in float64
_REFUSED_KINDS = {
    "c": "complex numbers (take the real part or the magnitude yourself)",
    "M": "dates and times",
    "m": "time differences",
    "V": "structured records",
    "O": "Python objects",
}


def _refuse_kind(values: np.ndarray, name: str, path: str, objects: bool = False) -> None:
    """Refuse what cannot become features or labels without losing or inventing information
    (``objects``: MATLAB cell arrays of strings are accepted as labels)."""
    what = _REFUSED_KINDS.get(values.dtype.kind)
    if what and not (objects and values.dtype.kind == "O"):
        raise ValueError(f"{path}: {name} holds {what} ({values.dtype}); nothing is converted "
                         "silently: convert them to real numbers first.")  # fmt: skip


def _as_float(features: np.ndarray, name: str, path: str) -> np.ndarray:
    """Features as floating point, exactly: integers beyond 2**53 would be rounded: refused."""
    _refuse_kind(features, name, path)
    if features.dtype.kind in "US":
        raise ValueError(f"{path}: {name} holds text ({features.dtype}); features must be "
                         "numbers.")  # fmt: skip
    if np.issubdtype(features.dtype, np.floating):
        return features
    if features.dtype.kind in "iu" and features.size:
        if max(abs(int(features.min())), abs(int(features.max()))) > _EXACT_INT:
            raise ValueError(f"{path}: {name} holds integers beyond 2**53, which float64 "
                             "cannot represent exactly; scale them first.")  # fmt: skip
    return features.astype(np.float64)


def _split_values(values, path: str) -> np.ndarray:
    if values.dtype.kind in "iub":
        bad = ~np.isin(values, (0, 1))
        if bad.any():
            raise ValueError(f"{path}: numeric split values must be 0 (train) or 1 (test), "
                             f"got {np.unique(values[bad])[:5].tolist()}.")  # fmt: skip
        return np.where(values == 0, "train", "test")
    split = np.char.lower(np.char.strip(values.astype(str)))
    bad = ~np.isin(split, SPLITS)
    if bad.any():
        raise ValueError(f"{path}: split values must be one of {SPLITS}, got "
                         f"{np.unique(split[bad])[:5].tolist()}.")  # fmt: skip
    return split


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def load_features(
    path, *, X: str | None = None, y: str | None = None, cameras: str | None = None,
    split: str | None = None, features=None, items: str | None = None,
    require_labels: bool = True,
) -> FeatureData:  # fmt: skip
    """Read and check a user's feature file (``.npz``, ``.csv``, ``.parquet``, ``.mat``).

    Parameters
    ----------
    path : str or path-like
    X, y, cameras, split : str, optional
        Names of the arrays / columns / MATLAB variables; None tries the aliases in the module
        docstring. For tables, ``X=None`` takes every column that is not ``y``, ``cameras`` or
        ``split``.
    features : sequence of str, optional
        Tables only: the feature columns, by name or shell-style pattern (``"f*"``,
        ``"feat_[0-9]*"``), in the file's order; every other column (an ``image_path``, a
        name) is ignored. None: every column but ``y``, ``cameras`` and ``split``, which must
        then all be numeric.
    items : str, optional
        The column / array of item identifiers (an ``image_path``, a product id), kept as
        ``FeatureData.items`` and never read as a feature: what a served index
        (``rankmetric index``) returns for each neighbour.
    require_labels : bool, default=True
        Whether the file must hold labels (at least two identities: a metric is learned from
        them). False (a catalogue to index or queries to search): labels are read when
        present (named or by alias) and ``y`` is ``None`` otherwise; a ``.npy`` of feature
        rows is then read too (features only: the items of a table of pairs).

    Returns
    -------
    FeatureData

    Raises
    ------
    ValueError
        Unknown format, a missing array or column, mismatched lengths, NaN or infinity, a
        non-numeric feature column, fewer than two identities, unknown split values.
    ImportError
        An optional reader is missing (``pyarrow`` for Parquet, ``h5py`` for MATLAB v7.3); the
        message says what to install.

    See Also
    --------
    rankmetric.datasets.load_dataset : The bundled and fetched data sets.
    rankmetric.datasets.is_feature_file : Whether a name is such a file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from rankmetric.datasets import load_features
    >>> path = os.path.join(tempfile.mkdtemp(), "f.npz")
    >>> np.savez(path, X=np.eye(4), y=[0, 0, 1, 1], cameras=[0, 1, 0, 1])
    >>> data = load_features(path)
    >>> data.X.shape, data.n_identities, data.cameras.tolist()
    ((4, 4), 2, [0, 1, 0, 1])
    """
    path = str(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".npy":
        given = [k for k, v in dict(X=X, y=y, cameras=cameras, split=split, features=features,
                                    items=items).items() if v is not None]  # fmt: skip
        return _npy_rows(path, require_labels, given)
    names = _candidates(X, y, cameras, split) | ({items} if items else set())
    names |= {features} if isinstance(features, str) else {str(f) for f in features or ()}
    found, available = _read(path, suffix, names, _feature_selector(features))
    y_name = _find(available, y, "y", path, required=require_labels)
    cam_name = _find(available, cameras, "cameras", path, required=False)
    split_name = _find(available, split, "split", path, required=False)
    item_name = _find(available, items, "items", path, required=False)
    used = {y_name, cam_name, split_name, item_name}
    labels = None if y_name is None else label_values(found[y_name], f"{y_name!r}", path)
    n = -1 if labels is None else labels.shape[0]  # -1: the features' rows
    if n == 0:
        raise ValueError(f"{path}: no rows ({y_name!r} is empty): there is nothing to learn from.")
    if features is not None:
        features = _mapped_features(found, features, used, suffix, path)
    elif suffix in (".csv", ".parquet") and X is None:
        features = _table_features(found, used, path)
    else:
        features = _array_features(found, available, X, suffix == ".mat", n, path)
    if labels is None:
        n = features.shape[0]
    elif features.shape[0] != n:
        raise ValueError(f"{path}: mismatched lengths: {features.shape[0]} feature rows but "
                         f"{n} labels in {y_name!r}.")  # fmt: skip
    if require_labels and np.unique(labels).shape[0] < 2:
        raise ValueError(f"{path}: {y_name!r} holds a single identity; metric learning needs "
                         "at least two.")  # fmt: skip
    if require_labels:
        check_labels(labels, n, min_classes=2)
    cams = _per_item(found, cam_name, n, path)
    parts = _per_item(found, split_name, n, path)
    if parts is not None:
        parts = _split_values(parts, path)
    return FeatureData(features, labels, cams, parts, path, _per_item(found, item_name, n, path))


def _npy_rows(path: str, require_labels: bool, given: list) -> FeatureData:
    """A ``.npy`` of feature rows (memory-mapped after its header is checked): features only,
    for items whose labels live elsewhere (the items of a table of pairs)."""
    if require_labels or given:
        what = "labels" if require_labels else f"named columns ({', '.join(given)})"
        raise ValueError(f"{path} holds feature rows only (a .npy), without {what}: give a "
                         ".npz (X, y, ...) or a table.")  # fmt: skip
    features = read_data_npy(path)
    if features.ndim != 2:
        raise ValueError(f"{path}: the rows must be a 2-D array (items × features), got shape "
                         f"{features.shape}.")  # fmt: skip
    features = check_finite(np.asarray(_as_float(features, "the rows", path)), path)
    return FeatureData(features, None, None, None, path)


def _feature_selector(features):
    """A predicate on column names for ``features=`` patterns (None: every column)."""
    if features is None:
        return None
    patterns = _patterns(features)
    return lambda name: any(fnmatch.fnmatchcase(str(name), p) for p in patterns)


def _patterns(features) -> list[str]:
    """The column names or shell-style patterns of ``features=`` (a comma separates them too)."""
    items = [features] if isinstance(features, str) else list(features)
    return [p.strip() for item in items for p in str(item).split(",") if p.strip()]


def _read(path: str, suffix: str, names: set, wanted=None) -> tuple[dict, list]:
    """The arrays / columns / variables of the file ``path`` that may be used (``names``, or
    every column of a table), and the names of everything the file holds. Users' files are
    untrusted input: each reader checks what the file declares before reading it."""
    if suffix not in FEATURE_SUFFIXES:
        raise ValueError(f"{path}: unknown feature file type {suffix!r}; expected one of "
                         f"{', '.join(FEATURE_SUFFIXES)}.")  # fmt: skip
    if suffix == ".npz":
        found = read_data_npz(path)
    elif suffix == ".mat":
        return read_mat(path, names)
    elif suffix == ".parquet":
        found = read_parquet_table(path)
    else:
        found = read_csv_table(path, keep_text=names - set(ALIASES["X"]), wanted=wanted)
    return found, list(found)


def _table_features(found: dict, used: set, path: str) -> np.ndarray:
    """Every column of a table that is not in ``used``, as float64 (n, d), checked finite."""
    columns = [c for c in found if c not in used]
    if not columns:
        raise ValueError(f"{path} has no feature column besides {sorted(used - {None})}.")
    for c in columns:
        if isinstance(found[c], UnparsedColumn):
            raise ValueError(found[c].message)
    text = [c for c in columns if found[c].dtype.kind not in "iufb"]
    if text:
        raise ValueError(f"{path}: feature column(s) {text[:5]} are not numeric; name the "
                         "identity column (y=..., --id-column) and the feature columns "
                         "(features=[...], --feature-columns 'f*'): every other column is "
                         "then ignored.")  # fmt: skip
    features = np.empty((len(found[columns[0]]), len(columns)))
    for j, c in enumerate(columns):
        features[:, j] = _as_float(np.asarray(found[c]), f"feature column {c!r}", path)
        try:
            check_finite(features[:, j], f"{path}: feature column {c!r}")
        except NonFiniteError as exc:  # a CSV's line, as a spreadsheet numbers it
            if not path.lower().endswith(".csv"):
                raise
            raise ValueError(f"{exc} It is line {csv_line(path, exc.row)} of the file.") from None
    return features


def _array_features(found: dict, available, X: str | None, matlab: bool, n: int, path: str):
    """The feature array (named ``X`` or an alias), items × features, checked finite."""
    x_name = _find(available, X, "X", path, required=True)
    features = np.asarray(found[x_name])
    if features.ndim != 2:
        raise ValueError(f"{path}: {x_name!r} must be a 2-D array (items × features), "
                         f"got shape {features.shape}.")  # fmt: skip
    if matlab and features.shape[0] != n and features.shape[1] == n:
        features = features.T  # MATLAB's d × n layout (LOMO's descriptors)
    features = _as_float(features, repr(x_name), path)
    check_finite(features, f"{path}: {x_name!r}")
    return features


def _per_item(found: dict, name: str | None, n: int, path: str) -> np.ndarray | None:
    """The per-item values ``name`` (cameras, split), one per item; ``None`` without a name."""
    if name is None:
        return None
    values = label_values(found[name], f"{name!r}", path)
    if values.shape[0] != n:
        raise ValueError(f"{path}: mismatched lengths: {values.shape[0]} values in "
                         f"{name!r} but {n} items.")  # fmt: skip
    return values


# ------------------------------------------------------------------------------ column mapping


def _mapped_features(found: dict, patterns, used: set, suffix: str, path: str) -> np.ndarray:
    """The feature columns that ``patterns`` (names or shell-style patterns) select from a
    table, in the file's order, checked numeric and finite; every other column is ignored."""
    patterns = _patterns(patterns)
    if suffix not in (".csv", ".parquet"):
        if len(patterns) != 1:
            raise ValueError(f"{path}: feature columns select columns of a table (.csv, "
                             ".parquet); an array file names one feature array.")  # fmt: skip
        return _array_features(found, list(found), patterns[0], suffix == ".mat", -1, path)
    columns = [c for c in found if c not in used]
    chosen = []
    for pattern in patterns:
        hits = [c for c in columns if fnmatch.fnmatchcase(str(c), pattern)]
        if not hits:
            raise ValueError(f"{path}: no column matches the feature column {pattern!r} "
                             f"(found: {_few(columns)}).")  # fmt: skip
        chosen += hits
    chosen = [c for c in columns if c in set(chosen)]  # the file's order, each once
    return _table_features({c: found[c] for c in chosen}, set(), path)
