"""Reading an untrusted ``.npz`` model archive in bounded memory (for :mod:`rankmetric.io`).

The archive's directory is checked before anything is decompressed (no duplicate names, the
metadata's declared size, no member whose declared size is out of proportion to its compressed
size, a cap on the declared total); the metadata is read as a bounded byte string and every
member is checked against it (only listed members, each member's declared size against the
array the metadata describes, the total against ``max_bytes`` and the process's memory budget)
before any array is decompressed; then the dtype and shape of each ``.npy`` header. A problem is
raised as :class:`_Corrupt`, which :func:`rankmetric.io.load_model` reports as a ``ValueError``
naming the file. The model format itself (what the metadata means) is :mod:`rankmetric.io`'s.
"""

from __future__ import annotations

import ast
import json

import numpy as np

MAX_COMPRESSION_RATIO = 100
"""Largest declared (uncompressed ÷ compressed) size of a member over 1 MiB. ``save_model``
stores members uncompressed (ratio 1) and float arrays deflate to about 1.1:1, while a
decompression bomb of zeros reaches about 1000:1; such a member is refused unread."""
_RATIO_FLOOR = 1 << 20
_MAX_NPY_HEADER = 1 << 20
_MAX_META_BYTES = 64 * 2**20
_META = "__meta__"


class _Corrupt(Exception):
    """Internal: a problem with the file, reported as ``ValueError`` naming the path."""


def _read_header(stream) -> tuple[np.dtype, tuple, bool, int]:
    """``(dtype, shape, fortran_order, header_length)`` of an ``.npy`` stream."""
    major, _ = np.lib.format.read_magic(stream)
    if major == 1:
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    elif major == 2:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise _Corrupt(f"unsupported .npy format version {major}")
    if dtype.hasobject:
        raise _Corrupt("not a readable rankmetric model file (an array holds Python objects)")
    return dtype, tuple(shape), bool(fortran), stream.tell()


def _nbytes(dtype: np.dtype, shape: tuple) -> int:
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


def _check_member(archive, info, expected: str | None) -> tuple[np.dtype, tuple, bool, int]:
    """The header of member ``info``, checked against ``expected`` (``"dtype:shape"``) and size."""
    with archive.open(info) as stream:
        dtype, shape, fortran, offset = _read_header(stream)
    if expected is not None and f"{dtype.str}:{shape}" != expected:
        raise _Corrupt(f"member {info.filename!r} holds {dtype.str}{shape}, not {expected}")
    nbytes = _nbytes(dtype, shape)
    if info.file_size != offset + nbytes:
        raise _Corrupt(f"member {info.filename!r} has the wrong size for its header")
    return dtype, shape, fortran, nbytes


def _read_member(archive, info, header) -> np.ndarray:
    """The array of member ``info`` (header already checked): exactly its bytes, no more."""
    dtype, shape, fortran, nbytes = header
    out = np.empty(nbytes // dtype.itemsize if dtype.itemsize else 0, dtype=dtype)
    with archive.open(info) as stream:
        _read_header(stream)
        view, filled = memoryview(out.view(np.uint8)), 0
        while filled < nbytes:
            n = stream.readinto(view[filled:])
            if not n:
                raise _Corrupt(f"member {info.filename!r} is truncated")
            filled += n
        if stream.read(1):  # reading to the end also verifies the member's CRC
            raise _Corrupt(f"member {info.filename!r} is longer than its header says")
    return out.reshape(shape, order="F" if fortran else "C")


def _check_directory(archive, max_bytes: int) -> None:
    """The archive's directory, before anything is decompressed: names, declared sizes, ratios."""
    infos = archive.infolist()
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise _Corrupt("duplicate members")
    if f"{_META}.npy" not in names:
        raise _Corrupt("no metadata: not a rankmetric model file")
    total = 0
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FLOOR and ratio > MAX_COMPRESSION_RATIO:
            raise _Corrupt(
                f"member {info.filename[:80]!r} declares {info.file_size} bytes compressed into "
                f"{info.compress_size} (ratio {ratio:.0f}:1, above MAX_COMPRESSION_RATIO="
                f"{MAX_COMPRESSION_RATIO}): refused unread, as a decompression bomb"
            )
        total += info.file_size
    if archive.getinfo(f"{_META}.npy").file_size > _MAX_META_BYTES + _MAX_NPY_HEADER:
        raise _Corrupt("corrupt model metadata (larger than a model's metadata can be)")
    if total > max_bytes + _MAX_META_BYTES + len(infos) * _MAX_NPY_HEADER:
        raise _Corrupt(
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
        raise _Corrupt(f"corrupt model metadata (digest of {key[:80]!r})") from exc
    if (
        dtype.hasobject
        or not isinstance(shape, tuple)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise _Corrupt(f"corrupt model metadata (digest of {key[:80]!r})")
    return _nbytes(dtype, shape)


def _check_members_against_meta(archive, meta: dict, max_bytes: int) -> None:
    """Every member is listed and declares the size of the array the metadata describes, and
    the total fits ``max_bytes`` and the memory budget; before any array is decompressed."""
    from .resources import check_memory

    listed = {f"{k}.npy": k for k in meta["digests"]}
    members = {i.filename for i in archive.infolist()} - {f"{_META}.npy"}
    if members != set(listed):
        extra = sorted(members - set(listed))[:3]
        raise _Corrupt(
            f"the arrays in the file do not match its metadata (unlisted members {extra})"
            if extra
            else "the arrays in the file do not match its metadata (members missing)"
        )
    total = 0
    for member, key in listed.items():
        nbytes = _described_nbytes(key, meta["digests"][key])
        declared = archive.getinfo(member).file_size
        if not 0 < declared - nbytes <= _MAX_NPY_HEADER:
            raise _Corrupt(
                f"member {member!r} declares {declared} bytes, but its metadata describes "
                f"{meta['digests'][key].split(':', 1)[1][:80]} ({nbytes} bytes of data)"
            )
        total += nbytes
        if total > max_bytes:
            raise _Corrupt(
                f"its arrays need more than max_bytes={max_bytes} bytes; pass a larger "
                "max_bytes to load_model if the file is trusted"
            )
    try:
        check_memory(total, "Loading its arrays", "Load it on a machine with more memory.")
    except ValueError as exc:
        raise _Corrupt(str(exc).rstrip(".")) from None


def _read_meta(archive) -> dict:
    info = archive.getinfo(f"{_META}.npy")
    header = _check_member(archive, info, None)
    if header[0] != np.uint8 or len(header[1]) != 1 or header[3] > _MAX_META_BYTES:
        raise _Corrupt("corrupt model metadata (not a bounded byte string)")
    raw = _read_member(archive, info, header).tobytes()
    try:
        meta = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _Corrupt(f"corrupt model metadata ({type(exc).__name__})") from exc
    if not isinstance(meta, dict):
        raise _Corrupt("corrupt model metadata (not a JSON object)")
    return meta
