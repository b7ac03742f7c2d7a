"""Run a paper-table benchmark end to end: build its cells, run them (cached, in parallel),
write the Markdown table, the JSON file and the plots under ``results/``."""

from __future__ import annotations

import importlib
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

from .. import __version__
from ._common import BenchConfig, Summary, write_json
from .grid import is_cached, run_grid

__all__ = ["BENCHMARKS", "run_benchmark", "run_all"]

#: Benchmark name -> module (each has ``build_cells(config)`` and ``summarise(results, config,
#: out_dir)``).
BENCHMARKS = {
    "ssne-uci": "rankmetric.bench.ssne",
    "rpl-spd": "rankmetric.bench.rpl",
    "warca-reid": "rankmetric.bench.warca",
}


def _module(name: str):
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose from {list(BENCHMARKS)} or 'all'.")
    return importlib.import_module(BENCHMARKS[name])


def run_benchmark(
    name: str,
    config: BenchConfig,
    *,
    results_dir: str | os.PathLike = "results",
    n_jobs: int = 1,
    scheduler: str | None = None,
    use_cache: bool = True,
    verbose: bool = True,
) -> Summary:
    """Run benchmark ``name`` and write ``<results_dir>/<name>/{<name>.md, <name>.json, *.png}``.

    Parameters
    ----------
    name : {"ssne-uci", "rpl-spd", "warca-reid"}
    config : BenchConfig
    results_dir : path
        Output folder; finished cells are cached under ``<results_dir>/cache`` so an
        interrupted run resumes where it stopped.
    n_jobs : int
        Worker processes (one torch thread each); 1 runs in this process.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``); cells then run on its workers.
    use_cache : bool
        Reuse and store finished cells.
    verbose : bool
        Progress bar (on a terminal).

    Returns
    -------
    Summary
    """
    module = _module(name)
    cells = module.build_cells(config)
    if not cells:
        raise ValueError(f"{name}: the selection leaves no cell to run.")
    root = Path(results_dir)
    out_dir = root / name
    cache_dir = root / "cache" if use_cache else None
    n_cached = sum(is_cached(cache_dir, c) for c in cells) if cache_dir else 0
    start = time.perf_counter()
    results = run_grid(
        cells,
        cache_dir=cache_dir,
        n_jobs=n_jobs,
        scheduler=scheduler,
        verbose=verbose,
        desc=name,
    )
    summary = module.summarise(results, config, out_dir)
    seconds = time.perf_counter() - start
    header = _header(name, config, len(cells), n_cached, seconds, n_jobs, scheduler)
    summary.markdown = f"{header}\n\n{summary.markdown}\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(summary.markdown)
    write_json(
        out_dir / f"{name}.json",
        {
            "benchmark": name,
            "config": asdict(config),
            "environment": _environment(),
            "summary": summary.payload,
            "cells": results,
        },
    )
    return summary


def run_all(config: BenchConfig, **kwargs) -> list[Summary]:
    """Every benchmark in turn; also writes ``<results_dir>/all.md`` with the three reports."""
    summaries = [run_benchmark(name, config, **kwargs) for name in BENCHMARKS]
    root = Path(kwargs.get("results_dir", "results"))
    (root / "all.md").write_text("\n\n".join(s.markdown for s in summaries))
    return summaries


def _command(name: str, config: BenchConfig, n_jobs: int, scheduler: str | None) -> str:
    from ..datasets.user_features import is_feature_file

    datasets = config.datasets or ()
    options = {
        "--data": [d for d in datasets if is_feature_file(d)],
        "--datasets": [d for d in datasets if not is_feature_file(d)],
        "--methods": config.methods or (),
        "--seeds": [config.seeds] if config.seeds else [],
        "--jobs": [n_jobs] if n_jobs > 1 else [],
        "--scheduler": [scheduler] if scheduler else [],
    }
    parts = ["rankmetric bench", name, *(["--quick"] if config.quick else [])]
    for flag, values in options.items():
        parts += [flag, *map(str, values)] if values else []
    return " ".join(parts)


def _header(name, config, n_cells, n_cached, seconds, n_jobs, scheduler) -> str:
    mode = "**QUICK MODE** (minutes; not the paper's protocol)" if config.quick else "full mode"
    return (
        f"# `{name}` — {mode}\n\n"
        f"Command: `{_command(name, config, n_jobs, scheduler)}` · {n_cells} cells "
        f"({n_cached} read from the cache) · {seconds:.0f} s wall-clock for this invocation · "
        f"rankmetric {__version__}, device `{config.device}`."
    )


def _environment() -> dict:
    import numpy
    import sklearn
    import torch

    return {
        "rankmetric": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scikit-learn": sklearn.__version__,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
