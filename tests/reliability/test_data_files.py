"""Damaged data-set caches: every loader refuses them with a ValueError naming the fix.

Each test copies one fetched set into a temporary ``$RANKMETRIC_DATA`` (the variable users set),
damages it, and loads through the public loaders.
"""

from __future__ import annotations

import shutil

import pytest

from rankmetric.datasets import data_home, load_dataset, load_spd

pytestmark = pytest.mark.data

# (loader, set name, file to damage): a tabular set (R data file) and an SPD set (.ts text)
SETS = [
    (load_dataset, "sonar", "Sonar.rda"),
    (load_spd, "BasicMotions", "BasicMotions_TRAIN.ts"),
]
IDS = [name for _, name, _ in SETS]


@pytest.fixture
def env_copy(tmp_path, monkeypatch):
    """Copy a fetched set into a fresh data home that ``$RANKMETRIC_DATA`` points to."""

    def copy(name: str):
        source = data_home() / name  # resolved before the variable changes
        home = tmp_path / "data"
        shutil.copytree(source, home / name)
        monkeypatch.setenv("RANKMETRIC_DATA", str(home))
        return home / name

    return copy


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip_a_byte], ids=["truncated", "flipped"])
@pytest.mark.parametrize("loader, name, file", SETS, ids=IDS)
def test_damaged_cache_file_names_the_fetch_command(env_copy, loader, name, file, damage):
    folder = env_copy(name)
    loader(name)  # the intact copy loads from $RANKMETRIC_DATA
    damage(folder / file)
    with pytest.raises(ValueError, match=rf"corrupt or truncated.*rankmetric data fetch {name}"):
        loader(name)


@pytest.mark.parametrize("loader, name, file", SETS, ids=IDS)
def test_missing_cache_file_names_the_fetch_command(env_copy, loader, name, file):
    folder = env_copy(name)
    (folder / file).unlink()
    with pytest.raises(ValueError, match=rf"not in the cache.*rankmetric data fetch {name}"):
        loader(name)
