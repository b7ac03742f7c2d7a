"""The bench cell cache and worker pool under damage and interruption (issue #15, findings 2, 9)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rankmetric.bench.grid import Cell, run_grid, store_result

sys.path.insert(0, str(Path(__file__).parent))

pytestmark = pytest.mark.timeout(180)


def _cells(n=2):
    return [
        Cell("demo", "m", "d", fold=f, seed=0, runner="grid_runner.noisy_mean", options={})
        for f in range(n)
    ]


def _file(cache, fold):
    return next(cache.rglob(f"fold{fold}-seed0-*.json"))


def test_an_edited_digit_is_recomputed_with_a_warning_naming_the_file(tmp_path):
    first = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    path = _file(tmp_path, 0)
    text = path.read_text()
    value = repr(first[0]["value"])
    edited = value[:-1] + ("1" if value[-1] != "1" else "2")
    path.write_text(text.replace(value, edited))
    with pytest.warns(RuntimeWarning, match=f"{path}.*digest"):
        again = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    assert again == first
    assert json.loads(path.read_text())["result"]["value"] == first[0]["value"]  # repaired


def test_another_cells_file_copied_over_is_recomputed(tmp_path):
    first = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    _file(tmp_path, 0).write_bytes(_file(tmp_path, 1).read_bytes())
    with pytest.warns(RuntimeWarning, match="holds another cell"):
        again = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    assert again == first


@pytest.mark.parametrize("content", ["{}", "[]", "null", "folder", b"\xff\xfe\x00bad", '{"a": '])
def test_a_damaged_cell_file_does_not_abort_the_run(tmp_path, content):
    first = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    path = _file(tmp_path, 0)
    path.unlink()
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.warns(RuntimeWarning, match=str(path)):
        again = run_grid(_cells(), cache_dir=tmp_path, verbose=False)
    assert again == first


def test_concurrent_runs_on_one_cache_do_not_collide(tmp_path):
    cell = _cells(1)[0]
    path = tmp_path / "c.json"
    errors = []

    def store_many():
        try:
            for i in range(100):
                store_result(path, cell, {"value": float(i)})
        except Exception as exc:  # noqa: BLE001 - any exception is the failure
            errors.append(repr(exc))

    threads = [threading.Thread(target=store_many) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_a_cell_that_failed_for_missing_data_runs_again_after_fetching(tmp_path):
    flag = tmp_path / "fetched"
    cells = [
        Cell(
            "demo",
            "m",
            "d",
            fold=0,
            seed=0,
            runner="grid_runner.failing_until_fetched",
            options={"flag": str(flag)},
        )  # fmt: skip
    ]
    cache = tmp_path / "cache"
    assert "error" in run_grid(cells, cache_dir=cache, verbose=False)[0]
    flag.write_text("")
    assert run_grid(cells, cache_dir=cache, verbose=False)[0] == {
        "cell": run_grid(cells, verbose=False)[0]["cell"],
        "value": 1.0,
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start_driver(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    driver = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("_grid_driver.py")),
            str(pids),
            str(tmp_path / "results"),
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal job is
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 2:
        assert driver.poll() is None, driver.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.2)
    return driver, [int(p.name) for p in pids.iterdir()]


def _wait_gone(pids, seconds=20.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


@pytest.mark.slow
def test_ctrl_c_on_a_jobs_2_run_prints_one_line_and_stops_the_workers(tmp_path):
    driver, workers = _start_driver(tmp_path)
    os.killpg(driver.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130
    assert err.strip() == "rankmetric: interrupted.", err[-3000:]
    assert _wait_gone(workers) == []


@pytest.mark.slow
def test_killing_a_jobs_2_run_leaves_no_worker_behind(tmp_path):
    driver, workers = _start_driver(tmp_path)
    driver.kill()
    driver.communicate(timeout=60)
    left = _wait_gone(workers)
    for pid in left:  # clean up what the bug would leave, then fail
        os.kill(pid, signal.SIGKILL)
    assert left == []
