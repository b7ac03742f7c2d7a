"""check_spd on NumPy and torch input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.geometry import check_spd

BAD_INPUTS = [
    (np.ones(3), r"shape \(\.\.\., c, c\)"),
    (np.ones((2, 2, 3)), r"shape \(\.\.\., c, c\)"),
    (np.ones((0, 2, 2)), "empty"),
    (np.array([[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN"),
    (np.array([[1.0, np.inf], [np.inf, 1.0]]), "NaN or infinity"),
    (np.array([[1.0, 0.0], [0.0, 0.0]]), "not positive definite"),
    (np.stack([np.eye(2), -np.eye(2)]), r"S\[1\] is not positive definite"),
]


@pytest.mark.parametrize("as_tensor", [False, True])
@pytest.mark.parametrize(("X", "match"), BAD_INPUTS)
def test_bad_input_raises_naming_the_problem(X, match, as_tensor):
    with pytest.raises(ValueError, match=match):
        check_spd(torch.from_numpy(X) if as_tensor else X, name="S")


@pytest.mark.parametrize("as_tensor", [False, True])
def test_valid_input_is_returned(as_tensor, rng):
    A = rng.standard_normal((2, 3, 4, 8))
    X = A @ np.swapaxes(A, -1, -2)
    X = torch.from_numpy(X) if as_tensor else X
    out = check_spd(X)
    assert out.shape == (2, 3, 4, 4)
    assert type(out) is type(X)


def test_rounding_asymmetry_is_tolerated():
    X = np.eye(3)
    X[0, 1] = 1e-9
    check_spd(X)
    check_spd(torch.from_numpy(X).float())
