import json
import sys
from pathlib import Path

import pytest

from rankmetric.bench.grid import Cell, result_digest, run_grid

sys.path.insert(0, str(Path(__file__).parent))


def _cells(n=4, shift=0.0):
    return [
        Cell(
            "demo",
            "m",
            "d",
            fold=f,
            seed=s,
            runner="grid_runner.noisy_mean",
            options={"shift": shift},
        )
        for f in range(2)
        for s in range(n // 2)
    ]


def test_serial_results_are_deterministic_and_cached(tmp_path):
    first = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    assert len(list(tmp_path.rglob("*.json"))) == 4
    # a cached cell is reused, not recomputed: re-sign an altered value and see it come back
    path = next(tmp_path.rglob("fold0-seed0-*.json"))
    record = json.loads(path.read_text())
    record["result"]["value"] = 123.0
    record["digest"] = result_digest(record["result"])
    path.write_text(json.dumps(record))
    again = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    assert again[0]["value"] == 123.0
    assert [r["value"] for r in again[1:]] == [r["value"] for r in first[1:]]


def test_options_change_the_cache_key(tmp_path):
    a = run_grid(_cells(shift=0.0), cache_dir=tmp_path, verbose=False)
    b = run_grid(_cells(shift=1.0), cache_dir=tmp_path, verbose=False)
    assert b[0]["value"] == pytest.approx(a[0]["value"] + 1.0)


def test_process_pool_matches_serial():
    serial = run_grid(_cells(), verbose=False)
    parallel = run_grid(_cells(), n_jobs=2, verbose=False)
    assert serial == parallel


@pytest.mark.slow
def test_dask_cluster_matches_serial():
    from distributed import LocalCluster

    serial = run_grid(_cells(), verbose=False)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cl:
        on_dask = run_grid(_cells(), scheduler=cl.scheduler_address, verbose=False)
    assert serial == on_dask
