"""Thread counts that fit the work: one place that sizes every thread pool for a fit or search.

Four pools take every core by default: torch's intra-op pool, NumPy's and SciPy's BLAS, and
scikit-learn's OpenMP. On a busy machine a small problem then spends its time waiting for
threads (an LMNN fit on 285 samples took 5× longer next to one busy process, 170× next to
two multi-threaded ones). Inside :func:`thread_limit` all of them are set to one count and
restored afterwards:

* a problem below :data:`SMALL_WORK` (about a few milliseconds of arithmetic per pass) runs on
  one thread;
* a larger one keeps the thread count torch would use anyway (``torch.get_num_threads()``,
  every core unless ``OMP_NUM_THREADS`` or the user said otherwise), but no more than the
  cores other processes leave free (:func:`free_cores`): on a machine that is already busy, a
  second thread gets no core of its own and every parallel region waits for it (a 1,000 ×
  300,000 search took 68 s on two threads against 12.5 s on one next to seven busy processes);
  set ``RANKMETRIC_LOAD_AWARE=0`` to turn this off;
* ``n_threads`` (a fit's or search's parameter) or an enclosing :func:`threads` block wins
  over both.

Estimators get this through the decorator on each of their fit methods
(:func:`~rankmetric.estimators.base.fit_context`, which applies :func:`fit_threads`); the public
evaluation and search entry points get it through :func:`call_threads`, which sizes the pools by
the search's ``n_queries × n_gallery × d``. The code below them (the ranking kernel, the
neighbour search, k-means, the index's internals) sets no thread count.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

import numpy as np
import torch

__all__ = [
    "SMALL_WORK",
    "available_cores",
    "call_threads",
    "data_work",
    "search_work",
    "fit_threads",
    "free_cores",
    "single_blas_thread",
    "thread_limit",
    "threads",
    "threads_for",
]

#: Work (in multiply-adds of one pass over the data) below which one thread is used. A pass
#: over 10⁷ multiply-adds takes about 5 ms on one core: less than the cost of waking threads
#: that compete with other processes.
SMALL_WORK = 10**7

_CONTROLLER: list = []
_USER_THREADS: ContextVar[int | None] = ContextVar("rankmetric_threads", default=None)


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _own_runnable() -> int:
    """Threads of this process runnable right now (the caller included)."""
    running = 0
    for task in os.scandir("/proc/self/task"):
        try:
            with open(f"{task.path}/stat", encoding="ascii", errors="replace") as f:
                running += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(running, 1)


def _other_runnable() -> float | None:
    """Threads of other processes runnable right now, or None where this cannot be read.

    Linux's ``/proc/loadavg`` counts the runnable threads of the whole machine at this instant;
    this process's own runnable threads (the caller, and pool threads still spinning after
    their last parallel region) are taken off. The median of three reads smooths momentary
    wake-ups.
    """
    counts = []
    try:
        for attempt in range(3):
            with open("/proc/loadavg", encoding="ascii") as f:
                total = int(f.read().split()[3].split("/")[0])
            counts.append(total - _own_runnable())
            if attempt < 2:
                time.sleep(0)  # let a momentarily woken thread settle
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, float(np.median(counts)))


def free_cores() -> int:
    """Cores of this process's share of the machine that other processes leave free (≥ 1).

    Other runnable threads are counted machine-wide; where this process may run on fewer cores
    than the machine has, they are scaled to its share. ``RANKMETRIC_LOAD_AWARE=0`` (or a
    machine where the load cannot be read) gives every available core.
    """
    cores = available_cores()
    others = None if os.environ.get("RANKMETRIC_LOAD_AWARE", "1") == "0" else _other_runnable()
    if others is None:
        return cores
    share = cores / max(os.cpu_count() or cores, cores)
    return max(1, cores - round(others * share))


def _check_n_threads(n_threads) -> int | None:
    """``None``, a positive integer, or ``-1`` (every core) → ``None`` or a count."""
    if n_threads is None:
        return None
    ok = isinstance(n_threads, Integral) and not isinstance(n_threads, bool)
    if not ok or (n_threads < 1 and n_threads != -1):
        raise ValueError(f"n_threads must be a positive integer, -1 or None, got {n_threads!r}.")
    return available_cores() if n_threads == -1 else int(n_threads)


def threads_for(work: float, n_threads: int | None = None) -> int:
    """The thread count for a problem of ``work`` multiply-adds per pass.

    Parameters
    ----------
    work : float
        Size of the problem, e.g. ``n_samples × n_features``.
    n_threads : int, optional
        The caller's explicit choice (``-1``: every core); it wins.

    Returns
    -------
    int
    """
    chosen = _check_n_threads(n_threads)
    if chosen is not None:
        return chosen
    user = _USER_THREADS.get()
    if user is not None:
        return user
    if work < SMALL_WORK:
        return 1
    return min(torch.get_num_threads(), free_cores())


def _controller():
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def single_blas_thread():
    """Context manager running NumPy/SciPy BLAS on one thread (torch's own pool is untouched).

    For loops of tiny BLAS calls (an optimiser's vector updates, rank-one projections, stacked
    products of small matrices) threads only add synchronisation: on a busy machine OpenBLAS'
    spinning threads slowed scipy's L-BFGS-B about 70-fold. This is the one thread setting
    allowed below the estimators (it pins, it does not size; ``docs/architecture.md``).
    """
    return _controller().limit(limits=1, user_api="blas")


@contextmanager
def thread_limit(n: int) -> Iterator[int]:
    """Run the block with ``n`` threads in torch and in every BLAS/OpenMP pool; restore after."""
    previous = torch.get_num_threads()
    if n != previous:
        torch.set_num_threads(n)
    try:
        with _controller().limit(limits=n):
            yield n
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)


@contextmanager
def threads(n_threads: int) -> Iterator[int]:
    """Use ``n_threads`` threads (``-1``: every core) in every fit and search of the block.

    Parameters
    ----------
    n_threads : int
        Threads to use, or ``-1`` for every core.

    Yields
    ------
    int
        The thread count in force inside the block.

    See Also
    --------
    rankmetric.memory_limit : The same kind of block for the memory budget.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import KISSME, threads
    >>> X, y = load_iris(return_X_y=True)
    >>> with threads(1) as n:
    ...     model = KISSME().fit(X, y)
    >>> n
    1
    """
    n = _check_n_threads(n_threads)
    if n is None:
        raise ValueError("n_threads must be a positive integer or -1, got None.")
    token = _USER_THREADS.set(n)
    try:
        with thread_limit(n):
            yield n
    finally:
        _USER_THREADS.reset(token)


def data_work(X) -> float:
    """``n_samples × n_features`` (all entries) of an array-like; 0 when unknown."""
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            shape = np.shape(X)
        except (TypeError, ValueError):
            return 0.0
    return float(np.prod(shape)) if len(shape) else 0.0


def fit_threads(fit: Callable) -> Callable:
    """Decorate ``fit(self, X, ...)``: size the thread pools by ``X`` and ``self.n_threads``.

    The work is ``n_samples × n_features``. An invalid ``n_threads`` is left to the fit's own
    parameter validation (its ``_parameter_constraints`` name the problem); the pools are then
    sized as for ``n_threads=None`` until that validation raises.
    """

    @functools.wraps(fit)
    def sized_fit(self, X, *args, **kwargs):
        work = data_work(X)
        n_threads = getattr(self, "n_threads", None)
        try:
            limit = threads_for(work, n_threads)
        except ValueError:
            if not hasattr(self, "_parameter_constraints"):
                raise
            limit = threads_for(work)
        with thread_limit(limit):
            return fit(self, X, *args, **kwargs)

    return sized_fit


def search_work(gallery, queries=None) -> float:
    """``n_queries × n_gallery × d`` of a search (leave-one-out without ``queries``); 0 when
    unknown."""
    source = gallery if queries is None else queries
    try:
        n_queries = source.shape[0] if hasattr(source, "shape") else len(source)
    except TypeError:
        return 0.0
    return float(n_queries) * data_work(gallery)


def call_threads(work: Callable[..., float]) -> Callable:
    """Decorate a public evaluation or search function: size the thread pools by
    ``work(arguments)`` (a dict of its bound arguments, defaults included), as
    :func:`fit_threads` does for a fit; an ``n_threads`` argument of the function (of a method's
    object) wins.

    Input the work estimate cannot read counts as small work; the function's own validation
    names the problem.
    """

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def sized(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                size = work(bound.arguments)
            except Exception:  # the call below reports bad input
                size, bound = 0.0, None
            arguments = {} if bound is None else bound.arguments
            owner = getattr(arguments.get("self"), "n_threads", None)  # a method: its object's
            n_threads = arguments.get("n_threads", owner)
            with thread_limit(threads_for(size, n_threads)):
                return fn(*args, **kwargs)

        return sized

    return decorate
