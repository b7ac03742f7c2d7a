"""Reading untrusted ``.npz`` archives in bounded memory: model files and users' data files.

The archive's directory is checked before anything is decompressed (no duplicate names, the
metadata's declared size, no member whose declared size is out of proportion to its compressed
size, a cap on the declared total); the metadata is read as a bounded byte string and every
member is checked against it (only listed members, each member's declared size against the
array the metadata describes, the total against ``max_bytes`` and the process's memory budget)
before any array is decompressed; then the dtype and shape of each ``.npy`` header. A problem is
raised as :class:`CorruptFile`, which :func:`rankmetric.io.load_model` reports as a ``ValueError``
naming the file. The model format itself (what the metadata means) is :mod:`rankmetric.io`'s.

Users' data files (``--data``, ``--pairs``, embeddings; :func:`read_data_npz`,
:func:`read_data_npy`) have no metadata to check against, so the same discipline applies to what
the archive itself declares: a regular, non-empty file; the directory (no duplicate names, only
``.npy`` members, no member compressed more than ``MAX_COMPRESSION_RATIO``); every member's
``.npy`` header (no Python objects, a declared size that matches the member's size); and the
total declared size against the memory budget, all before any array is read. Members stored
uncompressed (``np.savez``) are memory-mapped copy-on-write; compressed ones are inflated into
exactly their declared size. Every problem is a ``ValueError`` naming the file.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
import struct
import zipfile
import zlib

import numpy as np

MAX_COMPRESSION_RATIO = 100
"""Largest declared (uncompressed ÷ compressed) size of a member over 1 MiB. ``save_model``
stores members uncompressed (ratio 1) and float arrays deflate to about 1.1:1, while a
decompression bomb of zeros reaches about 1000:1; such a member is refused unread."""
MAX_DATA_COMPRESSION_RATIO = 500
"""The same rule for users' data files, looser: sparse or one-hot features may deflate to a
few hundred to one, while deflate's ceiling, which a bomb of zeros reaches, is about 1030:1."""
_RATIO_FLOOR = 1 << 20
_MAX_NPY_HEADER = 1 << 20
_MAXMETA_BYTES = 64 * 2**20
META = "__meta__"
"""The member of a model file holding its metadata (JSON bytes)."""

__all__ = [
    "META",
    "MAX_COMPRESSION_RATIO",
    "MAX_DATA_COMPRESSION_RATIO",
    "CorruptFile",
    "check_regular_file",
    "digest",
    "read_data_npy",
    "read_data_npz",
    "read_model_arrays",
    "read_model_meta",
    "read_npy_header",
    "sha256_file",
]


class CorruptFile(Exception):
    """A problem with a model or index file, reported by the caller as a ``ValueError`` naming
    the path."""


def digest(a: np.ndarray) -> str:
    """``"sha256:dtype:shape"`` of an array, as a model file's metadata records it."""
    sha = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    return f"{sha}:{a.dtype.str}:{a.shape}"


def sha256_file(path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks (a file of any size, in bounded memory)."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def read_npy_header(stream) -> tuple[np.dtype, tuple, bool, int]:
    """``(dtype, shape, fortran_order, header_length)`` of an ``.npy`` stream."""
    major, _ = np.lib.format.read_magic(stream)
    if major == 1:
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    elif major == 2:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise CorruptFile(f"unsupported .npy format version {major}")
    if dtype.hasobject:
        raise CorruptFile("an array holds Python objects (pickled data, which is never loaded)")
    return dtype, tuple(shape), bool(fortran), stream.tell()


def _nbytes(dtype: np.dtype, shape: tuple) -> int:
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


def _check_member(archive, info, expected: str | None) -> tuple[np.dtype, tuple, bool, int]:
    """The header of member ``info``, checked against ``expected`` (``"dtype:shape"``) and size."""
    with archive.open(info) as stream:
        dtype, shape, fortran, offset = read_npy_header(stream)
    if expected is not None and f"{dtype.str}:{shape}" != expected:
        raise CorruptFile(f"member {info.filename!r} holds {dtype.str}{shape}, not {expected}")
    nbytes = _nbytes(dtype, shape)
    if info.file_size != offset + nbytes:
        raise CorruptFile(f"member {info.filename!r} has the wrong size for its header")
    return dtype, shape, fortran, nbytes


def _read_member(archive, info, header) -> np.ndarray:
    """The array of member ``info`` (header already checked): exactly its bytes, no more."""
    dtype, shape, fortran, nbytes = header
    out = np.empty(nbytes // dtype.itemsize if dtype.itemsize else 0, dtype=dtype)
    with archive.open(info) as stream:
        read_npy_header(stream)
        view, filled = memoryview(out.view(np.uint8)), 0
        while filled < nbytes:
            n = stream.readinto(view[filled:])
            if not n:
                raise CorruptFile(f"member {info.filename!r} is truncated")
            filled += n
        if stream.read(1):  # reading to the end also verifies the member's CRC
            raise CorruptFile(f"member {info.filename!r} is longer than its header says")
    return out.reshape(shape, order="F" if fortran else "C")


def _check_ratio(info, limit: int = MAX_COMPRESSION_RATIO, name="MAX_COMPRESSION_RATIO") -> None:
    """Refuse a member whose declared size is out of proportion to its compressed size."""
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > _RATIO_FLOOR and ratio > limit:
        raise CorruptFile(
            f"member {info.filename[:80]!r} declares {info.file_size} bytes compressed into "
            f"{info.compress_size} (ratio {ratio:.0f}:1, above {name}={limit}): refused "
            "unread, as a decompression bomb"
        )


def _check_directory(archive, max_bytes: int) -> None:
    """The archive's directory, before anything is decompressed: names, declared sizes, ratios."""
    infos = archive.infolist()
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise CorruptFile("duplicate members")
    if f"{META}.npy" not in names:
        raise CorruptFile("no metadata: not a rankmetric model file")
    total = 0
    for info in infos:
        _check_ratio(info)
        total += info.file_size
    if archive.getinfo(f"{META}.npy").file_size > _MAXMETA_BYTES + _MAX_NPY_HEADER:
        raise CorruptFile("corrupt model metadata (larger than a model's metadata can be)")
    if total > max_bytes + _MAXMETA_BYTES + len(infos) * _MAX_NPY_HEADER:
        raise CorruptFile(
            f"its members declare {total} bytes, more than max_bytes={max_bytes}; pass a "
            "larger max_bytes to load_model if the file is trusted"
        )


def _described_nbytes(key: str, digest: str) -> int:
    """Bytes of the array that the metadata's digest ``"sha:dtype:shape"`` describes."""
    try:
        _, dtype, shape = digest.split(":", 2)
        dtype = np.dtype(dtype)
        shape = ast.literal_eval(shape) if len(shape) < 200 else None
    except (TypeError, ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise CorruptFile(f"corrupt model metadata (digest of {key[:80]!r})") from exc
    if (
        dtype.hasobject
        or not isinstance(shape, tuple)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise CorruptFile(f"corrupt model metadata (digest of {key[:80]!r})")
    return _nbytes(dtype, shape)


def _check_members_against_meta(archive, meta: dict, max_bytes: int) -> None:
    """Every member is listed and declares the size of the array the metadata describes, and
    the total fits ``max_bytes`` and the memory budget; before any array is decompressed."""
    from .resources import check_memory

    listed = {f"{k}.npy": k for k in meta["digests"]}
    members = {i.filename for i in archive.infolist()} - {f"{META}.npy"}
    if members != set(listed):
        extra = sorted(members - set(listed))[:3]
        raise CorruptFile(
            f"the arrays in the file do not match its metadata (unlisted members {extra})"
            if extra
            else "the arrays in the file do not match its metadata (members missing)"
        )
    total = 0
    for member, key in listed.items():
        nbytes = _described_nbytes(key, meta["digests"][key])
        declared = archive.getinfo(member).file_size
        if not 0 < declared - nbytes <= _MAX_NPY_HEADER:
            raise CorruptFile(
                f"member {member!r} declares {declared} bytes, but its metadata describes "
                f"{meta['digests'][key].split(':', 1)[1][:80]} ({nbytes} bytes of data)"
            )
        total += nbytes
        if total > max_bytes:
            raise CorruptFile(
                f"its arrays need more than max_bytes={max_bytes} bytes; pass a larger "
                "max_bytes to load_model if the file is trusted"
            )
    try:
        check_memory(total, "Loading its arrays", "Load it on a machine with more memory.")
    except ValueError as exc:
        raise CorruptFile(str(exc).rstrip(".")) from None


def read_model_meta(archive, max_bytes: int) -> dict:
    """The metadata of a model archive (a dict), after its directory is checked; nothing else
    is decompressed. The caller checks what the metadata means, then calls
    :func:`read_model_arrays`."""
    _check_directory(archive, max_bytes)
    info = archive.getinfo(f"{META}.npy")
    header = _check_member(archive, info, None)
    if header[0] != np.uint8 or len(header[1]) != 1 or header[3] > _MAXMETA_BYTES:
        raise CorruptFile("corrupt model metadata (not a bounded byte string)")
    raw = _read_member(archive, info, header).tobytes()
    try:
        meta = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CorruptFile(f"corrupt model metadata ({type(exc).__name__})") from exc
    if not isinstance(meta, dict):
        raise CorruptFile("corrupt model metadata (not a JSON object)")
    return meta


def read_model_arrays(archive, meta: dict, max_bytes: int) -> dict[str, np.ndarray]:
    """Every array the metadata lists: the members checked against it and the memory budget,
    then each header, before any array is read; each array checked against its digest."""
    _check_members_against_meta(archive, meta, max_bytes)
    headers = {}
    for key, described in meta["digests"].items():
        info = archive.getinfo(f"{key}.npy")
        headers[key] = (info, _check_member(archive, info, described.split(":", 1)[1]))
    data = {}
    for key, (info, header) in headers.items():
        data[key] = _read_member(archive, info, header)
        if digest(data[key]) != meta["digests"][key]:
            raise CorruptFile(f"array {key!r} fails its checksum (file altered or damaged)")
    return data


# ---------------------------------------------------------------------------------------------
# Users' data files: no metadata, so every member is checked against what the archive declares.

_MAX_MEMBERS = 10_000
_ZIP_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # the local file header before a member's data


def check_regular_file(path, what: str) -> int:
    """The size of ``path``, a readable regular file; else a ``ValueError`` saying what it is.

    ``what`` names the file in messages (``"--data f.npz"``). A folder, a FIFO or a device
    (``/dev/zero``) is refused by name rather than read.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{what}: no such file.") from None
    except OSError as exc:
        raise ValueError(f"{what}: cannot be read ({exc.strerror or exc}).") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{what} is a folder, not a file.")
    if not stat.S_ISREG(st.st_mode):
        kinds = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a device",
                 stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}  # fmt: skip
        kind = kinds.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise ValueError(f"{what} is {kind}, not a regular file: give the path of a data file.")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{what}: the file cannot be read (permission denied).")
    if st.st_size == 0:
        raise ValueError(f"{what}: the file is empty (0 bytes).")
    return int(st.st_size)


def _data_offset(handle, info) -> int:
    """Where member ``info``'s bytes start in the archive file (after its local header)."""
    handle.seek(info.header_offset)
    raw = handle.read(_ZIP_LOCAL_HEADER.size)
    if len(raw) != _ZIP_LOCAL_HEADER.size or raw[:4] != b"PK\x03\x04":
        raise CorruptFile(f"member {info.filename[:80]!r}: damaged local header")
    fields = _ZIP_LOCAL_HEADER.unpack(raw)
    return info.header_offset + _ZIP_LOCAL_HEADER.size + fields[-2] + fields[-1]


def _user_headers(archive, size: int) -> dict:
    """``{name: (info, header)}`` of every member, checked, before any array is read."""
    infos = archive.infolist()
    if not infos:
        raise CorruptFile("the archive holds no arrays")
    if len(infos) > _MAX_MEMBERS:
        raise CorruptFile(f"{len(infos)} members, more than a data file holds ({_MAX_MEMBERS})")
    names = [i.filename for i in infos]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CorruptFile(f"duplicate members {duplicates[:3]}")
    headers = {}
    for info in infos:
        if not info.filename.endswith(".npy") or info.is_dir():
            raise CorruptFile(f"member {info.filename[:80]!r} is not a .npy array")
        if info.flag_bits & 0x1:
            raise CorruptFile(f"member {info.filename[:80]!r} is encrypted")
        _check_ratio(info, MAX_DATA_COMPRESSION_RATIO, "MAX_DATA_COMPRESSION_RATIO")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size > size:
            raise CorruptFile(
                f"member {info.filename[:80]!r} declares more bytes than the file has"
            )
        try:
            header = _check_member(archive, info, None)
        except ValueError as exc:  # numpy's header parser (CorruptFile is not a ValueError)
            raise CorruptFile(
                f"member {info.filename[:80]!r}: not a valid .npy header ({exc})"
            ) from None
        headers[info.filename[: -len(".npy")]] = (info, header)
    return headers


def _map_member(path, handle, info, header, size: int) -> np.ndarray:
    """A stored (uncompressed) member, memory-mapped copy-on-write: nothing is read yet."""
    dtype, shape, fortran, nbytes = header
    start = _data_offset(handle, info) + (info.file_size - nbytes)
    if start + nbytes > size:
        raise CorruptFile(f"member {info.filename[:80]!r} is truncated")
    return _memmap(path, start, dtype, shape, fortran)


def _memmap(path, offset: int, dtype: np.dtype, shape: tuple, fortran: bool) -> np.ndarray:
    """The array of ``path``'s bytes from ``offset``, memory-mapped copy-on-write."""
    order = "F" if fortran else "C"
    if _nbytes(dtype, shape) == 0:  # np.memmap cannot map zero bytes
        return np.empty(shape, dtype=dtype, order=order)
    mapped = np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape, order=order)
    return mapped.view(np.ndarray)


def read_data_npz(path, what: str | None = None, *, keys=None) -> dict[str, np.ndarray]:
    """The arrays of a user's ``.npz`` data file, checked before any of them is read.

    Parameters
    ----------
    path : str or path-like
    what : str, optional
        How messages name the file (``"--pairs f.npz"``); default the path.
    keys : collection of str, optional
        Read only these arrays (the others are still checked); default every array.

    Returns
    -------
    dict of str to ndarray
        Stored members memory-mapped (copy-on-write), compressed members inflated.

    Raises
    ------
    ValueError
        Not a regular file, empty, not a zip archive, truncated or damaged, a member that is not
        an ``.npy`` array or holds Python objects, a decompression bomb, a declared size that
        does not match the member or does not fit the memory budget; the message names the file.
    """
    from .resources import check_memory, format_bytes

    what = what or str(path)
    size = check_regular_file(path, what)
    try:
        with open(path, "rb") as handle, zipfile.ZipFile(handle) as archive:
            headers = _user_headers(archive, size)
            wanted = {k: v for k, v in headers.items() if keys is None or k in keys}
            total = sum(h[3] for _, h in wanted.values())
            check_memory(
                total,
                f"{what}: its arrays declare {format_bytes(total)}; reading them",
                "Check the file (a forged or damaged header declares sizes it does not hold).",
            )
            out = {}
            for key, (info, header) in wanted.items():
                if info.compress_type == zipfile.ZIP_STORED:
                    out[key] = _map_member(path, handle, info, header, size)
                else:
                    out[key] = _read_member(archive, info, header)
    except CorruptFile as exc:
        hint = "; if the data are genuine, save them with np.savez (uncompressed)"
        raise ValueError(f"{what}: {exc}{hint if 'bomb' in str(exc) else ''}.") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError,
            RuntimeError, struct.error) as exc:  # fmt: skip
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        if isinstance(exc, zipfile.BadZipFile):
            detail = f"truncated or damaged ({detail})"
        raise ValueError(f"{what}: not a readable .npz archive: {detail}.") from None
    return out


def read_data_npy(path, what: str | None = None) -> np.ndarray:
    """A user's ``.npy`` file, memory-mapped copy-on-write after its header is checked.

    Parameters
    ----------
    path : str or path-like
    what : str, optional
        How messages name the file; default the path.

    Returns
    -------
    ndarray
        A copy-on-write memory map of the file's array.

    Raises
    ------
    ValueError
        Not a regular file, empty, a damaged header, Python objects, a declared size that the
        file does not hold or that does not fit the memory budget; the message names the file.
    """
    from .resources import check_memory, format_bytes

    what = what or str(path)
    size = check_regular_file(path, what)
    try:
        with open(path, "rb") as handle:
            dtype, shape, fortran, offset = read_npy_header(handle)
    except CorruptFile as exc:
        raise ValueError(f"{what}: {exc}.") from None
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(
            f"{what}: not a readable .npy file ({' '.join(str(exc).split())[:200]})."
        ) from None
    nbytes = _nbytes(dtype, shape)
    if offset + nbytes != size:
        raise ValueError(
            f"{what}: its header declares {dtype.str}{shape} ({nbytes} bytes) but the file holds "
            f"{size - offset} bytes of data (truncated or forged)."
        )
    check_memory(nbytes, f"{what}: its array of {format_bytes(nbytes)}", "Check the file.")
    return _memmap(path, offset, dtype, shape, fortran)
