"""Thread pools sized by the work: one thread for small problems, restored afterwards."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from rankmetric import _threads
from rankmetric._threads import SMALL_WORK, thread_limit, threads, threads_for
from rankmetric.estimators.base import MetricLearnerMixin, fit_context


def _pool_threads() -> list[int]:
    return sorted(p["num_threads"] for p in threadpool_info())


class _Recorder(MetricLearnerMixin):
    """A minimal estimator whose fit records the thread counts it ran with."""

    def __init__(self, n_threads=None):
        self.n_threads = n_threads

    @fit_context
    def fit(self, X, y=None):
        self.torch_threads_ = torch.get_num_threads()
        self.pool_threads_ = _pool_threads()
        return self


def test_small_work_gets_one_thread_large_keeps_torchs(two_threads):
    assert threads_for(SMALL_WORK - 1) == 1
    assert threads_for(SMALL_WORK) == 2
    assert threads_for(1, n_threads=3) == 3
    assert threads_for(1, n_threads=-1) == _threads.available_cores()


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_n_threads_raises(bad):
    with pytest.raises(ValueError, match="n_threads"):
        threads_for(1, n_threads=bad)


def test_thread_limit_sets_every_pool_and_restores(two_threads):
    before = _pool_threads()
    with thread_limit(1):
        assert torch.get_num_threads() == 1
        assert set(_pool_threads()) == {1}
    assert torch.get_num_threads() == 2
    assert _pool_threads() == before


def test_thread_limit_restores_after_an_error(two_threads):
    with pytest.raises(RuntimeError), thread_limit(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 2


def test_fit_of_an_estimator_is_sized_by_its_data(two_threads):
    small = _Recorder().fit(np.zeros((10, 3)))
    assert small.torch_threads_ == 1 and set(small.pool_threads_) == {1}
    assert torch.get_num_threads() == 2
    # a large problem keeps torch's count: judged by the shape only, so a broadcast view
    # stands in for a large array without allocating it
    large = _Recorder().fit(np.broadcast_to(np.float32(0), (SMALL_WORK, 1)))
    assert large.torch_threads_ == 2
    assert _Recorder(n_threads=3).fit(np.zeros((10, 3))).torch_threads_ == 3
    assert torch.get_num_threads() == 2


def test_threads_block_overrides_the_size_rule(two_threads):
    with threads(2):
        assert _Recorder().fit(np.zeros((10, 3))).torch_threads_ == 2
    assert _Recorder().fit(np.zeros((10, 3))).torch_threads_ == 1
    with pytest.raises(ValueError, match="n_threads"):
        with threads(None):
            pass


def test_real_estimators_and_searches_run_small_problems_on_one_thread(two_threads, monkeypatch):
    from rankmetric import WARCA
    from rankmetric.evaluate import knn as knn_module
    from rankmetric.evaluate import knn_search

    seen = []
    original = knn_module._torch_search

    def spy(*args):
        seen.append(torch.get_num_threads())
        return original(*args)

    monkeypatch.setattr(knn_module, "_torch_search", spy)
    X = np.random.default_rng(0).normal(size=(40, 3))
    knn_search(X, k=2)
    knn_search(X, k=2, n_threads=2)
    assert seen == [1, 2]
    with pytest.raises(ValueError, match="n_threads"):
        WARCA(n_threads=0).fit(X, np.arange(40) % 2)
    assert torch.get_num_threads() == 2


def test_large_work_on_a_busy_machine_gets_the_free_cores(two_threads, monkeypatch):
    monkeypatch.setattr(_threads, "available_cores", lambda: 2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_threads, "_other_runnable", lambda: 1.0)
    assert _threads.free_cores() == 1
    assert threads_for(SMALL_WORK) == 1
    assert threads_for(SMALL_WORK, n_threads=2) == 2  # an explicit choice wins
    with threads(2):
        assert threads_for(SMALL_WORK) == 2
    monkeypatch.setattr(_threads, "_other_runnable", lambda: 7.0)
    assert _threads.free_cores() == 1  # never below one
    monkeypatch.setenv("RANKMETRIC_LOAD_AWARE", "0")
    assert _threads.free_cores() == 2
    assert threads_for(SMALL_WORK) == 2


def test_other_processes_are_scaled_to_this_process_share_of_the_machine(monkeypatch):
    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(_threads, "_other_runnable", lambda: 8.0)  # 2 of them on our 4 cores
    assert _threads.free_cores() == 2
    monkeypatch.setattr(_threads, "_other_runnable", lambda: None)  # load unreadable
    assert _threads.free_cores() == 4


def test_load_probe_counts_another_busy_process_and_not_this_ones_threads():
    import os
    import subprocess
    import sys

    if _threads._other_runnable() is None:
        # macOS/Windows have no /proc/loadavg: nothing to probe there (the unreadable-load
        # fallback, every core, is tested above with a stubbed probe)
        pytest.skip("needs Linux's /proc/loadavg to observe a busy process")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start spinning: from then on it is always runnable
        assert _threads._other_runnable() >= 1.0
        if _threads.available_cores() == os.cpu_count():  # no share scaling to account for
            assert _threads.free_cores() <= max(1, _threads.available_cores() - 1)
    finally:
        spinner.kill()
        spinner.wait()
