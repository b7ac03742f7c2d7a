"""The ``rankmetric`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module sets
``func`` on its parser, which ``main`` calls with the parsed arguments. A user error (a
``ValueError`` or an ``OSError``: bad value, missing file, unwritable folder) is printed on one
line, without a traceback, with exit status 2; Ctrl-C prints one line and exits with 130.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

_SUBCOMMANDS = ["demo", "data", "fit", "evaluate", "bench", "index"]


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
    except KeyboardInterrupt:
        print("rankmetric: interrupted.", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:  # user errors: bad values, files, folders, data
        print(f"rankmetric: error: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (an ``OSError`` names its file)."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}."
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
