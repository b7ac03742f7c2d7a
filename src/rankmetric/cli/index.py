"""``rankmetric index``: build, grow, query and evaluate a served index of a learned metric."""

from __future__ import annotations

import argparse
import json

from ._args import check_output_file, is_table

SUMMARY = "build, grow, query and evaluate a served index of a learned metric"
DESCRIPTION = "Serve a learned metric: an index folder of the embedded catalogue."
EPILOG = """\
data files: a .npz with X (rows, raw features or embeddings) and optionally ids (integers
or strings) and y (labels, kept as the attribute "label"); or a .npy of rows (memory-mapped);
or a table (.csv, .parquet) or MATLAB .mat file, read as `rankmetric fit --data` reads it:
--feature-columns picks the features, --item-column the ids returned, --id-column the labels.

examples:
  rankmetric index build --model warca.npz --data catalogue.npz --out idx/
  rankmetric index add --index idx/ --data new_items.npz
  rankmetric index query --index idx/ --data queries.npz --k 10 --out neighbours.npz
  rankmetric index evaluate --index idx/ --data queries.npz --k 10
  rankmetric index build --model warca.npz --data gallery.csv --feature-columns 'feat_*' \
      --item-column image_path --id-column pid --out idx/
"""

_QUERY_OUT_HELP = ("write the neighbours to a .npz (distances, ids, query_ids) or a .csv "
                   "(query, rank, item, distance per row)")  # fmt: skip
#: The column options of a table (``load_features``' keywords).
_TABLE_OPTIONS = {"feature_columns": "features", "item_column": "items", "id_column": "y"}


def _read_rows(path: str, args) -> dict:
    """``{"X": rows, "ids": ..., "y": ...}`` of a data file, checked before anything is read
    (no pickle): a user's table read by :func:`~rankmetric.datasets.load_features` (labels
    optional), else the index's own .npz / .npy (memory-mapped)."""
    from .._safe_npz import read_data_npy, read_data_npz
    from ..datasets import load_features

    columns = {key: getattr(args, option) for option, key in _TABLE_OPTIONS.items()
               if getattr(args, option, None) is not None}  # fmt: skip
    if is_table(path):
        try:
            data = load_features(path, **columns, require_labels=False)
        except ValueError as exc:
            raise ValueError(f"--data {exc}") from None
        found = {"X": data.X, "ids": data.items, "y": data.y}
        return {key: value for key, value in found.items() if value is not None}
    if columns:
        given = ", ".join(f"--{o.replace('_', '-')}" for o in _TABLE_OPTIONS if hasattr(args, o))
        raise ValueError(f"{given}: for a table (.csv, .parquet, .mat), not {path!r}: a .npz "
                         "holds the arrays X, ids and y.")  # fmt: skip
    if path.endswith(".npy"):
        return {"X": read_data_npy(path, f"--data {path}")}
    found = read_data_npz(path, f"--data {path}", keys=("X", "ids", "y"))
    if "X" not in found:
        raise ValueError(f"--data {path} has no array X (it has {sorted(found)}).")
    return found


def _check_rows(X, model, args) -> None:
    """Rows the index's model can embed: the features (or SPD matrices) it was fitted on."""
    from ._report import check_model_input

    if model is None:  # an index of embeddings: its own dimension check
        return
    built = getattr(args, "model", None)
    name = f"--model {built}" if built else f"the model of --index {args.index}"
    check_model_input(model, X, args.data, name)


def _add_rows(index, args, folder: str) -> int:
    """Add the rows of the data file ``args.data`` (their ``ids``, ``y`` as the attribute
    ``label``) to ``index`` and save it in ``folder``."""
    data = _read_rows(args.data, args)
    _check_rows(data["X"], index.model, args)
    attributes = {"label": data["y"]} if "y" in data else None
    index.add(data["X"], data.get("ids"), attributes)
    index.save(folder)
    print(f"{index!r} written to {folder}")
    return 0


def _build(args) -> int:
    from .._safe_npz import check_regular_file
    from ..index import Index
    from ..io import load_model

    model = None
    if args.model:
        check_regular_file(args.model, f"--model {args.model}")
        model = load_model(args.model)
    return _add_rows(Index(model, backend=args.backend, metric=args.metric), args, args.out)


def _add(args) -> int:
    from ..index import Index

    return _add_rows(Index.load(args.index, mmap=True), args, args.index)


def _query(args) -> int:
    import numpy as np

    from ..index import Index

    index = Index.load(args.index)
    queries = _read_rows(args.data, args)
    _check_rows(queries["X"], index.model, args)
    distances, ids = index.search(queries["X"], args.k, exact=args.exact)
    ids = ids if ids.dtype != object else ids.astype(str)
    names = queries.get("ids", np.arange(len(ids)))  # the queries' own ids, else row numbers
    if args.out:
        check_output_file(args.out)
        if args.out.lower().endswith(".csv"):
            _write_neighbours_csv(args.out, names, ids, distances)
        else:
            with open(args.out, "wb") as fh:
                np.savez(fh, distances=distances, ids=ids, query_ids=np.asarray(names))
        print(f"{ids.shape[0]} queries × {ids.shape[1]} neighbours written to {args.out}")
        return 0
    for name, d, i in zip(names, distances, ids, strict=True):  # printing, not a hot path
        pairs = ", ".join(f"{item} ({dist:.4g})" for item, dist in zip(i, d, strict=True))
        print(f"query {name}: {pairs}")
    return 0


def _write_neighbours_csv(path: str, names, ids, distances) -> None:
    """One row per (query, neighbour): ``query, rank, item, distance`` (rank from 1)."""
    import csv

    import numpy as np

    n, k = ids.shape
    rows = zip(np.repeat(np.asarray(names), k).tolist(), np.tile(np.arange(1, k + 1), n).tolist(),
               ids.ravel().tolist(), np.char.mod("%.9g", distances.ravel()).tolist(),
               strict=True)  # fmt: skip
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["query", "rank", "item", "distance"])
        writer.writerows(rows)


def _evaluate(args) -> int:
    from ..index import Index

    index = Index.load(args.index)
    data = _read_rows(args.data, args)
    _check_rows(data["X"], index.model, args)
    if "y" not in data:
        raise ValueError(f"--data {args.data} needs the queries' labels to evaluate (y in a "
                         ".npz; a label column of a table, --id-column).")  # fmt: skip
    report = index.evaluate(data["X"], data["y"], k=args.k)
    print(json.dumps(report, indent=1))
    return 0


def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the actions of ``index``; their options only when ``full`` (``--help`` needs none)."""
    from ._args import vector_metric

    sub = parser.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    if not full:
        return
    build = sub.add_parser("build", help="embed a catalogue with a model and write an index")
    build.add_argument("--model", metavar="PATH", help="a saved model (.npz); none: embeddings")
    build.add_argument("--data", metavar="PATH", required=True,
                       help="the catalogue (.npz/.npy, or a .csv/.parquet/.mat table)")  # fmt: skip
    build.add_argument("--out", metavar="DIR", required=True, help="the index folder to write")
    build.add_argument(
        "--backend", default="auto", choices=["auto", "exact", "ivf", "ivfpq", "hnsw"]
    )
    build.add_argument("--metric", type=vector_metric, help="default: the model's")
    _add_table_options(build, labels="kept as the attribute 'label'")
    build.set_defaults(func=_build)
    add = sub.add_parser("add", help="add items to an index folder")
    add.add_argument("--index", metavar="DIR", required=True)
    add.add_argument("--data", metavar="PATH", required=True)
    _add_table_options(add, labels="kept as the attribute 'label'")
    add.set_defaults(func=_add)
    query = sub.add_parser("query", help="the k nearest items of each query")
    query.add_argument("--index", metavar="DIR", required=True)
    query.add_argument("--data", metavar="PATH", required=True,
                       help="queries (.npz/.npy, or a .csv/.parquet/.mat table)")  # fmt: skip
    query.add_argument("--k", type=int, default=10)
    query.add_argument("--exact", action="store_true", help="exact search on any backend")
    query.add_argument("--out", metavar="PATH", help=_QUERY_OUT_HELP)
    _add_table_options(query, items="the queries' identifiers, printed and written with "
                       "their neighbours (default: row numbers; a .npz's ids)")  # fmt: skip
    query.set_defaults(func=_query)
    evaluate = sub.add_parser("evaluate", help="recall@k and CMC / mAP@R, approximate vs exact")
    evaluate.add_argument("--index", metavar="DIR", required=True)
    evaluate.add_argument("--data", metavar="PATH", required=True, help="queries with labels y")
    evaluate.add_argument("--k", type=int, default=10)
    _add_table_options(evaluate, items=None, labels="the queries' labels (required)")
    evaluate.set_defaults(func=_evaluate)


_ITEMS_HELP = ("the item identifiers a query returns (image_path, product id; default: row "
               "numbers)")  # fmt: skip


def _add_table_options(parser, items: str | None = _ITEMS_HELP, labels: str | None = None):
    """The column options of a table ``--data`` (the names ``rankmetric fit`` uses)."""
    unset = argparse.SUPPRESS
    group = parser.add_argument_group("a table as --data (.csv, .parquet, .mat)")
    group.add_argument("--feature-columns", nargs="+", metavar="PATTERN", default=unset,
                       help="the feature columns, by name or pattern ('feat_*'; default: every "
                       "numeric column but the others named here)")  # fmt: skip
    if items:
        group.add_argument("--item-column", metavar="NAME", default=unset, help=items)
    if labels:
        group.add_argument("--id-column", metavar="NAME", default=unset,
                           help=f"the identity / class label column ({labels}; default: a "
                           "column called y, labels, pid, ... when there is one)")  # fmt: skip
