"""Reading users' files as untrusted input: MATLAB (v5 and v7.3/HDF5), CSV and Parquet.

The ``.npz`` reader is :func:`rankmetric._safe_npz.read_data_npz` (shared with pair files). Every
reader here checks what the file declares before reading it: the MATLAB v5 variables' headers
(class, dimensions, compressed size) are walked without inflating anything, the HDF5 datasets'
declared shapes and storage, the Parquet footer's row count and uncompressed size, and a CSV's
row and column counts; the declared size is compared with the memory budget
(:mod:`rankmetric.resources`) and a member compressed more than
:data:`MAX_DATA_COMPRESSION_RATIO` is refused unread. Only the variables that
:func:`~rankmetric.datasets.load_features` may use are read. A damaged file of any kind gives a
``ValueError`` naming the file and what is wrong.
"""

from __future__ import annotations

import csv
import io
import itertools
import struct
import zlib
from collections import Counter

import numpy as np

from .._safe_npz import MAX_DATA_COMPRESSION_RATIO, check_regular_file
from ..resources import check_memory, format_bytes

__all__ = [
    "read_csv_table",
    "read_mat",
    "read_parquet_table",
    "count_rows",
    "csv_line",
    "MAX_CSV_COLUMNS",
]

#: Most columns a CSV feature table may have (wider data belongs in ``.npz``).
MAX_CSV_COLUMNS = 100_000
_CSV_FIELD_LIMIT = csv.field_size_limit()  # 131072 characters: no number is that long
_CHUNK_CELLS = 1 << 20  # cells parsed at a time: bounded Python objects while reading
_RATIO_FLOOR = 1 << 20
_INSTALL = {
    "parquet": 'reading .parquet files needs pyarrow: pip install "rankmetric[parquet]" '
    "(or pip install pyarrow), or save the table as .csv or .npz.",
    "mat73": "this .mat file is MATLAB v7.3 (HDF5); reading it needs h5py: pip install "
    '"rankmetric[mat73]" (or pip install h5py), or save it in MATLAB with -v7.',
}


def _check_declared(path: str, nbytes: int, what: str) -> None:
    check_memory(
        nbytes,
        f"{path}: {what} declare(s) {format_bytes(nbytes)}; reading them",
        "Check the file (a forged or damaged header declares sizes it does not hold).",
    )


def _check_ratio(path: str, name: str, declared: int, stored: int) -> None:
    ratio = declared / max(stored, 1)
    if declared > _RATIO_FLOOR and ratio > MAX_DATA_COMPRESSION_RATIO:
        raise ValueError(
            f"{path}: {name!r} declares {declared} bytes stored in {stored} (ratio {ratio:.0f}:1, "
            f"above {MAX_DATA_COMPRESSION_RATIO}:1): refused unread, as a decompression bomb. If "
            "the data are genuine, save them uncompressed."
        )


# --- MATLAB -----------------------------------------------------------------------------------

# class code of a MATLAB array → (name, bytes per element once read; None: nested)
_MAT_CLASSES = {
    1: ("cell", None), 2: ("struct", None), 3: ("object", None), 4: ("char", 4),
    5: ("sparse", None), 6: ("double", 8), 7: ("single", 4), 8: ("int8", 1), 9: ("uint8", 1),
    10: ("int16", 2), 11: ("uint16", 2), 12: ("int32", 4), 13: ("uint32", 4), 14: ("int64", 8),
    15: ("uint64", 8),
}  # fmt: skip
_MI_MATRIX, _MI_COMPRESSED = 14, 15
_HEAD = 4096  # inflated bytes enough for any variable's header (flags, dimensions, name)
# what a damaged file makes the readers raise (scipy's included)
_DAMAGED = (ValueError, OSError, TypeError, IndexError, EOFError, KeyError, zlib.error,
            struct.error)  # fmt: skip


def _sub_element(buf: bytes, off: int, endian: str) -> tuple[int, bytes, int]:
    """``(type, data, next offset)`` of the v5 data element at ``off`` (small format too)."""
    if off + 8 > len(buf):
        raise ValueError("a damaged variable header")
    word, count = struct.unpack_from(endian + "II", buf, off)
    if word >> 16:  # small data element: type and size in one word, data in the next four
        size = word >> 16
        return word & 0xFFFF, buf[off + 4 : off + 4 + size], off + 8
    end = off + 8 + count
    if end > len(buf):
        raise ValueError("a damaged variable header")
    return word, buf[off + 8 : end], off + 8 + (count + 7) // 8 * 8


def _mat5_variable(inner: bytes, endian: str) -> tuple[str, str, tuple, int | None]:
    """``(name, class, dims, declared bytes or None)`` from a miMATRIX element's start."""
    if len(inner) < 8 or struct.unpack_from(endian + "I", inner)[0] != _MI_MATRIX:
        raise ValueError("an element that is not a variable where a variable was expected")
    _, flags, off = _sub_element(inner, 8, endian)
    _, dims, off = _sub_element(inner, off, endian)
    _, name, _ = _sub_element(inner, off, endian)
    if len(flags) < 4 or len(dims) % 4:
        raise ValueError("a damaged variable header")
    word = struct.unpack_from(endian + "I", flags)[0]
    cls, itemsize = _MAT_CLASSES.get(word & 0xFF, (f"class {word & 0xFF}", None))
    shape = struct.unpack(endian + f"{len(dims) // 4}i", dims)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions")
    if word & 0x200:  # logical: read as one byte per element
        itemsize = 1
    declared = None
    if itemsize is not None:
        declared = int(np.prod(shape, dtype=object)) * itemsize * (2 if word & 0x800 else 1)
    return name.decode("latin-1").rstrip("\0"), cls, tuple(shape), declared


def _inflated_size(raw: bytes, cap: int) -> int:
    """Bytes that ``raw`` (zlib) inflates to, counting at most ``cap + 1`` (nothing is kept)."""
    stream, total, data = zlib.decompressobj(), 0, raw
    while data and total <= cap:
        total += len(stream.decompress(data, 1 << 20))
        data = stream.unconsumed_tail
    return total


def _mat5_directory(path: str, size: int) -> dict:
    """``{name: (class, dims, declared bytes, start, end, compressed)}``: the headers only."""
    found = {}
    with open(path, "rb") as f:
        head = f.read(128)
        endian = {b"IM": "<", b"MI": ">"}.get(head[126:128])
        if len(head) < 128 or endian is None:
            raise ValueError("not a MATLAB v5 file (damaged header)")
        pos = 128
        while pos + 8 <= size:
            f.seek(pos)
            kind, count = struct.unpack(endian + "II", f.read(8))
            end = pos + 8 + count
            if end > size:
                raise ValueError(
                    f"truncated: the variable at byte {pos} declares {count} bytes but the file "
                    f"ends {size - pos - 8} bytes later"
                )
            if kind == _MI_COMPRESSED:
                try:
                    inner = zlib.decompressobj().decompress(f.read(min(count, _HEAD)), _HEAD)
                except zlib.error as exc:
                    raise ValueError(
                        f"a damaged compressed variable at byte {pos} ({exc})"
                    ) from None
            elif kind == _MI_MATRIX:
                f.seek(pos)
                inner = f.read(min(count + 8, _HEAD))
                end = pos + 8 + (count + 7) // 8 * 8
            else:
                raise ValueError(f"an element of type {kind} at byte {pos} is not a variable")
            name, cls, dims, declared = _mat5_variable(inner, endian)
            found[name] = (cls, dims, declared, pos, min(end, size), kind == _MI_COMPRESSED)
            pos = end
    return found


def _needed_mat5(path: str, head: bytes, found: dict, names: set) -> bytes:
    """A v5 file holding only the variables ``names`` (raw elements, nothing inflated), after
    each one's declared size is checked against the budget and the compression bomb rule."""
    total, parts = 0, [head]
    with open(path, "rb") as f:
        for name in sorted(names & set(found)):
            cls, dims, declared, start, end, compressed = found[name]
            f.seek(start)
            raw = f.read(end - start)
            if declared is None:  # a cell or struct: its size is what it inflates to
                cap = max(end - start, 1) * MAX_DATA_COMPRESSION_RATIO
                declared = _inflated_size(raw[8:], cap) if compressed else end - start
                if declared > cap:
                    raise ValueError(
                        f"{path}: {name!r} ({cls}) inflates to more than {cap} bytes from "
                        f"{end - start}: refused, as a decompression bomb."
                    )
            elif compressed:  # its stream must inflate to no more than its header declares
                _check_ratio(path, name, declared, end - start)
                cap = declared + 1024 + 8 * len(dims) + len(name)  # sub-element headers, padding
                if _inflated_size(raw[8:], cap) > cap:
                    raise ValueError(
                        f"{path}: {name!r} declares {cls} {dims} ({declared} bytes) but its "
                        "compressed data inflate to more: refused (forged or damaged)."
                    )
            total += declared + len(raw)
            parts.append(raw)
    _check_declared(path, total, f"the variables {sorted(names & set(found))}")
    return b"".join(parts)


def read_mat(path: str, names: set) -> tuple[dict, list]:
    """The variables ``names`` of a MATLAB file (those present), and every variable's name.

    Parameters
    ----------
    path : str
    names : set of str
        The variables to read (the others are skipped unread).

    Returns
    -------
    arrays : dict of str to ndarray
    available : list of str
    """
    from scipy.io import loadmat
    from scipy.io.matlab import matfile_version

    size = check_regular_file(path, path)
    try:
        with open(path, "rb") as f:
            major = matfile_version(f)[0]
        if major == 2:
            return _read_mat73(path, names)
        if major == 0:  # v4: uncompressed, every array bounded by the file's own bytes
            raw = loadmat(path)
            available = [k for k in raw if not k.startswith("__")]
        else:
            found = _mat5_directory(path, size)
            available = list(found)
            with open(path, "rb") as f:
                head = f.read(128)
            raw = loadmat(io.BytesIO(_needed_mat5(path, head, found, names)))
    except MemoryError:
        raise ValueError(f"{path}: not enough memory to read it.") from None
    except _DAMAGED as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(path):
            raise  # a message of ours, naming the file already
        raise ValueError(f"{path} is not a readable MATLAB file ({exc}).") from None
    return {k: v for k, v in raw.items() if k in names}, available


def _read_mat73(path: str, names: set) -> tuple[dict, list]:
    try:
        import h5py
    except ImportError:
        raise ImportError(f"{path}: {_INSTALL['mat73']}") from None
    try:
        with h5py.File(path, "r") as f:
            available = list(f.keys())
            wanted = {}
            for name in sorted(names & set(available)):
                item = f[name]
                if not isinstance(item, h5py.Dataset):
                    raise ValueError(f"{path}: {name!r} is a MATLAB struct, not an array.")
                if item.dtype.hasobject or item.dtype.kind == "V":
                    raise ValueError(
                        f"{path}: {name!r} is a MATLAB cell array or struct; store numbers "
                        "(or a char array) under this name."
                    )
                declared = int(np.prod(item.shape, dtype=object)) * item.dtype.itemsize
                _check_ratio(path, name, declared, item.id.get_storage_size())
                wanted[name] = (item, declared)
            _check_declared(
                path, sum(d for _, d in wanted.values()), f"the arrays {sorted(wanted)}"
            )
            # MATLAB stores column-major: arrays come transposed
            return {name: item[()].T for name, (item, _) in wanted.items()}, available
    except OSError as exc:
        raise ValueError(f"{path} is not a readable MATLAB v7.3 (HDF5) file ({exc}).") from None


# --- CSV and Parquet ----------------------------------------------------------------------------


def _csv_error(path: str, reader, exc: Exception) -> ValueError:
    if isinstance(exc, UnicodeDecodeError):
        return ValueError(
            f"{path} is not a text (UTF-8) CSV file ({exc.reason} at byte {exc.start})."
        )
    detail = str(exc)
    if "field larger than field limit" in detail:
        detail = (
            f"a field longer than {_CSV_FIELD_LIMIT} characters (no number is that long: a binary "
            "file, or an unclosed quote?)"
        )
    return ValueError(f"{path}, line {reader.line_num}: {detail}.")


def _check_header(path: str, header: list) -> list:
    names = [name.strip() for name in header]
    if len(names) > MAX_CSV_COLUMNS:
        raise ValueError(
            f"{path}: the header names {len(names)} columns, more than MAX_CSV_COLUMNS="
            f"{MAX_CSV_COLUMNS}; store wide feature tables as .npz (X, y)."
        )
    duplicates = [name for name, count in Counter(names).items() if count > 1]
    if duplicates:
        raise ValueError(f"{path}: the header names column(s) {duplicates[:5]} more than once; "
                         "rename them (no column is dropped silently).")  # fmt: skip
    return names


def count_rows(path: str) -> tuple[list, int]:
    """The header and the number of data rows, every row's width checked (one streaming pass)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if not header:
                raise ValueError(f"{path} is empty: a header row with column names is needed.")
            names, n_rows = _check_header(path, header), 0
            for row in reader:
                if len(row) != len(names):
                    if not row:  # a blank line
                        continue
                    raise ValueError(f"{path}, line {reader.line_num}: {len(row)} fields but "
                                     f"the header names {len(names)}.")  # fmt: skip
                n_rows += 1
        except (csv.Error, UnicodeDecodeError) as exc:
            raise _csv_error(path, reader, exc) from None
    return names, n_rows


def csv_line(path: str, row: int) -> int:
    """The line of the file ``path`` that holds data row ``row`` (from 0, below the header;
    blank lines skipped, as :func:`read_csv_table` skips them): for an error message."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        next(reader)
        for seen, _ in enumerate(filter(None, reader)):
            if seen == row:
                return reader.line_num
    raise ValueError(f"{path} has no data row {row}.")  # pragma: no cover


def _numbers(cells, name: str, path: str, first_line: int) -> np.ndarray:
    """One chunk of a feature column as float64; a cell that is not a number is named."""
    try:
        return np.asarray(cells, dtype=np.float64)
    except ValueError:
        for i, cell in enumerate(cells):  # the error path only: find the culprit
            try:
                float(cell)
            except ValueError:
                what = "an empty cell (a missing value?)" if not cell.strip() else repr(cell[:40])
                raise ValueError(
                    f"{path}, line {first_line + i}: feature column {name!r} holds {what}; "
                    "every feature must be a number (to ignore such columns, name the "
                    "features: features=[...], --feature-columns 'f*')."
                ) from None
        raise  # pragma: no cover


class UnparsedColumn(str):
    """A CSV column that is not numbers: the message naming its first bad cell. A table's
    reader keeps it instead of failing, so that a missing label column is reported first and
    an ``image_path`` column never used as a feature costs nothing."""

    @property
    def message(self) -> str:
        return str(self)


def read_csv_table(path: str, keep_text: set, wanted=None) -> dict:
    """Columns of a CSV file: ``keep_text`` columns as text (typed later), the others float64;
    with ``wanted`` (a predicate on a column's name) only the ``keep_text`` columns and those it
    accepts are read, the others skipped unparsed (an ``image_path`` beside named features).

    Two streaming passes: the first counts rows and checks every row's width (the memory of the
    result is checked before the second); the second parses bounded chunks of rows.
    """
    check_regular_file(path, path)
    names, n_rows = count_rows(path)
    if n_rows == 0:
        raise ValueError(f"{path}: no rows (only a header): there is nothing to learn from.")
    features = [
        j
        for j, name in enumerate(names)
        if name not in keep_text and (wanted is None or wanted(name))
    ]
    text_cols = [j for j, name in enumerate(names) if name in keep_text]
    _check_declared(path, n_rows * (8 * len(features) + 64 * len(text_cols)), "its cells")
    out = np.empty((n_rows, len(features)))
    text = {j: [] for j in text_cols}
    unparsed: dict[str, UnparsedColumn] = {}
    step = max(1, _CHUNK_CELLS // len(names))
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        next(reader)
        done = 0
        while done < n_rows:
            first = reader.line_num + 1
            chunk = list(itertools.islice(filter(None, reader), step))
            if not chunk:
                break
            columns = list(zip(*chunk, strict=True))
            for k, j in enumerate(features):
                if names[j] in unparsed:
                    continue
                try:
                    out[done : done + len(chunk), k] = _numbers(columns[j], names[j], path, first)
                except ValueError as exc:  # text: refused only if it is used as a feature
                    unparsed[names[j]] = UnparsedColumn(str(exc))
            for j in text_cols:
                text[j].append(np.char.strip(np.asarray(columns[j], dtype=str)))
            done += len(chunk)
    found = {names[j]: out[:, k] for k, j in enumerate(features)}
    found.update({names[j]: _typed(np.concatenate(text[j])) for j in text_cols})
    found.update(unparsed)
    return {name: found[name] for name in names if name in found}


def _typed(text: np.ndarray) -> np.ndarray:
    """A text column as int64 when every cell is an integer that fits exactly, float64 when
    every cell is a number, else the text itself (empty cells → NaN)."""
    try:
        return text.astype(np.int64)
    except OverflowError:  # integers beyond int64: kept as written (float64 would merge them)
        return text
    except ValueError:
        pass
    try:
        return np.where(text == "", "nan", text).astype(np.float64)
    except ValueError:
        return text


def read_parquet_table(path: str) -> dict:
    """Columns of a Parquet file, its footer (rows, uncompressed size, names) checked first."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path}: {_INSTALL['parquet']}") from None

    check_regular_file(path, path)
    try:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(j).name for j in range(meta.num_columns)]
        _check_header(path, names)
        if meta.num_rows == 0:
            raise ValueError(f"{path}: no rows: there is nothing to learn from.")
        size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
        _check_declared(path, 2 * size, "its columns")
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path} is not a readable Parquet file ({exc}).") from None
    out = {}
    for name in table.column_names:
        values = table.column(name).to_numpy()
        out[name] = values.astype(str) if values.dtype.kind == "O" else values
    return out
