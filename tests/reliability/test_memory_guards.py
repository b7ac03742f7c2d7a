"""Fits that would exhaust memory raise a ValueError naming the memory first (issue #15, 7, 8)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import rankmetric

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]


def _no_kernel_allowed(*args, **kwargs):
    raise AssertionError("a kernel was computed before the memory check")


@pytest.fixture
def no_kernels(monkeypatch):
    import rankmetric.estimators.warca.kernel as kw

    monkeypatch.setattr(kw, "pairwise_kernel", _no_kernel_allowed)
    monkeypatch.setattr(kw.NystroemMap, "fit", _no_kernel_allowed)
    monkeypatch.setattr(kw, "default_gamma", _no_kernel_allowed)


def test_kernel_warca_with_50000_landmarks_is_refused_before_any_kernel(no_kernels):
    from rankmetric import KernelWARCA

    rng = np.random.default_rng(0)
    X, y = rng.random((50_000, 2)), np.arange(50_000) % 2
    kernel = r"50000 × 50000 landmark kernel would need about \d+\.\d GiB"
    with rankmetric.memory_limit("4G"), pytest.raises(ValueError, match=kernel):
        # under 9.3 GiB, whatever this host has (a 128 GiB host or a large GPU has room)
        KernelWARCA(n_landmarks=50_000, gamma=1.0, device="cpu").fit(X, y)


def test_kernel_warca_exact_kernel_over_the_limit_is_refused(no_kernels, monkeypatch):
    import rankmetric.estimators.warca.kernel as kw

    monkeypatch.setattr(kw, "MAX_KERNEL_BYTES", 1 << 20)
    X, y = np.random.default_rng(0).random((400, 3)), np.arange(400) % 2
    with pytest.raises(ValueError, match="400 × 400 kernel"):
        kw.KernelWARCA(gamma=1.0).fit(X, y)


def test_kernel_warca_within_the_limit_still_fits():
    from rankmetric import KernelWARCA

    X, y = np.random.default_rng(0).random((60, 3)), np.arange(60) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = KernelWARCA(max_iter=5, n_components=2, random_state=0).fit(X, y)
    assert est.components_.shape == (2, 60)


_OBJECTIVE_PEAK = """
import sys
from pathlib import Path
import torch
torch.set_num_threads(1)
import rankmetric.estimators.lmnn as lm
k, m, n = int(sys.argv[1]), int(sys.argv[2]), 4000
g = torch.Generator().manual_seed(0)
X, L = torch.randn(n, 20, generator=g), torch.randn(20, 20, generator=g)
targets = torch.randint(0, n, (n, k), generator=g)
pairs = [torch.randint(0, n, (m,), generator=g) for _ in range(2)]
active = lm.ActiveSet(targets, torch.ones(n, k, dtype=torch.bool), *pairs)
def status_kb(field):  # VmRSS: resident now; VmHWM: peak (ru_maxrss is inherited over exec)
    lines = Path("/proc/self/status").read_text().splitlines()
    return int(next(x for x in lines if x.startswith(field)).split()[1])
Path("/proc/self/clear_refs").write_text("5")  # reset the peak mark to the resident size
base = status_kb("VmRSS")
lm.lmnn_loss_and_grad(L, X, active, 0.5)
print((status_kb("VmHWM") - base) * 1024 / m + 16)  # + the pair's own two int64 indices
"""


@pytest.mark.parametrize("k", [3, 8])
def test_lmnn_objective_memory_per_pair_stays_within_the_guards_bound(k):
    """The real peak of the objective on 3M pairs (rank 20), per pair, is what the guard counts.

    Before the pair distances were chunked, the objective gathered (pairs × rank) embeddings:
    about 300 B per pair at rank 20 against the 96 B the old guard counted.
    """
    import subprocess
    import sys

    from rankmetric.estimators.lmnn import PAIR_BYTES, PAIR_BYTES_PER_K

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc peak-memory marks")

    done = subprocess.run(
        [sys.executable, "-c", _OBJECTIVE_PEAK, str(k), "3000000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    per_pair = float(done.stdout.split()[-1])
    assert 16 + 4 * k < per_pair <= PAIR_BYTES + PAIR_BYTES_PER_K * k, per_pair


def test_lmnn_guard_names_the_memory_of_the_real_per_pair_cost():
    import rankmetric.estimators.lmnn.search as lm
    from rankmetric import memory_limit

    per_pair = lm.PAIR_BYTES + 3 * lm.PAIR_BYTES_PER_K
    with memory_limit(4 << 30):
        with pytest.raises(ValueError, match=r"about 4\.0 GiB.*4\.0 GiB \(rankmetric.memory_limit"):
            lm.check_active_set_size(int((4 << 30) / per_pair) + 10, 3, 10)
        lm.check_active_set_size(int((4 << 30) / per_pair) - 10, 3, 10)


def test_an_estimated_active_set_must_leave_room_to_grow():
    """A sampled estimate is refused once it needs more than 1 / ESTIMATE_GROWTH of the budget
    (the set grows between searches); an exact count is held to the budget itself."""
    import rankmetric.estimators.lmnn.search as lm
    from rankmetric import memory_limit

    per_pair = lm.PAIR_BYTES + 3 * lm.PAIR_BYTES_PER_K
    pairs = int(0.75 * (4 << 30) / per_pair)  # 3/4 of the budget
    with memory_limit(4 << 30):
        lm.check_active_set_size(pairs, 3, 10)
        with pytest.raises(ValueError, match=r"room to grow ×2 between searches"):
            lm.check_active_set_size(pairs, 3, 10, estimated=True)
        lm.check_active_set_size(int(pairs / 1.6), 3, 10, estimated=True)


def test_lmnn_fixed_ceiling_still_applies(monkeypatch):
    import rankmetric.estimators.lmnn.search as lm

    monkeypatch.setattr(lm, "MAX_ACTIVE_SET_BYTES", 1 << 20)
    with pytest.raises(ValueError, match="MAX_ACTIVE_SET_BYTES = 0.0 GiB"):
        lm.check_active_set_size(10_000, 3, 100)


def _no_full_search(*args, **kwargs):
    raise AssertionError("the full impostor search ran before the memory check")


@pytest.mark.parametrize("name", ["LMNN", "MultiMetricLMNN"])
def test_lmnn_refuses_up_front_under_a_small_budget(monkeypatch, name):
    """The active set is estimated from sampled anchors and refused before the full search."""
    import time

    import rankmetric
    import rankmetric.estimators.lmnn.search as lm

    monkeypatch.setattr(lm, "find_impostors", _no_full_search)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((3000, 10)), rng.integers(0, 5, 3000)
    start = time.perf_counter()
    with rankmetric.memory_limit("2M"), pytest.raises(ValueError) as info:
        getattr(rankmetric, name)(max_iter=5, random_state=0).fit(X, y)
    assert time.perf_counter() - start < 30
    message = str(info.value)
    assert "active set of about" in message
    assert "2.0 MiB (rankmetric.memory_limit)" in message
    assert "subsample" in message and "RANKMETRIC_MEMORY_LIMIT" in message


def test_lmnn_estimate_of_the_active_set_is_close_to_the_search():
    import torch

    import rankmetric.estimators.lmnn.search as lm

    g = torch.Generator().manual_seed(0)
    X = torch.randn(2000, 8, generator=g)
    codes = torch.randint(0, 4, (2000,), generator=g)
    targets, mask = lm.find_target_neighbors(X, codes, 3)
    exact = lm.find_impostors(X, codes, targets, mask)[0].numel()
    estimate = lm.estimate_impostor_pairs(X, codes, targets, mask, n_probe=400)
    assert abs(estimate - exact) < 0.15 * exact
    assert lm.estimate_impostor_pairs(X, codes, targets, mask, n_probe=5000) == exact


def test_kernel_warca_kernel_over_the_budget_is_refused(no_kernels):
    import rankmetric

    X, y = np.random.default_rng(0).random((400, 3)), np.arange(400) % 2
    with rankmetric.memory_limit("1M"), pytest.raises(ValueError, match="400 × 400 kernel would"):
        rankmetric.KernelWARCA(gamma=1.0).fit(X, y)


def test_knn_search_refuses_a_result_beyond_the_budget():
    import rankmetric
    from rankmetric.evaluate import knn_search

    X = np.random.default_rng(0).random((3000, 4)).astype(np.float32)
    with rankmetric.memory_limit("100K"), pytest.raises(ValueError, match="3000 × 100 neighbours"):
        knn_search(X, k=100)
    assert knn_search(X, k=3)[1].shape == (3000, 3)


@pytest.mark.parametrize("name", ["KISSME", "XQDA", "ITML"])
def test_feature_square_estimators_refuse_before_forming_their_matrices(name):
    """ITML, KISSME and XQDA hold several n_features × n_features float64 matrices: a budget that
    cannot hold them is refused up front, naming the size and what to do."""
    import rankmetric
    from rankmetric.estimators import ITML, XQDA
    from rankmetric.estimators.pair_covariance import KISSME

    cls = {"KISSME": KISSME, "XQDA": XQDA, "ITML": ITML}[name]
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 300)), np.repeat(np.arange(6), 10)
    with rankmetric.memory_limit("1M"), pytest.raises(ValueError) as info:
        cls().fit(X, y)  # 300² · 8 B = 0.7 MiB per matrix
    message = str(info.value)
    assert f"{name}'s" in message and "300 × 300 features" in message and "PCA" in message
    with rankmetric.memory_limit("64M"):
        cls().fit(X[:, :20], y)
