"""Atomic file writing: a file is replaced all at once, never left half-written.

Used for model files (:mod:`rankmetric.io`), training checkpoints (:mod:`rankmetric.training`)
and the benchmark grids' result files; it knows nothing of what the file holds.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["atomic_write"]

_UMASK: int | None = None


def _umask() -> int:
    """The process umask (read once: reading it means setting it)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Write a file all at once: ``write(fh)`` fills a temporary file that replaces ``path``.

    The temporary file has a unique name in ``path``'s folder (so two writers never collide and
    the rename stays on one file system); it gets the permissions of an ordinary new file (the
    umask's) and is flushed and ``fsync``-ed before ``os.replace``. On any error the temporary
    file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str or path-like
        The file to write; its folder must exist.
    write : callable ``fh -> None``
        Writes the whole content to the binary file object ``fh``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write(folder / "note.txt", lambda fh: fh.write(b"done"))
    >>> (folder / "note.txt").read_bytes()
    b'done'
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; an ordinary file is not
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable (POSIX only)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
