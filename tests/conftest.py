"""Shared test settings: small thread counts (CI has 2 cores) and deterministic seeds."""

import numpy as np
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def two_threads(monkeypatch):
    """Run a test with two torch threads (the suite runs with one) on what looks like an idle
    machine (the load probe of ``rankmetric._threads`` sees no other process), then restore."""
    from rankmetric import _threads

    monkeypatch.setattr(_threads, "_other_runnable", lambda: 0.0)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
