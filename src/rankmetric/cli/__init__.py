"""The ``rankmetric`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module sets
``func`` on its parser, which ``main`` calls with the parsed arguments.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

_SUBCOMMANDS = ["demo", "data", "fit", "evaluate", "bench"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rankmetric",
        description=(
            "Supervised metric and similarity learning: learn a distance from labels or pairwise "
            "similarities (WARCA, SSNE, RPL, LMNN, ITML), then evaluate it for k-NN "
            "classification, retrieval, clustering and re-identification."
        ),
        epilog=(
            "Start with `rankmetric demo`, then `rankmetric data list` and `rankmetric fit --help`."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rankmetric {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMANDS:
        importlib.import_module(f"rankmetric.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rankmetric`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"rankmetric: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
