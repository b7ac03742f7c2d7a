"""``load_dataset`` and ``list_datasets``: one small reader per data set of the registry."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import encode_labels
from ._cache import verified_files
from ._info import Dataset, DatasetInfo
from ._readers import frame_to_xy, read_csv_gz, read_idx_gz, read_keel_dat, read_rda_frame
from ._registry import REGISTRY, get_info
from ._ts import TsData, by_length, read_ts

__all__ = [
    "list_datasets",
    "load_dataset",
    "load_trials",
    "balance_scale",
    "resample_trials",
    "encode_targets",
]


@dataclass
class _Parts:
    """What a reader returns: features and labels, split if the source is."""

    X: np.ndarray
    labels: np.ndarray
    X_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    target_names: tuple[str, ...] | None = None  # set when labels are already codes
    lengths: np.ndarray | None = None
    lengths_test: np.ndarray | None = None


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def list_datasets() -> list[DatasetInfo]:
    """Every data set the package knows, loadable or not (``info.available``).

    Returns
    -------
    list of DatasetInfo
        In the order of docs/datasets.md: the UCI sets of SSNE Table 1, more UCI sets, image
        sets, multichannel recordings, then the unavailable re-identification sets.

    See Also
    --------
    rankmetric.datasets.load_dataset : Load one of them by name.
    rankmetric.datasets.fetch : Download the ones that need it.

    Examples
    --------
    >>> from rankmetric.datasets import list_datasets
    >>> [info.name for info in list_datasets()[:3]]
    ['iris', 'wine', 'wdbc']
    """
    return list(REGISTRY.values())


def load_dataset(name: str, *, data_home: str | os.PathLike | None = None) -> Dataset:
    """Load a data set by name.

    Parameters
    ----------
    name : str
        A name of :func:`list_datasets` (case, ``-``, ``_`` and spaces ignored).
    data_home : str or path-like, optional
        Cache folder of fetched sets (see :func:`data_home`).

    Returns
    -------
    Dataset
        ``X`` float64: (n_samples, n_features) for tabular and image sets (images flattened,
        pixel values as stored: 0..255 for MNIST-5k and Fashion-MNIST, 0..16 for digits);
        (n_samples, n_channels, length) for multichannel sets. ``y`` int64 codes.
        ``X_test``/``y_test`` hold the official test part where the source has one.

    Raises
    ------
    ValueError
        Unknown name; a set that is not available here; a set that needs fetching and is not in
        the cache, or whose cached files are corrupt (the message names
        ``rankmetric data fetch NAME``).

    See Also
    --------
    rankmetric.datasets.load_spd : Multichannel sets as SPD covariance matrices.
    rankmetric.datasets.load_features : A user's own feature file.
    rankmetric.datasets.list_datasets : Every known name.

    Examples
    --------
    >>> from rankmetric.datasets import load_dataset
    >>> iris = load_dataset("iris")  # bundled with scikit-learn: no download
    >>> iris.X.shape, iris.kind
    ((150, 4), 'tabular')
    """
    info = get_info(name)
    if not info.available:
        raise ValueError(
            f"data set {info.name!r} is not available: {info.notes} ({info.description})."
        )
    files = verified_files(info.name, data_home) if info.needs_fetch else {}
    parts = _READERS[info.name](files)
    return _assemble(info, parts)


def load_trials(name: str, *, data_home: str | os.PathLike | None = None) -> tuple[TsData, TsData]:
    """The raw train and test trials of a multichannel set, at their original lengths."""
    info = get_info(name)
    if info.kind != "multichannel" or not info.available:
        raise ValueError(
            f"data set {info.name!r} is not an available multichannel set; "
            "see `rankmetric data list`."
        )
    return _read_trials(info.name, verified_files(info.name, data_home))


def _read_trials(name: str, files: dict[str, Path]) -> tuple[TsData, TsData]:
    return read_ts(files[f"{name}_TRAIN.ts"]), read_ts(files[f"{name}_TEST.ts"])


def _assemble(info: DatasetInfo, parts: _Parts) -> Dataset:
    if parts.target_names is None:
        target_names, y, y_test = encode_targets(parts.labels, parts.labels_test)
    else:
        target_names, y, y_test = parts.target_names, parts.labels, parts.labels_test
    description = f"{info.description}. Source: {info.source}."
    if info.notes:
        description += f" {info.notes}"

    def as_float(X):
        return None if X is None else np.ascontiguousarray(X, dtype=np.float64)

    return Dataset(
        X=as_float(parts.X),
        y=np.asarray(y, dtype=np.int64),
        X_test=as_float(parts.X_test),
        y_test=None if y_test is None else np.asarray(y_test, dtype=np.int64),
        name=info.name,
        kind=info.kind,
        description=description,
        info=info,
        target_names=tuple(target_names),
        lengths=parts.lengths,
        lengths_test=parts.lengths_test,
    )


def encode_targets(labels: np.ndarray, labels_test: np.ndarray | None = None):
    """Labels → (target_names, codes, test codes); classes sorted (numerically if numbers)."""
    parts = [_integral(part) for part in (labels, labels_test) if part is not None]
    classes, codes = encode_labels(*parts)
    return tuple(str(c) for c in classes), codes[0], codes[1] if labels_test is not None else None


def _integral(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind == "f" and np.all(labels == np.round(labels)):
        return labels.astype(np.int64)
    return labels


# --- readers, one per set -------------------------------------------------------------------


def _sklearn(loader_name: str) -> Callable[[dict[str, Path]], _Parts]:
    def read(files: dict[str, Path]) -> _Parts:
        from sklearn import datasets

        bunch = getattr(datasets, loader_name)()
        return _Parts(bunch.data, bunch.target, target_names=tuple(map(str, bunch.target_names)))

    return read


def balance_scale() -> tuple[np.ndarray, np.ndarray]:
    """The UCI balance-scale set, generated exactly.

    Returns
    -------
    X : ndarray of shape (625, 4)
        All (left weight, left distance, right weight, right distance) in 1..5, in
        lexicographic order (the order of the UCI file).
    labels : ndarray of shape (625,), dtype str
        ``"L"`` if LW*LD > RW*RD, ``"R"`` if smaller, ``"B"`` (balanced) if equal.
    """
    grid = np.indices((5, 5, 5, 5)).reshape(4, -1).T + 1
    torque = np.sign(grid[:, 0] * grid[:, 1] - grid[:, 2] * grid[:, 3])
    labels = np.array(["R", "B", "L"])[torque + 1]
    return grid.astype(np.float64), labels


def _mlbench(file: str, obj: str, target: str) -> Callable[[dict[str, Path]], _Parts]:
    def read(files: dict[str, Path]) -> _Parts:
        X, labels, _ = frame_to_xy(read_rda_frame(files[file], obj), target)
        return _Parts(X, labels)

    return read


def _heart(files: dict[str, Path]) -> _Parts:
    data = read_keel_dat(files["heart.dat"])
    X = data[:, :-1].copy()
    X[:, 9] /= 10.0  # KEEL stores oldpeak x10
    return _Parts(X, data[:, -1])


def _vowel(files: dict[str, Path]) -> _Parts:
    # columns: train(0)/test(1) flag, speaker, sex, 10 features, class 0..10
    data = read_keel_dat(files["vowel.dat"])
    test = data[:, 0] == 1
    X, labels = data[:, 3:-1], data[:, -1]
    return _Parts(X[~test], labels[~test], X[test], labels[test])


def _mnist_5k(files: dict[str, Path]) -> _Parts:
    data = read_csv_gz(files["mnist_5k.csv.gz"])
    return _Parts(data[:, :-1], data[:, -1])


def _fashion_mnist(files: dict[str, Path]) -> _Parts:
    def part(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        images = read_idx_gz(files[f"{prefix}-images-idx3-ubyte.gz"])
        labels = read_idx_gz(files[f"{prefix}-labels-idx1-ubyte.gz"])
        return images.reshape(len(images), -1).astype(np.float64), labels

    (X, y), (X_test, y_test) = part("train"), part("t10k")
    return _Parts(X, y, X_test, y_test)


def _multichannel(name: str) -> Callable[[dict[str, Path]], _Parts]:
    def read(files: dict[str, Path]) -> _Parts:
        train, test = _read_trials(name, files)
        lengths, lengths_test = train.lengths, test.lengths
        length = int(max(lengths.max(), lengths_test.max()))
        equal = np.all(lengths == length) and np.all(lengths_test == length)
        return _Parts(
            resample_trials(train.series, length),
            train.labels,
            resample_trials(test.series, length),
            test.labels,
            lengths=None if equal else lengths,
            lengths_test=None if equal else lengths_test,
        )

    return read


def resample_trials(series: list[np.ndarray], length: int) -> np.ndarray:
    """Stack trials of shape (n_channels, length_i) after resampling each to ``length``.

    Linear interpolation on a uniform grid from the first to the last sample of each trial;
    trials already of ``length`` are copied unchanged. Vectorised per group of equal length.

    Returns
    -------
    ndarray of shape (n_trials, n_channels, length), float64
    """

    def resample(group: np.ndarray) -> np.ndarray:
        if group.shape[2] == length:
            return group
        return group @ _interpolation_matrix(group.shape[2], length)

    out = np.empty((len(series), series[0].shape[0], length), dtype=np.float64)
    return by_length(resample, series, out)


def _interpolation_matrix(source_length: int, length: int) -> np.ndarray:
    """W of shape (source_length, length) with ``trial @ W`` = linear resampling to ``length``."""
    position = np.linspace(0.0, source_length - 1, length)
    left = np.minimum(np.floor(position).astype(np.int64), max(source_length - 2, 0))
    fraction = position - left
    W = np.zeros((source_length, length))
    columns = np.arange(length)
    W[left, columns] += 1.0 - fraction
    W[np.minimum(left + 1, source_length - 1), columns] += fraction
    return W


_READERS: dict[str, Callable[[dict[str, Path]], _Parts]] = {
    "iris": _sklearn("load_iris"),
    "wine": _sklearn("load_wine"),
    "wdbc": _sklearn("load_breast_cancer"),
    "digits": _sklearn("load_digits"),
    "balance-scale": lambda files: _Parts(*balance_scale()),
    "sonar": _mlbench("Sonar.rda", "Sonar", "Class"),
    "ionosphere": _mlbench("Ionosphere.rda", "Ionosphere", "Class"),
    "glass": _mlbench("Glass.rda", "Glass", "Type"),
    "pima": _mlbench("PimaIndiansDiabetes.rda", "PimaIndiansDiabetes", "diabetes"),
    "vehicle": _mlbench("Vehicle.rda", "Vehicle", "Class"),
    "satellite": _mlbench("Satellite.rda", "Satellite", "classes"),
    "letter-recognition": _mlbench("LetterRecognition.rda", "LetterRecognition", "lettr"),
    "heart": _heart,
    "vowel": _vowel,
    "mnist-5k": _mnist_5k,
    "fashion-mnist": _fashion_mnist,
    **{
        name: _multichannel(name)
        for name, info in REGISTRY.items()
        if info.kind == "multichannel" and info.available
    },
}
