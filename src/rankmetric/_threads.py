"""Thread counts that fit the work: one place that sizes every thread pool for a fit or search.

Four pools take every core by default: torch's intra-op pool, NumPy's and SciPy's BLAS, and
scikit-learn's OpenMP. On a busy machine a small problem then spends its time waiting for
threads (an LMNN fit on 285 samples took 5× longer next to one busy process, 170× next to
two multi-threaded ones). Inside :func:`thread_limit` all of them are set to one count and
restored afterwards:

* a problem below :data:`SMALL_WORK` (about a few milliseconds of arithmetic per pass) runs on
  one thread;
* a larger one keeps the thread count torch would use anyway (``torch.get_num_threads()``,
  every core unless ``OMP_NUM_THREADS`` or the user said otherwise);
* ``n_threads`` (a fit's or search's parameter) or an enclosing :func:`threads` block wins
  over both.

Estimators get this through :class:`~rankmetric.estimators.base.MetricLearnerMixin`, which
wraps every ``fit``; the evaluation functions call :func:`thread_limit` themselves.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

import numpy as np
import torch

__all__ = [
    "SMALL_WORK",
    "available_cores",
    "data_work",
    "fit_threads",
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
    return 1 if work < SMALL_WORK else torch.get_num_threads()


def _controller():
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


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

    Examples
    --------
    >>> from rankmetric import threads
    >>> with threads(4):  # doctest: +SKIP
    ...     LMNN().fit(X, y)
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

    The work is ``self._thread_work(X)`` when the estimator defines it, else
    ``n_samples × n_features``.
    """

    @functools.wraps(fit)
    def sized_fit(self, X, *args, **kwargs):
        work = self._thread_work(X) if hasattr(self, "_thread_work") else data_work(X)
        with thread_limit(threads_for(work, getattr(self, "n_threads", None))):
            return fit(self, X, *args, **kwargs)

    sized_fit.sized_threads = True
    return sized_fit
