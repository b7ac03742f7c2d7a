"""Run a grid of benchmark cells (method × data set × fold × seed), cached and in parallel.

Each cell is a pure function of its :class:`Cell` (every random choice is seeded from it), so a
serial run, a process pool and a Dask cluster give identical results. Finished cells are cached
as JSON files, one per cell, so an interrupted benchmark resumes where it stopped.

A cache file carries its cell's key and a SHA-256 digest of its result; a file that does not
match (edited, copied from another cell, truncated, not JSON, a folder) is recomputed with a
warning naming it. A cell that failed because its data set was not fetched is not cached, so it
runs again once the data are there. Files are written atomically under unique temporary names.
Worker processes ignore Ctrl-C (the parent stops them) and exit when the parent dies.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import warnings
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .._progress import ProgressLines, is_terminal
from .._utils import progress
from ..io import atomic_write
from ._common import import_object

__all__ = [
    "CACHE_FORMAT",
    "Cell",
    "execute_cell",
    "is_cached",
    "result_digest",
    "run_grid",
    "store_result",
]


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


def execute_cell(cell: Cell, threads: int = 1) -> dict:
    """Run one cell with ``threads`` torch threads; returns its result dict."""
    import torch

    torch.set_num_threads(threads)
    result = import_object(cell.runner)(cell)
    return {"cell": asdict(cell), **result}


def _cache_path(cache_dir: Path, cell: Cell) -> Path:
    return cache_dir / f"{cell.key}.json"


CACHE_FORMAT = "rankmetric-bench-cell/2"
_RETRY_MARK = "rankmetric data fetch"  # the message of a cell whose data set is not fetched


def result_digest(result: dict) -> str:
    """The SHA-256 digest a cache file keeps beside a cell's ``result`` (its JSON, sorted keys).

    A cached result whose digest does not match is recomputed; re-signing an edited result
    with this digest makes the cache accept it (what the tests do to see the cache read).
    """
    return hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()


def _load_cached(path: Path, key: str, warn: bool = True) -> dict | None:
    """The cached result of the cell ``key`` at ``path``; ``None`` (and a warning) if unusable."""
    if not path.exists():
        return None
    problem = None
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = f"unreadable ({type(exc).__name__})"
    else:
        if not (isinstance(record, dict) and isinstance(record.get("result"), dict)):
            problem = "not a cell record"
        elif record.get("format") != CACHE_FORMAT or record.get("key") != key:
            problem = f"holds another cell ({str(record.get('key'))[:120]!r})"
        elif record.get("digest") != result_digest(record["result"]):
            problem = "its content does not match its digest (edited or damaged)"
    if problem is None:
        return record["result"]
    if warn:
        warnings.warn(
            f"bench cache file {path} is {problem}; the cell is recomputed.",
            RuntimeWarning,
            stacklevel=3,
        )
    return None


def store_result(path: Path, cell: Cell, result: dict) -> None:
    """Cache ``result`` of ``cell`` at ``path``, atomically (under a unique temporary name).

    A result that failed because its data set was not fetched is not cached (it is retried);
    a cache that cannot be written only warns (the result is kept for this run).
    """
    if _RETRY_MARK in str(result.get("error", "")):
        return
    record = {
        "format": CACHE_FORMAT,
        "key": cell.key,
        "digest": result_digest(result),
        "result": result,
    }
    text = json.dumps(record, indent=1).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda fh: fh.write(text))
    except OSError as exc:
        warnings.warn(
            f"cannot cache the cell at {path} ({exc.strerror or exc}); its result is kept "
            "for this run only.",
            RuntimeWarning,
            stacklevel=3,
        )


def is_cached(cache_dir: str | os.PathLike, cell: Cell) -> bool:
    """Whether ``cell`` has a valid cached result under ``cache_dir`` (no warning)."""
    return _load_cached(_cache_path(Path(cache_dir), cell), cell.key, warn=False) is not None


def _exit_with_parent(sentinel) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _worker_init() -> None:
    """In each pool worker: leave Ctrl-C to the parent, and exit as soon as the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with_parent, args=(parent.sentinel,), daemon=True).start()


def _run_in_pool(cells: list[Cell], todo: list[int], n_jobs: int, finish) -> None:
    """Run cells ``todo`` on ``n_jobs`` spawned workers; on any interruption stop them all."""
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx, initializer=_worker_init)
    try:
        futures = {i: pool.submit(execute_cell, cells[i]) for i in todo}
        for i, fut in futures.items():
            finish(i, fut.result())
    except BaseException:
        workers = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:  # running cells would otherwise finish first
            process.terminate()
        raise
    pool.shutdown()


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
    verbose : bool
        A progress bar on a terminal; elsewhere (CI, ``nohup``, a pipe, a notebook) one line
        per finished cell on standard error, with the elapsed time.
    desc : str
        The name shown by the progress bar and lines.
    """
    cells = list(cells)
    cache = Path(cache_dir) if cache_dir is not None else None
    results: dict[int, dict] = {}
    todo = []
    for i, cell in enumerate(cells):
        cached = _load_cached(_cache_path(cache, cell), cell.key) if cache else None
        if cached is not None:
            results[i] = cached
        else:
            todo.append(i)

    lines = ProgressLines(desc, enabled=verbose and not is_terminal())
    lines(f"{len(todo)} cell(s) to run, {len(cells) - len(todo)} read from the cache")
    bar = progress(total=len(todo), desc=desc, verbose=verbose)

    def finish(i: int, result: dict) -> None:
        results[i] = result
        if cache:
            store_result(_cache_path(cache, cells[i]), cells[i], result)
        cell = cells[i]
        lines(f"{len(results) - (len(cells) - len(todo))}/{len(todo)} cells done: {cell.method} "
              f"on {cell.dataset}, fold {cell.fold}, seed {cell.seed}")  # fmt: skip
        bar.update()

    if scheduler is not None:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise ImportError(
                "scheduler= runs the cells on Dask: pip install 'rankmetric[dask]'."
            ) from None

        with Client(scheduler) as client:
            futures = {client.submit(execute_cell, cells[i], pure=False): i for i in todo}
            for fut in as_completed(futures):
                finish(futures[fut], fut.result())
    elif n_jobs > 1 and len(todo) > 1:
        _run_in_pool(cells, todo, n_jobs, finish)
    else:
        for i in todo:
            finish(i, execute_cell(cells[i], threads=max(1, n_jobs)))
    bar.close()
    return [results[i] for i in range(len(cells))]
