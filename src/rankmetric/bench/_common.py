"""What the three paper-table benchmarks share: run settings, summaries, Markdown tables, files."""

from __future__ import annotations

import functools
import importlib
import json
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._threads import single_blas_thread

#: Result keys that hold wall-clock measurements (they differ between two identical runs).
TIMING_KEYS = ("seconds", "fit_seconds", "fit_seconds_by_candidate")


def import_object(path: str):
    """The object a dotted path names (``"module.name"``): cell runners, estimator classes."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def file_label(path) -> str:
    """The data-set name of a user's file in cells and tables: its name and the first 8 hex
    digits of its SHA-256 (so that a changed file is not read from the cache)."""
    from .._safe_npz import sha256_file

    return f"{Path(path).name}@{sha256_file(path)[:8]}"


def user_files(paths: Iterable, resolve: bool = False) -> dict[str, dict]:
    """``{label: {"path": path}}`` of a user's files (``--data``), labelled by :func:`file_label`;
    the path as given, or made absolute with ``resolve``."""
    return {file_label(p): {"path": str(Path(p).resolve() if resolve else p)} for p in paths}


@functools.lru_cache(maxsize=4)
def load_arrays(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``(X, y, X_test, y_test)`` of a data set of the tables (cached; no test part: None)."""
    from ..datasets import load_dataset

    data = load_dataset(name)
    return data.X, data.y, data.X_test, data.y_test


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


#: Confidence of the per-cell intervals and level of the paired tests.
CONFIDENCE = 0.95
#: Mark of a learned row whose mean is below the reference (Euclidean) row's.
BELOW_MARK = "▼"
#: Mark of a difference significant at ``1 - CONFIDENCE`` (paired t-test over splits).
SIGNIFICANT_MARK = "*"


def mean_ci(values: Iterable[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % Student-t confidence interval over the values.

    The values are one cell's scores over its splits or seeds; the half-width is
    ``t(0.975, n − 1) · s / √n`` (``s`` with ``ddof=1``), NaN with fewer than two values.
    """
    from scipy import stats

    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return float("nan"), float("nan")
    if arr.size < 2:
        return float(arr.mean()), float("nan")
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size)
    return float(arr.mean()), float(half)


def log_mean_ci(values: Iterable[float]) -> tuple[float, float, float]:
    """Geometric mean of positive values (times, ratios) and its 95 % interval.

    :func:`mean_ci` of the logarithms, taken back: ``(exp(m), exp(m − h), exp(m + h))`` for the
    mean ``m`` of the logs and its half-width ``h`` (a t-interval, exact when the log-values are
    normal). Non-finite values are left out; the bounds are NaN with fewer than two values.

    Examples
    --------
    >>> g, low, high = log_mean_ci([1.0, 2.0, 4.0])
    >>> round(g, 6), bool(low < g < high)
    (2.0, True)
    """
    arr = np.asarray(list(values), dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if np.any(arr <= 0):
        raise ValueError(f"log_mean_ci needs positive values, got {arr[arr <= 0][:3].tolist()}.")
    mean, half = mean_ci(np.log(arr))
    return float(np.exp(mean)), float(np.exp(mean - half)), float(np.exp(mean + half))


def paired_p_value(a: Mapping, b: Mapping) -> float:
    """Two-sided paired t-test p-value of two rows' scores over their shared splits.

    ``a`` and ``b`` map a split (fold, seed) to a score; splits missing from either are left
    out. NaN with fewer than two shared splits or when every split differs by the same non-zero
    amount (no spread: the t statistic is undefined); 1.0 when the differences are all zero.
    """
    from scipy import stats

    keys = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    diff = np.asarray([a[k] - b[k] for k in keys], dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    if diff.size < 2:
        return float("nan")
    if np.allclose(diff, diff[0]):  # no spread: equal rows, or a test that is undefined
        return 1.0 if diff[0] == 0 else float("nan")
    with warnings.catch_warnings():  # near-constant differences: scipy's precision notice
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_1samp(diff, 0.0).pvalue)


def compare_rows(scores: Mapping[str, Mapping], reference: str | None) -> dict[str, dict]:
    """Each row's mean, interval and paired comparisons with the reference and the best row.

    Parameters
    ----------
    scores : dict
        ``{row: {split: score}}``, higher is better; the splits pair the rows.
    reference : str or None
        The row learned rows are compared with (Euclidean); None when the table has none.

    Returns
    -------
    dict
        ``{row: {"mean", "ci", "vs_reference", "p_reference", "vs_best", "p_best", "best",
        "below_reference"}}``: differences of means (row − other) and paired t-test p-values.
    """
    stats = {row: mean_ci(values.values()) for row, values in scores.items()}
    finite = {row: m for row, (m, _) in stats.items() if np.isfinite(m)}
    best = max(finite, key=finite.get) if finite else None
    out = {}
    for row, (mean, half) in stats.items():
        entry = {"mean": mean, "ci": half, "best": best}
        for key, other in (("reference", reference), ("best", best)):
            if other is None or other not in scores or other == row:
                entry[f"vs_{key}"], entry[f"p_{key}"] = float("nan"), float("nan")
                continue
            entry[f"vs_{key}"] = mean - stats[other][0]
            entry[f"p_{key}"] = paired_p_value(scores[row], scores[other])
        entry["below_reference"] = bool(row != reference and entry["vs_reference"] < 0)
        out[row] = entry
    return out


def compare_results(
    results: Iterable[dict], score: Callable[[dict], float | None], references: Sequence[str]
) -> dict[str, dict]:
    """:func:`compare_rows` of cell results: one row per method, its cells paired by split.

    ``score(result)`` reads a cell's score (``None``: left out); the cells of two methods pair
    by ``(fold, seed)``; the reference is the first of ``references`` that has scores.
    """
    scores: dict = {}
    for result in results:
        value = score(result)
        if value is not None:
            cell = result["cell"]
            scores.setdefault(cell["method"], {})[cell["fold"], cell["seed"]] = value
    return compare_rows(scores, next((m for m in references if m in scores), None))


def format_ci(mean: float, half: float, *, scale: float = 100.0, digits: int = 1) -> str:
    """``"97.1 ± 0.3"``: a mean and its interval's half-width (``"—"`` when missing)."""
    return format_pm(mean, half, scale=scale, digits=digits)


def format_comparison(diff: float, p_value: float, *, scale: float = 100.0) -> str:
    """``"−2.3* (p 0.01)"``: a difference of means with its paired p-value ("" when none)."""
    if not np.isfinite(diff):
        return ""
    star = SIGNIFICANT_MARK if np.isfinite(p_value) and p_value < 1 - CONFIDENCE else ""
    p_text = f" (p {p_value:.2f})" if np.isfinite(p_value) else ""
    return f"{scale * diff:+.1f}{star}{p_text}".replace("-", "−")


def comparison_cells(test: Mapping) -> list[str]:
    """A row's two Δ cells (:func:`format_comparison`): against the reference, against the best."""
    nan = float("nan")
    return [format_comparison(test.get(f"vs_{o}", nan), test.get(f"p_{o}", nan))
            for o in ("reference", "best")]  # fmt: skip


def comparison_payload(test: Mapping, prefix: str = "") -> dict:
    """A row's comparisons (:func:`compare_rows`) as the JSON payload names them."""
    return {
        f"{prefix}vs_euclidean": {"diff": test["vs_reference"], "p": test["p_reference"]},
        f"{prefix}vs_best": {"diff": test["vs_best"], "p": test["p_best"]},
        "below_euclidean": test["below_reference"],
    }


def below_reference_note(
    rows: Mapping[str, Mapping],
    labels: Mapping[str, str],
    where: str,
    metric: str,
    reference: str = "Euclidean",
) -> list[str]:
    """Lines for the printed summary: every learned row below the reference, by how much."""
    lines = []
    for row, entry in rows.items():
        if entry.get("below_reference"):
            p_value = entry["p_reference"]
            tested = f", paired t-test p = {p_value:.2f}" if np.isfinite(p_value) else ""
            lines.append(
                f"- {BELOW_MARK} **{labels.get(row, row)}** is below {reference} on {where}: "
                f"{100 * entry['vs_reference']:+.1f} points of {metric}{tested}."
            )
    return lines


def marked(text: str, below: bool) -> str:
    """``text``, followed by :data:`BELOW_MARK` when its row is below the reference."""
    return f"{text} {BELOW_MARK}" if below else text


def below_summary(lines: Sequence[str], reference: str, none_text: str | None = None) -> str:
    """The learned rows below ``reference`` under a heading, or a sentence saying there is none."""
    if lines:
        return f"**Learned rows below {reference} ({BELOW_MARK}):**\n" + "\n".join(lines)
    return none_text or f"No learned row is below {reference}."


SIGNIFICANCE_TEXT = (
    "Cells: mean ± half-width of the 95 % Student-t interval over the splits/seeds. "
    "Δ columns: difference of means in points against the reference row (no learning) and "
    "against the best row, with the two-sided paired t-test p-value over the shared splits "
    f"({SIGNIFICANT_MARK}: p < 0.05; with 2 or 3 splits the test detects only large "
    "differences). "
    f"{BELOW_MARK}: a learned row whose mean is below the reference's."
)


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
    return format_pm(value, scale=1.0, digits=digits)


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
