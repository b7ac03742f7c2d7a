"""The LMNN estimator, one global metric (the objective: :mod:`rankmetric.estimators.lmnn`)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator

from ..._utils import make_rng, resolve_device, to_tensor
from ..._validation import (
    ARRAY,
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    check_param,
    deprecate_positional_args,
)
from ...io import register_estimator
from .._docstrings import fill_doc
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from .._init_parameters import TRAINING_PARAMETER_CONSTRAINTS, store_parameters
from .._supervision import (
    check_labelled_samples,
    check_pair_supervision,
    check_triplet_supervision,
    triplets_from_pairs,
)
from ..base import MahalanobisMixin, fit_context
from ._active_set import numpy_objective, optimize_fixed, optimize_with_progress
from ._objective import (
    ActivePairs,
    FixedTriplets,
    fixed_triplet_loss_and_grad,
    lmnn_loss_and_grad,
)
from .search import active_set_search, check_first_active_set, find_target_neighbors

__all__ = [
    "LMNN",
    "LMNN_PARAMETER_CONSTRAINTS",
    "MAX_PAIR_TRIPLETS",
    "n_components_for",
    "warn_small_classes",
]

_POSITIVE = Interval(Real, 0, None, closed="neither")
#: Most triplets :meth:`LMNN.fit_pairs` forms from pairs sharing an item (a uniform sample).
MAX_PAIR_TRIPLETS = 100_000

#: The hyper-parameters LMNN shares with multiple-metric LMNN, declared once.
LMNN_PARAMETER_CONSTRAINTS = {
    "n_components": [NONE, POSITIVE_INT],
    "n_target_neighbors": [POSITIVE_INT],
    "push_weight": [Interval(Real, 0, 1, closed="both")],
    "max_iter": [POSITIVE_INT],
    "learning_rate": [_POSITIVE],
    "active_set_update": [POSITIVE_INT],
    "tol": [_POSITIVE],
    "solver": [Options("lbfgs", "gd")],
    **TRAINING_PARAMETER_CONSTRAINTS,
}


def warn_small_classes(codes: np.ndarray, classes: np.ndarray, k: int) -> None:
    """Warn, naming the smallest class, when one has no more than ``k`` samples (it then gets
    fewer than ``k`` target neighbours)."""
    counts = np.bincount(codes)
    smallest = int(np.argmin(counts))
    if counts[smallest] <= k:
        label = classes[smallest]
        label = label.item() if isinstance(label, np.generic) else label
        warnings.warn(
            f"class {label!r} has {counts[smallest]} sample(s), fewer than "
            f"n_target_neighbors + 1 = {k + 1}: its samples get fewer target neighbours.",
            UserWarning,
            stacklevel=3,
        )


def n_components_for(n_components: int | None, n_features: int) -> int:
    """The rows ``r`` of the learned map: ``n_components`` (at most ``n_features``) or all."""
    r = n_features if n_components is None else n_components
    check_param(
        "n_components",
        r,
        [Interval(Integral, 1, n_features, closed="both", right_label="n_features")],
    )
    return int(r)


def starting_map(init, X: np.ndarray, r: int, rng=None, n_groups: int | None = None) -> np.ndarray:
    """The starting map of LMNN, shape (r, n_features), or of mLMNN with ``n_groups``, one per
    group (n_groups, r, n_features), in float64 (``init`` is validated): a given array of either
    shape, the (truncated) identity, a Gaussian matrix or the leading principal axes of ``X``."""
    D = X.shape[1]
    shapes = {(r, D): "(n_components, n_features)"}
    if n_groups is not None:
        shapes[(n_groups, r, D)] = "(n_clusters, n_components, n_features)"
    if isinstance(init, np.ndarray):
        if init.shape not in shapes:
            expected = " or ".join(f"{name}={shape}" for shape, name in shapes.items())
            raise ValueError(f"init has shape {init.shape}, expected {expected}.")
        L = init.astype(np.float64)
    elif init == "identity":
        L = np.eye(r, D)
    elif init == "random":
        L = rng.standard_normal((r, D)) / np.sqrt(D)
    else:  # "pca"
        centered = X - X.mean(0)
        _, vectors = np.linalg.eigh(centered.T @ centered)
        L = vectors[:, ::-1][:, :r].T.copy()
    return L if n_groups is None or L.ndim == 3 else np.tile(L, (n_groups, 1, 1))


def fit_on_active_sets(estimator, X: np.ndarray, codes: np.ndarray, L0: np.ndarray, groups=None):
    """The fit of LMNN (one map ``L0``) and of mLMNN (one map per group, with ``groups``).

    Target neighbours in the input space, then the active-set optimiser of the objective from
    ``L0`` with ``estimator``'s settings. Without groups, a first active set that cannot fit in
    the memory budget is refused before the target-neighbour search.

    Returns
    -------
    L, n_iter, loss, active
        As :func:`~rankmetric.estimators.lmnn.optimize_with_progress`.
    """
    device = resolve_device(estimator.device)
    k = estimator._param("n_target_neighbors")
    Xt = to_tensor(X.astype(np.float32), device)  # a writable float32 copy
    codes_t = torch.as_tensor(codes, device=device)
    groups_t = None if groups is None else torch.as_tensor(groups, device=device)
    if groups is None:  # before searching
        check_first_active_set(Xt, Xt @ to_tensor(L0, device).T, codes_t, k)
    targets, target_mask = find_target_neighbors(Xt, codes_t, k)
    mu = float(estimator._param("push_weight"))
    search = active_set_search(Xt, codes_t, targets, target_mask, groups_t)

    def objective(active):  # once per active set: its pairs' index structures, then evaluations
        pairs = ActivePairs(active, groups_t, None if groups is None else L0.shape[0])

        def loss_and_grad(L):
            return lmnn_loss_and_grad(L, Xt, active, mu, groups_t, pairs)

        return numpy_objective(loss_and_grad, L0.shape, Xt)

    name = "LMNN" if groups is None else "mLMNN"
    return optimize_with_progress(estimator, search, objective, L0, name)


@register_estimator
@fill_doc
class LMNN(MahalanobisMixin, BaseEstimator):
    r"""Large Margin Nearest Neighbour (Weinberger & Saul 2009) Mahalanobis metric learning.

    Parameters
    ----------
    n_components : int, optional
        Rows ``r`` of the learned map (``None``: ``n_features``).
    n_target_neighbors : int, default=3
        Target neighbours ``k`` per sample. A class with ``n_c ≤ k`` samples falls back to
        ``n_c − 1`` target neighbours (with a ``UserWarning``); a class of one sample then
        serves as impostor only.
    push_weight : float, default=0.5
        :math:`\mu` in [0, 1], the push/pull mix:
        :math:`(1 - \mu)\, \text{pull} + \mu\, \text{push}`.
    max_iter : int, default=1000
        Cap on optimiser iterations (L-BFGS iterations or accepted gradient steps).
    learning_rate : float, default=1e-3
        Initial step of ``solver="gd"`` (then ×1.01 after an accepted step, ÷2 after a
        rejected one); unused by L-BFGS.
    init : {"pca", "identity", "random"} or ndarray of shape (n_components, n_features)
        Initial map: leading principal axes, the (truncated) identity, or a Gaussian matrix.
    active_set_update : int, default=10
        Iterations between two impostor searches (the first rounds, while the set shrinks
        fast, last 1, 2, 4, ... iterations). Previous pairs still within the margin radius + 1
        stay in the set, so pairs do not flicker in and out.
    tol : float, default=1e-5
        Relative objective decrease below which the optimiser stops on an active set.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        scipy's L-BFGS-B, or gradient descent with step adaptation (Weinberger's scheme).
    random_state : int, Generator or None
        Seed of ``init="random"``.
    device : str or torch.device, optional
        Where the objective is evaluated (``None``: CUDA when available).
    verbose : bool or int, default=False
        A progress bar over the optimiser iterations (on a terminal): objective and new impostor
        pairs of the last active-set search.
    k : int
        Deprecated alias of ``n_target_neighbors`` (removed in 0.3).
    regularization : float
        Deprecated alias of ``push_weight`` (removed in 0.3).
    %(held_out_check)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    components_ : ndarray of shape (n_components, n_features), float32
        The learned map :math:`L`; :math:`d(a, b) = \lVert L(a - b) \rVert`.
    n_iter_ : int
        Optimiser iterations run.
    objective_ : float
        ε(L) at the end of fitting (over the last active set, which holds every violator).
    n_active_pairs_ : int
        Candidate impostor pairs in the last active set.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.MultiMetricLMNN : One LMNN metric per class or cluster, with its k-NN rule.
    rankmetric.WARCA : Mahalanobis metric trained for the top ranks instead of k-NN margins.
    rankmetric.ITML : Mahalanobis metric from pair constraints, kept close to a prior.

    References
    ----------
    .. [1] K. Q. Weinberger and L. K. Saul. Distance Metric Learning for Large Margin Nearest
       Neighbor Classification. JMLR 10:207–244, 2009.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import LMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> lmnn = LMNN(n_components=2, random_state=0).fit(X, y)
    >>> lmnn.transform(X).shape
    (150, 2)
    """

    _held_out_hint = "try fewer max_iter, another push_weight or n_components"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        **LMNN_PARAMETER_CONSTRAINTS,
        "init": [Options("pca", "identity", "random"), ARRAY],
    }
    _renamed_parameters = {"k": "n_target_neighbors", "regularization": "push_weight"}

    # alike: the signature is spelled out (scikit-learn reads it), shared with mLMNN / LMNN
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        n_target_neighbors: int = 3,
        push_weight: float = 0.5,
        max_iter: int = 1000,
        learning_rate: float = 1e-3,
        init="pca",
        active_set_update: int = 10,
        tol: float = 1e-5,
        solver: str = "lbfgs",
        random_state=None,
        device=None,
        verbose: bool | int = False,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
        k=DEPRECATED,
        regularization=DEPRECATED,
    ):
        store_parameters(self, locals())

    # ------------------------------------------------------------------ fitting
    @fit_context
    @fill_doc
    def fit(self, X, y):
        """Learn ``components_`` from samples ``X`` (n_samples, n_features) and labels ``y``.

        Parameters
        ----------
        %(labelled_samples)s

        Returns
        -------
        self : LMNN
        """
        X, classes, codes = check_labelled_samples(self, X, y, np.float32, "target neighbours")
        r = n_components_for(self.n_components, X.shape[1])
        warn_small_classes(codes, classes, self._param("n_target_neighbors"))
        L0 = starting_map(self.init, X, r, make_rng(self.random_state))
        L, n_iter, loss, active = fit_on_active_sets(self, X, codes, L0)
        return self._store(L, n_iter, loss, active.anchors.numel())

    @fit_context
    def fit_triplets(self, X, triplets=None):
        """Learn ``components_`` from triplets (anchor, positive, negative), without labels.

        Minimises the LMNN objective with the given triplets as the only constraints: the
        (anchor, positive) pairs are the target pairs (pulled, weight ``1 − μ``) and each triplet
        pushes its negative out of the unit margin (weight μ); no neighbour search is run.
        ``n_target_neighbors`` and ``active_set_update`` are not used. The call convention and
        the checks on degenerate triplets are those of ``docs/pairs.md``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_triplets, 3, n_features)
            The points (then ``triplets`` holds row indices), or the stacked triplets.
        triplets : array-like of shape (n_triplets, 3), int
            Row indices into ``X`` of (anchor, positive, negative).

        Returns
        -------
        self : LMNN

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
        >>> lmnn = LMNN().fit_triplets(X, [[0, 1, 2], [2, 3, 0], [1, 0, 3], [3, 2, 1]])
        >>> d = lmnn.pair_distances(X[[0, 0]], X[[1, 2]])
        >>> bool(d[0] < d[1])
        True
        """
        self._validate_params()
        return self._fit_triplets(check_triplet_supervision(self, X, triplets))

    @fit_context
    @fill_doc
    def fit_pairs(self, X, pairs=None, y=None):
        """Learn ``components_`` from similar (+1) and dissimilar (−1) pairs.

        Pairs that share an item become triplets: a similar pair ``(i, j)`` and a dissimilar
        pair ``(i, l)`` give ``(i, j, l)`` (both orientations of each similar pair; at most
        :data:`MAX_PAIR_TRIPLETS`, a uniform sample seeded by ``random_state``), then
        :meth:`fit_triplets`. Pairs that share no item cannot make a triplet (``ValueError``).

        Parameters
        ----------
        %(pair_constraints)s

        Returns
        -------
        self : LMNN
        """
        self._validate_params()
        s = check_pair_supervision(self, X, pairs, y)
        rng = make_rng(self.random_state)
        return self._fit_triplets(triplets_from_pairs(s, MAX_PAIR_TRIPLETS, rng))

    def _fit_triplets(self, t) -> LMNN:
        r = n_components_for(self.n_components, t.X.shape[1])
        device = resolve_device(self.device)
        L0 = starting_map(self.init, t.X.astype(np.float64), r, make_rng(self.random_state))
        Xt = to_tensor(t.X.astype(np.float32), device)
        a, p, n = (torch.as_tensor(v, device=device) for v in (t.anchor, t.positive, t.negative))
        mu = float(self._param("push_weight"))
        prepared = FixedTriplets(a, p, n, Xt.shape[0])  # once: no sort per evaluation

        def loss_and_grad(L):
            return fixed_triplet_loss_and_grad(L, Xt, a, p, n, mu, prepared)

        L, n_iter, loss = optimize_fixed(self, numpy_objective(loss_and_grad, L0.shape, Xt), L0)
        return self._store(L, n_iter, loss, t.anchor.shape[0])

    def _store(self, L: np.ndarray, n_iter: int, loss: float, n_pairs: int) -> LMNN:
        """Set the fitted attributes from the optimiser's result."""
        self.components_ = L.astype(np.float32)
        self.n_iter_ = int(n_iter)
        self.objective_ = float(loss)
        self.n_active_pairs_ = int(n_pairs)
        return self
