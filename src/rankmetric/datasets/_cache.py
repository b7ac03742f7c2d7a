"""Where fetched data live, and the checks that a cached copy is complete and intact.

Public through :mod:`rankmetric.datasets`: :func:`data_home` and :func:`cache_status` (what
``rankmetric data list`` and ``rankmetric data info`` print); the rest serves the package's
fetching and loading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .._safe_npz import sha256_file
from ._registry import get_info
from ._sources import CHECKSUMS

__all__ = [
    "ENV_VAR",
    "cache_status",
    "data_home",
    "set_directory",
    "sha256_file",
    "verified_files",
    "is_fetched",
    "write_checksums_json",
]

ENV_VAR = "RANKMETRIC_DATA"
CHECKSUMS_FILE = "checksums.json"


# duplicates: numpydoc sections shaped like other functions'; the text is this function's own.
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


def cache_status(
    name: str, data_home: str | os.PathLike | None = None, *, verify: bool = True
) -> str:
    """Whether a data set can be loaded from the cache, in a few words.

    The cache is filled by :func:`~rankmetric.datasets.fetch`; what is known about the set
    itself, cached or not, is :func:`~rankmetric.datasets.get_info`'s.

    Parameters
    ----------
    name : str
        A name of :func:`~rankmetric.datasets.list_datasets` (case, ``-``, ``_`` and spaces
        ignored).
    data_home : str or path-like, optional
        The cache folder (default: :func:`~rankmetric.datasets.data_home`'s).
    verify : bool, default=True
        Check every cached file against its known SHA-256 (reads the files); False only looks
        whether they are there.

    Returns
    -------
    str
        ``"unavailable"`` (no package ships the set), ``"bundled, nothing to fetch"``; with
        ``verify=False``, ``"fetched"`` or ``"not fetched"``; with ``verify=True``,
        ``"fetched, checksums ok (FOLDER)"``, or what is wrong with the cached copy (a missing
        or corrupt file) and the command that fetches it again. The words before the first
        comma are the short status of ``rankmetric data list``.

    Raises
    ------
    ValueError
        If no data set has that name.

    Examples
    --------
    >>> from rankmetric.datasets import cache_status
    >>> cache_status("iris")
    'bundled, nothing to fetch'
    >>> cache_status("sonar", "/tmp/an-empty-rankmetric-cache", verify=False)
    'not fetched'
    """
    info = get_info(name)
    if not info.available:
        return "unavailable"
    if not info.needs_fetch:
        return "bundled, nothing to fetch"
    if not verify:
        return "fetched" if is_fetched(info.name, data_home) else "not fetched"
    try:
        verified_files(info.name, data_home)
    except ValueError as exc:
        return str(exc)
    return f"fetched, checksums ok ({set_directory(info.name, data_home)})"


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
