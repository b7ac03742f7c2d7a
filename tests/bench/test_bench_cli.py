"""``rankmetric bench``: the command line, its outputs, and serial = processes = Dask (issue #7)."""

import json

import pytest

from rankmetric.bench import strip_timings
from rankmetric.cli import main

TINY = ["warca-reid", "--quick", "--datasets", "synthetic-reid", "--methods", "euclidean",
        "kissme", "--seeds", "2", "--quiet"]  # fmt: skip


def _cells(root):
    payload = json.loads((root / "warca-reid" / "warca-reid.json").read_text())
    return payload, [strip_timings(c) for c in payload["cells"]]


def test_bench_command_writes_markdown_json_and_plots(tmp_path, capsys):
    assert main(["bench", *TINY, "--results-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "QUICK MODE" in printed and "| KISSME |" in printed
    assert "rankmetric bench warca-reid --quick" in printed
    payload, cells = _cells(tmp_path)
    assert payload["config"]["quick"] is True and len(cells) == 4
    assert payload["environment"]["torch"]
    assert (tmp_path / "warca-reid" / "warca_cmc.png").stat().st_size > 0
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 4


def test_jobs_give_the_serial_results(tmp_path):
    assert main(["bench", *TINY, "--results-dir", str(tmp_path / "serial")]) == 0
    assert main(["bench", *TINY, "--jobs", "2", "--results-dir", str(tmp_path / "pool")]) == 0
    serial, serial_cells = _cells(tmp_path / "serial")
    pooled, pooled_cells = _cells(tmp_path / "pool")
    assert serial_cells == pooled_cells
    assert serial["summary"] == pooled["summary"]


@pytest.mark.slow
def test_dask_scheduler_gives_the_serial_results(tmp_path):
    from distributed import LocalCluster

    assert main(["bench", *TINY, "--results-dir", str(tmp_path / "serial")]) == 0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:  # fmt: skip
        args = ["--scheduler", cluster.scheduler_address, "--results-dir", str(tmp_path / "dask")]
        assert main(["bench", *TINY, *args]) == 0
    assert _cells(tmp_path / "serial")[1] == _cells(tmp_path / "dask")[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--jobs", "0"], "--jobs"),
        (["--seeds", "0"], "--seeds"),
        (["--methods", "nope"], "unknown methods"),
        (["--data", "absent.npz"], "--data absent.npz: no such file"),
        (["--data", "iris"], "expected a feature file"),
    ],
)
def test_bad_arguments_are_reported(tmp_path, capsys, argv, message):
    argv = ["bench", "warca-reid", "--quick", "--quiet", "--results-dir", str(tmp_path), *argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_all_refuses_a_sub_grid(tmp_path, capsys):
    assert main(["bench", "all", "--datasets", "iris", "--results-dir", str(tmp_path)]) == 2
    assert "not with 'all'" in capsys.readouterr().err


def test_help_lists_the_benchmarks(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    assert all(name in text for name in ("ssne-uci", "rpl-spd", "warca-reid", "all"))


def test_data_goes_with_warca_reid_only(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "f.npz"
    np.savez(path, X=np.eye(4), y=[0, 0, 1, 1])
    assert main(["bench", "ssne-uci", "--data", str(path), "--results-dir", str(tmp_path)]) == 2
    assert "use it with warca-reid" in capsys.readouterr().err
    argv = ["bench", "warca-reid", "--data", str(path), "--datasets", "synthetic-reid"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 2
    assert "either --data PATH" in capsys.readouterr().err
    np.savez(path, X=np.eye(4), y=[0, 0, 0, 0])
    assert main(["bench", "warca-reid", "--data", str(path), "--results-dir", str(tmp_path)]) == 2
    assert "single identity" in capsys.readouterr().err


def _reid_file(path):
    import numpy as np

    from rankmetric.datasets import make_multicamera_reid

    d = make_multicamera_reid(30, n_cameras=3, n_features=8, n_latent=4, n_nuisance=2)
    np.savez(path, X=d.X, y=d.ids, cameras=d.camera)


def test_data_file_results_name_it_relatively_and_print_the_right_command(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "feats").mkdir()
    _reid_file(tmp_path / "feats" / "f.npz")
    argv = ["bench", "warca-reid", "--quick", "--methods", "euclidean", "--seeds", "1",
            "--data", str(tmp_path / "feats" / "f.npz"), "--results-dir", "out"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "rankmetric bench warca-reid --quick --data feats/f.npz" in captured.out
    assert "--datasets" not in captured.out
    text = (tmp_path / "out" / "warca-reid" / "warca-reid.json").read_text()
    assert str(tmp_path) not in text and "feats/f.npz" in text
    # not a terminal (pytest captures stderr): one progress line per finished cell
    assert "[warca-reid" in captured.err and "1/1 cells done: euclidean" in captured.err


def test_progress_lines_reach_a_pipe(tmp_path):
    """``rankmetric bench`` with its output in a pipe (CI, nohup): lines, flushed, on stderr."""
    import os
    import subprocess
    import sys

    _reid_file(tmp_path / "f.npz")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "rankmetric", "bench", "warca-reid", "--quick", "--methods",
            "euclidean", "--seeds", "2", "--data", "f.npz", "--results-dir", "out"]  # fmt: skip
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[warca-reid")]
    assert len(lines) == 3 and lines[-1].endswith("2/2 cells done: euclidean on "
                                                  f"{lines[-1].split(' on ')[-1]}")  # fmt: skip
    quiet = subprocess.run([*argv, "--quiet", "--no-cache"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert quiet.returncode == 0 and "[warca-reid" not in quiet.stderr
