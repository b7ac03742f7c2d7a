"""Mixins shared by every rankmetric transformer: learned metrics, Mahalanobis access, model files.

Every metric learner derives from :class:`MetricLearnerMixin`, which derives from scikit-learn's
public ``TransformerMixin`` and ``ClassNamePrefixFeaturesOutMixin``. So ``transform`` honours
``set_output(transform="pandas")`` and ``get_feature_names_out()`` names the columns
``"<classname>0"``, ``"<classname>1"``, ... from the estimator's ``_n_features_out``.
"""

from __future__ import annotations

import functools
import os

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._threads import fit_threads
from .._validation import ParameterValidationMixin
from ..io import load_model, save_model
from ..training import checkpoint_fingerprint, fit_fingerprint

__all__ = ["MetricLearnerMixin", "MahalanobisMixin", "atomic_fit"]

_FIT_METHODS = ("fit", "fit_pairs", "fit_triplets")


def _is_fitted_name(name: str) -> bool:
    """Whether scikit-learn's ``check_is_fitted`` counts attribute ``name`` as fitted state."""
    return name.endswith("_") and not name.startswith("__")


def _atomic(fit):
    """``fit`` that leaves the estimator unfitted when it fails (and fingerprints checkpoints)."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        kept = {k: v for k, v in vars(self).items() if not _is_fitted_name(k)}
        fingerprint = None
        if getattr(self, "checkpoint_dir", None) is not None:
            fingerprint = fit_fingerprint(self, *args, **kwargs)
        try:
            with checkpoint_fingerprint(fingerprint):
                return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()  # no half-updated model: back to the state before any fit
            vars(self).update(kept)
            raise

    wrapper._rankmetric_atomic = True
    return wrapper


def atomic_fit(cls: type) -> type:
    """Class decorator: a ``fit`` / ``fit_pairs`` / ``fit_triplets`` that raises leaves it unfitted.

    Every fitted attribute (name ending in ``_``) is removed, whatever the fit had already
    set, so the estimator is never half-updated by a failed (re)fit; hyper-parameters and other
    settings (``set_output``) are kept. Inside ``fit``, :func:`training.train` stamps
    checkpoints with a fingerprint of the data, labels and hyper-parameters. Applied to every
    subclass of :class:`MetricLearnerMixin` automatically.
    """
    for name in _FIT_METHODS:
        method = cls.__dict__.get(name)
        if method is not None and not getattr(method, "_rankmetric_atomic", False):
            setattr(cls, name, _atomic(method))
    return cls


class MetricLearnerMixin(
    ParameterValidationMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
):
    """A learned distance ``d(a, b) = ||T(a) - T(b)||`` on top of ``transform``.

    Estimators whose embedding lives on the unit sphere (SSNE) have ``d² = 2 − 2 S(a, b)``,
    so nearest neighbours under ``d`` are the most similar points under ``S``.

    A subclass defines ``transform`` and the property ``_n_features_out`` (the number of
    columns ``transform`` returns); scikit-learn then wraps ``transform`` for ``set_output``
    and derives ``get_feature_names_out``. List this mixin before ``BaseEstimator``.

    Every ``fit`` / ``fit_pairs`` a subclass defines runs under
    :func:`rankmetric._threads.fit_threads` (one thread for small data, all of torch's threads
    for large data, or ``self.n_threads`` when the estimator has that parameter), and one that
    raises leaves the estimator unfitted (see :func:`atomic_fit`).

    Hyper-parameters are declared in ``_parameter_constraints`` and checked by
    ``self._validate_params()`` (:class:`rankmetric._validation.ParameterValidationMixin`).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _FIT_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "sized_threads", False):
                setattr(cls, name, fit_threads(method))
        atomic_fit(cls)  # outermost: a failure anywhere inside leaves the estimator unfitted

    def pair_distances(self, X1, X2) -> np.ndarray:
        """Learned distance between the rows of ``X1`` and ``X2`` (paired, same length).

        Parameters
        ----------
        X1, X2 : array-like of shape (n_pairs, n_features)
            The first and second member of each pair.

        Returns
        -------
        ndarray of shape (n_pairs,)
            ``d(X1[i], X2[i])`` for each row ``i``.
        """
        T1, T2 = self.transform(X1), self.transform(X2)
        if T1.shape[0] != T2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {T1.shape[0]} != {T2.shape[0]}.")
        return np.sqrt(((T1 - T2) ** 2).sum(axis=tuple(range(1, T1.ndim))))

    def get_metric(self):
        """A function ``metric(a, b) -> float`` on single samples.

        It can be passed as ``metric=`` to scikit-learn's neighbours estimators; for speed prefer
        transforming the data once and using the Euclidean metric on the embedding.

        Returns
        -------
        callable
            ``metric(a, b)`` of two 1-D samples, returning their learned distance as a float.
        """
        check_is_fitted(self)

        def metric(a, b) -> float:
            return float(self.pair_distances(np.asarray(a)[None], np.asarray(b)[None])[0])

        return metric

    def save(self, path: str | os.PathLike) -> None:
        """Save the fitted estimator to ``path`` (``.npz``; loading executes no code).

        Parameters
        ----------
        path : str or path-like
            The ``.npz`` file to write (see :func:`rankmetric.save_model`).

        Returns
        -------
        None
            Read it back with :func:`rankmetric.load_model`.
        """
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
        """Project ``X`` (n_samples, n_features) onto the learned space (n_samples, r).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to project.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            ``X @ components_.T``: Euclidean distances there are the learned distances.
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return X @ self.components_.T.astype(X.dtype, copy=False)

    @property
    def _n_features_out(self) -> int:
        """Number of output columns: the rows of ``components_``."""
        return self.components_.shape[0]

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """``M = Lᵀ L`` (n_features, n_features), so that ``d(a, b)² = (a − b)ᵀ M (a − b)``.

        Formed in float64 whatever the dtype of ``components_``.

        Returns
        -------
        ndarray of shape (n_features, n_features), float64
            The positive semi-definite matrix ``M``.
        """
        check_is_fitted(self, "components_")
        L = self.components_.astype(np.float64)
        return L.T @ L
