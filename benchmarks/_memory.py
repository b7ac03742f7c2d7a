"""Peak-memory marks of the current process (Linux ``/proc/self``), and fresh child processes.

``ru_maxrss`` is not used: a child process inherits its parent's peak through ``fork``/``exec``,
so it would report the parent's memory. ``VmHWM`` is this process's own high-water mark, and
writing ``5`` to ``clear_refs`` resets it to the current resident size, so a measurement can
exclude the set-up (data generation) that came before it.
"""

from __future__ import annotations

import json
import subprocess
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


def run_children(cmd: list[str], repeats: int) -> list[dict] | dict:
    """Run ``cmd`` (a child that prints one JSON line last) ``repeats`` times in fresh processes.

    Returns the parsed JSON of every run, or ``{"error": last line of stderr}`` at the first
    failing run.
    """
    runs = []
    for _ in range(repeats):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs
