"""``Covariances``: multichannel trials (n, c, t) → SPD covariance matrices (n, c, c).

The scikit-learn face of :func:`rankmetric.datasets.covariances` (the estimators live there, once),
shaped like ``pyriemann.estimation.Covariances`` (same estimator names, same default, same
matrices) so that ``make_pipeline(Covariances(), RPLEmbedding(), KNeighborsClassifier())`` runs
on raw trials.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import RANDOM_STATE, check_param, note_changed_default
from ..datasets.covariance import check_covariance_estimator, covariances
from ._matrix_output import MatrixInputMixin, MatrixOutputMixin

__all__ = ["Covariances"]

#: ``estimator=None`` means this one (pyRiemann's default); it was ``"oas"`` before 0.2.
DEFAULT_ESTIMATOR, OLD_DEFAULT_ESTIMATOR = "scm", "oas"


class Covariances(
    MatrixInputMixin, MatrixOutputMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None
):
    r"""Covariance matrix of each multichannel trial, always symmetric positive definite.

    A stateless transformer: ``fit`` only checks the parameters and records the number of
    channels; every trial is estimated on its own. The estimators carry pyRiemann's names and
    default and give the same matrices as ``pyriemann.estimation.Covariances`` (tested to 1e-10
    in float64), apart from an eigenvalue floor on nearly singular matrices. The output is a
    stack of matrices, so it has no column names; ``set_output`` is accepted (for
    ``Pipeline.set_output``) and leaves it an ndarray (pandas frames hold 2-D data only).

    Parameters
    ----------
    estimator : {"scm", "lwf", "oas", "mcd", "sch", "cov", "corr"} or None, default=None
        ``None``: ``"scm"``, pyRiemann's default; it was ``"oas"`` before 0.2, so relying on it
        without setting it gives a one-time ``FutureWarning`` saying so (set ``estimator="scm"`` to
        silence it, ``"oas"`` for the old matrices). pyRiemann's names: ``"scm"``: the sample
        covariance (maximum likelihood), shrunk by ``shrinkage`` when given; ``"lwf"`` (or
        ``"lw"``): Ledoit–Wolf shrinkage (J. Multivariate Anal. 2004); ``"oas"``: Oracle
        Approximating Shrinkage (Chen, Wiesel, Eldar & Hero, IEEE TSP 2010); ``"mcd"``: Minimum
        Covariance Determinant (robust, randomised: ``random_state``); ``"sch"``: Schäfer–Strimmer
        shrinkage; ``"cov"``: the unbiased covariance (``numpy.cov``); ``"corr"``: the correlation
        matrix. See :func:`rankmetric.datasets.covariances` for the exact formulas and the
        eigenvalue floor that keeps every matrix positive definite.
    shrinkage : float in [0, 1], optional
        Fixed shrinkage towards :math:`\operatorname{tr}(S) / c \cdot I`; with ``estimator="scm"``
        only.
    random_state : int, RandomState, Generator or None, default=None
        Seed of ``"mcd"``; the same int as pyRiemann's ``Covariances("mcd", random_state=...)``
        gives the same matrices.

    Attributes
    ----------
    n_channels_ : int
        Number of channels of the trials seen in ``fit``.

    See Also
    --------
    rankmetric.datasets.covariances : The function behind it, with the exact formulas.
    rankmetric.preprocessing.TangentSpace : SPD matrices to vectors, the usual next step.
    rankmetric.preprocessing.DomainRecentering : Re-centre the matrices of each session.
    rankmetric.SPDNetEmbedding : Learn an embedding of the matrices.

    References
    ----------
    .. [1] O. Ledoit and M. Wolf. A well-conditioned estimator for large-dimensional covariance
       matrices. Journal of Multivariate Analysis 88(2), 2004 (``"lwf"``).
    .. [2] Y. Chen, A. Wiesel, Y. C. Eldar and A. O. Hero. Shrinkage Algorithms for MMSE
       Covariance Estimation. IEEE Transactions on Signal Processing 58(10), 2010 (``"oas"``).
    .. [3] J. Schäfer and K. Strimmer. A Shrinkage Approach to Large-Scale Covariance Matrix
       Estimation and Implications for Functional Genomics. Statistical Applications in
       Genetics and Molecular Biology 4(1), 2005 (``"sch"``).
    .. [4] P. J. Rousseeuw and K. Van Driessen. A Fast Algorithm for the Minimum Covariance
       Determinant Estimator. Technometrics 41(3), 1999 (``"mcd"``).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.preprocessing import Covariances
    >>> trials = np.random.default_rng(0).normal(size=(5, 3, 100))
    >>> Covariances(estimator="scm").fit_transform(trials).shape
    (5, 3, 3)
    """

    def __init__(
        self, estimator: str | None = None, shrinkage: float | None = None, *, random_state=None
    ):
        self.estimator = estimator
        self.shrinkage = shrinkage
        self.random_state = random_state

    _requires_fit = False

    def fit(self, X, y=None) -> Covariances:
        """Check the parameters and the trials' shape.

        Parameters
        ----------
        X : array of shape (n_trials, n_channels, length), or sequence of arrays of shape
            (n_channels, length_i)
            Trials; a sequence may hold trials of different lengths.
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        self.n_channels_ = _n_channels(X)
        return self

    def transform(self, X) -> np.ndarray:
        """Covariance matrix of each trial.

        Parameters
        ----------
        X : array of shape (n_trials, n_channels, length), or sequence of arrays of shape
            (n_channels, length_i)

        Returns
        -------
        ndarray of shape (n_trials, n_channels, n_channels), float64
            Symmetric positive-definite matrices.
        """
        self._check_params()
        n_channels = getattr(self, "n_channels_", None)
        if n_channels is not None and _n_channels(X) != n_channels:
            raise ValueError(
                f"X has {_n_channels(X)} channels, but Covariances was fitted on {n_channels}."
            )
        return covariances(X, self._estimator(), self.shrinkage, random_state=self.random_state)

    def _estimator(self) -> str:
        """The estimator's name (``None``: the default, noted once as changed since 0.2)."""
        if self.estimator is not None:
            return self.estimator
        note_changed_default(
            "Covariances", "estimator", OLD_DEFAULT_ESTIMATOR, DEFAULT_ESTIMATOR, "0.2"
        )
        return DEFAULT_ESTIMATOR

    def _check_params(self) -> None:
        check_covariance_estimator(self._estimator(), self.shrinkage)
        check_param("random_state", self.random_state, [RANDOM_STATE])


def _n_channels(X) -> int:
    """Channels of (n, c, t) trials or of a sequence of (c, t_i) trials (checked in transform)."""
    if isinstance(X, Sequence) and not isinstance(X, np.ndarray) and len(X):
        return int(np.shape(X[0])[0])
    shape = np.shape(X)
    if len(shape) != 3:
        raise ValueError(f"X must have shape (n_trials, n_channels, length), got {shape}.")
    return int(shape[1])
