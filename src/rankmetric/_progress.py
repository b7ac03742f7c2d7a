"""Progress lines of the long commands: one line per finished step, with its elapsed time.

Progress bars (tqdm) are invisible when the output is not a terminal (CI, ``nohup``, a
notebook's captured stream, a pipe); these lines go to standard error, flushed at once, so a
long ``rankmetric bench``, ``fit``, ``demo`` or ``data fetch`` shows it is alive wherever its
output goes.
"""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressLines", "is_terminal"]


def is_terminal(stream=None) -> bool:
    """Whether ``stream`` (standard error by default) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class ProgressLines:
    """``progress(message, since=None)`` prints ``[command 12.3s] message (4.5s)``.

    The first time is the time since the command started, the bracketed one at the end the
    time since ``since`` (a ``time.perf_counter()`` value: the step's own duration). With
    ``enabled=False`` nothing is printed.
    """

    def __init__(self, command: str, *, enabled: bool = True, stream=None) -> None:
        self.command, self.enabled = command, enabled
        self.stream = stream
        self.start = time.perf_counter()

    def __call__(self, message: str, since: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        step = "" if since is None else f" ({now - since:.1f}s)"
        stream = sys.stderr if self.stream is None else self.stream
        print(f"[{self.command} {now - self.start:6.1f}s] {message}{step}", file=stream,
              flush=True)  # fmt: skip
