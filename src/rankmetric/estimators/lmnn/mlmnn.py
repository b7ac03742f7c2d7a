"""Multiple-metric LMNN (mLMNN; Weinberger & Saul, JMLR 2009, sec. 5 "Multiple metrics").

One Mahalanobis metric ``M_c = L_cᵀ L_c`` per cluster ``c`` of the training set (the classes, as in
the paper, or k-means clusters). The distance from any point ``x`` to a training point ``x_j`` is
measured in the metric of ``x_j``'s cluster:

    D(x, x_j) = (x − x_j)ᵀ M_{c(j)} (x − x_j) = ||L_{c(j)} (x − x_j)||²,

so it is not symmetric between two training points of different clusters. The objective over
``L_1..L_G`` is LMNN's with every distance measured against its *reference* point:

    ε = (1 − μ) Σ_{i, j⇝i} D(x_i, x_j)
        + μ Σ_{i, j⇝i, l} (1 − y_il) [1 + D(x_i, x_j) − D(x_i, x_l)]₊

(target ``j`` in its own metric, impostor ``l`` in ``l``'s). With the pair weights ``w_ab`` of
:func:`rankmetric.estimators.lmnn.triplet_terms`, the gradient of cluster ``c`` is
``2 Z_cᵀ C_c X`` with ``Z_c = X L_cᵀ`` and ``C_c`` the weighted Laplacian of the pairs whose
reference ``b`` lies in ``c``. Target neighbours, the chunked active-set impostor search (one
search per cluster, over that cluster's members as candidates), the Laplacian gradient and the
optimiser loop are LMNN's (:mod:`rankmetric.estimators.lmnn`); every ``L_c`` starts from a global
LMNN fit, as in the paper. Classification is the k-NN vote under ``D``.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..._distances import paired_squared_euclidean, squared_euclidean
from ..._utils import resolve_device, to_tensor
from ..._validation import (
    ARRAY,
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    ParameterValidationMixin,
    check_param,
    deprecate_positional_args,
    encode_labels,
)
from ...io import register_estimator
from ...neighbors import smallest_k
from .._docstrings import fill_doc
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS, HeldOutCheckMixin
from .._init_parameters import store_parameters
from .._supervision import check_labelled_samples, split_pairs
from ..base import MetricLearnerMixin, fit_context
from ._objective import lmnn_loss_and_grad
from .lmnn import (
    LMNN,
    LMNN_PARAMETER_CONSTRAINTS,
    fit_on_active_sets,
    n_components_for,
    starting_map,
    warn_small_classes,
)
from .search import ActiveSet, row_chunk

__all__ = ["MultiMetricLMNN", "mlmnn_loss_and_grad"]


def mlmnn_loss_and_grad(
    Ls: torch.Tensor,
    X: torch.Tensor,
    groups: torch.Tensor,
    active: ActiveSet,
    regularization: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """mLMNN objective on an active set, and its (sub)gradient with respect to every ``L_g``.

    :func:`rankmetric.estimators.lmnn.lmnn_loss_and_grad` with one map per group.

    Parameters
    ----------
    Ls : Tensor of shape (n_groups, n_components, n_features)
        One linear map per group (cluster).
    X : Tensor of shape (n_samples, n_features)
    groups : LongTensor of shape (n_samples,)
        Group of each sample, in ``0..n_groups-1``; a distance to sample ``j`` is measured in
        ``L_{groups[j]}``.
    active : ActiveSet
        Target neighbours and the candidate impostor pairs of the push term (pass every
        differently labelled pair to get the exact objective).
    regularization : float
        μ in [0, 1]: weight of the push term; the pull term has weight 1 − μ.

    Returns
    -------
    loss : Tensor of shape ()
    grad : Tensor of shape (n_groups, n_components, n_features)
    """
    return lmnn_loss_and_grad(Ls, X, active, regularization, groups)


_FLOAT32_SAFE = 1e15  # |x| below this: squared distances stay far from float32's 3.4e38


@register_estimator
class MultiMetricLMNN(HeldOutCheckMixin, ParameterValidationMixin, ClassifierMixin, BaseEstimator):
    r"""Multiple-metric LMNN (mLMNN): one Mahalanobis metric per class or cluster, k-NN rule.

    The distance from a point :math:`x` to a training point :math:`x_j` is measured in the
    metric of :math:`x_j`'s cluster :math:`c(j)` (Weinberger & Saul 2009, sec. 5):

    .. math::

        D(x, x_j) = (x - x_j)^\top M_{c(j)} (x - x_j) = \lVert L_{c(j)} (x - x_j) \rVert^2 .

    Fitting minimises LMNN's objective with every distance measured in its reference point's
    metric,

    .. math::

        \varepsilon = (1 - \mu) \sum_{i,\, j \rightsquigarrow i} D(x_i, x_j)
            + \mu \sum_{i,\, j \rightsquigarrow i,\, l} (1 - y_{il})
              \left[1 + D(x_i, x_j) - D(x_i, x_l)\right]_+

    (:math:`j \rightsquigarrow i`: :math:`j` is a target neighbour of :math:`i`;
    :math:`y_{il} = 1` when :math:`i` and :math:`l` share a class), starting every
    ``L_c`` from a global :class:`~rankmetric.estimators.lmnn.LMNN` fit; ``predict`` is the
    majority vote of the ``n_neighbors`` nearest training points under those distances.

    Parameters
    ----------
    n_neighbors : int, default=3
        Neighbours of the k-NN vote of ``predict`` / ``predict_proba`` / ``score`` (as
        scikit-learn's ``KNeighborsClassifier``).
    n_target_neighbors : int, default=3
        Target neighbours ``k`` per sample (same class, nearest in the input space). A class
        with ``n_c ≤ k`` samples falls back to ``n_c − 1`` of them, with a ``UserWarning`` (as
        LMNN).
    n_clusters : int, optional
        ``None``: one metric per class (the paper's choice). An integer: one metric per k-means
        cluster of the training inputs (``KMeans(n_clusters, n_init=10, random_state)``).
    n_components : int, optional
        Rows ``r`` of every map ``L_c`` (``None``: ``n_features``).
    push_weight : float, default=0.5
        :math:`\mu \in [0, 1]`, the push/pull mix:
        :math:`(1 - \mu)\,\text{pull} + \mu\,\text{push}`.
    max_iter : int, default=1000
        Cap on optimiser iterations, for the global LMNN fit and again for the per-cluster
        metrics.
    learning_rate : float, default=1e-3
        Initial step of ``solver="gd"``; unused by L-BFGS.
    init : {"lmnn", "identity"} or ndarray, default="lmnn"
        Starting maps: every ``L_c`` equal to a global LMNN fit (with this estimator's
        ``n_target_neighbors``, ``push_weight``, budgets and solver; the paper's choice), the
        (truncated) identity, or an array of shape (n_components, n_features) shared by all
        clusters or (n_clusters, n_components, n_features).
    active_set_update : int, default=10
        Iterations between two impostor searches (see ``LMNN``).
    tol : float, default=1e-5
        Relative objective decrease below which the optimiser stops on an active set.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        scipy's L-BFGS-B, or gradient descent with step adaptation.
    random_state : int, Generator or None
        Seed of k-means and of the global LMNN fit.
    device : str or torch.device, optional
        Where the objective and the neighbour search run (``None``: CUDA when available).
    verbose : bool or int, default=False
        A progress bar over the optimiser iterations (on a terminal).
    k : int
        Deprecated alias of ``n_target_neighbors`` (removed in 0.3).
    regularization : float
        Deprecated alias of ``push_weight`` (removed in 0.3).
    held_out_check : {"auto", True, False}, default="auto"
        After the fit, the same settings are fitted again without 20 % of each class's samples, and
        on those the k-NN accuracy of the learned rule is compared with the Euclidean k-NN rule's
        (``held_out_check_``; each held-out sample counts alone: the classes are the training
        ones); below it (beyond noise, or within it), the fit issues an
        :class:`~rankmetric.training.UntrainedModelWarning`. ``"auto"`` skips it when too few
        samples can be held out (``held_out_check_`` says why), True then also warns, False switches
        it off. The model returned does not depend on it. ``docs/reliability.md``, "Never worse than
        Euclidean without saying so".
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned rule below (or not better), return the
        Euclidean k-NN rule instead (every ``L_c`` becomes the identity).

    Attributes
    ----------
    held_out_check_ : dict or None
        The held-out check, as in :class:`rankmetric.WARCA` (``metric="accuracy"``).
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    components_ : ndarray of shape (``n_clusters_``, n_components, n_features), float32
        The maps ``L_c``; ``M_c = L_cᵀ L_c``.
    clusters_ : ndarray of shape (n_train,), int64
        Cluster of every training point (its class code when ``n_clusters`` is ``None``).
    n_clusters_ : int
        Number of metrics.
    X_train_ : ndarray of shape (n_train, n_features), float32
        The training points (the references of the k-NN rule).
    y_train_ : ndarray of shape (n_train,), int64
        Their class codes (``classes_[y_train_]`` are the labels).
    global_components_ : ndarray of shape (n_components, n_features) or None
        The global LMNN map every ``L_c`` started from (``None`` unless ``init="lmnn"``).
    n_iter_ : int
        Optimiser iterations of the multiple-metric stage.
    objective_ : float
        ε at the end of fitting (over the last active set, which holds every violator).
    n_active_pairs_ : int
        Candidate impostor pairs in the last active set.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.LMNN : The single global metric, also the start of ``init="lmnn"``.
    rankmetric.evaluate.knn_accuracy : k-NN accuracy of any one learned metric.

    References
    ----------
    .. [1] K. Q. Weinberger and L. K. Saul. Distance Metric Learning for Large Margin Nearest
       Neighbor Classification. JMLR 10:207–244, 2009 (section 5, "Multiple metrics").

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import MultiMetricLMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MultiMetricLMNN(max_iter=50, random_state=0).fit(X, y)
    >>> clf.components_.shape
    (3, 4, 4)
    >>> round(clf.score(X, y), 2)
    0.98
    """

    #: A classifier of its training classes: checked on held-out samples of those classes, by
    #: the k-NN accuracy of its rule against the Euclidean k-NN rule.
    _held_out_metric = "accuracy"
    _held_out_hint = "try fewer max_iter, n_clusters or another push_weight"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        **LMNN_PARAMETER_CONSTRAINTS,
        "n_neighbors": [POSITIVE_INT],
        "n_clusters": [NONE, POSITIVE_INT],
        "init": [Options("lmnn", "identity"), ARRAY],
    }
    _renamed_parameters = {"k": "n_target_neighbors", "regularization": "push_weight"}

    # alike: the signature is spelled out (scikit-learn reads it), shared with mLMNN / LMNN
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_neighbors: int = 3,
        n_target_neighbors: int = 3,
        n_clusters: int | None = None,
        n_components: int | None = None,
        push_weight: float = 0.5,
        max_iter: int = 1000,
        learning_rate: float = 1e-3,
        init="lmnn",
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

    # ------------------------------------------------------------------ validation
    def _groups(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        if self.n_clusters is None:
            return codes.copy()
        from sklearn.cluster import KMeans

        seed = self.random_state
        if isinstance(seed, np.random.Generator):
            seed = int(seed.integers(2**31 - 1))
        km = KMeans(n_clusters=self.n_clusters, n_init=10, random_state=seed).fit(X)
        # relabel so that the clusters are 0..G-1 with none empty
        _, (groups,) = encode_labels(km.labels_)
        return groups.astype(np.int64)

    def _initial_maps(self, X, y, r: int, n_groups: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Starting maps (n_groups, r, D) in float64, and the global LMNN map (or None).

        ``init`` is validated already; only an array's shape is checked here.
        """
        if isinstance(self.init, np.ndarray) or self.init == "identity":
            return starting_map(self.init, X, r, n_groups=n_groups), None
        shared = ("max_iter", "learning_rate", "active_set_update", "tol", "solver")
        lmnn = LMNN(  # init="lmnn"
            n_components=r,
            n_target_neighbors=self._param("n_target_neighbors"),
            push_weight=self._param("push_weight"),
            held_out_check=False,  # a step of this fit: mLMNN checks its own rule
            **{name: getattr(self, name) for name in (*shared, "device", "random_state")},
        )
        with warnings.catch_warnings():  # mLMNN has already said so
            warnings.filterwarnings("ignore", "class .* has .* sample", UserWarning)
            lmnn.fit(X, y)
        L = lmnn.components_.astype(np.float64)
        return np.tile(L, (n_groups, 1, 1)), lmnn.components_

    # ------------------------------------------------------------------ fitting
    @fit_context
    @fill_doc
    def fit(self, X, y):
        """Learn one metric per cluster from samples ``X`` (n_samples, n_features), labels ``y``.

        Parameters
        ----------
        %(labelled_samples)s

        Returns
        -------
        self : MultiMetricLMNN
        """
        X, classes, codes = check_labelled_samples(self, X, y, np.float32)
        r = n_components_for(self.n_components, X.shape[1])
        bound = Interval(Integral, 1, X.shape[0], closed="both", right_label="n_samples")
        check_param("n_neighbors", self.n_neighbors, [bound])  # the bounds that depend on X
        check_param("n_clusters", self.n_clusters, [NONE, bound])
        warn_small_classes(codes, classes, self._param("n_target_neighbors"))
        groups = self._groups(X, codes)
        n_groups = int(groups.max()) + 1
        L0, global_map = self._initial_maps(X, y, r, n_groups)
        Ls, n_iter, loss, active = fit_on_active_sets(self, X, codes, L0, groups)
        self.classes_ = classes
        self.components_ = Ls.astype(np.float32)
        self.clusters_ = groups
        self.n_clusters_ = n_groups
        self.X_train_ = X.astype(np.float32)
        self.y_train_ = codes
        self.global_components_ = global_map
        self.n_iter_ = int(n_iter)
        self.objective_ = float(loss)
        self.n_active_pairs_ = int(active.anchors.numel())
        return self

    def _use_reference(self) -> None:
        """``fallback="reference"``: every cluster's map is the identity (Euclidean k-NN)."""
        eye = np.eye(self.n_features_in_, dtype=self.components_.dtype)
        self.components_ = np.tile(eye, (self.components_.shape[0], 1, 1))

    # ------------------------------------------------------------------ prediction
    def _nearest(self, X) -> np.ndarray:
        """Indices (n_queries, n_neighbors) of the nearest training points under ``D``."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        device = resolve_device(self.device)
        # float32 unless squared distances of X could overflow it (X * 1e50 is legal input)
        dtype = torch.float32 if np.abs(X).max(initial=0.0) < _FLOAT32_SAFE else torch.float64
        Q = to_tensor(X, device, dtype)
        Ls = to_tensor(self.components_, device, dtype)
        train = to_tensor(self.X_train_, device, dtype)
        groups = torch.as_tensor(self.clusters_, device=device)
        members = [torch.nonzero(groups == g).flatten() for g in range(Ls.shape[0])]
        embedded = [train[m] @ Ls[g].T for g, m in enumerate(members)]
        n_train = train.shape[0]
        nearest = torch.empty((Q.shape[0], self.n_neighbors), dtype=torch.int64, device=device)
        step = row_chunk(n_train)
        for start in range(0, Q.shape[0], step):  # loop over query chunks: (chunk × n_train)
            rows = Q[start : start + step]
            block = torch.empty((rows.shape[0], n_train), dtype=Q.dtype, device=device)
            for g, m in enumerate(members):  # loop over clusters: each in its own metric
                block[:, m] = squared_euclidean(rows @ Ls[g].T, embedded[g])
            if not torch.isfinite(block).all():
                raise ValueError(
                    "MultiMetricLMNN: distances to the training points overflow float64; the "
                    "scale of X is too extreme (standardise X as the training data were)."
                )
            nearest[start : start + step] = smallest_k(block, self.n_neighbors)[1]
        return nearest.cpu().numpy()

    def predict_proba(self, X) -> np.ndarray:
        """Fraction of the ``n_neighbors`` nearest training points in each class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        nearest = self._nearest(X)
        votes = self.y_train_[nearest]  # (n, n_neighbors)
        n_classes = len(self.classes_)
        counts = np.zeros((votes.shape[0], n_classes))
        np.add.at(counts, (np.arange(votes.shape[0])[:, None], votes), 1.0)
        return counts / self.n_neighbors

    # alike: predict_proba's Parameters section (the same X, a different return)
    def predict(self, X) -> np.ndarray:
        """Majority label of the ``n_neighbors`` nearest training points (ties: smallest label).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to classify.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    # ------------------------------------------------------------------ metrics
    def get_mahalanobis_matrices(self) -> np.ndarray:
        """``M_c = L_cᵀ L_c`` per cluster: (``n_clusters_``, n_features, n_features), float64.

        Returns
        -------
        ndarray of shape (``n_clusters_``, n_features, n_features), float64
            One positive semi-definite matrix per cluster.
        """
        check_is_fitted(self, "components_")
        L = self.components_.astype(np.float64)
        return L.transpose(0, 2, 1) @ L

    def pair_distances(self, X1, X2=None, clusters=None) -> np.ndarray:
        """``||L_{c_i}(x1_i − x2_i)||`` for paired rows, each in the metric of ``clusters[i]``.

        The pair convention of every estimator (``docs/pairs.md``), plus the cluster whose metric
        measures each pair.

        Parameters
        ----------
        X1 : array-like of shape (n_pairs, n_features), or (n_pairs, 2, n_features)
            The first points, or the stacked pairs when ``X2`` is None.
        X2 : array-like of shape (n_pairs, n_features), optional
            The second points: the reference points (for training points ``X_train_[j]``,
            pass ``clusters_[j]``).
        clusters : array-like of int, shape (n_pairs,)
            The cluster of each pair's reference point (required).

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "components_")
        if clusters is None:
            raise ValueError(
                "MultiMetricLMNN measures each pair in the metric of its reference point's "
                "cluster: pass clusters= (for training points, clusters_[j])."
            )
        X1, X2 = split_pairs(X1, X2)
        X1 = validate_data(self, X1, reset=False, dtype=[np.float64, np.float32])
        X2 = validate_data(self, X2, reset=False, dtype=[np.float64, np.float32])
        clusters = np.asarray(clusters)
        if not (X1.shape[0] == X2.shape[0] == clusters.shape[0] and clusters.ndim == 1):
            raise ValueError(
                f"X1, X2 and clusters must have as many rows: {X1.shape[0]}, {X2.shape[0]}, "
                f"{clusters.shape}."
            )
        in_range = clusters.size == 0 or (clusters.min() >= 0 and clusters.max() < self.n_clusters_)
        if not (np.issubdtype(clusters.dtype, np.integer) and in_range):
            raise ValueError(f"clusters must be integers in [0, {self.n_clusters_}).")
        diff = (X1 - X2).astype(np.float32)
        out = np.empty(diff.shape[0], dtype=np.float32)
        for g in np.unique(clusters):  # loop over clusters: each pair in its own metric
            sel = clusters == g
            # the difference is taken first (no cancellation): its embedding's squared norm
            out[sel] = np.sqrt(paired_squared_euclidean(diff[sel] @ self.components_[g].T, 0.0))
        return out

    # ------------------------------------------------------------------ model files
    # One implementation of the model files (mLMNN is a classifier, not a transformer).
    save = MetricLearnerMixin.save
    load = MetricLearnerMixin.__dict__["load"]
