"""WARCA: Weighted Approximate Rank Component Analysis (Jose & Fleuret, ECCV 2016), linear.

A scikit-learn face over :class:`rankmetric.models.linear.LinearMap`, the WARP loss of
:mod:`rankmetric.losses.warp` and :func:`rankmetric.training.train`. The shared machinery of
linear and kernel WARCA (parameter checks, the training loop, the validation scorer) lives in
:class:`BaseWARCA`; :mod:`rankmetric.estimators.kernel_warca` builds on it.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from .. import distributed
from .._utils import make_rng, resolve_device, to_tensor
from .._validation import (
    ARRAY,
    BOOLEAN,
    CHECKPOINTS,
    DEVICE,
    NONE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Interval,
    Options,
    check_labels,
    check_min_per_class,
    check_scale,
    deprecate_positional_args,
)
from ..io import register_estimator
from ..losses.regularizers import aon_penalty
from ..losses.warp import DENSE_DETECTION_RATIO, SAMPLINGS, Embed, sampled_warp_loss
from ..models.linear import INITS, LinearMap
from ..sampling import (
    POSITIVES,
    CrossCameraLabelIndex,
    LabelIndex,
    PairIndex,
    check_cameras,
)
from ..training import TrainingResult, train
from ._early_stopping import (
    MAX_REFERENCE_ITEMS,
    RETRIEVAL_METRICS,
    VALIDATION_PARAMETER_CONSTRAINTS,
    retrieval_score,
    retrieval_validator,
    sample_retrieval_items,
    split_validation,
    warn_if_below_reference,
)
from ._supervision import (
    check_pair_supervision,
    check_triplet_supervision,
    pairs_from_triplets,
)
from .base import MahalanobisMixin, fit_context

__all__ = ["WARCA", "BaseWARCA"]

#: Training points the validation k-NN searches (a fixed random subset when there are more).
VALIDATION_REFERENCE_SIZE = 5000
#: Neighbours of the validation k-NN vote.
VALIDATION_K = 3
#: Rows per chunk when computing column statistics of large inputs.
STATS_CHUNK_ROWS = 65536
#: ``batch_size=None``: ``clip(n_samples // 4, *AUTO_BATCH)`` positive pairs per step.
AUTO_BATCH = (64, 512)
#: ``tol_window=None``: ``clip(50 · batch / 512, *AUTO_WINDOW)`` steps per window.
AUTO_WINDOW = (20, 50)
#: ``validation_metric``: leave-one-out retrieval among the validation items, or (``"knn"``, the
#: only score before 0.2) k-NN accuracy of the validation items against training points.
VALIDATION_METRICS = (*RETRIEVAL_METRICS, "knn")
#: The fixed schedule of rankmetric 0.1 (the published bench tables pin it, to reproduce).
SCHEDULE_0_1 = {"batch_size": 512, "tol_window": 50, "learning_rate": 1e-2}


def auto_schedule(
    n_samples: int,
    batch_size: int | None,
    tol_window: int | None,
    learning_rate: float | None = 1e-2,
) -> tuple[int, int, float]:
    """Pairs per step, steps per stopping window and step size, scaled to the data when None.

    Small training sets get small batches (a quarter of the samples, at least 64), a window
    that shrinks with the batch (at least 20 steps) and a step size that grows as the square
    root of the batch shrinks (``0.01 · sqrt(512 / batch)``: 0.01 at 512 pairs, 0.028 at 64);
    from 2,048 samples on, the 0.1 defaults (512 pairs, 50 steps, 0.01). Chosen on inner
    validation splits, never the 5×2 test folds (``benchmarks/bench_warca_small.py``).

    Returns
    -------
    batch_size, tol_window : int
    learning_rate : float
    """
    if batch_size is None:
        batch_size = int(np.clip(n_samples // 4, *AUTO_BATCH))
    if tol_window is None:
        tol_window = int(np.clip(round(50 * batch_size / 512), *AUTO_WINDOW))
    if learning_rate is None:
        learning_rate = 1e-2 * float(np.sqrt(AUTO_BATCH[1] / batch_size))
    return batch_size, tol_window, learning_rate


#: The hyper-parameters every WARCA (linear and kernel) shares, declared once.
WARP_PARAMETER_CONSTRAINTS = {
    "n_components": [NONE, POSITIVE_INT],
    "margin": [Interval(Real, 0, None, closed="neither")],
    "reg_lambda": [Interval(Real, 0, None, closed="left")],
    "max_sampling": [POSITIVE_INT],
    "validation_every": [POSITIVE_INT],
    **VALIDATION_PARAMETER_CONSTRAINTS,
    "validation_metric": [Options(*VALIDATION_METRICS)],
    "batch_size": [NONE, POSITIVE_INT],
    "tol_window": [NONE, POSITIVE_INT],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [NONE, Interval(Real, 0, None, closed="neither")],
    "sampling": [Options(*SAMPLINGS)],
    "patience": [NONE, POSITIVE_INT],
    "tol": [NONE, Interval(Real, 0, None, closed="left")],
    "random_state": [RANDOM_STATE],
    "device": [DEVICE],
    "verbose": VERBOSE,
    **CHECKPOINTS,
}


def column_stats(
    X: np.ndarray, chunk_rows: int = STATS_CHUNK_ROWS
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each column, in float64, in row chunks (no copy of ``X``).

    Columns with a zero standard deviation get a scale of 1 (they stay constant).

    Returns
    -------
    mean, scale : ndarrays of shape (n_features,)
    """
    mean = X.mean(axis=0, dtype=np.float64)
    sq = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], chunk_rows):
        sq += np.square(X[start : start + chunk_rows] - mean).sum(axis=0)
    scale = np.sqrt(sq / X.shape[0])
    scale[scale < 1e-12 * max(1.0, np.abs(mean).max(initial=0.0))] = 1.0
    return mean, scale


class BaseWARCA(TransformerMixin, BaseEstimator):
    """What linear and kernel WARCA share: parameter checks, the WARP training loop, validation.

    Subclasses define ``__init__`` (their hyper-parameters) and ``fit``; they call
    :meth:`_validate_params` (over ``_parameter_constraints``), then :meth:`_train_warp` with
    their module and embedding.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    #: What the warnings of a fit that ends no better than its start suggest trying.
    _untrained_hint = (
        "Try a smaller learning_rate, learning_rate=None and batch_size=None (scaled to the "
        "data), another reg_lambda, or a validation set (validation_fraction) to keep the best "
        "step; docs/warca.md, 'When a fit does not learn'."
    )

    def _check_validation_set(self, X_val, y_val, classes: np.ndarray, *, reset_features=False):
        """Validate the optional early-stopping set: ``(X_val, val_codes)`` or ``(None, None)``.

        ``val_codes`` index ``classes`` for ``validation_metric="knn"``; otherwise they are the
        validation set's own label codes (its identities need not occur in training).
        """
        if X_val is None and y_val is None:
            return None, None
        if X_val is None or y_val is None:
            raise ValueError("early stopping needs both X_val and y_val.")
        if self.validation_fraction > 0:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} holds a validation set out of "
                "(X, y): give either it or X_val, y_val, not both."
            )
        X_val = validate_data(self, X_val, reset=False, dtype=[np.float32, np.float64])
        y_val = np.asarray(y_val)
        val_classes, val_codes = check_labels(y_val, X_val.shape[0], min_classes=1)
        if self.validation_metric == "knn":
            unknown = np.setdiff1d(y_val, classes)
            if unknown.size:
                raise ValueError(
                    f"y_val has labels not seen in y: {unknown[:5].tolist()}; "
                    "validation_metric='knn' votes among training points, so it needs them. "
                    "validation_metric='recall@1' or 'map' scores held-out identities."
                )
            return X_val, np.searchsorted(classes, y_val)
        _check_retrieval_codes(val_codes, "y_val")
        return X_val, val_codes

    def _validation_data(
        self, X, codes, classes, X_val, y_val, rng, *, precomputed=False, cameras=None
    ):
        """``(X, codes, X_val, val_codes)``: the training rows and the validation set.

        The validation set is ``(X_val, y_val)`` when given, else ``validation_fraction`` of
        ``(X, y)`` held out by ``validation_split`` (for ``precomputed`` kernels, the rows and
        columns of the training kernel are split alike), else none. With ``cameras`` (per-row
        camera codes), their training rows are appended: ``(X, codes, X_val, val_codes,
        cameras)``.
        """
        kept = (cameras,) if cameras is not None else ()
        if X_val is not None or y_val is not None:
            return (X, codes, *self._check_validation_set(X_val, y_val, classes), *kept)
        if self.validation_fraction == 0:
            return X, codes, None, None, *kept
        if self.validation_metric == "knn" and self.validation_split == "groups":
            raise ValueError(
                "validation_metric='knn' votes among training points of the validation classes: "
                "it cannot score the unseen classes of validation_split='groups'; use "
                "validation_metric='recall@1' or 'map'."
            )
        train_idx, val_idx = split_validation(
            codes, self.validation_fraction, self.validation_split, rng
        )
        if val_idx.size == 0:
            return X, codes, None, None, *kept
        if cameras is not None:
            kept = (cameras[train_idx],)
        train_classes, train_codes = np.unique(codes[train_idx], return_inverse=True)
        if self.validation_metric == "knn":
            val_codes = np.searchsorted(train_classes, codes[val_idx])
        else:
            val_codes = codes[val_idx]
            _check_retrieval_codes(val_codes, "the held-out validation set")
        if precomputed:
            return (
                X[np.ix_(train_idx, train_idx)],
                train_codes,
                X[np.ix_(val_idx, train_idx)],
                val_codes,
                *kept,
            )
        return X[train_idx], train_codes, X[val_idx], val_codes, *kept

    def _make_validator(
        self,
        embed: Callable[[torch.Tensor], torch.Tensor],
        embed_val: Callable[[torch.Tensor | None], torch.Tensor],
        codes: np.ndarray,
        y_val_codes: np.ndarray,
        rng: np.random.Generator,
        device: torch.device,
    ) -> Callable[[], float]:
        """The validation score of ``validation_metric``.

        Retrieval metrics rank at most ``MAX_VALIDATION_ITEMS`` validation items (whole classes)
        leave-one-out among themselves; ``"knn"`` is the k-NN accuracy (k=3) of the validation
        set against a fixed subset of training points. ``embed_val(indices)`` embeds validation
        rows (``None``: all).
        """
        if self.validation_metric != "knn":
            items = sample_retrieval_items(y_val_codes, rng)
            index = torch.as_tensor(items, device=device)
            return retrieval_validator(
                lambda: embed_val(index),
                torch.as_tensor(y_val_codes[items], device=device),
                self.validation_metric,
            )
        n = codes.shape[0]
        ref = (
            np.sort(rng.choice(n, VALIDATION_REFERENCE_SIZE, replace=False))
            if (n > VALIDATION_REFERENCE_SIZE)
            else np.arange(n)
        )
        ref_index = torch.as_tensor(ref, device=device)

        def validate() -> float:
            from ..evaluate.knn import knn_accuracy  # imported lazily: evaluate sits above us

            with torch.no_grad():
                ref_emb, val_emb = embed(ref_index), embed_val(None)
            return knn_accuracy(ref_emb, codes[ref], val_emb, y_val_codes, k=VALIDATION_K)

        return validate

    def _check_against_euclidean(
        self,
        embed_rows: Callable[[np.ndarray], torch.Tensor],
        X: np.ndarray,
        codes: np.ndarray | None,
        X_val: np.ndarray | None,
        val_codes: np.ndarray | None,
        rng: np.random.Generator,
        device: torch.device,
    ) -> None:
        """Warn (:class:`~rankmetric.training.UntrainedModelWarning`) when the fitted metric
        ranks below the Euclidean distance of the inputs.

        Leave-one-out recall@1 (or the validation mAP) on at most ``MAX_REFERENCE_ITEMS``
        validation items (whole classes), or, without a validation set, training items.
        ``embed_rows(rows)`` embeds rows of the inputs. The draws come after training: the
        fitted model does not depend on them.
        """
        self.reference_scores_ = None
        on_validation = X_val is not None
        if not on_validation and codes is None:
            return  # fitted from pairs or triplets: no labels to rank the training items by
        rows_X, rows_codes = (X_val, val_codes) if on_validation else (X, codes)
        if np.bincount(rows_codes).max() < 2:
            return
        items = sample_retrieval_items(rows_codes, rng, MAX_REFERENCE_ITEMS)
        rows = rows_X[items]
        item_codes = torch.as_tensor(rows_codes[items], device=device)
        metric = "map" if self.validation_metric == "map" else "recall@1"
        with torch.no_grad():
            learned = retrieval_score(embed_rows(rows), item_codes, metric)
            reference = retrieval_score(to_tensor(rows, device), item_codes, metric)
        self.reference_scores_ = {
            "metric": metric,
            "items": "validation" if on_validation else "training",
            "learned": learned,
            "euclidean": reference,
        }
        warn_if_below_reference(
            learned,
            reference,
            desc=type(self).__name__,
            where="the validation items" if on_validation else "training items",
            metric=metric,
            hint=self._untrained_hint,
            n_items=int(items.size),
        )

    def _linear_steps(self, model: LinearMap, data: torch.Tensor):
        """``prepare_step`` of a linear map on rows of ``data`` (linear WARCA, Nyström features).

        When the detection pass embeds all N items anyway (``sampling="exact"``, or N at most
        ``DENSE_DETECTION_RATIO · max_sampling``), every item is embedded once per step, with the
        gradient, and both passes take rows of it: two (N, D) @ (D, r) products a step (forward
        and weight gradient) instead of three. Otherwise only the drawn rows are embedded.
        """

        def embed(indices: torch.Tensor | None) -> torch.Tensor:
            return model(data if indices is None else data.index_select(0, indices))

        def penalty() -> torch.Tensor:
            return aon_penalty(model.weight)

        embed_all = self.sampling == "exact" or data.shape[0] <= DENSE_DETECTION_RATIO * (
            self.max_sampling
        )

        def prepare_step():
            if not embed_all:
                return embed, None, penalty
            everything = model(data)
            detached = everything.detach()
            return (
                lambda idx: everything if idx is None else everything.index_select(0, idx),
                lambda idx: detached if idx is None else detached.index_select(0, idx),
                penalty,
            )

        return prepare_step

    def _train_warp(
        self,
        module: torch.nn.Module,
        prepare_step: Callable[[], tuple[Embed, Embed | None, Callable[[], torch.Tensor]]],
        index: LabelIndex,
        rng: np.random.Generator,
        device: torch.device,
        validate: Callable[[], float] | None = None,
        step_scale: float = 1.0,
    ) -> TrainingResult:
        """Adam on ``mean WARP + reg_lambda · penalty()`` through :func:`training.train`.

        ``prepare_step()`` runs at the start of each step and returns ``(embed, embed_detached,
        penalty)``: the differentiable embedding of training samples by index (``None``: all),
        an optional cheaper one for the violation-detection pass, and the regulariser.
        ``step_scale`` multiplies the step size of ``learning_rate=None`` (kernel WARCA scales
        it to its kernel rows).
        """
        batch_size, tol_window, lr = auto_schedule(
            index.n_samples, self.batch_size, self.tol_window, self.learning_rate
        )
        if self.learning_rate is None:
            lr *= step_scale
        self.batch_size_, self.tol_window_, self.learning_rate_ = batch_size, tol_window, lr
        optimizer = torch.optim.Adam(module.parameters(), lr=lr)
        # Under torchrun every rank draws the same global batch of pairs and scores its slice
        # (the sequential sampler's draws depend on every pair's outcome: it runs unsharded).
        sharded = distributed.init_from_env() and self.sampling != "sequential"
        if sharded and batch_size < distributed.world_size():
            raise ValueError(
                f"batch_size={batch_size} is smaller than the {distributed.world_size()} "
                "processes sharing each batch."
            )
        pairs_index = distributed.ShardedLabelIndex(index) if sharded else index
        start, stop = distributed.shard_bounds(batch_size)

        def loss_step(step: int) -> torch.Tensor:
            embed, embed_detached, penalty = prepare_step()
            warp = sampled_warp_loss(
                embed,
                pairs_index,
                rng,
                n_pairs=batch_size,
                max_sampling=self.max_sampling,
                margin=self.margin,
                sampling=self.sampling,
                device=device,
                embed_detached=embed_detached,
            )
            if sharded:  # the mean over this rank's pairs -> the mean over the global batch
                warp = distributed.global_mean(warp * (stop - start), batch_size)
            return warp + self.reg_lambda * penalty()

        result = train(
            module,
            optimizer,
            loss_step,
            rng=rng,
            max_iter=self.max_iter,
            validate=validate,
            validation_every=self.validation_every,
            patience=self.patience,
            tol=self.tol,
            tol_window=tol_window,
            verbose=self.verbose,
            desc=type(self).__name__,
            checkpoint_dir=self.checkpoint_dir,
            checkpoint_every=self.checkpoint_every,
            fingerprint=getattr(self, "_fit_fingerprint", None),
            validate_start=True,
            hint=self._untrained_hint,
        )
        self.n_iter_ = int(result.n_iter)
        self.loss_curve_ = [float(h["loss"]) for h in result.history]
        self.best_iter_ = result.best_step
        self.initial_validation_score_ = result.start_score
        self.validation_scores_ = [
            float(h["val_score"]) for h in result.history if "val_score" in h
        ]
        return result


@register_estimator
class WARCA(MahalanobisMixin, BaseWARCA):
    r"""Linear WARCA: a Mahalanobis metric :math:`\lVert L(a - b) \rVert` trained for top ranks.

    Minimises, by Adam on mini-batches of positive pairs,

    .. math::

        & \frac{\lambda}{2} \lVert W W^\top - I \rVert_F^2
          + \mathop{\mathrm{mean}}_{(i,j)\,:\,y_i = y_j}
            \frac{L(\hat r_{ij})}{\hat r_{ij}} \sum_k \ell_{ijk}, \\
        & \ell_{ijk} = \bigl[\gamma + \lVert W(x_i - x_j) \rVert
          - \lVert W(x_i - x_k) \rVert\bigr]_+

    (eq. 5 of the paper; :math:`\lambda` is ``reg_lambda``, :math:`\gamma` the ``margin``,
    :math:`k` runs over the samples of other labels, :math:`L` weights ranks), with the rank
    :math:`\hat r_{ij}` of the positive among the negatives estimated by sampling. Memory is
    O(N·D) for the data plus O(batch_size · max_sampling · D) per step: nothing N × N is ever
    allocated.

    Parameters
    ----------
    n_components : int, optional
        Rank ``r`` of the map. Default: the rows of an array ``init``, else ``n_features`` (at
        most ``n_features``).
    margin : float, default=1.0
        :math:`\gamma`, in units of standardised features.
    reg_lambda : float, default=1e-2
        Weight of the AON regulariser :math:`\tfrac12 \lVert W W^\top - I \rVert_F^2` (the
        reference's default).
    batch_size : int or None, default=None
        Positive pairs per step (each pair gives two (anchor, positive) rows). None scales it
        to the data: ``clip(n_samples // 4, 64, 512)`` (512, the 0.1 default, from 2,048
        samples on); see :func:`auto_schedule`.
    sampling : {"batched", "sequential", "exact"}, default="batched"
        Rank estimator. ``"batched"``: ``max_sampling`` negatives per pair at once,
        :math:`\hat r = |\text{other}| \cdot v / \mathtt{max\_sampling}` (unbiased, :math:`v`
        the violators drawn). ``"sequential"``: the reference code's draws until the first
        violator, :math:`\hat r = \lfloor |\text{other}| / \text{draws} \rfloor`. ``"exact"``:
        every negative (eq. 7 itself; memory O(batch_size · N), for small N).
    max_sampling : int, default=128
        Negatives per pair (batched), or most draws per pair (sequential; the reference uses 512).
        Capped at ``|other(i)|`` in sequential mode.
    max_iter : int, default=2000
        Most Adam steps (the reference runs exactly this many; here ``tol`` usually stops earlier).
    learning_rate : float or None, default=None
        Adam step size. None: ``0.01 · sqrt(512 / batch_size)`` (0.01 with 512-pair batches,
        about 0.03 with 64).
    standardize : bool, default=True
        Train on ``(x − μ)/σ`` (the margin is meant for standardised features). The scaling is
        folded into ``components_``, so ``transform(X) = X @ components_.T`` on raw ``X``; the
        shift ``−W μ/σ`` is dropped (distances do not see it).
    init : {"random", "pca"} or ndarray of shape (n_components, n_features), default="random"
        ``"random"``: ``W ~ N(0, 1/n_features)`` (the reference); ``"pca"``: top principal axes.
        An array is a warm start: the map ``L`` on raw inputs to start from, e.g. another
        learner's ``components_`` (``WARCA(init=KISSME().fit(X, y).components_)``); its scale
        counts, since the margin is absolute. ``n_components`` defaults to its number of rows.
    positives : {"all", "cross_camera"}, default="all"
        Which same-label pairs are positives. ``"cross_camera"`` (camera-aware training, as
        XQDA's paper forms its pairs): only pairs of the same identity seen by two different
        cameras, so the map is not rewarded for same-camera matches that the Market-1501
        protocol removes; needs ``fit(..., cameras=...)``. An identity seen by one camera only
        then gives no positive pair but still serves as negatives; no identity with two
        cameras is a ``ValueError``. Negatives are every other identity, any camera.
        ``docs/warca.md``, "Camera-aware training", has the measurement behind the default.
    validation_every : int, default=50
        Steps between validation scores (with ``X_val, y_val`` or ``validation_fraction``).
    validation_fraction : float, default=0.0
        Share of ``(X, y)`` that ``fit`` holds out for early stopping when it gets no
        ``X_val, y_val`` (so early stopping works inside ``Pipeline`` and ``GridSearchCV``);
        0 disables it. The convention of every iteratively trained estimator:
        ``docs/architecture.md``, "Validation".
    validation_split : {"stratified", "groups"}, default="stratified"
        How ``validation_fraction`` holds data out: a share of each class's samples, or a
        share of the classes whole (``"groups"``: validation identities never seen in training,
        as re-identification needs).
    validation_metric : {"recall@1", "map", "knn"}, default="recall@1"
        The validation score. ``"recall@1"`` / ``"map"``: each validation item queries the
        other validation items (leave-one-out): whether its nearest one shares its label, or
        the average precision; the validation labels need not occur in training. ``"knn"``:
        the k-NN accuracy (k=3) of the validation items against training points (the only
        score before 0.2; it needs validation labels seen in training).
    patience : int or None, default=10
        Stop after this many validations without improvement. The best parameters are kept;
        the untrained start (step 0) is validated too, and when it stays best, ``fit`` returns
        it with an :class:`~rankmetric.training.UntrainedModelWarning`.
    tol : float or None, default=1e-2
        Without validation data: stop when the mean loss of the last ``tol_window`` steps is
        less than ``tol`` (relative) below that of the ``tol_window`` steps before. ``None`` runs
        exactly ``max_iter`` steps, as the reference code does. Differs from the reference
        because the loss settles within 150–250 steps on the UCI sets and digits, where the
        reference's 2000 fixed steps cost 7–13× the time for the same k-NN accuracy (within
        ±2 points on 7 sets: ``docs/warca.md``, "Stopping").
    tol_window : int or None, default=None
        Steps per window of the ``tol`` rule (the earliest stop is at ``2 · tol_window``). None:
        ``clip(50 · batch_size / 512, 20, 50)`` (50 with 512-pair batches).
    random_state : int, Generator or None
        Seeds pairs, negatives and the initialisation.
    device : str or None
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``; ``None`` picks CUDA when available.
    verbose : bool, default=False
        Progress bar (on a terminal).
    checkpoint_dir : str or path-like, optional
        Folder where ``checkpoint.pt`` is written every ``checkpoint_every`` steps; a fit that
        finds one there resumes from it, so a killed fit ends with the parameters of an
        uninterrupted one (same seed, CPU). The file is removed when the fit completes.
    checkpoint_every : int, default=100
        Steps between two checkpoints.
    n_threads : int or None, default=None
        CPU threads of the fit (``-1``: every core). None: one thread when
        ``n_samples × n_features < 10⁷``, else torch's thread count (see
        :mod:`rankmetric._threads`).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``L`` with ``transform(X) = X @ L.T``.
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation learned on ``X`` (zeros and ones when ``standardize=False``).
    n_iter_ : int
        Steps taken.
    batch_size_, tol_window_ : int
        The batch size and stopping window used (``batch_size`` / ``tol_window`` resolved).
    learning_rate_ : float
        The step size used.
    loss_curve_ : list of float
        Training loss per step.
    validation_scores_ : list of float
        Validation scores (``validation_metric``) after each ``validation_every`` steps
        (empty without validation).
    initial_validation_score_ : float or None
        Validation score of the untrained start (step 0).
    best_iter_ : int or None
        Step whose parameters were kept (with validation; 0: the untrained start).
    reference_scores_ : dict
        The check against the Euclidean distance of the inputs: leave-one-out ``"metric"``
        (recall@1, or mAP) of the ``"learned"`` metric and of ``"euclidean"``, on at most 500
        ``"items"`` (``"validation"`` ones, else ``"training"``). A learned score below the
        Euclidean one issues an :class:`~rankmetric.training.UntrainedModelWarning`. None when
        no label has two items to compare.
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    rankmetric.KernelWARCA : The kernel version, for a nonlinear metric.
    rankmetric.losses.WARPLoss : The rank-weighted loss, for training any PyTorch model.
    rankmetric.LMNN : Mahalanobis metric with k-NN margins instead of rank weights.
    rankmetric.KISSME : Closed-form Mahalanobis metric, also a warm start (``init=``).

    References
    ----------
    .. [1] C. Jose and F. Fleuret. Scalable Metric Learning via Weighted Approximate Rank
       Component Analysis. ECCV 2016.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import WARCA
    >>> X, y = load_iris(return_X_y=True)
    >>> warca = WARCA(n_components=2, max_iter=100, random_state=0).fit(X, y)
    >>> warca.transform(X).shape
    (150, 2)
    >>> warca.components_.shape
    (2, 4)
    """

    _parameter_constraints = {
        **WARP_PARAMETER_CONSTRAINTS,
        "standardize": [BOOLEAN],
        "init": [Options(*INITS), ARRAY],
        "positives": [Options(*POSITIVES)],
        "n_threads": [NONE, POSITIVE_INT],
    }

    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        margin: float = 1.0,
        reg_lambda: float = 1e-2,
        batch_size: int | None = None,
        sampling: str = "batched",
        max_sampling: int = 128,
        max_iter: int = 2000,
        learning_rate: float | None = None,
        standardize: bool = True,
        init: str = "random",
        positives: str = "all",
        validation_every: int = 50,
        validation_fraction: float = 0.0,
        validation_split: str = "stratified",
        validation_metric: str = "recall@1",
        patience: int | None = 10,
        tol: float | None = 1e-2,
        tol_window: int | None = None,
        random_state=None,
        device: str | None = None,
        verbose: bool = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
        n_threads: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.margin = margin
        self.reg_lambda = reg_lambda
        self.batch_size = batch_size
        self.sampling = sampling
        self.max_sampling = max_sampling
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.standardize = standardize
        self.init = init
        self.positives = positives
        self.validation_every = validation_every
        self.validation_fraction = validation_fraction
        self.validation_split = validation_split
        self.validation_metric = validation_metric
        self.patience = patience
        self.tol = tol
        self.tol_window = tol_window
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.n_threads = n_threads

    _fitted_arrays = {"mean_": ("n_features_in_",), "scale_": ("n_features_in_",)}

    @fit_context
    def fit(self, X, y, X_val=None, y_val=None, *, cameras=None) -> WARCA:
        """Learn the map from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; at least two classes, and one class with two samples.
        X_val, y_val : array-like of shape (n_val, n_features) and (n_val,), optional
            Enables early stopping on ``validation_metric`` (by default leave-one-out recall@1
            among the validation items, whose labels need not occur in ``y``), keeping the best
            map. Not together with ``validation_fraction``.
        cameras : array-like of shape (n_samples,), optional
            Camera id of each row of ``X``, for ``positives="cross_camera"`` (checked, then
            unused, with ``positives="all"``). In a ``Pipeline``: ``fit(X, y,
            warca__cameras=cameras)``.

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float32, np.float64])
        check_scale(X, np.float32)  # magnitudes whose squares overflow are refused
        classes, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        cams = None if cameras is None else check_cameras(cameras, X.shape[0])
        if self.positives == "cross_camera" and cams is None:
            raise ValueError(
                "positives='cross_camera' draws positive pairs across cameras: pass "
                "fit(X, y, cameras=...) (in a Pipeline, <step>__cameras=...)."
            )
        rng = make_rng(self.random_state)
        if self.positives != "cross_camera":
            X, codes, X_val, val_codes = self._validation_data(X, codes, classes, X_val, y_val, rng)
            index = LabelIndex.from_codes(codes)
        else:
            X, codes, X_val, val_codes, cams = self._validation_data(
                X, codes, classes, X_val, y_val, rng, cameras=cams
            )
            index = CrossCameraLabelIndex.from_cameras(codes, cams)
        return self._fit_index(X, index, codes, X_val, val_codes, rng)

    @fit_context
    def fit_pairs(self, X, pairs=None, y=None) -> WARCA:
        """Learn the map from similar (+1) and dissimilar (−1) pairs, without class labels.

        WARP on the pair graph: positive pairs are the similar pairs, the negatives of an item
        are its dissimilar partners (:class:`rankmetric.sampling.PairIndex`; the negatives of a
        pair's first item serve both ends, which holds when "similar" means "same identity").
        ``sampling="exact"`` needs class labels and is refused. The call convention and the
        checks on degenerate pairs are those of ``docs/pairs.md``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_pairs, 2, n_features)
        pairs : array-like of shape (n_pairs, 2), int
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``−1`` dissimilar.

        Returns
        -------
        self
        """
        self._validate_params()
        return self._fit_supervision(check_pair_supervision(self, X, pairs, y))

    @fit_context
    def fit_triplets(self, X, triplets=None) -> WARCA:
        """Learn the map from triplets (anchor, positive, negative), without class labels.

        Each triplet gives the similar pair (anchor, positive) and the dissimilar pair (anchor,
        negative); then as :meth:`fit_pairs`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_triplets, 3, n_features)
        triplets : array-like of shape (n_triplets, 3), int

        Returns
        -------
        self
        """
        self._validate_params()
        return self._fit_supervision(
            pairs_from_triplets(check_triplet_supervision(self, X, triplets))
        )

    def _fit_supervision(self, s) -> WARCA:
        if self.sampling == "exact":
            raise ValueError(
                "sampling='exact' counts every sample of another class and needs class labels; "
                "use sampling='batched' or 'sequential' with pairs or triplets."
            )
        index = PairIndex.from_pairs(s.a, s.b, s.similar, s.X.shape[0])
        return self._fit_index(s.X, index)

    def _fit_index(self, X, index, codes=None, X_val=None, val_codes=None, rng=None) -> WARCA:
        """Train on ``X`` with positive pairs and negatives drawn from ``index``."""
        if rng is None:
            rng = make_rng(self.random_state)
        n_features = X.shape[1]
        n_components = self.n_components
        if n_components is None:
            n_components = self.init.shape[0] if isinstance(self.init, np.ndarray) else n_features
        if n_components > n_features:
            raise ValueError(
                f"n_components={n_components} exceeds n_features={n_features}: the AON "
                "regulariser needs W Wᵀ = I to be reachable."
            )
        device = resolve_device(self.device)
        if self.standardize:
            mean, scale = column_stats(X)
        else:
            mean, scale = np.zeros(n_features), np.ones(n_features)
        data = to_tensor(X, device)
        model = LinearMap(n_features, n_components, mean=mean, scale=scale, device=device)
        model.reset_parameters(rng, self.init, data)

        def embed(indices: torch.Tensor | None) -> torch.Tensor:
            return model(data if indices is None else data.index_select(0, indices))

        validate = None
        if X_val is not None:
            val_data = to_tensor(X_val, device)

            def embed_val(indices: torch.Tensor | None) -> torch.Tensor:
                return model(val_data if indices is None else val_data.index_select(0, indices))

            validate = self._make_validator(embed, embed_val, codes, val_codes, rng, device)
        self._train_warp(
            model,
            self._linear_steps(model, data),
            index,
            rng,
            device,
            validate=validate,
        )
        self._check_against_euclidean(
            lambda rows: model(to_tensor(rows, device)), X, codes, X_val, val_codes, rng, device
        )
        self.components_ = model.folded().cpu().numpy()
        self.mean_, self.scale_ = mean, scale
        return self


def _check_retrieval_codes(val_codes: np.ndarray, what: str) -> None:
    """Raise unless some validation label has two items (a leave-one-out query needs a match)."""
    if np.bincount(val_codes).max() < 2:
        raise ValueError(
            f"{what} has no label with two items, so no validation item has a match to "
            "retrieve; give each validation identity two items or more."
        )
