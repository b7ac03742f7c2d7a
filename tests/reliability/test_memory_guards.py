"""Fits that would exhaust memory raise a ValueError naming the memory first (issue #15, 7, 8)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.timeout(120)


def _no_kernel_allowed(*args, **kwargs):
    raise AssertionError("a kernel was computed before the memory check")


@pytest.fixture
def no_kernels(monkeypatch):
    import rankmetric.estimators.kernel_warca as kw

    monkeypatch.setattr(kw, "pairwise_kernel", _no_kernel_allowed)
    monkeypatch.setattr(kw.NystroemMap, "fit", _no_kernel_allowed)
    monkeypatch.setattr(kw, "default_gamma", _no_kernel_allowed)


def test_kernel_warca_with_50000_landmarks_is_refused_before_any_kernel(no_kernels):
    from rankmetric import KernelWARCA

    rng = np.random.default_rng(0)
    X, y = rng.random((50_000, 2)), np.arange(50_000) % 2
    with pytest.raises(ValueError, match=r"50000 × 50000 landmark kernel: about \d+\.\d GiB"):
        KernelWARCA(n_landmarks=50_000, gamma=1.0).fit(X, y)


def test_kernel_warca_exact_kernel_over_the_limit_is_refused(no_kernels, monkeypatch):
    import rankmetric.estimators.kernel_warca as kw

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
