"""Redraw the figures of ``docs/benchmarks.md`` from a benchmark run's cells, with intervals.

    python docs/tools/bench_figures.py RESULTS_DIR [--out docs/img]

``RESULTS_DIR`` is the ``--results-dir`` of ``rankmetric bench`` (default ``results``): this
reads the JSON each invocation wrote there (``ssne-uci/ssne-uci.json``,
``rpl-spd/rpl-spd.json``, every cell with its scores), so the figure shows exactly the cells of
the table printed beside it, and nothing is refitted. The bench's own plots draw ± one standard
deviation; the figures of the docs draw what the tables print: the half-width of the 95 %
Student-t interval over the folds/seeds (:func:`rankmetric.bench.mean_ci`), so a figure and its
table agree on which differences are large. The paper's bars keep the paper's ± (a standard
deviation: the papers give no interval).

Written figures (under ``--out``), for the quick runs::

    rankmetric bench ssne-uci --quick --jobs 1   ->  bench_quick_ssne_uci.png
    rankmetric bench rpl-spd --quick --jobs 1    ->  bench_quick_rpl_spd.png
    rankmetric bench warca-reid --quick --jobs 1 ->  bench_quick_warca_fit_time.png

(the fit-time figure: geometric mean fit times with their 95 % intervals, the cells of the
fit-time table; written when the run has fit-time cells.)

(``--prefix bench_full`` for the full runs.)

``warca-reid/warca-reid.json`` gives the CMC curves (the mean curve over the splits, as the
bench's own ``warca_cmc.png``), written as ``--warca-out`` (default ``PREFIX_warca_cmc.png``).
``--replace-cells RUN_DIR`` (repeatable) takes the cells of a later run of some rows: each of
its cells replaces the cell of the same data set, method, split and seed, so the figure shows
the cells of a table whose rows were rerun::

    python docs/tools/bench_figures.py FULL_RUN --prefix bench_full \
        --replace-cells RERUN --warca-out bench_full_warca_reid_intervals.png
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path


def _load(results: Path, name: str) -> dict | None:
    path = Path(results) / name / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def ssne_figure(run: dict, out: Path) -> Path:
    """SSNE Table 1: our accuracy ± its 95 % interval per method, the paper's hollow beside it."""
    from rankmetric.bench.plots import accuracy_bars
    from rankmetric.bench.ssne import PAPER_TABLE1, PAPER_TABLE1_METHODS

    table = {
        dataset: {
            method: {**entry, "std": entry["ci95"] if entry.get("ci95") is not None else 0.0}
            for method, entry in row.items()
            if isinstance(entry, dict) and "mean" in entry
        }
        for dataset, row in run["summary"]["table1"].items()
    }
    with _tmp_dir() as tmp:
        path = accuracy_bars(table, PAPER_TABLE1, PAPER_TABLE1_METHODS, tmp)
        return Path(shutil.copy(path, out))


def rpl_figure(run: dict, out: Path) -> Path:
    """RPL Table 1: F1 / R@1 / R@3 / NMI per method ± the 95 % interval over the seeds."""
    import numpy as np

    from rankmetric.bench import mean_ci
    from rankmetric.bench.plots import metric_bars
    from rankmetric.bench.rpl import METHOD_INFO, METHODS, METRICS

    scores: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for result in run["cells"]:
        cell = result["cell"]
        for metric in METRICS:
            value = (result.get("scores") or {}).get(metric)
            if value is not None:
                scores[cell["dataset"]][cell["method"]][metric].append(value)
    table = {
        dataset: {
            method: {
                metric: tuple(np.nan_to_num(mean_ci(values), nan=0.0))
                for metric, values in scores[dataset][method].items()
            }
            for method in METHODS
            if method in scores[dataset]
        }
        for dataset in scores
    }
    labels = {m: METHOD_INFO[m][0] for m in METHODS}
    # Fourteen rows: matplotlib's ten default colours would repeat (MDM drawn as the reference).
    import matplotlib
    from cycler import cycler

    colours = cycler(color=matplotlib.colormaps["tab20"].colors)
    with _tmp_dir() as tmp, matplotlib.rc_context({"axes.prop_cycle": colours}):
        path = metric_bars(table, METRICS, labels, tmp, "rpl_spd_scores.png")
        return Path(shutil.copy(path, out))


def _cell_key(result: dict) -> tuple:
    cell = result["cell"]
    return tuple(cell.get(k) for k in ("benchmark", "dataset", "method", "fold", "seed"))


def with_replaced_cells(run: dict, reruns: list[dict]) -> dict:
    """``run`` with each cell of ``reruns`` in place of the cell with its key (new keys added)."""
    cells = {_cell_key(result): result for result in run["cells"]}
    for rerun in reruns:
        cells.update({_cell_key(result): result for result in rerun["cells"]})
    return {**run, "cells": list(cells.values())}


def warca_reid_figure(run: dict, out: Path) -> Path:
    """CMC curves per data set: each method's mean curve over its splits (the bench's own)."""
    import numpy as np

    from rankmetric.bench.plots import cmc_plot

    hits: dict = defaultdict(lambda: defaultdict(list))
    for result in run["cells"]:
        if result.get("curve") and result["cell"].get("benchmark") == "warca-reid":
            hits[result["cell"]["dataset"]][result["cell"]["method"]].append(result["curve"])
    curves = {
        dataset: {
            method: np.mean([c[: min(map(len, found))] for c in found], axis=0)
            for method, found in by_method.items()
        }
        for dataset, by_method in hits.items()
    }
    with _tmp_dir() as tmp:
        return Path(shutil.copy(cmc_plot(curves, Path(tmp), "warca_cmc.png"), out))


def fit_time_figure(run: dict, out: Path) -> Path:
    """WARCA's fit-time table: geometric mean time ± its 95 % interval against N, log-log."""
    from rankmetric.bench.warca import fit_time_plot

    with _tmp_dir() as tmp:
        path = fit_time_plot(run["summary"]["fit_time"], tmp)
        return Path(shutil.copy(path, out))


def _tmp_dir():
    import tempfile

    return tempfile.TemporaryDirectory()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, help="the --results-dir of rankmetric bench")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "img")
    parser.add_argument("--prefix", default="bench_quick", help="bench_quick or bench_full")
    parser.add_argument(
        "--replace-cells",
        type=Path,
        action="append",
        default=[],
        help="a later run's --results-dir whose cells replace the same cells",
    )
    parser.add_argument("--warca-out", help="file name of the CMC figure")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    if (run := _load(args.results, "ssne-uci")) is not None:
        written.append(ssne_figure(run, args.out / f"{args.prefix}_ssne_uci.png"))
    if (run := _load(args.results, "rpl-spd")) is not None:
        written.append(rpl_figure(run, args.out / f"{args.prefix}_rpl_spd.png"))
    if (run := _load(args.results, "warca-reid")) is not None:
        reruns = [r for d in args.replace_cells if (r := _load(d, "warca-reid")) is not None]
        run = with_replaced_cells(run, reruns)
        if any(result.get("curve") for result in run["cells"]):
            name = args.warca_out or f"{args.prefix}_warca_cmc.png"
            written.append(warca_reid_figure(run, args.out / name))
        if run["summary"].get("fit_time"):
            written.append(fit_time_figure(run, args.out / f"{args.prefix}_warca_fit_time.png"))
    for path in written:
        print(path)
    if not written:
        print(f"{args.results}: no ssne-uci/, rpl-spd/ or warca-reid/ run to draw", file=sys.stderr)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
