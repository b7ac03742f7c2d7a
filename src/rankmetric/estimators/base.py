"""Mixins shared by every rankmetric estimator: learned metrics, Mahalanobis access, model files."""

from __future__ import annotations

import os

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._threads import fit_threads
from ..io import load_model, save_model

__all__ = ["MetricLearnerMixin", "MahalanobisMixin"]


class MetricLearnerMixin:
    """A learned distance ``d(a, b) = ||T(a) - T(b)||`` on top of ``transform``.

    Estimators whose embedding lives on the unit sphere (SSNE) have ``d² = 2 − 2 S(a, b)``,
    so nearest neighbours under ``d`` are the most similar points under ``S``.

    Every ``fit`` / ``fit_pairs`` a subclass defines runs under
    :func:`rankmetric._threads.fit_threads`: one thread for small data, all of torch's threads
    for large data, or ``self.n_threads`` when the estimator has that parameter.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("fit", "fit_pairs"):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "sized_threads", False):
                setattr(cls, name, fit_threads(method))

    def pair_distances(self, X1, X2) -> np.ndarray:
        """Learned distance between the rows of ``X1`` and ``X2`` (paired, same length)."""
        T1, T2 = self.transform(X1), self.transform(X2)
        if T1.shape[0] != T2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {T1.shape[0]} != {T2.shape[0]}.")
        return np.sqrt(((T1 - T2) ** 2).sum(axis=tuple(range(1, T1.ndim))))

    def get_metric(self):
        """A function ``metric(a, b) -> float`` on single samples.

        It can be passed as ``metric=`` to scikit-learn's neighbours estimators; for speed prefer
        transforming the data once and using the Euclidean metric on the embedding.
        """
        check_is_fitted(self)

        def metric(a, b) -> float:
            return float(self.pair_distances(np.asarray(a)[None], np.asarray(b)[None])[0])

        return metric

    def save(self, path: str | os.PathLike) -> None:
        """Save the fitted estimator to ``path`` (``.npz``; loading executes no code)."""
        check_is_fitted(self)
        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Load an estimator saved with :meth:`save`."""
        est = load_model(path)
        if not isinstance(est, cls):
            raise ValueError(f"{path} holds a {type(est).__name__}, not a {cls.__name__}.")
        return est


class MahalanobisMixin(MetricLearnerMixin):
    """Linear metric learners: ``T(x) = L x`` with ``components_ = L`` of shape (r, D)."""

    def transform(self, X) -> np.ndarray:
        """Project ``X`` (n_samples, n_features) onto the learned space (n_samples, r)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return X @ self.components_.T.astype(X.dtype, copy=False)

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """``M = Lᵀ L`` (n_features, n_features), so that ``d(a, b)² = (a − b)ᵀ M (a − b)``."""
        check_is_fitted(self, "components_")
        return self.components_.T @ self.components_
