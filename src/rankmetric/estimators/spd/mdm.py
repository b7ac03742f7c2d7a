"""MDM: minimum distance to the Riemannian class means (Barachant et al. 2012), pyRiemann's MDM.

The baseline every EEG paper reports, one import away: ``fit`` computes the mean of each class
(:func:`rankmetric.geometry.spd_mean`), ``transform`` the distance of each matrix to every class
mean (:func:`rankmetric.geometry.pairwise_distance`), ``predict`` the nearest class and
``predict_proba`` a softmax of the negative squared distances, as ``pyriemann.classification.MDM``
(same metric names, same predictions on pyRiemann's simulated data: ``tests/estimators/
test_mdm.py``). No formula lives here: means and distances are those of :mod:`rankmetric.geometry`.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import softmax
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ..._utils import resolve_device
from ..._validation import DEVICE, InstanceOf, ParameterValidationMixin, check_labels
from ...geometry.aliases import canonical_metric
from ...geometry.dispatch import pairwise_distance
from ...geometry.means import MEAN_METRICS, spd_mean
from ...io import register_estimator
from .._docstrings import fill_doc
from .._init_parameters import store_parameters
from ..base import fit_context
from ._network import check_spd_stack

__all__ = ["MDM"]


@register_estimator
class MDM(
    ClassNamePrefixFeaturesOutMixin,
    ParameterValidationMixin,
    ClassifierMixin,
    TransformerMixin,
    BaseEstimator,
):
    r"""Minimum distance to mean: each SPD matrix goes to the class whose mean is nearest.

    ``fit`` computes the mean :math:`M_k` of the matrices of every class ``k``; a matrix
    :math:`X` is assigned to :math:`\arg\min_k \delta(X, M_k)` [1]_. With
    ``metric="riemann"`` the means are Karcher means and :math:`\delta` the affine-invariant
    distance, invariant to any congruence :math:`X \mapsto A X A^\top` of all the matrices;
    ``"logeuclid"`` uses the log-Euclidean mean and distance (faster, no iteration). The
    standard Riemannian baseline of EEG classification (MOABB's "MDM"), equal to
    ``pyriemann.classification.MDM`` with the same ``metric``.

    Parameters
    ----------
    metric : {"riemann", "logeuclid", "euclid"}, default="riemann"
        The mean and distance: pyRiemann's names or ours (``"airm"``, ``"log_euclidean"``,
        ``"euclidean"``), case ignored.
    device : str or torch.device, optional
        Where the means and distances are computed (``None``/``"auto"``: CUDA when available).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    covmeans_ : ndarray of shape (n_classes, c, c)
        The mean of each class (pyRiemann's name), float64.
    n_features_in_ : int
        Size ``c`` of the matrices seen in ``fit``.

    See Also
    --------
    rankmetric.geometry.spd_mean : The class means.
    rankmetric.geometry.pairwise_distance : The distances to them.
    rankmetric.preprocessing.Covariances : Multichannel trials to the SPD matrices it takes.
    rankmetric.preprocessing.DomainRecentering : Re-centre each session before it.
    rankmetric.RPLEmbedding : A learned embedding of the same matrices.

    References
    ----------
    .. [1] A. Barachant, S. Bonnet, M. Congedo and C. Jutten. Multiclass Brain-Computer
       Interface Classification by Riemannian Geometry. IEEE Transactions on Biomedical
       Engineering 59(4), 2012.

    Examples
    --------
    >>> from rankmetric import MDM
    >>> from rankmetric.datasets import make_spd_clusters
    >>> X, y = make_spd_clusters(40, n_channels=3, n_classes=2, random_state=0)
    >>> mdm = MDM(device="cpu").fit(X, y)
    >>> mdm.transform(X).shape, mdm.predict(X).shape
    ((40, 2), (40,))
    >>> round(mdm.score(X, y), 2)
    1.0
    """

    _parameter_constraints = {"metric": [InstanceOf(str, "a metric name")], "device": [DEVICE]}
    _fitted_arrays = {"covmeans_": (None, "n_features_in_", "n_features_in_")}

    def __init__(self, *, metric: str = "riemann", device=None) -> None:
        store_parameters(self, locals())

    @property
    def _n_features_out(self) -> int:
        """One column of :meth:`transform` per class (``"mdm0"``, ``"mdm1"``, ...)."""
        return len(self.classes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        return tags

    @fit_context
    @fill_doc
    def fit(self, X, y, sample_weight=None) -> MDM:
        """Compute the mean of every class.

        Parameters
        ----------
        %(labelled_spd)s
        sample_weight : array-like of shape (n_matrices,), optional
            Weight of each matrix in its class's mean (pyRiemann's ``sample_weight``).

        Returns
        -------
        self
        """
        metric = self._check_params()
        X, y = check_spd_stack(self, X, y, reset=True)
        check_classification_targets(y)
        self.classes_, codes = check_labels(y, X.shape[0])
        weights = _sample_weights(sample_weight, X.shape[0])
        X_t = torch.as_tensor(X, dtype=torch.float64, device=resolve_device(self.device))
        means = []
        with torch.no_grad():
            for k in range(len(self.classes_)):
                rows = np.flatnonzero(codes == k)
                w = weights[rows]
                if w.sum() <= 0:
                    raise ValueError(
                        f"class {self.classes_[k]!r} has no matrix of positive sample_weight."
                    )
                means.append(spd_mean(X_t[rows], metric, weights=torch.as_tensor(w)).cpu())
        self.covmeans_ = torch.stack(means).numpy()
        return self

    @fill_doc
    def transform(self, X) -> np.ndarray:
        """Distance of each matrix to every class mean (pyRiemann's ``MDM.transform``).

        The distances are in the dtype of ``X`` (float32 or float64; computed in float64).

        %(spd_class_columns)s
        """
        check_is_fitted(self, "covmeans_")
        metric = self._check_params()
        X, _ = check_spd_stack(self, X, reset=False)
        device = resolve_device(self.device)
        with torch.no_grad():
            D = pairwise_distance(
                torch.as_tensor(X, dtype=torch.float64, device=device),
                torch.as_tensor(self.covmeans_, device=device),
                metric=metric,
            )
        return D.cpu().numpy().astype(X.dtype, copy=False)

    @fill_doc
    def predict(self, X) -> np.ndarray:
        """The class of the nearest mean.

        %(spd_matrices_parameters)s

        Returns
        -------
        ndarray of shape (n_matrices,)
        """
        return self.classes_[np.argmin(self.transform(X), axis=1)]

    @fill_doc
    def predict_proba(self, X) -> np.ndarray:
        """Softmax of the negative squared distances to the class means (as pyRiemann).

        %(spd_class_columns)s
        """
        return softmax(-(self.transform(X) ** 2), axis=1)

    def _check_params(self) -> str:
        self._validate_params()
        return canonical_metric(self.metric, MEAN_METRICS)


def _sample_weights(sample_weight, n: int) -> np.ndarray:
    """Weights of shape (n,), finite and non-negative (ones when ``None``)."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and non-negative.")
    return w
