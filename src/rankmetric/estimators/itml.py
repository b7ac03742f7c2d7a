r"""Information-Theoretic Metric Learning (Davis, Kulis, Jain, Sra & Dhillon, ICML 2007).

ITML finds the Mahalanobis matrix :math:`M` closest to a prior :math:`M_0` in LogDet divergence,

.. math::

    \min_{M,\, \xi}\ & D_{\mathrm{ld}}(M, M_0)
        + \gamma\, D_{\mathrm{ld}}(\operatorname{diag}(\xi), \operatorname{diag}(\xi_0)) \\
    \text{s.t.}\ & d_M(x_i, x_j) \le \xi_{ij} \text{ for similar pairs}, \quad
        d_M(x_i, x_j) \ge \xi_{ij} \text{ for dissimilar pairs},

with :math:`d_M(a, b) = (a - b)^\top M (a - b)` and slack targets :math:`\xi_0` equal to the
bounds :math:`u` (similar) and :math:`l` (dissimilar). It is solved by cyclic Bregman
projections, one constraint at a time (Algorithm 1 of the paper, with the update constants of
the authors' code):

.. math::

    p &= v^\top M v, \quad
    \alpha = \min\Bigl(\lambda_c,\ \frac{\delta \gamma}{\gamma + 1}
        \Bigl(\frac1p - \frac1{\xi_c}\Bigr)\Bigr), \quad
    \beta = \frac{\delta \alpha}{1 - \delta \alpha p}, \\
    \xi_c &\leftarrow \Bigl(\frac1{\xi_c} + \frac{\delta \alpha}{\gamma}\Bigr)^{-1}, \quad
    \lambda_c \leftarrow \lambda_c - \alpha, \quad
    M \leftarrow M + \beta\, (M v)(M v)^\top,

with :math:`v = x_i - x_j` and :math:`\delta = +1` (similar) or :math:`-1` (dissimilar). Each
projection depends on the previous one, so the sweep is sequential; it runs on precomputed
differences with two BLAS calls (``dsymv``, ``dsyr`` on the upper triangle of ``M``) and scalar
arithmetic per constraint.
Cost: O(D²) per projection, O(C·D²) per sweep over ``C`` constraints, O(C·D + D²) memory.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from scipy.linalg import blas
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from .._threads import single_blas_thread
from .._utils import make_rng
from .._validation import (
    ARRAY,
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    RANDOM_STATE,
    InstanceOf,
    Interval,
    Options,
    deprecate_positional_args,
)
from ..geometry.checks import check_spd
from ..io import register_estimator
from ..resources import check_square_matrices
from ..sampling import LabelIndex
from ._docstrings import fill_doc
from ._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from ._init_parameters import store_parameters
from ._supervision import check_labelled_samples, check_pair_supervision
from .base import MahalanobisMixin, fit_context

__all__ = ["ITML", "sample_pair_constraints", "distance_bounds", "itml_projections"]

#: float64 (n_features × n_features) matrices held at the peak of a fit (the prior, its covariance
#: and inverse (prior='covariance'), M and its square root), checked against the memory budget
#: before the first is formed.
ITML_MATRICES = 5

#: Sweeps over the active constraints (non-zero dual variable) between two sweeps over all.
_FULL_SWEEP_EVERY = 50
# Random pairs used to estimate the distance percentiles behind the default bounds.
_N_BOUND_PAIRS = 10_000


def sample_pair_constraints(
    codes: np.ndarray, n_constraints: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Up to ``n_constraints`` similar and ``n_constraints`` dissimilar pairs from labels.

    Similar pairs are uniform over same-class pairs, dissimilar ones take a uniform anchor and a
    uniform sample of another class. They alternate (similar, dissimilar, similar, ...), as the
    random constraints of the authors' code mix the two kinds: the cyclic projections converge
    in about 2/3 of the sweeps that all similar pairs before all dissimilar ones take.
    Repeated (unordered) pairs are dropped.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Class codes ``0..Q-1``.
    n_constraints : int
        Pairs drawn of each kind.
    rng : numpy.random.Generator

    Returns
    -------
    a, b : ndarray of shape (n_pairs,), int64
    similar : ndarray of shape (n_pairs,), bool
    """
    index = LabelIndex.from_codes(codes)
    pa, pb = index.positive_pairs(n_constraints, rng)
    na = rng.integers(0, index.n_samples, size=n_constraints)
    nb = index.negatives(na, 1, rng)[:, 0]
    a, b = np.stack([pa, na], axis=1).ravel(), np.stack([pb, nb], axis=1).ravel()
    similar = np.arange(a.shape[0]) % 2 == 0
    keys = np.minimum(a, b) * index.n_samples + np.maximum(a, b)
    first = np.sort(np.unique(keys, return_index=True)[1])
    return a[first], b[first], similar[first]


def distance_bounds(
    X: np.ndarray,
    prior: np.ndarray,
    rng: np.random.Generator,
    percentiles: tuple[float, float] = (5.0, 95.0),
) -> np.ndarray:
    r"""Percentiles of :math:`d_{M_0}(x_i, x_j) = (x_i - x_j)^\top M_0 (x_i - x_j)`, random pairs.

    As in the authors' code (``ComputeDistanceExtremes``), the 5th percentile bounds similar
    pairs from above (``u``) and the 95th bounds dissimilar pairs from below (``l``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    prior : ndarray of shape (n_features, n_features)
    rng : numpy.random.Generator
    percentiles : pair of floats

    Returns
    -------
    ndarray of shape (2,): ``(u, l)``
    """
    n = X.shape[0]
    i = rng.integers(0, n, size=_N_BOUND_PAIRS)
    j = (i + rng.integers(1, max(n, 2), size=_N_BOUND_PAIRS)) % n
    return np.percentile(_prior_sq_distances(X[i] - X[j], prior), percentiles)


def itml_projections(
    V: np.ndarray,
    similar: np.ndarray,
    bounds: np.ndarray,
    prior: np.ndarray,
    slack_weight: float,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, int, bool]:
    r"""Cyclic Bregman projections of ITML (Davis et al. 2007, Algorithm 1).

    Parameters
    ----------
    V : ndarray of shape (n_constraints, n_features)
        Differences ``x_i − x_j`` of the constrained pairs (non-zero rows).
    similar : ndarray of shape (n_constraints,), bool
        ``True`` for ``d ≤ u`` constraints, ``False`` for ``d ≥ l``.
    bounds : ndarray of shape (2,)
        ``(u, l)``, both > 0.
    prior : ndarray of shape (n_features, n_features)
        Symmetric positive-definite ``M₀``.
    slack_weight : float
        Slack trade-off γ > 0 (``inf``: hard constraints).
    max_iter : int
        Sweeps over the constraints.
    tol : float
        Stop after a sweep over every constraint when :math:`\lVert \lambda - \lambda'
        \rVert_1 / (\lVert \lambda \rVert_2 + \lVert \lambda' \rVert_2) < \text{tol}`, with
        :math:`\lambda'` the dual variables of the previous sweep (Algorithm 1's test, on a
        sweep over all). Between sweeps over every constraint, sweeps run over the active ones
        only (non-zero :math:`\lambda`: the others leave ``M`` unchanged while satisfied), with
        a sweep over all every 50 sweeps and whenever the active ones settle.

    Returns
    -------
    M : ndarray of shape (n_features, n_features)
    n_sweeps : int
    converged : bool
    """
    M = np.array(prior, dtype=np.float64, order="F", copy=True)
    rows = list(np.ascontiguousarray(V, dtype=np.float64))
    sign = np.where(similar, 1.0, -1.0).tolist()
    slack = np.where(similar, float(bounds[0]), float(bounds[1])).tolist()
    lam = [0.0] * len(rows)
    lam_prev = np.zeros(len(rows))
    gamma = slack_weight  # γ of the paper
    step_scale = 1.0 if np.isinf(gamma) else gamma / (gamma + 1.0)
    inv_gamma = 0.0 if np.isinf(gamma) else 1.0 / gamma
    symv, syr, dot = blas.dsymv, blas.dsyr, blas.ddot
    every = range(len(rows))
    order, partial_sweeps = every, 0
    for sweep in range(1, max_iter + 1):
        for c in order:  # sequential by nature: each projection moves M
            s = sign[c]
            Mv = symv(1.0, M, rows[c])
            p = dot(Mv, rows[c])
            if not p > 0.0:  # a distance that underflowed constrains nothing
                continue
            alpha = min(lam[c], s * step_scale * (1.0 / p - 1.0 / slack[c]))
            if alpha == 0.0:
                continue
            lam[c] -= alpha
            slack[c] = 1.0 / (1.0 / slack[c] + s * alpha * inv_gamma)
            M = syr(s * alpha / (1.0 - s * alpha * p), Mv, a=M, overwrite_a=True)
        lam_now = np.asarray(lam)
        norm = np.linalg.norm(lam_now) + np.linalg.norm(lam_prev)
        settled = norm == 0.0 or np.abs(lam_now - lam_prev).sum() / norm < tol
        lam_prev = lam_now
        if settled and order is every:
            return _symmetrise_upper(M), sweep, True
        # Between full sweeps, only the constraints with a non-zero dual variable move M (the
        # others are satisfied and stay put); a full sweep every _FULL_SWEEP_EVERY sweeps, and
        # before stopping, brings in the constraints that became violated.
        partial_sweeps = 0 if order is every else partial_sweeps + 1
        if settled or partial_sweeps >= _FULL_SWEEP_EVERY:
            order = every
        else:
            order = np.flatnonzero(lam_now).tolist()
    return _symmetrise_upper(M), max_iter, False


def _prior_sq_distances(V: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``v_pᵀ M₀ v_p`` for each row of ``V``: one GEMM, then row-wise dot products."""
    with np.errstate(over="ignore", invalid="ignore"):  # extreme scales: refused by the caller
        return np.einsum("pd,pd->p", V @ prior, V)


def _usable_differences(V: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows of ``V`` whose squared prior distance is positive, finite and invertible.

    A zero difference constrains nothing, and at extreme scales (``X * 1e-300``) the squared
    distances underflow to 0 or overflow; if no row is left, a ``ValueError`` names the scale.
    """
    d = _prior_sq_distances(V, prior)
    with np.errstate(divide="ignore", over="ignore"):
        usable = (d > 0) & np.isfinite(d) & np.isfinite(1.0 / d)
    if V.shape[0] and not usable.any():
        raise ValueError(
            "ITML: every constrained pair has a squared distance of 0 or inf in float64; the "
            "scale of X is too extreme (standardise X first)."
        )
    return usable


def _symmetrise_upper(M: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle is that of ``M``."""
    upper = np.triu(M)
    return np.ascontiguousarray(upper + np.triu(M, 1).T)


def components_from_metric(M: np.ndarray) -> np.ndarray:
    r""":math:`L` (n_features, n_features) with :math:`L^\top L = M`: Cholesky, else eigh root."""
    try:
        return np.linalg.cholesky(M).T
    except np.linalg.LinAlgError:
        w, U = np.linalg.eigh(M)
        return np.sqrt(np.clip(w, 0.0, None))[:, None] * U.T


@register_estimator
@fill_doc
class ITML(MahalanobisMixin, BaseEstimator):
    r"""Information-Theoretic Metric Learning (Davis et al. 2007) from class labels or pairs.

    Parameters
    ----------
    slack_weight : float, default=1.0
        Slack trade-off :math:`\gamma > 0`, finite (the weight of the slack divergence);
        larger values enforce the constraints more strictly. ``np.inf`` (exact constraints) is
        refused: the constraints drawn from labels are rarely all feasible at once, and exact
        projections then cycle without converging to a usable metric.
    max_iter : int, default=1000
        Sweeps over all constraints.
    tol : float, default=1e-3
        Convergence threshold on the relative change of the dual variables after a sweep.
    prior : {"identity", "covariance"} or ndarray of shape (n_features, n_features)
        :math:`M_0`: the identity, the inverse covariance of ``X``, or a given SPD matrix.
    n_constraints : int, optional
        Similar and dissimilar pairs drawn (each); ``None``: :math:`20\, n_{\text{classes}}^2`
        as the authors' code. Repeated pairs are dropped.
    bounds : pair of floats, optional
        ``(u, l)``: similar pairs get :math:`d_M \le u`, dissimilar :math:`d_M \ge l` (squared
        distances). ``None``: the 5th and 95th percentiles of :math:`d_{M_0}` over random pairs
        of ``X``.
    random_state : int, Generator or None
        Seed of the constraint and bound sampling.
    gamma : float
        Deprecated alias of ``slack_weight`` (removed in 0.3).
    num_constraints : int or None
        Deprecated alias of ``n_constraints`` (removed in 0.3).
    %(held_out_check)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    components_ : ndarray of shape (n_features, n_features), float64
        :math:`L` with :math:`L^\top L = M` (upper-triangular Cholesky factor when :math:`M` is
        definite).
    bounds_ : ndarray of shape (2,)
        The ``(u, l)`` used.
    n_constraints_ : int
        Constraints used (after dropping repeats and zero differences).
    n_iter_ : int
        Sweeps run.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.KISSME : Closed-form Mahalanobis metric from the same kind of pair constraints.
    rankmetric.LMNN : Mahalanobis metric from triplets of k-nearest-neighbour targets.
    rankmetric.PairClassifier : Similar/dissimilar pair classifier over a fitted ITML.

    References
    ----------
    .. [1] J. V. Davis, B. Kulis, P. Jain, S. Sra and I. S. Dhillon. Information-Theoretic
       Metric Learning. ICML 2007.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from rankmetric import ITML
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)  # on raw iris ITML needs 1,525 sweeps, not 909
    >>> itml = ITML(random_state=0).fit(X, y)
    >>> itml.transform(X).shape
    (150, 4)
    >>> itml.components_.shape
    (4, 4)
    """

    _held_out_hint = "try another slack_weight or prior, or fewer n_constraints"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        "slack_weight": [Interval(Real, 0, np.inf, closed="neither")],
        "max_iter": [POSITIVE_INT],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "prior": [Options("identity", "covariance"), ARRAY],
        "n_constraints": [NONE, POSITIVE_INT],
        "bounds": [NONE, InstanceOf((tuple, list, np.ndarray), "two positive numbers (u, l)")],
        "random_state": [RANDOM_STATE],
    }
    _renamed_parameters = {"gamma": "slack_weight", "num_constraints": "n_constraints"}

    @deprecate_positional_args
    def __init__(
        self,
        *,
        slack_weight: float = 1.0,
        max_iter: int = 1000,
        tol: float = 1e-3,
        prior="identity",
        n_constraints: int | None = None,
        bounds=None,
        random_state=None,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
        gamma=DEPRECATED,
        num_constraints=DEPRECATED,
    ):
        store_parameters(self, locals())

    def _prior_matrix(self, X: np.ndarray) -> np.ndarray:
        """``M₀`` of shape (n_features, n_features), float64 (``prior`` is validated)."""
        D = X.shape[1]
        check_square_matrices(D, ITML_MATRICES, "ITML")
        if isinstance(self.prior, np.ndarray):
            if self.prior.shape != (D, D):
                raise ValueError(f"prior has shape {self.prior.shape}, expected {(D, D)}.")
            return check_spd(self.prior[None], "prior")[0].astype(np.float64)
        if self.prior == "identity":
            return np.eye(D)
        cov = np.atleast_2d(np.cov(X, rowvar=False))  # "covariance"
        if np.linalg.eigvalsh(cov).min() <= 1e-12 * max(np.trace(cov), 1e-300):
            raise ValueError(
                "prior='covariance' needs a non-singular covariance of X (constant or "
                "collinear features, or fewer samples than features); use prior='identity'."
            )
        return np.linalg.inv(cov)

    def _bounds(self, X: np.ndarray, prior: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.bounds is None:
            bounds = distance_bounds(X, prior, rng)
        else:
            bounds = np.asarray(self.bounds, dtype=np.float64).ravel()
            if bounds.shape != (2,) or not np.all(np.isfinite(bounds)) or np.any(bounds <= 0):
                raise ValueError(
                    f"bounds must be two positive numbers (u, l), got {self.bounds!r}."
                )
        # Identical points make a percentile 0; keep the projections finite as the authors do.
        return np.maximum(bounds, 1e-9)

    # alike: fit's sections as LMNN's and mLMNN's; the shared text is %(labelled_samples)s
    @fit_context
    @fill_doc
    def fit(self, X, y):
        """Learn ``M`` from samples ``X`` (n_samples, n_features) and class labels ``y``.

        Parameters
        ----------
        %(labelled_samples)s

        Returns
        -------
        self : ITML
        """
        X, _, codes = check_labelled_samples(self, X, y)
        X = X.astype(np.float64, copy=False)
        rng = make_rng(self.random_state)
        n_classes = int(codes.max()) + 1
        n_constraints = self._param("n_constraints") or 20 * n_classes**2
        return self._fit_constraints(X, *sample_pair_constraints(codes, n_constraints, rng), rng)

    @fit_context
    @fill_doc
    def fit_pairs(self, X, pairs=None, y=None):
        """Learn ``M`` from similar (+1) and dissimilar (−1) pairs, without class labels.

        Every given pair is a constraint (``n_constraints`` is not used); the bounds ``(u, l)``
        default to percentiles of the prior distance over random pairs of the points. The call
        convention and the checks on degenerate pairs are those of ``docs/pairs.md``.

        Parameters
        ----------
        %(pair_constraints)s

        Returns
        -------
        self : ITML

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 0.0], [0.1, 1.0], [1.0, 0.0], [1.1, 1.0]])
        >>> itml = ITML().fit_pairs(X, [[0, 1], [2, 3], [0, 2], [1, 3]], [1, 1, -1, -1])
        >>> itml.components_.shape
        (2, 2)
        """
        self._validate_params()
        s = check_pair_supervision(self, X, pairs, y)
        X64 = s.X.astype(np.float64, copy=False)
        return self._fit_constraints(X64, s.a, s.b, s.similar, make_rng(self.random_state))

    def _fit_constraints(self, X, a, b, similar, rng):
        """Bregman projections on the pairs ``(a, b)`` of rows of ``X`` with ``similar`` flags."""
        prior = self._prior_matrix(X)
        V = X[a] - X[b]
        nonzero = _usable_differences(V, prior)
        bounds = self._bounds(X, prior, rng)
        with single_blas_thread():  # tiny BLAS calls: threads only hurt
            M, n_iter, converged = itml_projections(
                V[nonzero],
                similar[nonzero],
                bounds,
                prior,
                float(self._param("slack_weight")),
                self.max_iter,
                self.tol,
            )
        if not converged:
            warnings.warn(
                f"ITML stopped at max_iter={self.max_iter} sweeps before converging "
                f"(tol={self.tol}).",
                ConvergenceWarning,
                stacklevel=2,
            )
        if not np.isfinite(M).all():
            raise ValueError(
                "ITML: the metric became non-finite; the scale of X is too extreme for float64 "
                "(standardise X first)."
            )
        self.components_ = components_from_metric(M)
        self.bounds_ = bounds
        self.n_constraints_ = int(nonzero.sum())
        self.n_iter_ = int(n_iter)
        return self
