"""SSNE: similarity-sensitive nonlinear embeddings onto the unit sphere (Batra & Shakhnarovich).

A scikit-learn face over :class:`rankmetric.models.sphere.SphereTanhEmbedding` and
:mod:`rankmetric.losses.similarity`, trained with :func:`rankmetric.training.train`; the
proximal solver is in ``estimators/_ssne_solver.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import distributed
from .._distances import paired_squared_euclidean
from .._utils import make_rng, resolve_device, to_tensor, torch_generator
from .._validation import (  # duplicates: the constraint names every iterative estimator imports
    CHECKPOINTS,
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    Interval,
    Options,
    check_labels,
    check_min_per_class,
    deprecate_positional_args,
)
from ..io import register_estimator
from ..losses.regularizers import group_norm_penalty
from ..losses.similarity import (
    SimilarityRegressionLoss,
    jaccard_similarity_targets,
    label_similarity_targets,
)
from ..models.sphere import SphereTanhEmbedding, sphere_similarity
from ..sampling import LabelIndex
from ..training import RETRIEVAL_METRICS, split_validation
from ._docstrings import fill_doc
from ._early_stopping import RENAMED_PATIENCE, VALIDATION_PARAMETER_CONSTRAINTS
from ._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from ._init_parameters import TRAINING_PARAMETER_CONSTRAINTS, store_parameters
from ._ssne_solver import ProximalStepper as _ProximalStepper
from ._supervision import (
    check_indices,
    check_pair_supervision,
    check_similarity_targets,
    split_pairs,
)
from .base import MetricLearnerMixin, fit_context, train_estimator, training_history
from .warca.solver import rows_of
from .warca.validation import make_validator

__all__ = ["SSNE", "default_n_components"]

#: Range of the default number of units ``M = 2·D``.
MIN_DEFAULT_COMPONENTS, MAX_DEFAULT_COMPONENTS = 16, 256
_SOLVERS = ("full", "bcd")
_POSITIVE_SAMPLING = ("pairs", "classes")
_SIMILARITIES = ("labels", "jaccard")
_TRANSFORM_CHUNK = 65536
_UNTRAINED_HINT = (
    "Try a smaller learning_rate, a smaller reg_lambda (fewer pruned units) or another "
    "max_iter; docs/ssne.md."
)

# A batch sampler returns (first indices, second indices, target similarities) of n pairs.
PairSampler = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]


def default_n_components(n_features: int) -> int:
    """:math:`M = 2D` clipped to ``[16, 256]``: room for units to be pruned on small inputs, bounded
    cost on wide ones."""
    return int(np.clip(2 * n_features, MIN_DEFAULT_COMPONENTS, MAX_DEFAULT_COMPONENTS))


# duplicates: the paper's References block, cited by each public name built on it
# (models.SphereTanhEmbedding, losses.similarity, losses.group_norm_penalty).
@register_estimator
@fill_doc
class SSNE(MetricLearnerMixin, TransformerMixin, BaseEstimator):
    r"""Similarity-sensitive nonlinear embedding onto the unit sphere.

    Learns :math:`H(x) = \tilde H(x) / \lVert \tilde H(x) \rVert` with
    :math:`h_m(x) = 2 / (1 + \exp(w_m^\top [x; 1])) - 1` so that
    :math:`\hat S(x, z) = H(x)^\top H(z)` regresses target similarities, by minimising

    .. math::

        \mathop{\mathrm{mean}}_q \bigl(s_q - \hat S_q\bigr)^2
        + \mathtt{reg\_lambda} \sum_m \lVert w_m \rVert_2

    over the pairs :math:`q` with target similarity :math:`s_q`, with stochastic proximal steps
    (the group soft-threshold zeroes whole columns :math:`w_m`).
    Targets come from class labels (:meth:`fit`: ``+1`` same class, ``neg_target`` otherwise) or
    directly from pairs with real-valued similarities (:meth:`fit_pairs`).

    Parameters
    ----------
    n_components : int, optional
        Number of units :math:`M` before pruning. Default :math:`2D` clipped to ``[16, 256]``.
    reg_lambda : float, default=1e-4
        Weight of the L1,2 group norm against the per-pair mean squared loss. The paper writes
        :math:`\lambda \sum_q (s_q - \hat S_q)^2 + \sum_m \lVert w_m \rVert` over :math:`|C|`
        pairs; that is this objective times :math:`\lambda |C|` with
        :math:`\mathtt{reg\_lambda} = 1 / (\lambda |C|)`. Larger values prune more units. The
        default was chosen on validation data (``docs/ssne.md``); it prunes about as hard as
        ``1e-3`` did before the proximal step was corrected for momentum.
    similarity : {"labels", "jaccard"}, default="labels"
        How :meth:`fit` turns ``y`` into targets. ``"labels"``: ``y`` holds class labels, pairs
        are class-balanced, target ``+1`` for the same class and ``neg_target`` otherwise.
        ``"jaccard"``: ``y`` is a binary label-indicator matrix (multi-label), pairs are uniform,
        target :math:`\mathtt{neg\_target} + (1 - \mathtt{neg\_target})\, J` with :math:`J` the
        Jaccard index of the two label
        sets (real-valued supervision).
    neg_target : float, default=0.0
        Target similarity of a pair of different classes, in ``[-1, 1)``: ``0`` asks for
        orthogonal classes (reachable for up to ``M`` classes), ``-1`` for antipodal ones
        (reachable for two). Chosen on validation data (``docs/ssne.md``).
    positive_fraction : float, default=0.5
        Share of same-class pairs in each batch drawn from labels (class-balanced sampling).
    positive_sampling : {"classes", "pairs"}, default="classes"
        How same-class pairs are drawn from labels. ``"classes"``: the class uniformly (among
        classes with two samples), then a pair inside it, so small classes are seen as often as
        large ones. ``"pairs"``: uniformly over all same-class pairs, so a class of ``n_c``
        samples gets a share ``∝ n_c (n_c − 1)`` (the default before this version). The
        default was chosen on validation data (``docs/ssne.md``).
    solver : {"full", "bcd"}, default="bcd"
        ``"bcd"``: batch-stochastic block-coordinate descent as in the paper, each step
        updating ``block_size`` random columns. ``"full"``: every column of ``W`` moves at each
        step. See ``docs/ssne.md`` for the validation measurements behind the default.
    block_size : int, default=16
        Columns per block-coordinate step (``solver="bcd"``; clipped to ``M``).
    batch_size : int, default=256
        Pairs per step.
    learning_rate : float, default=0.3
        Initial step size of SGD with momentum 0.9; it decays linearly to 0 over ``max_iter``
        steps. The proximal threshold of a step is its step size times
        ``reg_lambda / (1 − 0.9)``, so that the iteration minimises the objective above (see
        ``docs/ssne.md``).
    max_iter : int, default=1000
        Optimisation steps. The budget is the stopping rule: the step size decays linearly to 0
        at the last step. On the validation thirds of ``docs/ssne.md`` 2000 steps over-fit sets
        of about 100 training points and 300 under-fit; 500 and 1000 were within 0.4 points of
        each other. A step costs ``O(batch_size · D · M)`` whatever the data size.
    validation_fraction : float, default=0.0
        Share of ``(X, y)`` held out by :meth:`fit` (class labels only) to score the embedding
        every ``validation_every`` steps and keep the best step, the untrained start (step 0)
        included; 0 (the default) trains on everything for exactly ``max_iter`` steps. The
        convention of every iteratively trained estimator: ``docs/architecture.md``,
        "Validation".
    validation_split : {"stratified", "groups"}, default="stratified"
        A share of each class's samples, or a share of the classes whole (validation
        identities unseen in training).
    validation_metric : {"recall@1", "map"}, default="recall@1"
        Leave-one-out retrieval among the validation items: whether each one's nearest other
        validation item shares its label, or the average precision.
    validation_every : int, default=50
        Steps between validation scores.
    n_iter_no_change : int or None, default=None
        Stop after this many validations without improvement; None runs the budget and keeps
        the best validated step.
    random_state : int, Generator or None
        Seed of every draw (initial ``W``, pairs, blocks, the validation split).
    device : str or None
        Torch device; ``None`` picks CUDA when available.
    verbose : bool or int, default=False
        Progress bar on a terminal.
    %(checkpoint)s
    %(held_out_check_only)s
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned distance below (or not better), return the
        reference instead: ``transform`` returns its input (the Euclidean distance;
        ``score_pairs`` is ``1 − d²/2``).
    %(patience)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation applied before the embedding,
        :math:`\varphi(x) = [(x - \mathtt{mean\_}) / \mathtt{scale\_};\, 1]`.
    weight_ : ndarray of shape (n_features + 1, n_components)
        The learned ``W`` (bias in the last row); pruned columns are exactly zero.
    active_components_ : ndarray of shape (n_active,), int
        Indices of the units that survived the group norm; :meth:`transform` returns these.
    n_iter_ : int
        Steps taken.
    loss_curve_ : ndarray of shape (``n_iter_``,)
        Mini-batch loss (without the penalty) at each step.
    best_iter_ : int or None
        Step whose parameters were kept (with validation; 0: the untrained start).
    validation_scores_ : list of float
        Validation scores after each ``validation_every`` steps (empty without validation).
    initial_validation_score_ : float or None
        Validation score of the untrained start.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.losses.SimilarityRegressionLoss : The squared loss on target similarities.
    rankmetric.models.SphereTanhEmbedding : The network, for training inside PyTorch.
    rankmetric.KernelWARCA : A kernel-based nonlinear metric trained for top ranks.
    rankmetric.WARCA : A linear Mahalanobis map trained for top ranks.

    References
    ----------
    .. [1] D. Batra and G. Shakhnarovich. Similarity Sensitive Nonlinear Embeddings. Toyota
       Technological Institute at Chicago, workshop extended abstract.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import SSNE
    >>> X, y = load_iris(return_X_y=True)
    >>> ssne = SSNE(n_components=3, max_iter=100, random_state=0).fit(X, y)
    >>> ssne.weight_.shape
    (5, 3)
    >>> Z = ssne.transform(X)
    >>> Z.shape[0]
    150
    """

    _held_out_hint = "try a larger reg_lambda, fewer max_iter or a smaller learning_rate"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        "n_components": [NONE, POSITIVE_INT],
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "similarity": [Options(*_SIMILARITIES)],
        "neg_target": [Interval(Real, -1, 1, closed="left")],
        "positive_fraction": [Interval(Real, 0, 1, closed="both")],
        "positive_sampling": [Options(*_POSITIVE_SAMPLING)],
        "solver": [Options(*_SOLVERS)],
        "block_size": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [POSITIVE_INT],
        **VALIDATION_PARAMETER_CONSTRAINTS,
        "validation_metric": [Options(*RETRIEVAL_METRICS)],
        **TRAINING_PARAMETER_CONSTRAINTS,
        **CHECKPOINTS,
    }
    _renamed_parameters = RENAMED_PATIENCE

    # alike: the signature is spelled out, not inherited (scikit-learn reads the parameters)
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        reg_lambda: float = 1e-4,
        similarity: str = "labels",
        neg_target: float = 0.0,
        positive_fraction: float = 0.5,
        positive_sampling: str = "classes",
        solver: str = "bcd",
        block_size: int = 16,
        batch_size: int = 256,
        learning_rate: float = 0.3,
        max_iter: int = 1000,
        validation_fraction: float = 0.0,
        validation_split: str = "stratified",
        validation_metric: str = "recall@1",
        validation_every: int = 50,
        n_iter_no_change: int | None = None,
        random_state=None,
        device: str | None = None,
        verbose: bool | int = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
        patience=DEPRECATED,
    ) -> None:
        store_parameters(self, locals())

    # ------------------------------------------------------------------ fitting
    _fitted_arrays = {"mean_": ("n_features_in_",), "scale_": ("n_features_in_",)}

    @fit_context
    def fit(self, X, y):
        """Learn the embedding from class labels (or label sets, ``similarity="jaccard"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels, at least two classes and one of them with two samples; with
            ``similarity="jaccard"`` a binary label-indicator matrix.

        Returns
        -------
        self
        """
        self._validate_params()
        if self.similarity == "jaccard":
            self._no_validation("similarity='jaccard'")
            return self._fit_label_sets(X, y)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_classification_targets(y)
        _, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        rng = make_rng(self.random_state)
        train_idx, val_idx = split_validation(
            codes, self.validation_fraction, self.validation_split, rng
        )
        validation = None
        if val_idx.size:
            validation = (X[val_idx], codes[val_idx])
            X, codes = X[train_idx], np.unique(codes[train_idx], return_inverse=True)[1]
        index = LabelIndex.from_codes(codes)
        n, frac, neg = int(self.batch_size), float(self.positive_fraction), float(self.neg_target)
        by_class = self.positive_sampling == "classes"

        def sample(rng: np.random.Generator):
            i, j, _ = index.balanced_pairs(n, rng, frac, class_uniform=by_class)
            a, b = torch.as_tensor(codes[i]), torch.as_tensor(codes[j])
            return i, j, label_similarity_targets(a, b, neg)

        return self._fit_sampled(X, sample, rng, validation)

    def _no_validation(self, what: str) -> None:
        if self.validation_fraction > 0:
            raise ValueError(
                f"validation_fraction needs class labels: {what} has no validation; set "
                "validation_fraction=0."
            )

    def _fit_label_sets(self, X, y):
        """``fit`` for multi-label ``y``: uniform pairs, Jaccard targets."""
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True)
        if y.ndim != 2 or not np.isin(y, (0, 1)).all():
            raise ValueError(
                'similarity="jaccard" needs y as a binary label-indicator matrix of shape '
                f"(n_samples, n_labels), got shape {y.shape}."
            )
        if X.shape[0] < 2:
            raise ValueError("at least two samples are needed to form a pair.")
        labels = torch.as_tensor(y.astype(bool))
        n, neg, n_samples = int(self.batch_size), float(self.neg_target), X.shape[0]

        def sample(rng: np.random.Generator):
            i = rng.integers(0, n_samples, size=n)
            j = rng.integers(0, n_samples - 1, size=n)
            j = j + (j >= i)
            return i, j, jaccard_similarity_targets(labels[i], labels[j], neg)

        return self._fit_sampled(X, sample)

    @fit_context
    def fit_pairs(self, X, pairs=None, similarities=None):
        """Learn the embedding from pairs with target similarities (full or partial supervision).

        The call convention of ``docs/pairs.md``: ``fit_pairs(X, pairs, similarities)`` with
        row indices, or ``fit_pairs(stacked_pairs, similarities)`` with stacked pairs of shape
        (n_pairs, 2, n_features). Pairs joining an item to itself are dropped; constant targets
        or fewer than two usable pairs raise ``ValueError``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_pairs, 2, n_features)
            Every point; points that appear in no pair only shape the standardisation. Or the
            stacked pairs (then the second argument is ``similarities``).
        pairs : array-like of shape (n_pairs, 2), int
            Row indices into ``X`` of the two points of each pair.
        similarities : array-like of shape (n_pairs,)
            Target similarity of each pair, in ``[-1, 1]`` (``+1``/``−1`` pair labels work too).

        Returns
        -------
        self
        """
        self._validate_params()
        self._no_validation("fit_pairs")
        sup = check_pair_supervision(self, X, pairs, similarities, targets="similarity")
        X, pairs, targets = sup.X, np.stack([sup.a, sup.b], axis=1), sup.y
        n = int(self.batch_size)

        def sample(rng: np.random.Generator):
            q = rng.integers(0, pairs.shape[0], size=n)
            return pairs[q, 0], pairs[q, 1], targets[q]

        return self._fit_sampled(X, sample)

    def _fit_sampled(self, X: np.ndarray, sample: PairSampler, rng=None, validation=None):
        """Standardise ``X``, then train ``W`` on batches of pairs drawn by ``sample``.

        Under ``torchrun`` every rank draws the same batch and computes the loss of its slice.
        ``validation``: ``(X_val, val_codes)`` held out, scored by leave-one-out retrieval.
        """
        distributed.init_from_env()
        rng = make_rng(self.random_state) if rng is None else rng
        device = resolve_device(self.device)
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        Xt = to_tensor((X - self.mean_) / self.scale_, device)
        n_components = self.n_components or default_n_components(X.shape[1])
        module = SphereTanhEmbedding(X.shape[1], n_components)
        module.reset_parameters(torch_generator(rng))
        module.to(device)
        stepper = _ProximalStepper(
            module,
            learning_rate=float(self.learning_rate),
            reg_lambda=float(self.reg_lambda),
            max_iter=int(self.max_iter),
            block_size=min(int(self.block_size), n_components) if self.solver == "bcd" else None,
        )
        loss_fn = SimilarityRegressionLoss(self.neg_target)

        def loss_step(step: int) -> torch.Tensor:
            stepper.begin(step, rng)
            i, j, s = sample(rng)  # the global batch (same on every rank); keep this rank's
            n_pairs, (i, j, s) = len(i), (distributed.shard(a) for a in (i, j, s))
            emb = module(Xt[torch.as_tensor(np.concatenate([i, j]), device=device)])
            targets = torch.as_tensor(s, device=device).to(emb.dtype)
            if len(i) == 0:  # more ranks than pairs: this rank has nothing to add
                return distributed.global_mean(emb.sum() * 0.0, n_pairs)
            local_mean = loss_fn.pairs(emb[: len(i)], emb[len(i) :], targets)
            return distributed.global_mean(local_mean * len(i), n_pairs)

        validate = None
        if validation is not None:  # leave-one-out retrieval among the validation items
            X_val = to_tensor((validation[0] - self.mean_) / self.scale_, device)
            embed_val = rows_of(module, X_val)
            validate = make_validator(
                self.validation_metric, None, embed_val, None, validation[1], rng, device
            )
        result = train_estimator(
            self, module, stepper.optimizer, loss_step, rng=rng, validate=validate,
            post_step=stepper.proximal_step, hint=_UNTRAINED_HINT,
        )  # fmt: skip
        weight = module.weight.detach().cpu().numpy()
        active = np.flatnonzero(np.any(weight != 0, axis=0))
        if active.size == 0:
            raise ValueError(
                f"reg_lambda={self.reg_lambda} pruned every embedding unit; use a smaller value."
            )
        vars(self).update(training_history(result))
        self.weight_ = weight
        self.active_components_ = active
        self.loss_curve_ = np.array([h["loss"] for h in result.history])
        return self

    # ------------------------------------------------------------------ inference
    def objective(self, X, pairs, similarities) -> float:
        r"""The training objective of the fitted ``W`` on given pairs.

        .. math::

            \mathop{\mathrm{mean}}_q (s_q - \hat S_q)^2
            + \mathtt{reg\_lambda} \sum_m \lVert w_m \rVert

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        pairs : array-like of shape (n_pairs, 2), int
        similarities : array-like of shape (n_pairs,)

        Returns
        -------
        float
        """
        check_is_fitted(self, "weight_")
        pairs = check_indices(pairs, 2, "pairs", np.shape(X)[0])
        targets = check_similarity_targets(similarities, pairs.shape[0])
        emb = torch.as_tensor(self.transform(X))
        loss = SimilarityRegressionLoss(self.neg_target).pairs(
            emb[pairs[:, 0]], emb[pairs[:, 1]], torch.as_tensor(targets)
        )
        penalty = group_norm_penalty(torch.as_tensor(self.weight_, dtype=torch.float64))
        return float(loss) + float(self.reg_lambda) * float(penalty)

    # duplicates: the Parameters / Returns every transformer's transform documents.
    def transform(self, X) -> np.ndarray:
        """Embed ``X`` on the unit sphere.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_active)
            Unit-norm rows ``H(x)`` restricted to :attr:`active_components_` (pruned units are
            identically zero, so dropping them changes no similarity). Same float dtype as ``X``.
        """
        check_is_fitted(self, "weight_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        if self._reference_in_use():  # fallback="reference": the Euclidean distance
            return X.copy()
        dtype = torch.float64 if X.dtype == np.float64 else torch.float32
        device = resolve_device(self.device)
        module = self._embedding_module(device, dtype)
        out = np.empty((X.shape[0], module.n_components), dtype=X.dtype)
        mean, scale = self.mean_.astype(X.dtype), self.scale_.astype(X.dtype)
        with torch.no_grad():
            for start in range(0, X.shape[0], _TRANSFORM_CHUNK):
                rows = (X[start : start + _TRANSFORM_CHUNK] - mean) / scale
                out[start : start + rows.shape[0]] = module(to_tensor(rows, device, dtype)).cpu()
        return out

    @property
    def _n_features_out(self) -> int:
        """Number of output columns: the active units (the inputs' after a fallback)."""
        return self.n_features_in_ if self._reference_in_use() else len(self.active_components_)

    def _use_reference(self) -> None:
        """``fallback="reference"``: ``transform`` returns its input (the Euclidean distance)."""

    def score_pairs(self, pairs_or_X1, X2=None) -> np.ndarray:
        r"""Learned similarity :math:`\hat S = H(a)^\top H(b)` of paired points.

        Parameters
        ----------
        pairs_or_X1 : array-like of shape (n_pairs, 2, n_features) or (n_pairs, n_features)
            Stacked pairs, or the first points when ``X2`` is given.
        X2 : array-like of shape (n_pairs, n_features), optional
            The second points.

        Returns
        -------
        ndarray of shape (n_pairs,)
            Similarities in ``[-1, 1]``.
        """
        H1, H2 = (self.transform(side) for side in split_pairs(pairs_or_X1, X2))
        if self._reference_in_use():  # the sphere's relation d² = 2 − 2 S, on the inputs
            return 1.0 - 0.5 * paired_squared_euclidean(H1, H2)
        return sphere_similarity(torch.as_tensor(H1), torch.as_tensor(H2)).numpy()

    def _embedding_module(self, device: torch.device, dtype: torch.dtype) -> SphereTanhEmbedding:
        """The fitted embedding restricted to its active units, as a torch module."""
        weight = self.weight_[:, self.active_components_]
        module = SphereTanhEmbedding(weight.shape[0] - 1, weight.shape[1])
        with torch.no_grad():
            module.weight.copy_(torch.as_tensor(weight))
        return module.to(device=device, dtype=dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
