"""``DomainRecentering``: each domain (session, subject) re-centred at its own mean.

The re-centring of Zanini et al. (2018) that pyRiemann's ``TLCenter`` implements: the SPD
matrices of domain :math:`d` are mapped to :math:`M_d^{-1/2} X M_d^{-1/2}`
(:func:`rankmetric.geometry.whiten`), :math:`M_d` the domain's Riemannian mean, so that every
domain is centred at the identity and a shift between sessions that acts as a congruence
(:math:`X \\mapsto A X A^\\top`: electrode gains, impedances, head position) is removed up to a
rotation. Domain labels travel with the data through scikit-learn's metadata routing.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import DEVICE, NONE, InstanceOf, Options, ParameterValidationMixin
from .._validation.checks import check_domain_sizes, domain_codes, transform_domain_codes
from ..geometry import canonical_metric, spd_mean, whiten
from ..geometry.means import MEAN_METRICS
from ._matrix_output import MatrixInputMixin, MatrixOutputMixin, input_matrices

__all__ = [
    "DomainRecentering",
    "DomainsRequestMixin",
]


class DomainsRequestMixin:
    """Request ``domains=`` in ``fit`` and ``transform`` by default (scikit-learn's routing).

    Every estimator of the package that takes domain labels (:class:`DomainRecentering`,
    :class:`~rankmetric.SPDNetEmbedding`, :class:`~rankmetric.RPLEmbedding`) asks for them, so
    ``make_pipeline(Covariances(), DomainRecentering(), RPLEmbedding(), clf).fit(X, y,
    domains=s)`` routes the labels to every step that takes them without a
    ``set_fit_request`` call (with ``sklearn.set_config(enable_metadata_routing=True)``). A
    step that should not see them says so: ``set_fit_request(domains=False)``.

    Examples
    --------
    >>> from rankmetric.preprocessing import DomainRecentering
    >>> DomainRecentering().get_metadata_routing().consumes("fit", ["domains"])
    {'domains'}
    """

    __metadata_request__fit = {"domains": True}
    __metadata_request__transform = {"domains": True}


class DomainRecentering(
    DomainsRequestMixin,
    MatrixInputMixin,
    MatrixOutputMixin,
    ParameterValidationMixin,
    TransformerMixin,
    BaseEstimator,
    auto_wrap_output_keys=None,
):
    """Re-centre the SPD matrices of each domain (session, subject) at its own mean.

    ``fit`` computes the mean :math:`M_d` of every domain of the training data; ``transform``
    maps each matrix :math:`X` of domain :math:`d` to :math:`M_d^{-1/2} X M_d^{-1/2}`, with the
    mean stored at ``fit`` for a domain seen there, and the mean of the matrices given to
    ``transform`` for a new domain (a new session: unsupervised adaptation, which needs the
    session's trials together, not one at a time). Every domain then has the identity as its
    mean, so a classifier trained on the re-centred source domains applies to a re-centred new
    one (pyRiemann's ``TLCenter``; Zanini et al. 2018).

    **Domain labels in a Pipeline.** ``fit``, ``fit_transform`` and ``transform`` take
    ``domains=`` (one label per matrix). In a :class:`~sklearn.pipeline.Pipeline` they are
    routed by scikit-learn's metadata routing, which ``fit`` and ``transform`` request by
    default (no ``set_fit_request`` needed; ``set_fit_request(domains=False)`` opts out)::

        import sklearn
        sklearn.set_config(enable_metadata_routing=True)
        model = make_pipeline(
            Covariances(), DomainRecentering(), TangentSpace(), LogisticRegression()
        )
        model.fit(trials, y, domains=sessions)
        model.predict(new_trials, domains=new_sessions)

    Without routing, the training domains can still be given as a step parameter,
    ``model.fit(trials, y, domainrecentering__domains=sessions)``; ``transform`` then receives no
    labels. Without labels (``domains=None``) all matrices passed to one call form one domain:
    ``fit`` re-centres the training set at its mean, and ``transform`` re-centres the batch it is
    given at the batch's own mean (pass the whole new session at once).

    Parameters
    ----------
    metric : str, default="riemann"
        The mean: ``"riemann"`` (``"airm"``, Karcher mean), ``"logeuclid"`` or ``"euclid"``.
    device : str or torch.device, optional
        Where the means and congruences are computed (``None``/``"auto"``: CUDA when available).
    dtype : {"float32", "float64"}, optional
        ``None``: float32 for float32 input, float64 otherwise.

    Attributes
    ----------
    domains_ : ndarray of shape (n_domains,)
        The domain labels seen in ``fit`` (sorted; ``["<all>"]`` when fitted without labels).
    means_ : ndarray of shape (n_domains, c, c)
        Their means.
    n_channels_ : int
        Size of the matrices.

    See Also
    --------
    rankmetric.geometry.whiten : The congruence by a mean's inverse square root, per domain.
    rankmetric.geometry.spd_mean : The mean of each domain.
    rankmetric.preprocessing.TangentSpace : The usual next step, at the identity.

    References
    ----------
    .. [1] P. Zanini, M. Congedo, C. Jutten, S. Said, Y. Berthoumieu, IEEE TBME 65(5), 2018
       (see :func:`rankmetric.geometry.whiten`).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.datasets import make_spd_clusters
    >>> from rankmetric.preprocessing import DomainRecentering
    >>> X, y = make_spd_clusters(20, 3, 2, random_state=0)
    >>> sessions = np.repeat(["monday", "tuesday"], 10)
    >>> Z = DomainRecentering(device="cpu").fit_transform(X, domains=sessions)
    >>> Z.shape
    (20, 3, 3)
    """

    _parameter_constraints = {
        "metric": [InstanceOf(str, "a metric name")],
        "device": [DEVICE],
        "dtype": [NONE, Options("float32", "float64")],
    }

    def __init__(self, *, metric="riemann", device=None, dtype=None) -> None:
        self.metric = metric
        self.device = device
        self.dtype = dtype

    _requires_fit = False  # a new domain is re-centred at its own mean

    # alike: the scikit-learn fit / fit_transform skeleton is alike in TangentSpace
    # (tangent_space.py); the extra argument and the work differ
    def fit(self, X, y=None, domains=None) -> DomainRecentering:
        """Compute the mean of every domain.

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
            SPD matrices.
        y : ignored
        domains : array-like of shape (n_matrices,), optional
            Domain (session, subject) of each matrix; ``None``: one domain.

        Returns
        -------
        self
        """
        self._fit(X, domains)
        return self

    def fit_transform(self, X, y=None, domains=None) -> np.ndarray:
        """Fit, then re-centre ``X`` (each domain at its own mean).

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
        y : ignored
        domains : array-like of shape (n_matrices,), optional

        Returns
        -------
        ndarray of shape (n_matrices, c, c)
        """
        X, codes = self._fit(X, domains)
        means = torch.as_tensor(self.means_, dtype=X.dtype, device=X.device)
        return self._recentre(X, codes, means)

    def transform(self, X, domains=None) -> np.ndarray:
        """Re-centre each domain of ``X``: at its mean from ``fit``, or its own mean if new.

        Parameters
        ----------
        X : array-like or Tensor of shape (n_matrices, c, c)
            SPD matrices.
        domains : array-like of shape (n_matrices,), optional
            Domain of each matrix; ``None``: all of ``X`` is one new domain.

        Returns
        -------
        ndarray of shape (n_matrices, c, c)
            SPD matrices; every domain's mean is the identity.
        """
        self._validate_params()
        X = input_matrices(self, X, getattr(self, "n_channels_", None))
        seen = getattr(self, "domains_", np.empty(0))
        codes, new = transform_domain_codes(seen, domains, len(X))
        means = [torch.as_tensor(m, dtype=X.dtype) for m in getattr(self, "means_", [])]
        means += [self._mean(X[codes == d]).cpu() for d in new]
        return self._recentre(X, codes, torch.stack(means).to(X.device))

    # internals -----------------------------------------------------------------------------

    def _fit(self, X, domains):
        self._validate_params()
        X = input_matrices(self, X, None)
        self.n_channels_ = int(X.shape[-1])
        self.domains_, codes = domain_codes(domains, len(X))
        check_domain_sizes(self.domains_, codes, range(len(self.domains_)))
        self.means_ = torch.stack([self._mean(X[codes == k]) for k in range(len(self.domains_))])
        self.means_ = self.means_.cpu().numpy()
        return X, codes

    def _mean(self, X: torch.Tensor) -> torch.Tensor:
        metric = canonical_metric(self.metric, MEAN_METRICS)
        with torch.no_grad():
            return spd_mean(X, metric)

    def _recentre(self, X: torch.Tensor, codes: np.ndarray, means: torch.Tensor) -> np.ndarray:
        index = torch.as_tensor(codes, device=X.device)
        out = torch.empty_like(X)
        with torch.no_grad():
            for k in np.unique(codes).tolist():
                rows = index == k
                out[rows] = whiten(X[rows], means[k])
        return out.cpu().numpy()
