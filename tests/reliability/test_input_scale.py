"""Inputs at any scale (issue #27): finite input whose magnitude overflows (or underflows) the
arithmetic is refused with one ValueError that says so, never an IndexError, a LinAlgError, a
NonFiniteLossError or the name of an internal parameter (``gamma``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rankmetric as rm

ESTIMATORS = {
    "LMNN": lambda: rm.LMNN(max_iter=5),
    "MultiMetricLMNN": lambda: rm.MultiMetricLMNN(max_iter=5, n_clusters=2),
    "KISSME": lambda: rm.KISSME(),
    "KernelWARCA": lambda: rm.KernelWARCA(max_iter=5),
    "WARCA": lambda: rm.WARCA(max_iter=5),
    "XQDA": lambda: rm.XQDA(),
}
# The failures at each scale (today's code): IndexError 4294967295 (LMNN, mLMNN at 1e30),
# LinAlgError (KISSME, LMNN, mLMNN at 1e300), "gamma must be ... got 0.0" (KernelWARCA at
# 1e30), NonFiniteLossError (WARCA at 1e300); float32 methods also fail at 1e30.
CASES = [
    ("LMNN", 1e30),
    ("LMNN", 1e300),
    ("MultiMetricLMNN", 1e30),
    ("MultiMetricLMNN", 1e300),
    ("KISSME", 1e300),
    ("KernelWARCA", 1e30),
    ("KernelWARCA", 1e300),
    ("WARCA", 1e30),
    ("WARCA", 1e300),
    ("XQDA", 1e300),
]


def _data(scale):
    rng = np.random.default_rng(0)
    return rng.standard_normal((60, 4)) * scale, np.repeat([0, 1, 2], 20)


@pytest.mark.parametrize(("name", "scale"), CASES)
def test_huge_finite_input_is_refused_naming_the_scale(name, scale):
    X, y = _data(scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="overflow in float(32|64) arithmetic") as info:
            ESTIMATORS[name]().fit(X, y)
    message = str(info.value)
    assert "StandardScaler" in message and "gamma" not in message


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_input_whose_squares_underflow_is_refused(name):
    X, y = _data(1e-300)
    with pytest.raises(ValueError, match="underflow to zero"):
        ESTIMATORS[name]().fit(X, y)


@pytest.mark.parametrize("name", ["LMNN", "KISSME", "WARCA"])
def test_large_but_representable_input_still_fits(name):
    X, y = _data(1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ESTIMATORS[name]().fit(X, y)
    assert np.isfinite(est.transform(X)).all()


def test_check_scale_bounds():
    from rankmetric._validation import check_scale

    check_scale(np.zeros((3, 2)))  # all zeros: nothing to overflow
    check_scale(np.full((2, 4), 4e15))
    with pytest.raises(ValueError, match="up to 5e\\+15.*between 1.1e-19 and 4.6e\\+15 for 4"):
        check_scale(np.full((2, 4), 5e15))
    check_scale(np.full((2, 4), 1e150), np.float64)
    with pytest.raises(ValueError, match="float64"):
        check_scale(np.full((2, 4), 1e151), np.float64)
    with pytest.raises(ValueError, match="Z has values"):
        check_scale(np.full((2, 4), 1e-20), name="Z")


def test_kernel_warca_on_huge_histograms_names_the_scale_not_gamma():
    """Non-negative features reach the χ² kernel, whose default width underflowed to 0.0."""
    X, y = _data(1e30)
    with pytest.raises(ValueError, match="overflow in float32") as info:
        rm.KernelWARCA(max_iter=5).fit(np.abs(X), y)
    assert "gamma" not in str(info.value)
