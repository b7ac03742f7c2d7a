"""The public API's docstrings meet the numpydoc standard of scikit-learn's ``_nca.py``.

Every name in the ``__all__`` of the public modules is checked with numpydoc's parser:

* estimators and transformers (scikit-learn ``BaseEstimator`` subclasses): Parameters,
  Attributes, See Also, References and Examples; and every public attribute ending in ``_``
  that ``fit`` sets is listed under Attributes (each estimator is fitted on a few points);
* losses, miners and network layers (``torch.nn.Module`` subclasses and ``Miner``):
  Parameters, See Also, References (except the abstract bases) and Examples;
* public functions: Parameters (when they take any), Returns (or Yields) and Examples;
* the other public classes (data containers, samplers, ...): Parameters or Attributes, and
  Examples (exceptions and warnings: a summary only);
* the public methods of estimators and losses (``fit``, ``transform``, ``mine``, ...): Parameters
  (when they take any) and Returns;
* everywhere: every See Also entry names an object that exists.

The Examples themselves run as doctests: ``python -m pytest --doctest-modules src/rankmetric``.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest
import torch
from numpydoc.docscrape import NumpyDocString
from sklearn.base import BaseEstimator

import rankmetric
from rankmetric.losses import Miner

PUBLIC_MODULES = [
    "rankmetric",
    "rankmetric.estimators",
    "rankmetric.preprocessing",
    "rankmetric.losses",
    "rankmetric.evaluate",
    "rankmetric.geometry",
    "rankmetric.neighbors",
    "rankmetric.index",
    "rankmetric.sampling",
    "rankmetric.datasets",
    "rankmetric.models",
    "rankmetric.kernels",
    "rankmetric.resources",
]

#: Abstract bases: documented, but no paper to cite.
NO_REFERENCES = {"MetricLoss", "BatchMetricLoss", "Miner"}  # abstract bases: no paper


def _public_objects() -> dict[str, object]:
    found: dict[int, tuple[str, object]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.setdefault(id(obj), (f"{module_name}.{name}", obj))
    return dict(found.values())


PUBLIC = _public_objects()


def _is_estimator(obj) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseEstimator)


def _is_loss(obj) -> bool:
    return inspect.isclass(obj) and (issubclass(obj, torch.nn.Module) or issubclass(obj, Miner))


ESTIMATORS = sorted(name for name, obj in PUBLIC.items() if _is_estimator(obj))
LOSSES = sorted(name for name, obj in PUBLIC.items() if _is_loss(obj))
FUNCTIONS = sorted(name for name, obj in PUBLIC.items() if inspect.isfunction(obj))
OTHER_CLASSES = sorted(
    name
    for name, obj in PUBLIC.items()
    if inspect.isclass(obj)
    and not (_is_estimator(obj) or _is_loss(obj) or issubclass(obj, (Exception, Warning)))
)


def _doc(obj) -> NumpyDocString:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns about unknown sections: fail on them
        return NumpyDocString(inspect.getdoc(obj) or "")


def _takes_arguments(obj) -> bool:
    """Whether ``obj`` has named parameters (``*args, **kwargs`` alone do not count)."""
    kinds = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    return any(p.kind not in kinds for p in inspect.signature(obj).parameters.values())


def _missing(obj, sections) -> list[str]:
    doc = _doc(obj)
    return [section for section in sections if not doc[section]]


def test_the_public_api_is_found():
    assert {"rankmetric.WARCA", "rankmetric.preprocessing.Covariances"} <= set(ESTIMATORS)
    assert "rankmetric.losses.WARPLoss" in LOSSES
    assert "rankmetric.geometry.distance" in FUNCTIONS
    assert "rankmetric.sampling.LabelIndex" in OTHER_CLASSES


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_module_has_a_docstring(module_name):
    doc = importlib.import_module(module_name).__doc__
    assert doc and doc.strip(), f"{module_name} has no module docstring"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_docstring_sections(name):
    sections = ["Parameters", "Attributes", "See Also", "References", "Examples"]
    assert not _missing(PUBLIC[name], sections), f"{name} lacks {_missing(PUBLIC[name], sections)}"


@pytest.mark.parametrize("name", LOSSES)
def test_loss_docstring_sections(name):
    obj = PUBLIC[name]
    sections = ["Parameters", "See Also", "Examples"]
    if obj.__name__ not in NO_REFERENCES:
        sections.append("References")
    if not _takes_arguments(obj):
        sections.remove("Parameters")
    assert not _missing(obj, sections), f"{name} lacks {_missing(obj, sections)}"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_docstring_sections(name):
    obj = PUBLIC[name]
    doc = _doc(obj)
    lacks = []
    if _takes_arguments(obj) and not doc["Parameters"]:
        lacks.append("Parameters")
    if not (doc["Returns"] or doc["Yields"]):
        lacks.append("Returns")
    if not doc["Examples"]:
        lacks.append("Examples")
    assert not lacks, f"{name} lacks {lacks}"


#: torch's printing hook: not part of the documented API.
UNDOCUMENTED_METHODS = {"extra_repr"}


def _public_methods() -> list[tuple[str, object]]:
    methods = []
    for name in ESTIMATORS + LOSSES:
        for method_name, method in inspect.getmembers(PUBLIC[name], inspect.isfunction):
            if method_name.startswith("_") or method_name in UNDOCUMENTED_METHODS:
                continue
            if (method.__module__ or "").startswith("rankmetric"):
                methods.append((f"{name}.{method_name}", method))
    return methods


METHODS = dict(_public_methods())


@pytest.mark.parametrize("name", sorted(METHODS))
def test_method_docstring_sections(name):
    method = METHODS[name]
    doc = _doc(method)
    params = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    kinds = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    lacks = []
    if any(p.kind not in kinds for p in params) and not doc["Parameters"]:
        lacks.append("Parameters")
    if not (doc["Returns"] or doc["Yields"]):
        lacks.append("Returns")
    assert not lacks, f"{name} lacks {lacks}"


@pytest.mark.parametrize("name", OTHER_CLASSES)
def test_other_class_docstring_sections(name):
    doc = _doc(PUBLIC[name])
    lacks = [] if doc["Parameters"] or doc["Attributes"] else ["Parameters or Attributes"]
    lacks += [] if doc["Examples"] else ["Examples"]
    assert not lacks, f"{name} lacks {lacks}"


def _resolve(name: str, context: object) -> bool:
    """Whether a See Also name is importable (dotted) or defined in the context's module."""
    name = name.lstrip("~.")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    module = importlib.import_module(context.__module__)
    return hasattr(module, name)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_see_also_names_exist(name):
    obj = PUBLIC[name]
    unknown = [
        ref for refs, _ in _doc(obj)["See Also"] for ref, _role in refs if not _resolve(ref, obj)
    ]
    assert not unknown, f"{name}: See Also names {unknown}, which do not exist"


def test_see_also_check_can_fail():
    assert _resolve("rankmetric.WARCA", rankmetric.WARCA)
    assert _resolve("~rankmetric.losses.WARPLoss", rankmetric.WARCA)
    assert not _resolve("rankmetric.NoSuchEstimator", rankmetric.WARCA)
    assert not _resolve("no_such_function", rankmetric.WARCA)


# Fitted attributes: every public attribute ending in "_" that fit sets is documented.


def _vectors():
    from rankmetric.datasets import make_gaussian_clusters

    X, y = make_gaussian_clusters(40, n_features=4, n_classes=2, random_state=0)
    return X.astype(np.float32), y


def _spd():
    from rankmetric.datasets import make_spd_clusters

    return make_spd_clusters(24, n_channels=3, n_classes=2, random_state=0)


def _pairs():
    X, y = _vectors()
    pairs = np.random.default_rng(0).integers(0, len(X), size=(60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    return np.stack([X[pairs[:, 0]], X[pairs[:, 1]]], axis=1), same


def _tuned_fits() -> dict:
    """The ``*CV`` learners of rankmetric.tuning on a fixed plan of two candidates."""
    small = {
        "WARCACV": rankmetric.WARCA(n_components=2, max_iter=5),
        "KernelWARCACV": rankmetric.KernelWARCA(kernel="rbf", n_components=2, max_iter=5),
        "SSNECV": rankmetric.SSNE(n_components=3, max_iter=5),
        "LMNNCV": rankmetric.LMNN(n_components=2, max_iter=5),
        "ITMLCV": rankmetric.ITML(max_iter=5),
        "KISSMECV": rankmetric.KISSME(),
        "XQDACV": rankmetric.XQDA(),
    }
    return {
        name: (lambda n=name, e=est: getattr(rankmetric, n)(e, n_candidates=2, random_state=0)
               .fit(*_vectors()))
        for name, est in small.items()
    }  # fmt: skip


def _fitted(name: str):
    from rankmetric import preprocessing as pre

    rng = np.random.default_rng(0)
    spd_net = {"hidden_sizes": 2, "max_iter": 3, "validation_fraction": 0.0, "device": "cpu"}
    fits = {
        "WARCA": lambda: rankmetric.WARCA(n_components=2, max_iter=5).fit(*_vectors()),
        "KernelWARCA": lambda: rankmetric.KernelWARCA(kernel="rbf", n_components=2, max_iter=5).fit(
            *_vectors()
        ),
        "SSNE": lambda: rankmetric.SSNE(n_components=3, max_iter=5).fit(*_vectors()),
        "LMNN": lambda: rankmetric.LMNN(n_components=2, max_iter=5).fit(*_vectors()),
        "MultiMetricLMNN": lambda: rankmetric.MultiMetricLMNN(max_iter=5).fit(*_vectors()),
        "ITML": lambda: rankmetric.ITML(max_iter=5).fit(*_vectors()),
        "KISSME": lambda: rankmetric.KISSME().fit(*_vectors()),
        "XQDA": lambda: rankmetric.XQDA().fit(*_vectors()),
        "SPDNetEmbedding": lambda: rankmetric.SPDNetEmbedding(
            loss="multi-similarity", **spd_net
        ).fit(*_spd()),
        "RPLEmbedding": lambda: rankmetric.RPLEmbedding(**spd_net).fit(*_spd()),
        "PairClassifier": lambda: rankmetric.PairClassifier(probability=True).fit(*_pairs()),
        "MDM": lambda: rankmetric.MDM(device="cpu").fit(*_spd()),
        "Covariances": lambda: pre.Covariances("scm").fit(rng.standard_normal((4, 3, 30))),
        "TangentSpace": lambda: pre.TangentSpace(device="cpu").fit(_spd()[0]),
        "DomainRecentering": lambda: pre.DomainRecentering(device="cpu").fit(
            _spd()[0], domains=np.arange(24) % 2
        ),
        "RegionCovariances": lambda: pre.RegionCovariances().fit(rng.random((3, 8, 8))),
        "StripeHistograms": lambda: pre.StripeHistograms().fit(rng.random((3, 16 * 16))),
        **_tuned_fits(),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        return fits[name]()


def _documented_attributes(obj) -> set[str]:
    return {
        part.strip()
        for attribute in _doc(obj)["Attributes"]
        for part in attribute.name.split(",")
        if part.strip()
    }


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_fitted_attribute_is_documented(name):
    model = _fitted(name.rsplit(".", 1)[1])
    fitted = {key for key in vars(model) if key.endswith("_") and not key.startswith("_")}
    assert fitted, f"{name}: no fitted attribute found"
    undocumented = fitted - _documented_attributes(type(model))
    assert not undocumented, f"{name}: fitted attributes {sorted(undocumented)} not documented"
