"""Random SPD matrices for the geometry tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def _random_spd(rng: np.random.Generator, n: int, c: int, spread: float = 1.0) -> np.ndarray:
    """``n`` random SPD matrices ``Q diag(exp(spread * z)) Qᵀ``, float64 of shape (n, c, c)."""
    Q = np.linalg.qr(rng.standard_normal((n, c, c)))[0]
    eigenvalues = np.exp(spread * rng.standard_normal((n, 1, c)))
    return (Q * eigenvalues) @ np.swapaxes(Q, -1, -2)


def _spd_with_spectrum(rng: np.random.Generator, eigenvalues) -> torch.Tensor:
    """One float64 SPD tensor with the given eigenvalues and a random eigenbasis."""
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    Q = np.linalg.qr(rng.standard_normal((eigenvalues.size, eigenvalues.size)))[0]
    return torch.from_numpy((Q * eigenvalues) @ Q.T)


@pytest.fixture(scope="session")
def make_spd():
    """``make_spd(rng, n, c, spread=1.0)`` → float64 ndarray of shape (n, c, c)."""
    return _random_spd


@pytest.fixture(scope="session")
def spd_with_spectrum():
    """``spd_with_spectrum(rng, eigenvalues)`` → float64 tensor of shape (c, c)."""
    return _spd_with_spectrum
