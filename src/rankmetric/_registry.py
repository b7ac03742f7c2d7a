"""The one table of rankmetric's estimators; every other table of them is derived from it.

Each :class:`Entry` says where a class is defined and what it is called elsewhere: its short
name (``rankmetric fit NAME``, the benchmarks' learner id), the input ``rankmetric fit`` gives
it, its column label in the benchmark tables, its tuned variant in :mod:`rankmetric.tuning`, and
whether a model file may name it. From it come the lazy exports of ``rankmetric`` and
``rankmetric.estimators``, the methods of ``rankmetric fit``, the learners of
:mod:`rankmetric.bench.learners`, the tuned learners of ``--tune`` and the classes
:func:`rankmetric.io.load_model` may import. Adding an estimator adds one entry here
(tests/test_registry.py derives every table and checks it).

This module sits in the bottom layer: it holds strings only and imports nothing of rankmetric;
the modules above resolve the names when they need the classes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ESTIMATORS", "Entry", "exports", "module_of"]


@dataclass(frozen=True)
class Entry:
    """One estimator class.

    Attributes
    ----------
    cls : str
        The class name, exported by ``rankmetric`` and ``rankmetric.estimators``.
    module : str
        The module defining it, relative to the package (``"estimators.warca.linear"``).
    name : str or None
        Its short name: the method of ``rankmetric fit NAME`` and the benchmarks' learner id.
    fit_input : {"features", "spd"} or None
        What ``rankmetric fit`` gives it (feature vectors, or SPD matrices); ``None``: no
        ``rankmetric fit`` method.
    label : str or None
        Its column in the benchmark tables; ``None``: not a benchmark learner.
    tuned : str or None
        Its tuned variant in :mod:`rankmetric.tuning` (``rankmetric fit NAME --tune``).
    model_file : bool
        Whether :func:`rankmetric.io.load_model` may rebuild it from a model file.

    Examples
    --------
    >>> from rankmetric._registry import ESTIMATORS
    >>> warca = next(e for e in ESTIMATORS if e.cls == "WARCA")
    >>> warca.name, warca.path
    ('warca', 'rankmetric.estimators.warca.linear')
    """

    cls: str
    module: str
    name: str | None = None
    fit_input: str | None = None
    label: str | None = None
    tuned: str | None = None
    model_file: bool = True

    @property
    def path(self) -> str:
        """The defining module's full dotted name."""
        return f"rankmetric.{self.module}"


#: Where the tuned variants live, relative to the package (data, as ``Entry.module``).
TUNED_MODULE = "tuning"

ESTIMATORS: tuple[Entry, ...] = (
    Entry("WARCA", "estimators.warca.linear", "warca", "features", "WARCA", "WARCACV"),
    Entry(
        "KernelWARCA",
        "estimators.warca.kernel",
        "kernel-warca",
        "features",
        "Kernel WARCA",
        "KernelWARCACV",
    ),  # fmt: skip
    Entry("SSNE", "estimators.ssne", "ssne", "features", "SSNE", "SSNECV"),
    Entry("RPLEmbedding", "estimators.spd.rpl", "rpl", "spd"),
    Entry("SPDNetEmbedding", "estimators.spd.spdnet", "spdnet", "spd"),
    Entry("LMNN", "estimators.lmnn.lmnn", "lmnn", "features", "LMNN", "LMNNCV"),
    Entry("MultiMetricLMNN", "estimators.lmnn.mlmnn", "mlmnn", label="mLMNN"),
    Entry("ITML", "estimators.itml", "itml", "features", "ITML", "ITMLCV"),
    Entry(
        "KISSME", "estimators.pair_covariance.kissme", "kissme", "features", "KISSME", "KISSMECV"
    ),
    Entry("XQDA", "estimators.pair_covariance.xqda", "xqda", "features", "XQDA", "XQDACV"),
    Entry("PairClassifier", "estimators.pair_classifier", model_file=False),
    Entry("MDM", "estimators.spd.mdm", "mdm"),
)


def exports() -> dict[str, str]:
    """``{name: defining module}`` of the estimators and their tuned variants (lazy exports).

    Examples
    --------
    >>> from rankmetric._registry import exports
    >>> exports()["LMNNCV"]
    'rankmetric.tuning'
    """
    found = {e.cls: e.path for e in ESTIMATORS}
    found.update({e.tuned: f"rankmetric.{TUNED_MODULE}" for e in ESTIMATORS if e.tuned})
    return found


def module_of(name: str) -> str | None:
    """The module defining ``name`` when a model file may name that class, else ``None``.

    Examples
    --------
    >>> from rankmetric._registry import module_of
    >>> module_of("KISSME"), module_of("PairClassifier")
    ('rankmetric.estimators.pair_covariance.kissme', None)
    """
    return next((e.path for e in ESTIMATORS if e.cls == name and e.model_file), None)
