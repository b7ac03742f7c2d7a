"""The ``rankmetric`` command line.

Each sub-command lives in its own module: its ``SUMMARY`` (its line in ``rankmetric --help``),
``DESCRIPTION`` and optional ``EPILOG`` (examples), and ``register(parser)``, which adds its
options and sets ``func`` on its parser, which ``main`` calls with the parsed arguments. Only the
sub-command that runs is built in full (``rankmetric fit`` reads every estimator's parameters,
which imports torch): ``rankmetric --help`` and ``rankmetric data list`` start without torch,
scikit-learn, SciPy or pandas, each command importing what it needs when it runs. A user error
(a ``ValueError`` or an ``OSError``: bad value, missing file, unwritable folder) is printed on one
line, without a traceback, with exit status 2; Ctrl-C prints one line and exits with 130.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from .. import __version__

_SUBCOMMANDS = ["demo", "data", "fit", "evaluate", "describe", "bench", "index"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; ``command`` names the sub-command built in full (``None``: all).

    The others keep their name and one-line help (enough for ``rankmetric --help``), so that
    building the parser imports none of the heavy libraries the commands use.
    """
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
        module = importlib.import_module(f"rankmetric.cli.{name}")
        epilog = getattr(module, "EPILOG", None)  # examples, printed as laid out
        as_written = epilog is not None or "\n" in module.DESCRIPTION
        formatter = argparse.RawDescriptionHelpFormatter if as_written else argparse.HelpFormatter
        command_parser = sub.add_parser(name, help=module.SUMMARY, description=module.DESCRIPTION,
                                        epilog=epilog, formatter_class=formatter)  # fmt: skip
        module.register(command_parser, full=command is None or command == name)
    return parser


def _command_of(argv: list[str]) -> str:
    """The sub-command ``argv`` names (its first word that is not an option), or ``""``."""
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words and words[0] in _SUBCOMMANDS else ""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rankmetric`` command."""
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    formatwarning, warnings.formatwarning = warnings.formatwarning, _format_warning
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("rankmetric: interrupted.", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:  # user errors: bad values, files, folders, data
        print(f"rankmetric: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = formatwarning


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the command prints it: its kind and message, without the source line
    (the command's own entry script, which tells a command-line user nothing)."""
    return f"rankmetric: {category.__name__}: {message}\n"


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (an ``OSError`` names its file)."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}."
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
