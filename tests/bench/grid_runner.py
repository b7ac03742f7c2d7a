"""A deterministic benchmark cell used by the grid tests (importable by worker processes)."""

import numpy as np


def noisy_mean(cell):
    rng = np.random.default_rng([cell.seed, cell.fold])
    return {"value": float(rng.normal(size=1000).mean() + cell.options.get("shift", 0.0))}
