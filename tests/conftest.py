"""Shared test settings: small thread counts (CI has 2 cores) and deterministic seeds."""

import numpy as np
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
