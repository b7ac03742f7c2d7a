"""WARCA's solver: the step schedule, column statistics and the WARP training loop.

What linear and kernel WARCA share to train: :func:`auto_schedule` (pairs per step, stopping
window and step size scaled to the data), :func:`column_stats` (standardisation without a copy)
and :class:`WARPTrainingMixin` (Adam on the sampled WARP loss through
:func:`rankmetric.training.train`; the per-step embedding of a linear map). The estimators are in
:mod:`rankmetric.estimators.warca` and :mod:`rankmetric.estimators.kernel_warca`, which
re-export these names.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .. import distributed
from ..losses.regularizers import aon_penalty
from ..losses.warp import DENSE_DETECTION_RATIO, Embed, sampled_warp_loss
from ..models.linear import LinearMap
from ..sampling import LabelIndex
from ..training import Stopping, TrainingResult, Validation, train
from .base import fit_checkpointing

__all__ = [
    "AUTO_BATCH",
    "AUTO_DRAWS",
    "AUTO_WINDOW",
    "SCHEDULE_0_1",
    "STATS_CHUNK_ROWS",
    "WARPTrainingMixin",
    "auto_draws",
    "auto_schedule",
    "column_stats",
]

#: Rows per chunk when computing column statistics of large inputs.
STATS_CHUNK_ROWS = 65536
#: ``batch_size=None``: ``clip(n_samples // 4, *AUTO_BATCH)`` positive pairs per step.
AUTO_BATCH = (64, 512)
#: ``max_sampling=None``: ``clip(n_samples² // 32768, *AUTO_DRAWS)`` negatives drawn per pair.
AUTO_DRAWS = (16, 128)
#: ``tol_window=None``: ``clip(50 · (batch / 512)², *AUTO_WINDOW)`` steps per window (linear
#: WARCA; kernel WARCA keeps the linear rule ``clip(50 · batch / 512, *LINEAR_WINDOW)``).
AUTO_WINDOW = (10, 50)
LINEAR_WINDOW = (20, 50)
#: The fixed schedule of rankmetric 0.1 (the published bench tables pin it, to reproduce).
SCHEDULE_0_1 = {"batch_size": 512, "tol_window": 50, "learning_rate": 1e-2, "max_sampling": 128}


def auto_schedule(
    n_samples: int,
    batch_size: int | None,
    tol_window: int | None,
    learning_rate: float | None = 1e-2,
    window_rule: str = "square",
) -> tuple[int, int, float]:
    """Pairs per step, steps per stopping window and step size, scaled to the data when None.

    Small training sets get small batches (a quarter of the samples, at least 64), a window
    that shrinks with the square of the batch (``50 · (batch / 512)²``, at least 10 steps)
    and a step size that grows as the square root of the batch shrinks
    (``0.01 · sqrt(512 / batch)``: 0.01 at 512 pairs, 0.028 at 64); from 2,048 samples on,
    the 0.1 defaults (512 pairs, 50 steps, 0.01). Chosen on inner validation splits, never
    the 5×2 test folds (``benchmarks/bench_warca_small.py --select``).

    ``window_rule="linear"`` keeps the earlier window, ``clip(50 · batch / 512, 20, 50)``
    (kernel WARCA's). Both rules give 50 from 2,048 samples on.

    Returns
    -------
    batch_size, tol_window : int
    learning_rate : float
    """
    if batch_size is None:
        batch_size = int(np.clip(n_samples // 4, *AUTO_BATCH))
    if tol_window is None and window_rule == "square":
        tol_window = int(np.clip(round(50 * (batch_size / 512) ** 2), *AUTO_WINDOW))
    elif tol_window is None:
        tol_window = int(np.clip(round(50 * batch_size / 512), *LINEAR_WINDOW))
    if learning_rate is None:
        learning_rate = 1e-2 * float(np.sqrt(AUTO_BATCH[1] / batch_size))
    return batch_size, tol_window, learning_rate


def auto_draws(n_samples: int, max_sampling: int | None, sampling: str = "batched") -> int:
    """Negatives drawn per pair (``max_sampling``), scaled to the data when None.

    ``clip(n_samples² // 32768, 16, 128)``, i.e. ``128 · (n_samples / 2048)²``: 128 (the 0.1
    default) from 2,048 samples on, so large fits are unchanged; 16 below 724 samples, 24 at
    898. On small sets 128 draws per pair revisit the few hundred negatives of each anchor
    many times over and the draw, gather and comparison of ``batch · 128`` negatives dominates
    a step; 16–32 draws keep the validation accuracy (and, with ``N > 16 · S``, detection
    gathers the drawn rows instead of a dense ``(2 · batch) × N`` product). Chosen on inner
    validation splits, never the test folds (``benchmarks/bench_warca_small.py --select``).

    Examples
    --------
    >>> auto_draws(898, None), auto_draws(10_000, None), auto_draws(898, 64)
    (24, 128, 64)
    >>> auto_draws(898, None, sampling="sequential")
    128
    """
    if max_sampling is not None:
        return int(max_sampling)
    if sampling != "batched":
        return AUTO_DRAWS[1]
    return int(np.clip(n_samples * n_samples // 32768, *AUTO_DRAWS))


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


class WARPTrainingMixin:
    """The WARP training loop of :class:`~rankmetric.estimators.warca.BaseWARCA`.

    Reads the estimator's hyper-parameters (``batch_size``, ``learning_rate``, ``sampling``,
    ``max_sampling``, ``margin``, ``reg_lambda``, the stopping and checkpoint settings) and sets
    the fitted schedule and history attributes.
    """

    #: ``tol_window=None``: ``"linear"`` in the batch (kernel WARCA, the earlier rule) or
    #: ``"square"`` (linear WARCA: shorter windows on small sets, see :func:`auto_schedule`).
    _window_rule = "linear"

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

        draws = auto_draws(data.shape[0], self.max_sampling, self.sampling)
        embed_all = self.sampling == "exact" or data.shape[0] <= DENSE_DETECTION_RATIO * draws

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
            index.n_samples,
            self.batch_size,
            self.tol_window,
            self.learning_rate,
            self._window_rule,
        )
        if self.learning_rate is None:
            lr *= step_scale
        draws = auto_draws(index.n_samples, self.max_sampling, self.sampling)
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
                max_sampling=draws,
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
            validation=None
            if validate is None
            else Validation(validate, self.validation_every, self.patience, score_start=True),
            stopping=Stopping(tol=self.tol, window=tol_window),
            checkpointing=fit_checkpointing(self),
            verbose=self.verbose,
            desc=type(self).__name__,
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
