"""Run a grid of benchmark cells (method × data set × fold × seed), cached and in parallel.

Each cell is a pure function of its :class:`Cell` (every random choice is seeded from it), so a
serial run, a process pool and a Dask cluster give identical results. Finished cells are cached
as JSON files, one per cell, so an interrupted benchmark resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .._utils import progress

__all__ = ["Cell", "run_grid"]


@dataclass(frozen=True)
class Cell:
    """One unit of benchmark work.

    ``runner`` is the dotted path of a module-level function ``runner(cell) -> dict`` so that
    cells can be shipped to other processes or machines by name.
    """

    benchmark: str
    method: str
    dataset: str
    fold: int
    seed: int
    runner: str
    options: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        opts = json.dumps(self.options, sort_keys=True)
        digest = hashlib.sha1(opts.encode()).hexdigest()[:10]
        where = f"{self.benchmark}/{self.method}/{self.dataset}"
        return f"{where}/fold{self.fold}-seed{self.seed}-{digest}"


def _resolve(path: str) -> Callable[[Cell], dict]:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def execute_cell(cell: Cell, threads: int = 1) -> dict:
    """Run one cell with ``threads`` torch threads; returns its result dict."""
    import torch

    torch.set_num_threads(threads)
    result = _resolve(cell.runner)(cell)
    return {"cell": asdict(cell), **result}


def _cache_path(cache_dir: Path, cell: Cell) -> Path:
    return cache_dir / f"{cell.key}.json"


def _load_cached(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _store(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)


def run_grid(
    cells: Iterable[Cell],
    *,
    cache_dir: str | os.PathLike | None = None,
    n_jobs: int = 1,
    scheduler: str | None = None,
    verbose: bool = True,
    desc: str = "benchmark",
) -> list[dict]:
    """Run every cell, reusing cached results; returns results in the order of ``cells``.

    Parameters
    ----------
    cells : iterable of Cell
    cache_dir : path, optional
        Where finished cells are stored (``<cache_dir>/<benchmark>/<method>/<dataset>/...json``).
    n_jobs : int
        Worker processes on this machine, one torch thread each (``1``: run in this process).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``); cells then run on its workers.
    """
    cells = list(cells)
    cache = Path(cache_dir) if cache_dir is not None else None
    results: dict[int, dict] = {}
    todo = []
    for i, cell in enumerate(cells):
        cached = _load_cached(_cache_path(cache, cell)) if cache else None
        if cached is not None:
            results[i] = cached
        else:
            todo.append(i)

    def finish(i: int, result: dict) -> None:
        results[i] = result
        if cache:
            _store(_cache_path(cache, cells[i]), result)

    bar = progress(total=len(todo), desc=desc, verbose=verbose)
    if scheduler is not None:
        from distributed import Client, as_completed

        with Client(scheduler) as client:
            futures = {client.submit(execute_cell, cells[i], pure=False): i for i in todo}
            for fut in as_completed(futures):
                finish(futures[fut], fut.result())
                bar.update()
    elif n_jobs > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as pool:
            futures = {i: pool.submit(execute_cell, cells[i]) for i in todo}
            for i, fut in futures.items():
                finish(i, fut.result())
                bar.update()
    else:
        for i in todo:
            finish(i, execute_cell(cells[i], threads=max(1, n_jobs)))
            bar.update()
    bar.close()
    return [results[i] for i in range(len(cells))]
