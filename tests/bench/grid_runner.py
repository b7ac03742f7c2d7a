"""A deterministic benchmark cell used by the grid tests (importable by worker processes)."""

import numpy as np


def noisy_mean(cell):
    rng = np.random.default_rng([cell.seed, cell.fold])
    return {"value": float(rng.normal(size=1000).mean() + cell.options.get("shift", 0.0))}


def failing_until_fetched(cell):
    """Fails like a cell whose data set is not in the cache, until ``options["flag"]`` exists."""
    from pathlib import Path

    if not Path(cell.options["flag"]).exists():
        return {
            "error": "ValueError: data set 'x' is not in the cache. Run `rankmetric data fetch x`"
        }
    return {"value": 1.0}


def slow_cell(cell):
    """Writes this worker's pid into ``options["pid_dir"]``, then sleeps."""
    import os
    import time
    from pathlib import Path

    (Path(cell.options["pid_dir"]) / str(os.getpid())).write_text("")
    time.sleep(cell.options.get("sleep", 60))
    return {"value": 0.0}
