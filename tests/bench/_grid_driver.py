"""Driver subprocess for the interruption tests: a ``--jobs 2`` grid of slow cells.

``python _grid_driver.py PID_DIR RESULTS_DIR`` runs ``rankmetric bench ssne-uci --jobs 2`` with
the benchmark replaced by four cells of ``grid_runner.slow_cell``.
"""

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import rankmetric.bench.runner as runner  # noqa: E402
from rankmetric.bench.grid import Cell, run_grid  # noqa: E402
from rankmetric.cli import main  # noqa: E402


def slow_benchmark(name, config, *, n_jobs=1, **kwargs):
    cells = [
        Cell(
            "t",
            "m",
            "d",
            fold=i,
            seed=0,
            runner="grid_runner.slow_cell",
            options={"pid_dir": sys.argv[1], "sleep": 60},
        )  # fmt: skip
        for i in range(4)
    ]
    run_grid(cells, n_jobs=n_jobs, verbose=False)


if __name__ == "__main__":  # spawned workers import this file as __mp_main__
    # A terminal job gets Ctrl-C; a job started in the background of a script (as a CI runner
    # may start the suite) inherits SIGINT ignored, and Python then installs no handler for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    runner.run_benchmark = slow_benchmark
    sys.exit(main(["bench", "ssne-uci", "--jobs", "2", "--quiet", "--results-dir", sys.argv[2]]))
