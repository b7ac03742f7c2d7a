"""The ``rankmetric data`` command (list, fetch, info), through its own parser."""

import argparse

import pytest

from rankmetric.cli import data as data_cli
from rankmetric.datasets import list_datasets


def run(argv, capsys):
    parser = argparse.ArgumentParser(prog="rankmetric data")
    data_cli.register(parser)
    args = parser.parse_args(argv)
    code = args.func(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_prints_every_set(capsys, tmp_path):
    code, out, _ = run(["list", "--data-home", str(tmp_path)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["name", "kind", "shape", "classes", "split", "source", "status"]
    for info in list_datasets():
        assert any(line.split()[0] == info.name for line in lines[1:] if line.strip())
    row = next(line for line in lines if line.startswith("sonar "))
    assert "208 x 60" in row and row.endswith("not fetched")
    assert next(line for line in lines if line.startswith("iris ")).endswith("bundled")
    assert next(line for line in lines if line.startswith("protein ")).endswith("unavailable")


def test_list_filters(capsys, tmp_path):
    _, out, _ = run(["list", "--kind", "multichannel", "--available"], capsys)
    names = [line.split()[0] for line in out.splitlines()[1:] if line and "cache:" not in line]
    assert "BasicMotions" in names and "iris" not in names and "DEAP" not in names


def test_info_reports_missing_data(capsys, tmp_path):
    code, out, _ = run(["info", "FingerMovements", "--data-home", str(tmp_path)], capsys)
    assert code == 0
    assert "28x50" in out and "rankmetric data fetch FingerMovements" in out


def test_fetch_of_bundled_set_is_a_no_op(capsys, tmp_path):
    code, out, err = run(["fetch", "iris", "--data-home", str(tmp_path)], capsys)
    assert code == 0 and "nothing to fetch" in err and "0 file(s)" in out


def test_fetch_failure_returns_1(capsys, tmp_path, monkeypatch):
    from rankmetric.datasets import FetchError
    from rankmetric.datasets import _fetch as fetch_module

    def offline(source, tmp):
        raise FetchError("offline")

    monkeypatch.setattr(fetch_module, "_download", offline)
    code, _, err = run(["fetch", "heart", "-q", "--data-home", str(tmp_path)], capsys)
    assert code == 1 and "offline" in err


def test_every_level_has_help(capsys):
    for argv in ([], ["list"], ["fetch"], ["info"]):
        with pytest.raises(SystemExit) as exit_info:
            run([*argv, "--help"], capsys)
        assert exit_info.value.code == 0
        assert "usage: rankmetric data" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["under a file", "read-only folder"])
def test_fetch_into_an_unwritable_cache_fails_before_downloading(
    capsys, tmp_path, monkeypatch, kind
):
    import os

    from rankmetric.datasets import _fetch as fetch_module

    downloads = []
    monkeypatch.setattr(fetch_module, "_download", lambda *a: downloads.append(a))
    if kind == "under a file":
        (tmp_path / "a-file").write_text("")
        home = tmp_path / "a-file" / "cache"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        home = tmp_path / "ro"
        home.mkdir()
        home.chmod(0o555)
    code, _, err = run(["fetch", "heart", "-q", "--data-home", str(home)], capsys)
    assert code == 1 and "cannot write to the data cache" in err
    assert len(err.strip().splitlines()) == 1
    assert downloads == []
