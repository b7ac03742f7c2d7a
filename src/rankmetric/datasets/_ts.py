"""A small reader for the ``.ts`` text format of the UEA/UCR time-series archive.

Format (https://www.timeseriesclassification.com, as written by aeon and sktime)::

    # comment lines
    @problemName BasicMotions
    @univariate false
    @dimensions 6
    @equalLength true
    @seriesLength 100
    @classLabel true Standing Running Walking Badminton
    @data
    0.1,0.2,...:0.3,0.1,...:...:Standing

One case per line after ``@data``: its channels separated by ``:``, the values of a channel by
``,``, the class label last. ``?`` (or ``NaN``) marks a missing value. Cases may differ in length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["TsData", "read_ts", "parse_ts", "by_length"]


@dataclass
class TsData:
    """The content of one ``.ts`` file.

    Attributes
    ----------
    series : list of ndarray of shape (n_channels, length_i)
        One float64 array per case; missing values are NaN.
    labels : ndarray of shape (n_cases,), dtype str
        The class label of each case.
    class_labels : tuple of str
        The labels declared by ``@classLabel true ...`` (empty if none are declared).
    header : dict of str to str
        The ``@key value`` lines, keys lower-cased (``"serieslength"``, ``"dimensions"``...).
    """

    series: list[np.ndarray]
    labels: np.ndarray
    class_labels: tuple[str, ...] = ()
    header: dict[str, str] = field(default_factory=dict)

    @property
    def lengths(self) -> np.ndarray:
        """Length of each case, shape (n_cases,)."""
        return np.array([s.shape[1] for s in self.series], dtype=np.int64)

    @property
    def n_channels(self) -> int:
        """Number of channels (dimensions) of every case."""
        return self.series[0].shape[0]


def read_ts(path: str | Path) -> TsData:
    """Read a ``.ts`` file (see :func:`parse_ts`).

    Parameters
    ----------
    path : str or Path
        The ``.ts`` file (the format of the UEA/UCR time-series archive and aeon).

    Returns
    -------
    TsData
        Its series, labels and header.

    See Also
    --------
    rankmetric.datasets.load_dataset : Load the multichannel sets stored in this format.

    Examples
    --------
    >>> import os, tempfile
    >>> from rankmetric.datasets import read_ts
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.ts")
    >>> lines = ["@problemName toy", "@univariate false", "@dimensions 2",
    ...          "@classLabel true a b", "@data", "1,2,3:4,5,6:a", "7,8,9:1,1,1:b"]
    >>> with open(path, "w") as f:
    ...     print(*lines, sep=os.linesep, file=f)
    >>> data = read_ts(path)
    >>> data.labels.tolist(), data.series[0].shape
    (['a', 'b'], (2, 3))
    """
    path = Path(path)
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_ts(handle, source=str(path))


def parse_ts(lines, *, source: str = "<text>") -> TsData:
    """Parse the lines of a ``.ts`` file.

    Parameters
    ----------
    lines : iterable of str or str
        The file's lines (an open file works), or its whole text.
    source : str, default="<text>"
        Name used in error messages.

    Returns
    -------
    TsData

    Raises
    ------
    ValueError
        If the file has no ``@data`` section, uses time stamps, has no class labels, or a case's
        channel count or channel lengths disagree with the others.
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    header: dict[str, str] = {}
    series: list[np.ndarray] = []
    labels: list[str] = []
    in_data = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            if not line.startswith("@"):
                raise ValueError(f"{source}:{number}: expected a '@' header line before @data.")
            key, *value = line[1:].split(None, 1)
            key = key.lower()
            if key == "data":
                _check_header(header, source)
                in_data = True
            else:
                header[key] = value[0].strip() if value else ""
            continue
        channels, label = _parse_case(line, source, number)
        if series and channels.shape[0] != series[0].shape[0]:
            raise ValueError(
                f"{source}:{number}: case has {channels.shape[0]} channels, "
                f"the first case has {series[0].shape[0]}."
            )
        series.append(channels)
        labels.append(label)
    if not in_data:
        raise ValueError(f"{source}: no @data line found; is this a .ts file?")
    if not series:
        raise ValueError(f"{source}: the @data section is empty.")
    _check_dimensions(header, series[0].shape[0], source)
    class_labels = tuple(header.get("classlabel", "").split()[1:])
    return TsData(series, np.array(labels, dtype=str), class_labels, header)


def by_length(function, trials: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    """``out[i]``: ``function``'s result for trial ``i``, computed on each group of trials of equal
    length at once (``function`` maps a stack (n, n_channels, length) to n results)."""
    lengths = np.array([trial.shape[1] for trial in trials])
    for length in np.unique(lengths):
        index = np.flatnonzero(lengths == length)
        out[index] = function(np.stack([trials[i] for i in index]))
    return out


def _check_header(header: dict[str, str], source: str) -> None:
    if header.get("timestamps", "false").lower() == "true":
        raise ValueError(f"{source}: series with time stamps (@timeStamps true) are not supported.")
    if not header.get("classlabel", "").lower().startswith("true"):
        raise ValueError(f"{source}: the file declares no class labels (@classLabel true ...).")


def _check_dimensions(header: dict[str, str], n_channels: int, source: str) -> None:
    declared = header.get("dimensions")
    if declared is not None and int(declared) != n_channels:
        raise ValueError(
            f"{source}: @dimensions says {declared} but the cases have {n_channels} channels."
        )


def _parse_case(line: str, source: str, number: int) -> tuple[np.ndarray, str]:
    """One data line → (array of shape (n_channels, length), label)."""
    *fields, label = line.split(":")
    if not fields:
        raise ValueError(f"{source}:{number}: a case needs values and a class label.")
    values = [f.replace("?", "nan").split(",") for f in fields]  # numpy reads nan and NaN
    length = len(values[0])
    if any(len(v) != length for v in values):
        raise ValueError(f"{source}:{number}: the channels of one case differ in length.")
    try:
        channels = np.array(values, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{source}:{number}: non-numeric value ({exc}).") from None
    return channels, label.strip()
