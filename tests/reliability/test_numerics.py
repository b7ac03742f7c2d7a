"""Numerics under stress: ill-conditioned float32 input, extreme scales, non-finite losses."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import KNeighborsClassifier

from rankmetric import training
from rankmetric.training import NonFiniteLossError

pytestmark = pytest.mark.timeout(120)


def _fit_quietly(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _ill_conditioned(spec, condition: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The spec's data made ill-conditioned, in float32.

    Features: rotated, then scaled along axes spanning ``sqrt(condition)`` in standard deviation,
    so the covariance has condition number about ``condition``; one feature nearly duplicates
    another. SPD matrices: ``Q diag(λ) Qᵀ`` per class pattern with ``λ`` spanning ``condition``.
    """
    rng = np.random.default_rng(seed)
    X, y = spec.data()
    if spec.input_kind == "spd":
        c = X.shape[1]
        spectrum = np.logspace(0, -np.log10(condition), c)
        Q = np.linalg.qr(rng.normal(size=(len(y), c, c)))[0]
        class_scale = 1.0 + y[:, None] * np.linspace(0.0, 1.0, c)[None]
        S = (Q * (spectrum * class_scale)[:, None, :]) @ Q.transpose(0, 2, 1)
        return ((S + S.transpose(0, 2, 1)) / 2).astype(np.float32), y
    Q = np.linalg.qr(rng.normal(size=(X.shape[1], X.shape[1])))[0]
    scales = np.logspace(0, -np.log10(condition) / 2, X.shape[1])
    Z = (X - X.mean(0)) @ Q * scales
    Z[:, -1] = Z[:, 0] + 1e-4 * rng.normal(size=len(y))  # nearly collinear
    return (Z - Z.min() + 1.0).astype(np.float32), y  # non-negative for the χ² kernel


@pytest.mark.parametrize("condition", [1e6, 1e10])
def test_float32_training_on_ill_conditioned_input_stays_finite(spec, condition):
    if spec.input_kind == "spd" and condition > 1e6:
        condition = 1e6  # beyond ~1e7 a float32 SPD matrix is not reliably positive definite
    X, y = _ill_conditioned(spec, condition)
    est = _fit_quietly(spec.make(), X, y)
    Z = est.transform(X)
    assert Z.dtype == np.float32
    assert np.isfinite(Z).all()
    if hasattr(est, "loss_curve_"):
        assert np.isfinite(np.asarray(est.loss_curve_)).all()
    assert np.isfinite(est.pair_distances(X[:10], X[10:20])).all()


# LMNN's unit margin is in absolute units: from its PCA start (unit scale) the map must shrink by
# 1/scale, which takes more than the suite's 20 iterations (about 70 at scale 1e8).
_SCALE_PARAMS = {"LMNN": {"max_iter": 1000}}


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_extreme_scales_give_finite_embeddings_that_still_separate(spec, scale, fitted_models):
    reference_est, X, y = fitted_models(spec)
    est = _fit_quietly(
        spec.make(**_SCALE_PARAMS.get(spec.name, {})), (X * scale).astype(np.float32), y
    )
    Z = est.transform((X * scale).astype(np.float32))
    assert np.isfinite(Z).all()
    reference = reference_est.transform(X)
    flat = Z.reshape(len(y), -1)
    knn = KNeighborsClassifier(3)
    scaled_accuracy = knn.fit(flat[::2], y[::2]).score(flat[1::2], y[1::2])
    flat_ref = reference.reshape(len(y), -1)
    reference_accuracy = knn.fit(flat_ref[::2], y[::2]).score(flat_ref[1::2], y[1::2])
    assert scaled_accuracy >= reference_accuracy - 0.15


# ---------------------------------------------------------------- non-finite losses

POISONED_STEP = 3


def _modules_calling_train():
    """The estimator modules that call ``training.train`` (patched there, where it is looked up):
    ``base``, whose ``train_estimator`` is the one path of WARCA, SSNE and the SPD networks."""
    names = ["base"]
    modules = [importlib.import_module(f"rankmetric.estimators.{n}") for n in names]
    return [m for m in modules if getattr(m, "train", None) is training.train]


def test_non_finite_loss_stops_training_with_a_clear_error_and_keeps_good_parameters(
    torch_spec, monkeypatch
):
    """The loss turns NaN at one step: fit raises, the module holds the last finite parameters,
    and the estimator is left unfitted rather than holding NaN."""
    record = {}
    real_train = training.train

    def poisoned_train(module, optimizer, loss_step, **kwargs):
        def step(i):
            record["before"] = {n: p.detach().clone() for n, p in module.named_parameters()}
            loss = loss_step(i)
            return loss * float("nan") if i == POISONED_STEP else loss

        record["module"] = module
        return real_train(module, optimizer, step, **kwargs)

    for module in _modules_calling_train():
        monkeypatch.setattr(module, "train", poisoned_train)
    X, y = torch_spec.data()
    est = torch_spec.make()
    with pytest.raises(NonFiniteLossError, match=f"step {POISONED_STEP}.*last finite values"):
        est.fit(X, y)
    assert isinstance(NonFiniteLossError("x"), ValueError)
    after = dict(record["module"].named_parameters())
    assert after, "the estimator trained no parameters through training.train"
    for name, before in record["before"].items():
        assert torch.isfinite(after[name]).all()
        torch.testing.assert_close(after[name].detach(), before, rtol=0, atol=0)
    with pytest.raises(NotFittedError):
        est.transform(X)
