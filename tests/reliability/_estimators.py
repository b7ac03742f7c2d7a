"""The estimators under the reliability suite: fast settings, matching data, what to compare.

Loaded by ``conftest.py`` (fixtures) and by ``_resume_child.py`` (a subprocess), so it imports
nothing from the test tree. One :class:`EstimatorSpec` per public estimator; a new public
estimator must be added here (``test_conformance.py`` checks that none is missing).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankmetric.datasets import make_gaussian_clusters, make_spd_clusters

N_FEATURES = 5
N_CHANNELS = 4


@dataclass(frozen=True)
class EstimatorSpec:
    """How the reliability suite drives one estimator.

    Attributes
    ----------
    name : str
        Class name (``rankmetric.<name>`` or ``rankmetric.estimators.<module>.<name>``).
    module : str
        Module that defines the class.
    params : dict
        Small, fast hyper-parameters (a few iterations on CPU).
    input_kind : {"features", "spd"}
        ``(n, D)`` non-negative features or ``(n, c, c)`` SPD matrices.
    seeded : bool
        Whether ``random_state`` changes the result (stochastic training or initialisation).
    torch_trained : bool
        Trained by :func:`rankmetric.training.train` (so it must expose ``checkpoint_dir``).
    grid : dict
        A small ``GridSearchCV`` grid over one of its hyper-parameters.
    fitted_arrays : tuple of str
        Fitted attributes that hold the learned parameters (compared for exact equality).
    """

    name: str
    module: str
    params: dict[str, Any]
    input_kind: str = "features"
    seeded: bool = True
    torch_trained: bool = False
    grid: dict[str, list] = field(default_factory=dict)
    fitted_arrays: tuple[str, ...] = ("components_",)

    @property
    def cls(self) -> type:
        return getattr(importlib.import_module(self.module), self.name)

    def make(self, **overrides):
        """A fresh estimator with the fast parameters (and ``overrides``)."""
        return self.cls(**{**self.params, **overrides})

    def data(self, n_samples: int = 48, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Labelled training data of the right kind: 3 balanced classes."""
        return make_data(self.input_kind, n_samples, seed)


def make_data(input_kind: str, n_samples: int = 48, seed: int = 0):
    """``(X, y)``: 3 classes of non-negative features (n, 5) or of SPD matrices (n, 4, 4)."""
    if input_kind == "spd":
        return make_spd_clusters(n_samples, N_CHANNELS, 3, class_sep=1.5, random_state=seed)
    X, y = make_gaussian_clusters(n_samples, N_FEATURES, 3, n_informative=2, random_state=seed)
    return X - X.min() + 0.1, y  # non-negative, so the χ² kernel of KernelWARCA applies


_WARP_FAST = {"max_iter": 30, "batch_size": 32, "max_sampling": 16, "device": "cpu"}

SPECS: tuple[EstimatorSpec, ...] = (
    EstimatorSpec(
        "WARCA",
        "rankmetric.estimators.warca",
        {**_WARP_FAST, "n_components": 3, "random_state": 0},
        torch_trained=True,
        grid={"margin": [0.5, 1.0]},
    ),
    EstimatorSpec(
        "KernelWARCA",
        "rankmetric.estimators.warca",
        {**_WARP_FAST, "n_components": 3, "random_state": 0},
        torch_trained=True,
        grid={"reg_lambda": [1e-3, 1e-2]},
        fitted_arrays=("components_", "support_vectors_"),
    ),
    EstimatorSpec(
        "SSNE",
        "rankmetric.estimators.ssne",
        {"max_iter": 30, "batch_size": 32, "random_state": 0, "device": "cpu"},
        torch_trained=True,
        grid={"reg_lambda": [1e-4, 1e-3]},
        fitted_arrays=("weight_", "active_components_"),
    ),
    EstimatorSpec(
        "RPLEmbedding",
        "rankmetric.estimators.spd",
        # selection_se=0: keep the best validated step, so that the seed shows in the model (the
        # default one-standard-error rule keeps the identity start on this small set)
        {
            "max_iter": 20,
            "validation_every": 5,
            "selection_se": 0.0,
            "random_state": 0,
            "device": "cpu",
        },  # fmt: skip
        input_kind="spd",
        torch_trained=True,
        grid={"margin": [1.0, 2.0]},
        fitted_arrays=("weights_", "potato_log_mu_", "potato_log_sigma_"),
    ),
    EstimatorSpec(
        "SPDNetEmbedding",
        "rankmetric.estimators.spd",
        {
            "loss": "lifted",
            "max_iter": 20,
            "validation_every": 5,
            "random_state": 0,
            "init": "random",
            "device": "cpu",
        },  # fmt: skip
        input_kind="spd",
        torch_trained=True,
        grid={"learning_rate": [1e-2, 3e-2]},
        fitted_arrays=("weights_", "head_weight_", "head_bias_"),
    ),
    EstimatorSpec(
        "LMNN",
        "rankmetric.estimators.lmnn",
        {"max_iter": 20, "device": "cpu"},
        seeded=False,  # the default PCA initialisation draws nothing
        grid={"n_target_neighbors": [1, 2]},
    ),
    EstimatorSpec(
        "ITML",
        "rankmetric.estimators.itml",
        {"max_iter": 50, "random_state": 0},
        grid={"slack_weight": [0.5, 1.0]},
    ),
    EstimatorSpec(
        "KISSME",
        "rankmetric.estimators.pair_covariance",
        {},
        seeded=False,  # closed form
        grid={"n_components": [2, 3]},
    ),
    EstimatorSpec(
        "XQDA",
        "rankmetric.estimators.pair_covariance",
        {},
        seeded=False,  # closed form
        grid={"n_components": [2, 3]},
    ),
)

BY_NAME = {spec.name: spec for spec in SPECS}
