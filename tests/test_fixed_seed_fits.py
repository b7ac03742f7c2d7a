"""Fixed-seed fits of every estimator and transformer, compared with a recorded reference.

The reference (``tests/data/fixed_seed_fits.npz``) guards refactors: a change that alters any
fitted number fails here. On the platform that recorded it the comparison is exact, bit for bit.
The platform is the CPU model, the machine, torch's and NumPy's versions, torch's CPU capability,
NumPy's BLAS (library, version and the kernels it selected) and the environment variables that
select MKL's kernels (:func:`_platform`). Anywhere else (another CPU, another kernel: results
differ in their last bits) each model and score must agree with the reference to
:data:`REL_TOL` of its largest magnitude: a fit does not amplify last-bit differences
(``tests/reliability/test_cpu_independence.py`` checks that a one-ulp change of the input moves
no model further; ``docs/reliability.md``, "Determinism across CPUs").

Regenerate, only for a change that is meant to alter results (and say so in the CHANGELOG)::

    RANKMETRIC_RECORD_FIXED_SEED=1 python -m pytest tests/test_fixed_seed_fits.py
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np
import pytest
import torch

import rankmetric
from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters
from rankmetric.preprocessing import Covariances, DomainRecentering, TangentSpace

REFERENCE = Path(__file__).parent / "data" / "fixed_seed_fits.npz"
RECORD = os.environ.get("RANKMETRIC_RECORD_FIXED_SEED") == "1"
#: Off the recording platform: largest difference from the reference, relative to the largest
#: magnitude of the reference array (the same tolerance as the one-ulp perturbation test).
REL_TOL = 1e-4
#: Environment variables that select other BLAS/LAPACK kernels (and so other last bits).
KERNEL_VARIABLES = ("MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "OPENBLAS_CORETYPE")


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), or what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _numpy_blas() -> str:
    """NumPy's BLAS library, version and the kernels it selected (threadpoolctl).

    Only NumPy's own (a wheel's ``numpy.libs``) where it can be told apart: SciPy's and faiss's
    BLAS load or not depending on what ran before, which must not change the platform.
    """
    from threadpoolctl import threadpool_info

    np.dot(np.ones((2, 2)), np.ones((2, 2)))  # loads the BLAS
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    own = [i for i in blas if "numpy" in str(i.get("filepath", ""))]
    return ",".join(
        sorted(
            {
                f"{i.get('internal_api')}-{i.get('version')}-{i.get('architecture')}"
                for i in own or blas
            }
        )
    )


def _platform() -> str:
    return "|".join(
        [
            platform.machine(),
            _cpu_model(),
            torch.__version__,
            np.__version__,
            torch.backends.cpu.get_cpu_capability(),
            _numpy_blas(),
            *(f"{name}={os.environ[name]}" for name in KERNEL_VARIABLES if name in os.environ),
        ]
    )


def _vectors():
    X, y = make_gaussian_clusters(60, n_features=6, n_classes=3, random_state=0)
    return X.astype(np.float32), y


def _spd():
    X, y = make_spd_clusters(48, n_channels=4, n_classes=3, random_state=0)
    return X, y


def _pairs():
    X, y = _vectors()
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(X), size=(80, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    return X, pairs, same


def _fit_transform(estimator, data):
    X, y = data()
    return estimator.fit(X, y).transform(X)


CASES = {
    "WARCA": lambda: _fit_transform(
        rankmetric.WARCA(n_components=3, max_iter=40, random_state=0), _vectors
    ),
    "KernelWARCA": lambda: _fit_transform(
        rankmetric.KernelWARCA(kernel="rbf", n_components=3, max_iter=40, random_state=0), _vectors
    ),
    "SSNE": lambda: _fit_transform(
        rankmetric.SSNE(n_components=3, max_iter=40, random_state=0), _vectors
    ),
    "LMNN": lambda: _fit_transform(
        rankmetric.LMNN(n_components=3, max_iter=20, random_state=0), _vectors
    ),
    "MultiMetricLMNN": lambda: _multi_metric_lmnn(),
    "ITML": lambda: _fit_transform(rankmetric.ITML(max_iter=50, random_state=0), _vectors),
    "KISSME": lambda: _fit_transform(rankmetric.KISSME(), _vectors),
    "XQDA": lambda: _fit_transform(rankmetric.XQDA(n_components=3), _vectors),
    "SPDNetEmbedding": lambda: _fit_transform(
        rankmetric.SPDNetEmbedding(
            loss="multi-similarity",
            hidden_sizes=3,
            max_iter=15,
            validation_fraction=0.0,
            random_state=0,
            device="cpu",
        ),
        _spd,
    ),
    "RPLEmbedding": lambda: _fit_transform(
        rankmetric.RPLEmbedding(
            hidden_sizes=3, max_iter=15, validation_fraction=0.0, random_state=0, device="cpu"
        ),
        _spd,
    ),
    "MDM": lambda: rankmetric.MDM(device="cpu").fit(*_spd()).transform(_spd()[0]),
    "ITML_pairs": lambda: _fit_pairs(rankmetric.ITML(max_iter=50, random_state=0)),
    "PairClassifier": lambda: _pair_classifier(),
    "Covariances": lambda: Covariances(estimator="lwf").fit_transform(
        np.random.default_rng(0).standard_normal((5, 4, 50))
    ),
    "TangentSpace": lambda: TangentSpace().fit(_spd()[0]).transform(_spd()[0]),
    "DomainRecentering": lambda: DomainRecentering().fit_transform(
        _spd()[0], domains=np.arange(48) % 2
    ),
}


def _fit_pairs(estimator):
    X, pairs, same = _pairs()
    return estimator.fit_pairs(X, pairs, same).transform(X)


def _multi_metric_lmnn():
    X, y = _vectors()
    model = rankmetric.MultiMetricLMNN(max_iter=10, random_state=0).fit(X, y)
    return np.concatenate(
        [model.get_mahalanobis_matrices().ravel(), model.predict_proba(X).ravel()]
    )


def _pair_classifier():
    X, pairs, same = _pairs()
    stacked = np.stack([X[pairs[:, 0]], X[pairs[:, 1]]], axis=1)
    clf = rankmetric.PairClassifier(rankmetric.ITML(max_iter=50, random_state=0))
    return clf.fit(stacked, same).decision_function(stacked)


def _as_array(result) -> np.ndarray:
    if isinstance(result, torch.Tensor):
        result = result.detach().cpu().numpy()
    return np.asarray(result)


@pytest.fixture(scope="module")
def reference():
    if RECORD:
        arrays = {"_platform": np.array(_platform())}
        for name, case in CASES.items():
            torch.manual_seed(0)
            arrays[name] = _as_array(case())
        REFERENCE.parent.mkdir(exist_ok=True)
        np.savez_compressed(REFERENCE, **arrays)
    with np.load(REFERENCE, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_seed_fit_matches_reference(name, reference):
    torch.manual_seed(0)
    result = _as_array(CASES[name]())
    expected = reference[name]
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype
    if str(reference["_platform"]) == _platform():
        np.testing.assert_array_equal(result, expected)  # bit-identical where recorded
    else:
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(result, expected, rtol=0, atol=REL_TOL * scale)


def test_the_platform_names_the_cpu_and_the_kernels(monkeypatch):
    """Bit-identity is asked only where the CPU model and every kernel choice match."""
    monkeypatch.delenv("MKL_CBWR", raising=False)
    here = _platform()
    assert _cpu_model() in here and torch.backends.cpu.get_cpu_capability() in here
    assert _numpy_blas() in here
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    assert _platform() != here and "MKL_CBWR=COMPATIBLE" in _platform()


def test_every_public_estimator_has_a_fixed_seed_case():
    from sklearn.base import BaseEstimator

    from rankmetric.tuning import TunedMetricLearner

    # The self-tuning learners (WARCACV, ...) return a fitted base learner (best_estimator_),
    # whose fixed-seed case is here; their search is reproduced bit for bit by
    # tests/test_tuning.py::test_fixed_plan_is_reproducible_and_reports_its_search.
    public = {
        name
        for name in rankmetric.__all__
        if isinstance(getattr(rankmetric, name), type)
        and issubclass(getattr(rankmetric, name), BaseEstimator)
        and not issubclass(getattr(rankmetric, name), TunedMetricLearner)
    }
    assert public <= set(CASES)
