"""A scikit-learn classifier of pairs ("same or not?") over any metric learner.

:class:`PairClassifier` fits a learner on labelled pairs through the pair convention of
``docs/pairs.md`` (the learner's ``fit_pairs``), then picks a distance threshold: a pair is
predicted *similar* when its learned distance is below the threshold. The threshold is
calibrated on the training pairs at ``fit`` and can be recalibrated on other pairs with
:meth:`PairClassifier.calibrate_threshold`, with the strategies of metric-learn:

* ``"accuracy"``: the threshold of highest accuracy;
* ``"f_beta"``: the threshold of highest F-beta score (similar pairs are the positive class);
* ``"max_tpr"``: the highest true positive rate among thresholds whose true negative rate is at
  least ``min_rate``;
* ``"max_tnr"``: the highest true negative rate among thresholds whose true positive rate is at
  least ``min_rate``.

Ties between candidate thresholds go to the smallest one (the fewest accepted pairs). The stored
``threshold_`` lies halfway between the last accepted and the first rejected distance of the
calibration pairs, so no calibration pair sits on it.
"""

from __future__ import annotations

import functools
import types
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._validation import (
    ARRAY,
    BOOLEAN,
    NONE,
    InstanceOf,
    Interval,
    Options,
    ParameterValidationMixin,
    check_param,
)
from ..evaluate.verification import roc_curve_from_distances
from ._docstrings import fill_doc
from ._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from ._init_parameters import store_parameters
from ._supervision import check_indices, check_similarity_targets, split_pairs

__all__ = ["PairClassifier", "STRATEGIES", "calibrated_threshold"]

#: The threshold calibration strategies.
STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")


class _IfProbability:
    """``predict_proba`` only with ``probability=True`` (so ``hasattr`` is False without it, as
    scikit-learn expects), else an ``AttributeError`` that says what to set (scikit-learn's
    ``available_if`` would replace that message by a generic one)."""

    def __init__(self, fn) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        if not obj.probability:
            raise AttributeError(
                f"{type(obj).__name__}.predict_proba needs the Platt map fitted with the "
                "threshold: build PairClassifier(..., probability=True) and fit again (a "
                "distance alone is no probability); decision_function gives the signed margins "
                "without it."
            )
        return types.MethodType(self.fn, obj)


# alike: PairClassifier.calibrate_threshold takes the same keywords and passes them on
def calibrated_threshold(
    distances: np.ndarray,
    similar: np.ndarray,
    strategy: str = "accuracy",
    *,
    beta: float = 1.0,
    min_rate: float | None = None,
) -> float:
    """The distance threshold that a calibration strategy picks on labelled distances.

    Parameters
    ----------
    distances : ndarray of shape (n_pairs,)
    similar : ndarray of shape (n_pairs,), bool
        Both kinds must occur.
    strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}
    beta : float, default=1.0
        The F-beta weight (``"f_beta"``).
    min_rate : float in [0, 1]
        The least TNR (``"max_tpr"``) or TPR (``"max_tnr"``) to keep.

    Returns
    -------
    float
        Pairs with ``distance < threshold`` are predicted similar.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    >>> similar = np.array([True, True, False, True, False, False])
    >>> calibrated_threshold(d, similar, "accuracy"), calibrated_threshold(d, similar, "f_beta")
    (2.5, 4.5)
    """
    check_param("strategy", strategy, [Options(*STRATEGIES)])
    if strategy in ("max_tpr", "max_tnr"):
        if min_rate is None:
            raise ValueError(f"strategy={strategy!r} needs min_rate, a number in [0, 1].")
        check_param("min_rate", min_rate, [Interval(Real, 0, 1, closed="both")])
        min_rate = float(min_rate)
    if strategy == "f_beta":
        check_param("beta", beta, [Interval(Real, 0, None, closed="left")])  # 0: precision
    far, tar, t = roc_curve_from_distances(distances, similar, drop_intermediate=False)
    n_pos = int(np.count_nonzero(similar))
    n_neg = similar.shape[0] - n_pos
    tp, fp = tar * n_pos, far * n_neg
    if strategy == "accuracy":
        score = tp + (n_neg - fp)
    elif strategy == "f_beta":
        b2 = float(beta) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = tp / (tp + fp)
            score = (1 + b2) * precision * tar / (b2 * precision + tar)
        score = np.nan_to_num(score, nan=0.0)
    elif strategy == "max_tpr":
        score = np.where(1.0 - far >= min_rate - 1e-12, tar, -1.0)
    else:
        score = np.where(tar >= min_rate - 1e-12, 1.0 - far, -1.0)
    k = int(np.argmax(score))  # the first maximum: the smallest threshold
    if k == 0:  # accept nothing
        return float(t[1] - 1.0)
    if k == len(t) - 1:  # accept every pair
        return float(t[k] + 1.0)
    return float(t[k] + (t[k + 1] - t[k]) / 2.0)


class PairClassifier(ParameterValidationMixin, ClassifierMixin, BaseEstimator):
    """Classify pairs as similar or dissimilar with a learned metric and a calibrated threshold.

    Pairs are given as stacked points of shape (n_pairs, 2, n_features), as flattened pairs of
    shape (n_pairs, 2 · n_features) (the two points side by side: the form a ``Pipeline`` or a
    cross-validation splitter passes on), or as row indices of shape (n_pairs, 2) into
    ``points``.

    Parameters
    ----------
    learner : estimator with ``fit_pairs``, default=None
        The metric learner (``ITML``, ``KISSME``, ``LMNN``, ``WARCA``, ``SSNE``); cloned at
        ``fit``. ``None``: ``KISSME()``. Its hyper-parameters are searchable as
        ``learner__<name>`` (``GridSearchCV``).
    points : ndarray of shape (n_samples, n_features), optional
        When given, pairs are row indices into it.
    strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
        How ``fit`` calibrates the threshold on the training pairs (see the module docstring).
    beta : float, default=1.0
        F-beta weight for ``strategy="f_beta"``.
    min_rate : float in [0, 1], optional
        Least TNR (``"max_tpr"``) or TPR (``"max_tnr"``).
    probability : bool, default=False
        Fit a logistic (Platt) map ``P(similar) = 1 / (1 + exp(−a · decision))`` on the training
        pairs, enabling :meth:`predict_proba`. It has no intercept, so ``P = 0.5`` exactly at
        the threshold and ``predict_proba`` agrees with ``predict``. Without it, a distance is
        no probability.
    held_out_check, fallback :
        Passed to the learner when it has them (every rankmetric learner): its check holds out
        groups of pairs (the components of the similar pairs) and compares the ROC AUC of the
        held-out pairs with that of the reference distance; with ``fallback="reference"`` the
        learner becomes its reference. ``docs/reliability.md``.

    Attributes
    ----------
    held_out_check_ : dict or None
        The learner's held-out check (as in :class:`rankmetric.WARCA`), or None.
    learner_ : estimator
        The fitted learner.
    threshold_ : float
        Pairs with ``distance < threshold_`` are predicted similar.
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` (the larger: ``+1``, ``1``, ``True``) means similar. With
        real-valued similarities as ``y``, ``[-1, 1]`` (``y > 0`` counts as similar).
    n_features_in_ : int
        Width of a flattened pair, ``2 · n_features``.
    platt_ : ndarray of shape (2,)
        Slope ``a ≥ 0`` and intercept (0) of the probability map (``probability=True``).

    See Also
    --------
    rankmetric.KISSME : The default learner, a metric from similar/dissimilar pairs.
    rankmetric.ITML : A learner fitted from pair constraints (``fit_pairs``).
    rankmetric.evaluate.verification_scores : ROC AUC, EER and TPR at fixed FPR of distances.

    References
    ----------
    .. [1] M. Köstinger, M. Hirzer, P. Wohlhart, P. M. Roth and H. Bischof. Large Scale Metric
       Learning from Equivalence Constraints. CVPR 2012 (pair verification by a threshold on
       the learned distance).
    .. [2] J. C. Platt. Probabilistic Outputs for Support Vector Machines and Comparisons to
       Regularized Likelihood Methods. Advances in Large Margin Classifiers, MIT Press, 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric import ITML, PairClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (20, 2)), rng.normal(4, 1, (20, 2))]
    >>> y = np.repeat([0, 1], 20)
    >>> pairs = rng.integers(0, 40, size=(200, 2))
    >>> pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    >>> same = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    >>> itml = ITML(random_state=0, max_iter=2000)  # about 1,700 sweeps on these 199 pairs
    >>> clf = PairClassifier(itml).fit(X[pairs], same)
    >>> bool(clf.score(X[pairs], same) > 0.9)
    True
    """

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        "learner": [NONE, InstanceOf(BaseEstimator, "an estimator with fit_pairs")],
        "points": [NONE, ARRAY],
        "strategy": [Options(*STRATEGIES)],
        "beta": [Interval(Real, 0, None, closed="left")],
        "min_rate": [NONE, Interval(Real, 0, 1, closed="both")],
        "probability": [BOOLEAN],
    }

    def __init__(
        self,
        learner=None,
        *,
        points=None,
        strategy: str = "accuracy",
        beta: float = 1.0,
        min_rate: float | None = None,
        probability: bool = False,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
    ) -> None:
        store_parameters(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # y is required: ClassifierMixin says so
        return tags

    # ------------------------------------------------------------------ inputs
    def _stacked(self, pairs, reset: bool) -> np.ndarray:
        """Pairs in any accepted form → stacked float array (n_pairs, 2, n_features)."""
        if self.points is not None:
            P = np.asarray(self.points, dtype=np.float64)
            pairs = P[check_indices(pairs, 2, "pairs", P.shape[0], rows_of="points")]
        if getattr(pairs, "ndim", None) == 3 or (isinstance(pairs, list) and np.ndim(pairs) == 3):
            stacked = np.asarray(pairs)
            if stacked.shape[1] != 2:
                raise ValueError(
                    f"stacked pairs must have shape (n_pairs, 2, n_features), got {stacked.shape}."
                )
            flat = stacked.reshape(stacked.shape[0], -1)
        else:
            flat = pairs
        flat = validate_data(self, flat, reset=reset, dtype=[np.float64, np.float32])
        width = flat.shape[1]
        if width % 2:
            raise ValueError(
                "a flattened pair holds two points side by side, so it needs an even number of "
                f"columns; got {width} feature(s)."
            )
        return flat.reshape(flat.shape[0], 2, width // 2)

    def _targets(self, y, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(targets for the learner, similar flags)``; sets ``classes_``."""
        if y is None:
            raise ValueError(
                "PairClassifier requires y to be passed, but the target y is None: one label "
                "(similar / dissimilar) per pair."
            )
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) (one label per pair), got {y.shape}.")
        kind = type_of_target(y, raise_unknown=True)
        if kind == "continuous":
            targets = check_similarity_targets(y, n, "continuous targets (pair similarities)")
            self.classes_ = np.array([-1, 1])
            return targets, targets > 0
        if kind != "binary":
            raise ValueError(
                "Only binary classification is supported: y must hold two labels (similar / "
                "dissimilar, e.g. +1 / -1) or real-valued similarities; got "
                f"{kind} targets with values {np.unique(y)[:5].tolist()}."
            )
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] != 2:
            raise ValueError(
                "y holds one class only: a pair classifier needs similar and dissimilar pairs, "
                f"got only {self.classes_.tolist()}."
            )
        similar = y == self.classes_[1]
        return np.where(similar, 1.0, -1.0), similar

    # ------------------------------------------------------------------ fitting
    def fit(self, pairs, y) -> PairClassifier:
        """Fit the learner on labelled pairs, then calibrate the threshold on them.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), (n_pairs, 2 · n_features), or
            (n_pairs, 2) row indices into ``points``.
        y : array-like of shape (n_pairs,)
            Two labels (the larger means similar: ``+1``/``−1``, ``1``/``0``), or real-valued
            similarities in ``[−1, 1]`` for a learner that regresses them (SSNE).

        Returns
        -------
        self
        """
        self._validate_params()
        stacked = self._stacked(pairs, reset=True)
        targets, similar = self._targets(y, stacked.shape[0])
        from .pair_covariance import KISSME

        learner = KISSME() if self.learner is None else clone(self.learner)
        if not hasattr(learner, "fit_pairs"):
            raise ValueError(f"learner {type(learner).__name__} has no fit_pairs method.")
        if "held_out_check" in learner.get_params(deep=False):  # the held-out hook
            learner.set_params(held_out_check=self.held_out_check, fallback=self.fallback)
        self.learner_ = learner.fit_pairs(stacked, targets)
        self.held_out_check_ = getattr(self.learner_, "held_out_check_", None)
        d = self._distances(stacked)  # the pairs are checked once, above
        kw = {"beta": self.beta, "min_rate": self.min_rate}
        self.threshold_ = calibrated_threshold(d, similar, self.strategy, **kw)
        if self.probability:
            df = (self.threshold_ - d)[:, None]
            lr = LogisticRegression(C=1e4, fit_intercept=False).fit(df, similar)
            self.platt_ = np.array([max(float(lr.coef_[0, 0]), 0.0), 0.0])
        return self

    def _distances(self, stacked: np.ndarray) -> np.ndarray:
        return np.asarray(self.learner_.pair_distances(stacked[:, 0], stacked[:, 1]), np.float64)

    def pair_distances(self, pairs, X2=None) -> np.ndarray:
        """The learner's distance of each pair (lower = more alike).

        Parameters
        ----------
        pairs : array-like
            Stacked pairs (n_pairs, 2, n_features), flattened pairs (n_pairs, 2 · n_features) or
            row indices into ``points`` (n_pairs, 2), as :meth:`fit` accepts (see the class); or
            the first points, with ``X2``.
        X2 : array-like of shape (n_pairs, n_features), optional
            The second points (the pair convention of every estimator, ``docs/pairs.md``).

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "learner_")
        if X2 is not None:
            if self.points is not None:
                raise ValueError("with points set, pairs are row indices: pass no X2.")
            pairs = np.stack(split_pairs(pairs, X2), axis=1)
        return self._distances(self._stacked(pairs, reset=False))

    # alike: calibrated_threshold's keywords, passed on to it
    def calibrate_threshold(
        self,
        pairs,
        y,
        strategy: str = "accuracy",
        *,
        beta: float = 1.0,
        min_rate: float | None = None,
    ) -> PairClassifier:
        """Set ``threshold_`` to the best threshold of a strategy on labelled pairs.

        Parameters
        ----------
        pairs : array-like
            As in :meth:`fit`.
        y : array-like of shape (n_pairs,)
            Labels (``classes_[1]``, or ``True``, means similar) or similarities (``> 0``).
        strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
        beta : float, default=1.0
        min_rate : float in [0, 1], optional
            Needed by ``"max_tpr"`` (least TNR) and ``"max_tnr"`` (least TPR).

        Returns
        -------
        self
        """
        d = self.pair_distances(pairs)
        y = np.asarray(y)
        if y.shape != d.shape:
            raise ValueError(f"y must have shape {d.shape} (one label per pair), got {y.shape}.")
        if y.dtype == bool:
            similar = y
        elif np.isin(y, self.classes_).all() and type_of_target(y) != "continuous":
            similar = y == self.classes_[1]
        else:
            similar = np.asarray(y, dtype=np.float64) > 0
        self.threshold_ = calibrated_threshold(d, similar, strategy, beta=beta, min_rate=min_rate)
        return self

    # ------------------------------------------------------------------ prediction
    @fill_doc
    def decision_function(self, pairs) -> np.ndarray:
        """``threshold_ − distance``: positive for pairs predicted similar.

        %(stacked_pairs_parameters)s

        Returns
        -------
        ndarray of shape (n_pairs,), float64
        """
        check_is_fitted(self, "threshold_")
        return self.threshold_ - self.pair_distances(pairs)

    @fill_doc
    def predict(self, pairs) -> np.ndarray:
        """``classes_[1]`` (similar) where ``distance < threshold_``, else ``classes_[0]``.

        %(stacked_pairs_parameters)s

        Returns
        -------
        ndarray of shape (n_pairs,), of the dtype of ``classes_``
        """
        positive = self.decision_function(pairs) > 0
        return self.classes_[positive.astype(int)]

    @_IfProbability
    @fill_doc
    def predict_proba(self, pairs) -> np.ndarray:
        """Probabilities of (dissimilar, similar) from the Platt map (``probability=True``).

        %(stacked_pairs_parameters)s

        Returns
        -------
        ndarray of shape (n_pairs, 2)
        """
        check_is_fitted(self, "platt_")
        z = self.platt_[0] * self.decision_function(pairs) + self.platt_[1]
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))
        return np.stack([1.0 - p, p], axis=1)
