"""What linear and kernel WARCA share: parameter declarations, the labelled-data preamble, training.

:class:`BaseWARCA` holds it once; the training loop is :func:`.solver.train_warp`, the
validation set, its scorer and the check against the Euclidean distance are in
:mod:`.validation`. :class:`~rankmetric.estimators.warca.WARCA` (``linear.py``) and
:class:`~rankmetric.estimators.warca.KernelWARCA` (``kernel.py``) build on it.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from ..._utils import make_rng

# alike: the checks it uses (an import list as ssne.py's, not code)
from ..._validation import (
    CHECKPOINTS,
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    check_labels,
    check_min_per_class,
    check_scale,
)
from ...losses.warp import SAMPLINGS
from ...models.linear import LinearMap
from ...sampling import POSITIVES, CrossCameraLabelIndex, LabelIndex, check_cameras
from .._early_stopping import VALIDATION_PARAMETER_CONSTRAINTS, warn_validation_set
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from .._init_parameters import TRAINING_PARAMETER_CONSTRAINTS
from .solver import auto_draws, linear_steps, rows_of, train_warp
from .validation import VALIDATION_METRICS, make_validator, split_training_set

__all__ = ["BaseWARCA", "WARP_PARAMETER_CONSTRAINTS"]

#: The hyper-parameters every WARCA (linear and kernel) shares, declared once.
WARP_PARAMETER_CONSTRAINTS = {
    "n_components": [NONE, POSITIVE_INT],
    "margin": [Interval(Real, 0, None, closed="neither")],
    "reg_lambda": [Interval(Real, 0, None, closed="left")],
    "max_sampling": [NONE, POSITIVE_INT],
    **VALIDATION_PARAMETER_CONSTRAINTS,
    "validation_metric": [Options(*VALIDATION_METRICS)],
    "batch_size": [NONE, POSITIVE_INT],
    "tol_window": [NONE, POSITIVE_INT],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [NONE, Interval(Real, 0, None, closed="neither")],
    "sampling": [Options(*SAMPLINGS)],
    "tol": [NONE, Interval(Real, 0, None, closed="left")],
    "positives": [Options(*POSITIVES)],
    **TRAINING_PARAMETER_CONSTRAINTS,
    **CHECKPOINTS,
    **HELD_OUT_PARAMETER_CONSTRAINTS,
}


class BaseWARCA(TransformerMixin, BaseEstimator):
    """What linear and kernel WARCA share: parameter checks, the labelled-data preamble, training.

    Subclasses define ``__init__`` (their hyper-parameters) and ``fit``; ``fit`` checks its
    input with :meth:`_labelled_data`, trains with :func:`.solver.train_warp` (or
    :meth:`_train_linear_map` for a linear map on features) and ends with
    :func:`.validation.compare_with_euclidean`.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    #: What the warnings of a fit that ends no better than its start suggest trying.
    _untrained_hint = (
        "Try a smaller learning_rate, learning_rate=None and batch_size=None (scaled to the "
        "data), another reg_lambda, or a validation set (validation_fraction) to keep the best "
        "step; docs/warca.md, 'When a fit does not learn'."
    )

    def _labelled_data(self, X, y, X_val, y_val, cameras, *, precomputed=False):
        """Check the input of ``fit(X, y, X_val, y_val, cameras=...)`` and hold out validation.

        Returns ``(X, codes, X_val, val_codes, index, rng)``: the training rows, their label
        codes, the validation set (``None, None`` without one), the
        :class:`~rankmetric.sampling.LabelIndex` of the training rows (positives across
        cameras with ``positives="cross_camera"``) and the fit's random generator.
        ``precomputed``: ``X`` is a square, symmetric training kernel.
        """
        if X_val is not None or y_val is not None:
            warn_validation_set(type(self).__name__)
        X, y = validate_data(self, X, y, dtype=[np.float32, np.float64])
        if not precomputed:  # magnitudes whose squares overflow are refused
            check_scale(X, np.float32)
        classes, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        cams = None if cameras is None else check_cameras(cameras, X.shape[0])
        if self.positives == "cross_camera" and cams is None:
            raise ValueError(
                "positives='cross_camera' draws positive pairs across cameras: pass "
                "fit(X, y, cameras=...) (in a Pipeline, <step>__cameras=...)."
            )
        if precomputed and X.shape[0] != X.shape[1]:
            raise ValueError(
                f"kernel='precomputed' needs a square training kernel, got shape {X.shape}."
            )
        if precomputed and not _is_symmetric(X):
            raise ValueError("kernel='precomputed' needs a symmetric training kernel K(X, X).")
        rng = make_rng(self.random_state)
        if self.positives != "cross_camera":
            cams = None  # checked, then unused
        X, codes, X_val, val_codes, cams = split_training_set(
            self, X, codes, classes, X_val, y_val, rng, precomputed=precomputed, cameras=cams
        )
        if cams is None:
            index = LabelIndex.from_codes(codes)
        else:  # the training rows' cameras: positives only across cameras
            index = CrossCameraLabelIndex.from_cameras(codes, cams)
        return X, codes, X_val, val_codes, index, rng

    def _train_linear_map(
        self, model: LinearMap, data, index, val_data, val_codes, rng, device, **schedule
    ) -> None:
        """Train the linear map ``model`` on rows of ``data`` (linear WARCA, Nyström features),
        validating on rows of ``val_data`` (None: no validation)."""
        validate = None
        if val_data is not None:
            validate = make_validator(
                self.validation_metric,
                rows_of(model, data),
                rows_of(model, val_data),
                index.codes,
                val_codes,
                rng,
                device,
            )
        draws = auto_draws(index.n_samples, self.max_sampling, self.sampling)
        steps = linear_steps(model, data, self.sampling, draws)
        train_warp(self, model, steps, index, rng, device, validate=validate, **schedule)


def _is_symmetric(K: np.ndarray, rtol: float = 1e-5, chunk_rows: int = 1024) -> bool:
    """Whether the square ``K`` equals ``Kᵀ`` up to ``rtol`` of its largest diagonal entry,
    compared in row blocks (no N × N temporary)."""
    atol = rtol * max(float(np.abs(np.diagonal(K)).max(initial=0.0)), 1e-30)
    return all(
        np.allclose(K[start : start + chunk_rows], K[:, start : start + chunk_rows].T, rtol, atol)
        for start in range(0, K.shape[0], chunk_rows)
    )
