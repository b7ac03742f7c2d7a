"""What the three paper-table benchmarks share: run settings, summaries, Markdown tables, files."""

from __future__ import annotations

import functools
import json
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._utils import single_blas_thread

__all__ = [
    "BenchConfig",
    "Summary",
    "mean_std",
    "format_pm",
    "format_number",
    "markdown_table",
    "group_by",
    "select",
    "captured_warnings",
    "cell_runner",
    "split_failures",
    "strip_timings",
    "json_safe",
    "write_json",
]

#: Result keys that hold wall-clock measurements (they differ between two identical runs).
TIMING_KEYS = ("seconds", "fit_seconds", "fit_seconds_by_candidate")


@dataclass(frozen=True)
class BenchConfig:
    """How a benchmark is run.

    Parameters
    ----------
    quick : bool
        Minutes instead of hours: fewer folds, seeds and data sets, smaller budgets, no tuning.
    datasets, methods : tuple of str, optional
        Restrict the grid to these data sets / methods (``None``: the benchmark's own list).
    seeds : int, optional
        Seeds, splits or repetitions to run (``None``: the mode's default).
    device : str
        Torch device for every estimator (``"cpu"`` keeps runs bit-for-bit reproducible).
    """

    quick: bool = False
    datasets: tuple[str, ...] | None = None
    methods: tuple[str, ...] | None = None
    seeds: int | None = None
    device: str = "cpu"

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def pick(self, kind: str, default: Sequence[str], known: Iterable[str]) -> tuple[str, ...]:
        """``default``, or the user's selection checked against ``known`` (``kind`` names it)."""
        chosen = getattr(self, kind)
        if chosen is None:
            return tuple(default)
        known = tuple(known)
        unknown = [c for c in chosen if c not in known]
        if unknown:
            raise ValueError(f"unknown {kind} {unknown}; choose from {list(known)}.")
        return tuple(chosen)


@dataclass
class Summary:
    """A finished benchmark: its Markdown report, a JSON-ready payload and its plots."""

    name: str
    markdown: str
    payload: dict
    plots: list[Path]


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard deviation (``ddof=0``, as the 5×2 CV protocol reports it)."""
    arr = np.asarray(list(values), dtype=np.float64)
    if arr.size == 0:
        return float("nan"), float("nan")
    return float(arr.mean()), float(arr.std())


def format_pm(
    mean: float, std: float | None = None, *, scale: float = 100.0, digits: int = 2
) -> str:
    """``"97.12 ± 0.33"`` (values multiplied by ``scale``); ``"—"`` for a missing value."""
    if mean is None or not np.isfinite(mean):
        return "—"
    text = f"{scale * mean:.{digits}f}"
    if std is not None and np.isfinite(std):
        text += f" ± {scale * std:.{digits}f}"
    return text


def format_number(value: float | None, digits: int = 1) -> str:
    """A plain number, ``"—"`` when missing."""
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table; the first column is left-aligned, the others right-aligned."""
    align = [":--"] + ["--:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def group_by(results: Iterable[dict], *fields: str) -> dict[tuple, list[dict]]:
    """Results grouped by fields of their cell (``"method"``, ``"dataset"``, ...)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for result in results:
        groups[tuple(result["cell"][f] for f in fields)].append(result)
    return dict(groups)


def select(results: Iterable[dict], **where) -> list[dict]:
    """Results whose cell matches every ``field=value`` given."""
    return [r for r in results if all(r["cell"][k] == v for k, v in where.items())]


@contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """Collect the distinct warning messages raised inside the block (they are not printed)."""
    seen: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield seen
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if text not in seen:
            seen.append(text)


def cell_runner(runner: Callable) -> Callable:
    """Decorate a cell runner: BLAS on one thread, and a failed fit recorded, not raised.

    ``run_grid`` gives each worker one torch thread; BLAS would otherwise start a thread per
    core in every worker, and on a shared machine their spinning slowed small SVDs and solves
    more than 100-fold. A ``ValueError`` (bad data for a method, a non-finite loss, SSNE
    pruning every unit) becomes ``{"error": message}`` so that one cell cannot stop a grid of
    hundreds; the summaries leave such cells out and list them.
    """

    @functools.wraps(runner)
    def wrapped(*args, **kwargs):
        with single_blas_thread():
            try:
                return runner(*args, **kwargs)
            except ValueError as exc:
                return {"error": f"{type(exc).__name__}: {exc}"}

    return wrapped


def split_failures(results: Iterable[dict]) -> tuple[list[dict], str]:
    """``(successful results, a Markdown note listing the failed cells or "")``."""
    ok, failed = [], []
    for r in results:
        (failed if "error" in r else ok).append(r)
    if not failed:
        return ok, ""
    lines = [
        f"- `{r['cell']['method']}` on `{r['cell']['dataset']}`, fold {r['cell']['fold']}, "
        f"seed {r['cell']['seed']}: {r['error']}"
        for r in failed
    ]
    note = f"**{len(failed)} cell(s) failed and are left out of the means:**\n" + "\n".join(lines)
    return ok, note


def strip_timings(result: Mapping) -> dict:
    """A copy of a cell result without its wall-clock fields (for comparing two runs)."""
    out = {}
    for key, value in result.items():
        if key in TIMING_KEYS:
            continue
        out[key] = strip_timings(value) if isinstance(value, Mapping) else value
    return out


def json_safe(value):
    """``value`` with NaN and infinities replaced by ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_json(path: Path, payload) -> None:
    """Write ``payload`` as indented, strict JSON (NaN → null), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(payload), indent=1, allow_nan=False) + "\n")
