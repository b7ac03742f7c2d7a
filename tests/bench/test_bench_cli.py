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
