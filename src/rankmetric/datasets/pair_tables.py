"""Pairs listed in a table (:func:`read_pair_table`): two columns naming items, one label.

A verification set often comes as a list of pairs (``img_a, img_b, same``, as LFW's
``pairs.txt``) beside a feature file of the items (one row per image, with its
``image_path``). This reads the list (``.csv`` or ``.parquet``, the same checks of untrusted
files as a feature table) and maps each identifier to its row of the items' features, so that
the pairs are :class:`~rankmetric.datasets.PairData` in index form, as a ``.npz`` pair file.

=============  ===================================================================================
two item       the identifiers of each pair's members, as in the items' identifier column (or
columns        their row numbers, from 0, when the items have none); found by name (``a``/``b``,
               ``img1``/``img2``, ``image_a``/``image_b``, ``left``/``right``, ...) or named
label column   ``+1``/``-1``, ``1``/``0``, ``true``/``false``, or similarities in ``[-1, 1]``;
               found by name (``y``, ``same``, ``label``, ``match``, ``similarity``, ...)
``split``      optional: ``train`` / ``test`` for each pair (a fold of the protocol); without it,
               :func:`~rankmetric.datasets.holdout_pairs` holds out items whole
=============  ===================================================================================
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._user_readers import count_rows, read_csv_table, read_parquet_table
from .user_features import FeatureData, label_values
from .user_pairs import PairData, pair_data

__all__ = ["read_pair_table"]

_MEMBER_NAMES = ("item", "image", "img", "id", "name", "file", "path", "sample", "face", "")
#: Column names tried, in order (case-insensitive), for the two members and the label.
PAIR_COLUMN_ALIASES = {
    "members": [(f"{b}{s1}", f"{b}{s2}") for b in _MEMBER_NAMES
                for s1, s2 in (("_a", "_b"), ("1", "2"), ("_1", "_2"), ("a", "b"))
                if b or s1 == "a"] + [("left", "right"), ("first", "second")],
    "label": ("y", "same", "label", "is_same", "match", "similar", "similarity", "target"),
}  # fmt: skip
_TRUE, _FALSE = ("true", "yes", "same"), ("false", "no", "different")


def _columns(names: list, columns, path: str) -> tuple[str, str, str]:
    """The two member columns and the label column: as named in ``columns``, else by alias."""
    if columns is not None:
        if len(columns) != 3 or len(set(columns)) != 3:
            raise ValueError(f"columns must name three columns (first item, second item, "
                             f"label), got {list(columns)!r}.")  # fmt: skip
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{path} has no column {missing[0]!r} (found: {names[:12]}).")
        return tuple(columns)
    lower = {str(n).lower(): n for n in reversed(names)}  # the first of equal names wins
    members = next(((lower[a], lower[b]) for a, b in PAIR_COLUMN_ALIASES["members"]
                    if a in lower and b in lower), None)  # fmt: skip
    label = next((lower[n] for n in PAIR_COLUMN_ALIASES["label"] if n in lower), None)
    if members is None or label is None:
        raise ValueError(
            f"{path}: cannot tell the {'item' if members is None else 'label'} columns of "
            f"the pairs (found: {names[:12]}); name them: columns=(first, second, label), "
            "--pair-columns on the command line."
        )
    return (*members, label)


def _read(path: str, columns) -> tuple[dict, tuple[str, str, str]]:
    """The table's columns (identifiers and labels as typed text) and the roles' names."""
    if Path(path).suffix.lower() == ".parquet":
        found = read_parquet_table(path)
        return found, _columns(list(found), columns, path)
    if Path(path).suffix.lower() != ".csv":
        raise ValueError(f"{path}: a pair table is a .csv or .parquet file (a .npz pair file "
                         "is read by read_pair_file).")  # fmt: skip
    roles = _columns(count_rows(path)[0], columns, path)
    keep = {*roles, "split"}
    return read_csv_table(path, keep_text=keep, wanted=lambda name: False), roles


def _same_labels(values, name: str, path: str) -> np.ndarray:
    """The label column as numbers: words (``true``/``false``, ``yes``/``no``) as ``1``/``-1``."""
    values = np.asarray(values)
    if values.dtype.kind in "US":
        word = np.char.lower(values.astype(str))
        known = np.isin(word, _TRUE + _FALSE)
        if not known.all():
            first = int(np.argmin(known))
            raise ValueError(f"{path}: label column {name!r} holds {str(values[first])!r} "
                             f"(pair {first}); labels are +1/-1, 1/0, true/false or "
                             "similarities in [-1, 1].")  # fmt: skip
        return np.where(np.isin(word, _TRUE), 1, -1)
    return label_values(values, f"label column {name!r}", path)


def _rows(ids: np.ndarray, column: str, items: FeatureData, path: str) -> np.ndarray:
    """The row of each identifier in ``items`` (its identifier column, else row numbers)."""
    known = np.arange(len(items.X)) if items.items is None else items.items
    known = np.asarray(known).astype(str)
    order = np.argsort(known, kind="stable")
    sorted_ids = known[order]
    repeated = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    if repeated.size:
        raise ValueError(f"{items.source}: the item {str(sorted_ids[repeated[0]])!r} appears "
                         "more than once; pairs need one row per item identifier.")  # fmt: skip
    wanted = np.asarray(ids).astype(str)
    where = np.minimum(np.searchsorted(sorted_ids, wanted), len(known) - 1)
    found = sorted_ids[where] == wanted
    if not found.all():
        first = int(np.argmin(found))
        what = "its identifier column" if items.items is not None else "row numbers, from 0"
        raise ValueError(f"{path}: pair {first}, column {column!r}: {str(wanted[first])!r} is "
                         f"not an item of {items.source} ({what}).")  # fmt: skip
    return order[where]


def read_pair_table(path, items: FeatureData, columns=None) -> PairData:
    """Read a table of pairs of item identifiers and labels, with the items' features.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` table, one pair a row (the module's table).
    items : FeatureData
        The items' features and identifiers, e.g. ``load_features(path, items="image_path",
        require_labels=False)``; without identifiers the pairs name row numbers (from 0).
    columns : sequence of three str, optional
        The first item, second item and label columns; None finds them by name.

    Returns
    -------
    PairData
        Index-form pairs into ``items.X``; the ``test`` pairs of a ``split`` column.

    Raises
    ------
    ValueError
        Naming the file: columns that cannot be found, an identifier that is not an item (its
        pair and column), an identifier used by two items, labels that are not numbers or
        ``true``/``false``, a ``split`` value other than ``train``/``test``.

    See Also
    --------
    rankmetric.datasets.read_pair_file : The ``.npz`` pair file.
    rankmetric.datasets.holdout_pairs : Hold items out of a table without a ``split``.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from rankmetric.datasets import load_features, read_pair_table
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "features.csv"), "w") as f:
    ...     _ = f.write("image,f1,f2\\na.jpg,0,1\\nb.jpg,0,2\\nc.jpg,5,5\\n")
    >>> with open(os.path.join(folder, "pairs.csv"), "w") as f:
    ...     _ = f.write("img1,img2,same\\na.jpg,b.jpg,1\\na.jpg,c.jpg,0\\n")
    >>> items = load_features(os.path.join(folder, "features.csv"), items="image",
    ...                       require_labels=False)
    >>> data = read_pair_table(os.path.join(folder, "pairs.csv"), items)
    >>> data.pairs.tolist(), data.y.tolist()
    ([[0, 1], [0, 2]], [1, 0])
    """
    path = str(path)
    found, (first, second, label) = _read(path, columns)
    pairs = np.stack([_rows(label_values(found[c], f"column {c!r}", path), c, items, path)
                      for c in (first, second)], axis=1)  # fmt: skip
    y = _same_labels(found[label], label, path)
    if "split" not in found:
        return pair_data({"X": items.X, "pairs": pairs, "y": y}, path)
    split = np.char.lower(np.asarray(found["split"]).astype(str))
    if not np.isin(split, ("train", "test")).all():
        bad = split[~np.isin(split, ("train", "test"))][0]
        raise ValueError(f"{path}: the split column holds {str(bad)!r}; a pair is 'train' or "
                         "'test'.")  # fmt: skip
    test = split == "test"
    if not test.any():
        return pair_data({"X": items.X, "pairs": pairs, "y": y}, path)
    return pair_data({"X": items.X, "pairs": pairs[~test], "y": y[~test],
                      "pairs_test": pairs[test], "y_test": y[test]}, path)  # fmt: skip
