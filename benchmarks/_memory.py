"""Peak-memory marks of the current process, from Linux ``/proc/self``.

``ru_maxrss`` is not used: a child process inherits its parent's peak through ``fork``/``exec``,
so it would report the parent's memory. ``VmHWM`` is this process's own high-water mark, and
writing ``5`` to ``clear_refs`` resets it to the current resident size, so a measurement can
exclude the set-up (data generation) that came before it.
"""

from __future__ import annotations

from pathlib import Path


def status_mb(field: str) -> float:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak) of this process, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_mb() -> float:
    """Reset the peak mark to the current resident memory and return the latter, in MiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return status_mb("VmRSS")
