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

from .._distances import paired_squared_euclidean
from .._threads import fit_threads
from .._utils import deterministic_on
from .._validation import ParameterValidationMixin
from ..io import load_model, save_model
from ..training import Checkpointing, TrainingResult, Validation, fit_fingerprint, train
from ._held_out import HeldOutCheckMixin, fit_depth, run_held_out_check
from ._supervision import split_pairs

__all__ = [
    "MetricLearnerMixin",
    "MahalanobisMixin",
    "fit_context",
]

#: The fit methods of an estimator; each carries :func:`fit_context`.
FIT_METHODS = ("fit", "fit_pairs", "fit_triplets")


def _is_fitted_name(name: str) -> bool:
    """Whether scikit-learn's ``check_is_fitted`` counts attribute ``name`` as fitted state."""
    return name.endswith("_") and not name.startswith("__")


def fit_context(fit):
    """Decorate an estimator's ``fit`` / ``fit_pairs`` / ``fit_triplets``: the context of a fit.

    The one decorator every rankmetric estimator applies, visibly, to each of its fit methods
    (scikit-learn's ``_fit_context`` idea). Around the method it

    1. sizes the thread pools for the data (:func:`rankmetric._threads.fit_threads`: one thread
       for small data, ``self.n_threads`` when the estimator has that parameter, ``X`` being
       the first argument);
    2. computes, when the estimator has a ``checkpoint_dir``, the fingerprint of the estimator
       and of every argument of the fit (:func:`rankmetric.training.fit_fingerprint`), which
       :func:`fit_checkpointing` hands to ``train(checkpointing=...)`` during the fit (the
       outermost fit's, when one fit method calls another);
    3. makes the fit atomic: when it raises, every fitted attribute (name ending in ``_``) is
       removed, whatever the fit had already set, so the estimator is never half-updated by a
       failed (re)fit; hyper-parameters and other settings (``set_output``) are kept;
    4. runs, after the outermost fit (not one that another rankmetric fit runs inside), the
       held-out check of an estimator with a ``held_out_check`` parameter
       (:mod:`rankmetric.estimators._held_out`), which sets ``held_out_check_``.

    Parameters
    ----------
    fit : callable ``fit(self, X, *args, **kwargs)``
        The fit method.

    Returns
    -------
    callable
        The decorated method (``__wrapped__`` is ``fit``; ``_rankmetric_fit_context`` is True).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> class Scale(MetricLearnerMixin, BaseEstimator):
    ...     @fit_context
    ...     def fit(self, X, y=None):
    ...         self.scale_ = np.asarray(X).std()
    ...         if self.scale_ == 0:
    ...             raise ValueError("X is constant.")
    ...         return self
    >>> est = Scale().fit(np.arange(4.0)[:, None])
    >>> try:
    ...     est.fit(np.ones((4, 1)))
    ... except ValueError:
    ...     pass
    >>> hasattr(est, "scale_")  # a failed refit leaves the estimator unfitted
    False
    """
    sized = fit_threads(fit)

    @functools.wraps(fit)
    def fit_in_context(self, *args, **kwargs):
        kept = {k: v for k, v in vars(self).items() if not _is_fitted_name(k)}
        own = "_fit_fingerprint" not in vars(self)  # not a fit method called by another one
        if own and getattr(self, "checkpoint_dir", None) is not None:
            self._fit_fingerprint = fit_fingerprint(self, *args, **kwargs)
        try:
            with fit_depth() as outermost, deterministic_on(getattr(self, "device", "cpu")):
                fitted = sized(self, *args, **kwargs)
                if outermost and hasattr(self, "held_out_check"):
                    run_held_out_check(self, fit, args, kwargs)
            return fitted
        except BaseException:
            vars(self).clear()  # no half-updated model: back to the state before any fit
            vars(self).update(kept)
            raise
        finally:
            if own:
                vars(self).pop("_fit_fingerprint", None)

    fit_in_context._rankmetric_fit_context = True
    return fit_in_context


def fit_checkpointing(est) -> Checkpointing | None:
    """The checkpoints of ``est``'s running fit, for ``train(checkpointing=...)``.

    ``None`` without a ``checkpoint_dir``; else its ``checkpoint_dir``, ``checkpoint_every`` and
    the fingerprint of the estimator and the fit's data that :func:`fit_context` computed.

    Parameters
    ----------
    est : estimator with ``checkpoint_dir`` and ``checkpoint_every``
        An estimator inside its fit.

    Returns
    -------
    Checkpointing or None
    """
    if est.checkpoint_dir is None:
        return None
    return Checkpointing(est.checkpoint_dir, est.checkpoint_every, vars(est)["_fit_fingerprint"])


def train_estimator(
    est, module, optimizer, loss_step, *, rng, validate=None, score_start=True, **options
) -> TrainingResult:
    """:func:`rankmetric.training.train` with the settings an iterative estimator ``est`` holds.

    The one training path of WARCA, KernelWARCA, SSNE and the SPD networks: ``max_iter``, the
    progress bar (``verbose``, named after the class), the checkpoints of the running fit
    (:func:`fit_checkpointing`) and, when ``validate`` is given, early stopping every
    ``validation_every`` steps after ``n_iter_no_change`` validations without improvement
    (``patience``, its deprecated name, when that was set).

    Parameters
    ----------
    est : estimator
        With ``max_iter``, ``verbose``, ``checkpoint_dir``, ``checkpoint_every``,
        ``validation_every`` and ``n_iter_no_change``.
    module, optimizer, loss_step, rng
        As :func:`rankmetric.training.train`.
    validate : callable or None
        The validation score (higher is better); None: no early stopping.
    score_start : bool, default=True
        Score the untrained start (step 0) too (:class:`rankmetric.training.Validation`).
    **options
        Other keywords of :func:`rankmetric.training.train` (``hint``, ``post_step``, ...).

    Returns
    -------
    TrainingResult
    """
    validation = None
    if validate is not None:
        patience = est._param("n_iter_no_change")
        validation = Validation(validate, int(est.validation_every), patience, score_start)
    return train(
        module, optimizer, loss_step,
        rng=rng, max_iter=int(est.max_iter), validation=validation,
        checkpointing=fit_checkpointing(est), verbose=est.verbose, desc=type(est).__name__,
        **options,
    )  # fmt: skip


def training_history(result: TrainingResult) -> dict:
    """The fitted attributes a validated fit reads off its training result.

    Parameters
    ----------
    result : TrainingResult
        What :func:`train_estimator` returned.

    Returns
    -------
    dict
        ``n_iter_`` (steps taken), ``best_iter_`` (the step kept; None without validation, 0:
        the untrained start), ``initial_validation_score_`` (step 0's score) and
        ``validation_scores_`` (the score of each validation), for ``vars(est).update``.
    """
    return {
        "n_iter_": int(result.n_iter),
        "best_iter_": result.best_step,
        "initial_validation_score_": result.start_score,
        "validation_scores_": [float(h["val_score"]) for h in result.history if "val_score" in h],
    }


class MetricLearnerMixin(
    HeldOutCheckMixin, ParameterValidationMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
):
    """A learned distance ``d(a, b) = ||T(a) - T(b)||`` on top of ``transform``.

    Estimators whose embedding lives on the unit sphere (SSNE) have ``d² = 2 − 2 S(a, b)``,
    so nearest neighbours under ``d`` are the most similar points under ``S``.

    A subclass defines ``transform`` and the property ``_n_features_out`` (the number of
    columns ``transform`` returns); scikit-learn then wraps ``transform`` for ``set_output``
    and derives ``get_feature_names_out``. List this mixin before ``BaseEstimator``.

    Every ``fit`` / ``fit_pairs`` / ``fit_triplets`` a subclass defines carries the
    :func:`fit_context` decorator (thread sizing, the checkpoint fingerprint, atomic refit);
    ``tests/estimators/test_base.py`` checks it for every public estimator. The tags every
    metric learner shares are declared here once (``y`` is required), and ``_fitted_arrays``
    declares the shapes of the fitted arrays that :mod:`rankmetric.io` checks when it loads a
    model file.

    Hyper-parameters are declared in ``_parameter_constraints`` and checked by
    ``self._validate_params()`` (:class:`rankmetric._validation.ParameterValidationMixin`).
    """

    #: ``{fitted array: shape}``, the shape a tuple of ints, names of integer attributes
    #: (``"n_features_in_"``) and ``None`` (any length); :func:`rankmetric.io.load_model`
    #: refuses a file whose declared arrays have another shape. A subclass extends it.
    _fitted_arrays: dict[str, tuple] = {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # every metric learner learns from labels or pairs
        return tags

    def pair_distances(self, X1, X2=None) -> np.ndarray:
        """Learned distance of each pair: ``X1[i]`` and ``X2[i]``, or the stacked pairs ``X1``.

        The one pair-distance convention of every estimator (``docs/pairs.md``).

        Parameters
        ----------
        X1 : array-like of shape (n_pairs, n_features), or (n_pairs, 2, n_features)
            The first member of each pair, or the stacked pairs when ``X2`` is None.
        X2 : array-like of shape (n_pairs, n_features), optional
            The second member of each pair.

        Returns
        -------
        ndarray of shape (n_pairs,)
            ``d(X1[i], X2[i])`` for each row ``i``.
        """
        if X2 is None:
            X1, X2 = split_pairs(X1)
        T1, T2 = self.transform(X1), self.transform(X2)
        if T1.shape[0] != T2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {T1.shape[0]} != {T2.shape[0]}.")
        flat = (T1.shape[0], -1)
        return np.sqrt(paired_squared_euclidean(T1.reshape(flat), T2.reshape(flat)))

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

    _fitted_arrays = {"components_": (None, "n_features_in_")}

    # alike: transform's sections, shaped like every learner's (X in, embedding out)
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
