"""The memory this process may use: one resource model for the whole library.

Every guard that estimates a peak before allocating (LMNN's active set, kernel WARCA's kernels,
...) compares it with :func:`memory_budget`, the smallest of

- the memory the machine has available (``MemAvailable`` of ``/proc/meminfo``, else the free
  physical pages from ``sysconf``);
- the headroom under the process's address-space and data-segment limits
  (``RLIMIT_AS`` − ``VmSize``, ``RLIMIT_DATA`` − ``VmData``: what ``ulimit -v`` and batch
  schedulers set);
- the headroom under the control group's memory limit, cgroup v2 (``memory.max`` −
  ``memory.current``) or v1 (``memory.limit_in_bytes`` − ``memory.usage_in_bytes``), at the
  process's group and each ancestor, reclaimable page cache (``inactive_file``) not counted as
  used (containers, Kubernetes, ``systemd-run -p MemoryMax=``).

The user may override the detection: the environment variable ``RANKMETRIC_MEMORY_LIMIT``
(bytes, or a number with a unit: ``"4G"``, ``"512MiB"``), or :func:`memory_limit` (a context
manager, also ``rankmetric.memory_limit``) or :func:`set_memory_limit`. An override is the
budget itself, not another bound: it may also raise the budget above what was detected.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ENV_VAR",
    "MemoryBudget",
    "check_memory",
    "check_square_matrices",
    "format_bytes",
    "memory_budget",
    "memory_limit",
    "parse_bytes",
    "set_memory_limit",
]

#: Environment variable holding a user override of the memory budget.
ENV_VAR = "RANKMETRIC_MEMORY_LIMIT"
# A cgroup v1 "limit" at or above this means no limit (the kernel writes 2^63 − page size).
_NO_LIMIT = 1 << 62
_UNITS = {  # K, M, G, T and KiB, ... binary; KB, MB, ... decimal; case ignored
    "": 1,
    "b": 1,
    **{
        prefix + suffix: base**power
        for power, prefix in enumerate("kmgt", 1)
        for suffix, base in (("", 1 << 10), ("b", 1000), ("ib", 1 << 10))
    },
}
_override: list[int | None] = [None]


@dataclass(frozen=True)
class MemoryBudget:
    """The memory this process may still allocate, and where that bound comes from.

    Attributes
    ----------
    bytes : int or None
        The budget; ``None`` when nothing could be measured (no bound known).
    source : str
        The bound that sets it (``"RLIMIT_AS headroom"``, ``"cgroup v2 memory.max headroom"``,
        ``"available memory"``, ``"RANKMETRIC_MEMORY_LIMIT"``, ...).
    sources : dict of str to int
        Every bound measured, in bytes.

    See Also
    --------
    rankmetric.memory_budget : Returns one.

    Examples
    --------
    >>> from rankmetric.resources import MemoryBudget
    >>> MemoryBudget(2**30, "RANKMETRIC_MEMORY_LIMIT").describe()
    '1.0 GiB (RANKMETRIC_MEMORY_LIMIT)'
    """

    bytes: int | None
    source: str
    sources: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """``"3.1 GiB (RLIMIT_AS headroom)"``, for error messages."""
        if self.bytes is None:
            return "unknown"
        return f"{format_bytes(self.bytes)} ({self.source})"


def format_bytes(n: float) -> str:
    """``1536 → "1.5 KiB"``; binary units, one decimal.

    Parameters
    ----------
    n : float
        A number of bytes.

    Returns
    -------
    str
        The size in B, KiB, MiB, GiB or TiB.

    See Also
    --------
    rankmetric.resources.parse_bytes : The other direction.

    Examples
    --------
    >>> from rankmetric.resources import format_bytes
    >>> format_bytes(1536), format_bytes(3 * 2**30)
    ('1.5 KiB', '3.0 GiB')
    """
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def parse_bytes(value: str | int | float) -> int:
    """A byte count from ``4000000000``, ``"4G"``, ``"4 GiB"``, ``"512MB"`` (G = GiB, GB = 10⁹).

    Parameters
    ----------
    value : str, int or float
        Bytes, or a number with a unit (K, M, G, T and KiB... binary; KB, MB, GB, TB decimal).

    Returns
    -------
    int
        The number of bytes.

    Raises
    ------
    ValueError
        If ``value`` is not a non-negative size.

    See Also
    --------
    rankmetric.resources.format_bytes : The other direction.
    rankmetric.set_memory_limit : Takes such sizes.

    Examples
    --------
    >>> from rankmetric.resources import parse_bytes
    >>> parse_bytes("4G"), parse_bytes("512MB"), parse_bytes(1000)
    (4294967296, 512000000, 1000)
    """
    if isinstance(value, bool):
        raise ValueError(f"a memory size must be a number of bytes, got {value!r}.")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", value)
        if match is None or match.group(2).lower() not in _UNITS:
            raise ValueError(
                f"a memory size must be a number of bytes or a number with a unit "
                f"(K, M, G, T, KB, MiB, ...), got {value!r}."
            )
        number, unit = float(match.group(1)), match.group(2).lower()
    if not number >= 0 or number == float("inf"):
        raise ValueError(f"a memory size must be a finite number >= 0, got {value!r}.")
    return int(number * _UNITS[unit])


def set_memory_limit(limit: str | int | None) -> None:
    """Set (or, with ``None``, clear) the memory budget every guard of the library uses.

    Takes precedence over ``RANKMETRIC_MEMORY_LIMIT`` and over what the machine reports.

    Parameters
    ----------
    limit : int, str or None
        Bytes (``2**30``) or a size with a unit (``"1G"``, ``"500MB"``); ``None`` clears it.

    Returns
    -------
    None
        The limit holds until it is set again.

    See Also
    --------
    rankmetric.memory_limit : The same for one ``with`` block only.
    rankmetric.memory_budget : The budget in force.

    Examples
    --------
    >>> import rankmetric
    >>> rankmetric.set_memory_limit("2G")
    >>> rankmetric.memory_budget().bytes
    2147483648
    >>> rankmetric.set_memory_limit(None)
    """
    _override[0] = None if limit is None else parse_bytes(limit)


@contextlib.contextmanager
def memory_limit(limit: str | int | None) -> Iterator[None]:
    """Use ``limit`` bytes as the memory budget inside a ``with`` block.

    Parameters
    ----------
    limit : int, str or None
        Bytes (``2**30``) or a size with a unit (``"1G"``, ``"500MB"``); ``None`` restores
        the detection for the block.

    Yields
    ------
    None
        The budget is ``limit`` inside the block and what it was before after it.

    See Also
    --------
    rankmetric.set_memory_limit : Set the budget until further notice.
    rankmetric.threads : The same kind of block for the thread count.

    Examples
    --------
    >>> import rankmetric
    >>> with rankmetric.memory_limit("1G"):
    ...     rankmetric.memory_budget().bytes
    1073741824
    """
    previous = _override[0]
    set_memory_limit(limit)
    try:
        yield
    finally:
        _override[0] = previous


# ----------------------------------------------------------------------------- measurements


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeError):
        return None


def _int_file(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    text = text.strip()
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _NO_LIMIT else value


def _kib_fields(text: str | None, *names: str) -> dict[str, int]:
    """``{name: bytes}`` of ``Name:  123 kB`` lines (``/proc/meminfo``, ``/proc/self/status``)."""
    found = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        if key in names:
            parts = rest.split()
            if parts and parts[0].isdigit():
                found[key] = int(parts[0]) * 1024
    return found


def _stat_field(path: Path, name: str) -> int:
    for line in (_read(path) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def _available_memory(proc: Path) -> int | None:
    meminfo = _kib_fields(_read(proc / "meminfo"), "MemAvailable", "MemFree")
    if meminfo:
        return meminfo.get("MemAvailable", meminfo.get("MemFree"))
    try:  # no /proc (macOS, BSD): the free physical pages
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _rlimit_headrooms(proc: Path, getrlimit: Callable | None) -> dict[str, int]:
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        resource = None
    if getrlimit is None:
        if resource is None:
            return {}
        getrlimit = resource.getrlimit
    infinity = getattr(resource, "RLIM_INFINITY", -1)
    status = _kib_fields(_read(proc / "self" / "status"), "VmSize", "VmData")
    found = {}
    for name, used in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        try:
            soft = getrlimit(getattr(resource, name, name))[0]
        except (OSError, ValueError):
            continue
        if soft is None or soft == infinity or soft < 0 or soft >= _NO_LIMIT:
            continue
        found[f"{name} headroom"] = max(0, int(soft) - status.get(used, 0))
    return found


def _cgroup_dirs(proc: Path, cgroup_root: Path) -> tuple[list[Path], list[Path]]:
    """The v2 and v1 (memory controller) directories of this process and their ancestors."""
    v2, v1 = [], []
    for line in (_read(proc / "self" / "cgroup") or "").splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        relative = Path(path.lstrip("/"))
        if controllers == "":
            roots = [cgroup_root, cgroup_root / "unified"]  # unified, or hybrid (v1 + v2)
            marker, chain = "cgroup.controllers", v2
        elif "memory" in controllers.split(","):
            roots = [cgroup_root / "memory", cgroup_root / controllers]
            marker, chain = "memory.limit_in_bytes", v1
        else:
            continue
        for root in roots:
            if not (root / marker).is_file():  # not this hierarchy's mount point
                continue
            # inside a cgroup namespace the path may not be visible: the mount point then
            leaf = root / relative if (root / relative).is_dir() else root
            nodes = [leaf, *leaf.parents]  # the group and each ancestor up to the mount point
            chain.extend(nodes[: nodes.index(root) + 1])
            break
    return v2, v1


def _cgroup_headrooms(proc: Path, cgroup_root: Path) -> dict[str, int]:
    v2, v1 = _cgroup_dirs(proc, cgroup_root)
    found: dict[str, int] = {}

    def bound(name: str, directory: Path, limit_file: str, usage_file: str, cache: str):
        limit = _int_file(directory / limit_file)
        if limit is None:
            return
        usage = _int_file(directory / usage_file) or 0
        usage -= min(usage, _stat_field(directory / "memory.stat", cache))
        headroom = max(0, limit - usage)
        if name not in found or headroom < found[name]:
            found[name] = headroom

    for directory in v2:
        bound("cgroup v2 memory.max headroom", directory, "memory.max", "memory.current",
              "inactive_file")  # fmt: skip
    for directory in v1:
        bound("cgroup v1 memory.limit_in_bytes headroom", directory, "memory.limit_in_bytes",
              "memory.usage_in_bytes", "total_inactive_file")  # fmt: skip
    return found


def memory_budget(
    *,
    proc: str | os.PathLike = "/proc",
    cgroup_root: str | os.PathLike = "/sys/fs/cgroup",
    getrlimit: Callable | None = None,
    environ: dict | None = None,
) -> MemoryBudget:
    """The memory this process may still allocate: the smallest bound the machine sets.

    An override (:func:`memory_limit`, :func:`set_memory_limit`, then the environment variable
    ``RANKMETRIC_MEMORY_LIMIT``) is returned as is. Otherwise the budget is the smallest of the
    available memory, the ``RLIMIT_AS`` / ``RLIMIT_DATA`` headroom and the cgroup v2 / v1
    headroom, each measured now (see the module docstring).

    Parameters
    ----------
    proc, cgroup_root, getrlimit, environ
        Where to read from (the defaults read this process); tests pass stand-ins.

    Returns
    -------
    MemoryBudget

    See Also
    --------
    rankmetric.memory_limit : Impose a smaller budget in a ``with`` block.

    Examples
    --------
    >>> from rankmetric import memory_budget
    >>> budget = memory_budget()
    >>> budget.bytes is None or budget.bytes >= 0
    True
    """
    if _override[0] is not None:
        return MemoryBudget(_override[0], "rankmetric.memory_limit", {})
    env = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if env:
        try:
            return MemoryBudget(parse_bytes(env), ENV_VAR, {})
        except ValueError as exc:
            raise ValueError(f"{ENV_VAR}={env!r}: {exc}") from None
    proc, cgroup_root = Path(proc), Path(cgroup_root)
    sources: dict[str, int] = {}
    available = _available_memory(proc)
    if available is not None:
        sources["available memory"] = available
    sources.update(_rlimit_headrooms(proc, getrlimit))
    sources.update(_cgroup_headrooms(proc, cgroup_root))
    if not sources:
        return MemoryBudget(None, "nothing measurable", {})
    source = min(sources, key=sources.get)
    return MemoryBudget(sources[source], source, sources)


def check_memory(need: int, what: str, advice: str) -> None:
    """Raise a ``ValueError`` before allocating ``need`` bytes that the budget does not hold.

    Parameters
    ----------
    need : int
        The estimated peak, in bytes.
    what : str
        What would need it (``"LMNN's active set of about 12,000,000 impostor pairs"``).
    advice : str
        What the user can do (a sentence).

    Returns
    -------
    None
        Raises ``ValueError`` instead when ``need`` exceeds :func:`memory_budget`.

    See Also
    --------
    rankmetric.resources.check_square_matrices : The guard for matrices that grow as n_features².
    rankmetric.memory_budget : The budget it compares with.

    Examples
    --------
    >>> from rankmetric.resources import check_memory, memory_limit
    >>> with memory_limit("1G"):
    ...     check_memory(2**31, "a 2 GiB buffer", "Use smaller batches.")
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    budget = memory_budget()
    if budget.bytes is None or need <= budget.bytes:
        return
    raise ValueError(
        f"{what} would need about {format_bytes(need)}, more than the memory this process may "
        f"use: {budget.describe()}. {advice} If more memory is really available, raise the "
        f"budget with {ENV_VAR} or rankmetric.memory_limit(...)."
    )


def check_square_matrices(size: int, copies: int, what: str) -> None:
    """Raise before ``copies`` float64 matrices of ``size × size`` outgrow the memory budget.

    The guard of the estimators whose memory grows with the square of the number of features
    (ITML's metric, KISSME's and XQDA's covariances and their eigendecompositions).

    Parameters
    ----------
    size : int
        The matrices' side, the number of features.
    copies : int
        How many such matrices the estimator holds at its peak.
    what : str
        The estimator's name.

    Returns
    -------
    None
        Raises ``ValueError`` instead when the matrices do not fit.

    See Also
    --------
    rankmetric.resources.check_memory : The general guard it calls.

    Examples
    --------
    >>> from rankmetric.resources import check_square_matrices, memory_limit
    >>> with memory_limit("1G"):
    ...     check_square_matrices(1000, 6, "KISSME")  # 48 MB: fits
    """
    check_memory(
        copies * size * size * 8,
        f"{what}'s {copies} matrices of {size:,} × {size:,} features (float64)",
        "Reduce the features first (e.g. sklearn.decomposition.PCA in a Pipeline), or use "
        "WARCA, whose memory grows with n_components × n_features.",
    )
