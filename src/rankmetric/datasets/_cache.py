"""Where fetched data live, and the checks that a cached copy is complete and intact."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .._safe_npz import sha256_file
from ._sources import CHECKSUMS

__all__ = [
    "ENV_VAR",
    "data_home",
    "set_directory",
    "sha256_file",
    "verified_files",
    "is_fetched",
    "write_checksums_json",
]

ENV_VAR = "RANKMETRIC_DATA"
CHECKSUMS_FILE = "checksums.json"


def data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Folder that holds the fetched data sets.

    Parameters
    ----------
    data_home : str or path-like, optional
        Use this folder. When None: ``$RANKMETRIC_DATA`` if set, else
        ``$XDG_CACHE_HOME/rankmetric`` (``~/.cache/rankmetric`` when ``XDG_CACHE_HOME`` is unset).

    Returns
    -------
    Path
        The folder (absolute, ``~`` expanded). It is not created here; ``fetch`` creates it.

    See Also
    --------
    rankmetric.datasets.fetch : Download data sets into this folder.

    Examples
    --------
    >>> from rankmetric.datasets import data_home
    >>> data_home("/tmp/rankmetric-data").as_posix()
    '/tmp/rankmetric-data'
    >>> data_home().is_absolute()
    True
    """
    if data_home is not None:
        return Path(data_home).expanduser().absolute()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser().absolute()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return (Path(cache).expanduser() / "rankmetric").absolute()


def set_directory(name: str, home: str | os.PathLike | None = None) -> Path:
    """Folder of one data set inside the data home (``<home>/<name>``)."""
    return data_home(home) / name


def is_fetched(name: str, home: str | os.PathLike | None = None) -> bool:
    """True when every file of ``name`` is in the cache (sizes and checksums not checked)."""
    folder = set_directory(name, home)
    return all((folder / file).is_file() for file in CHECKSUMS[name])


def verified_files(name: str, home: str | os.PathLike | None = None) -> dict[str, Path]:
    """Paths of the cached files of ``name``, after checking them against the known SHA-256.

    Raises
    ------
    ValueError
        If a file is missing (the message names ``rankmetric data fetch NAME``) or its
        content differs from the known-good copy (truncated or corrupted download).
    """
    folder = set_directory(name, home)
    files = {file: folder / file for file in CHECKSUMS[name]}
    missing = [file for file, path in files.items() if not path.is_file()]
    if missing:
        raise ValueError(
            f"data set {name!r} is not in the cache {folder} (missing {', '.join(missing)}). "
            f"Run `rankmetric data fetch {name}` (or rankmetric.datasets.fetch({name!r})) first."
        )
    for file, path in files.items():
        actual = sha256_file(path)
        if actual != CHECKSUMS[name][file]:
            raise ValueError(
                f"cached file {path} of data set {name!r} is corrupt or truncated "
                f"(sha256 {actual[:12]}..., expected {CHECKSUMS[name][file][:12]}...). "
                f"Run `rankmetric data fetch {name}` to download it again."
            )
    return files


def write_checksums_json(name: str, home: str | os.PathLike | None, source: str) -> Path:
    """Write ``<home>/<name>/checksums.json`` with the SHA-256 of each file and its source."""
    folder = set_directory(name, home)
    record = {
        "name": name,
        "source": source,
        "sha256": {file: sha256_file(folder / file) for file in CHECKSUMS[name]},
    }
    path = folder / CHECKSUMS_FILE
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path
