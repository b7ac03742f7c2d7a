"""WARCA's solver: the step schedule, column statistics and the WARP training loop.

What linear and kernel WARCA share to train: :func:`auto_schedule` (pairs per step, stopping
window and step size scaled to the data), :func:`auto_draws` (negatives per pair),
:func:`column_stats` (standardisation without a copy), :func:`linear_steps` (the per-step
embedding of a linear map) and :func:`train_warp` (Adam on the sampled WARP loss through
:func:`rankmetric.training.train`). :mod:`rankmetric.estimators.warca` re-exports the public ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ... import distributed
from ...losses.regularizers import aon_penalty
from ...losses.warp import DENSE_DETECTION_RATIO, Embed, sampled_warp_loss
from ...models.linear import LinearMap
from ...sampling import LabelIndex
from ...training import Stopping
from ..base import train_estimator, training_history

__all__ = [
    "AUTO_BATCH",
    "AUTO_DRAWS",
    "AUTO_WINDOW",
    "SCHEDULE_0_1",
    "STATS_CHUNK_ROWS",
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


def rows_of(model: torch.nn.Module, data: torch.Tensor) -> Embed:
    """``embed(indices)``: ``model`` applied to rows of ``data`` (``None``: every row)."""
    return lambda indices: model(data if indices is None else data.index_select(0, indices))


def rows_in(embedded: torch.Tensor) -> Embed:
    """``embed(indices)``: rows of an embedding computed once for the step (``None``: all)."""
    return lambda indices: embedded if indices is None else embedded.index_select(0, indices)


def embedded_once(embed: Embed) -> Embed:
    """``embed`` for one step, with all N rows (``embed(None)``) computed at most once.

    The first call for all rows computes them with the gradient, even under ``no_grad`` (the
    detection pass), and later calls reuse them: detached under ``no_grad``, with the gradient
    otherwise (the loss pass). The same product as two separate calls, with the same values and
    the same backward, one (N, D) @ (D, r) product fewer a step. Rows by index are computed
    each time.
    """
    everything = None

    def embed_step(indices: torch.Tensor | None) -> torch.Tensor:
        nonlocal everything
        if indices is not None:
            return embed(indices)
        if everything is None:
            with torch.enable_grad():
                everything = embed(None)
        return everything if torch.is_grad_enabled() else everything.detach()

    return embed_step


def linear_steps(model: LinearMap, data: torch.Tensor, sampling: str, draws: int):
    """``prepare_step`` of a linear map on rows of ``data`` (linear WARCA, Nyström features).

    When the detection pass embeds all N items anyway (``sampling="exact"``, or N at most
    ``DENSE_DETECTION_RATIO · draws``), every item is embedded once per step, with the
    gradient, and both passes take rows of it: two (N, D) @ (D, r) products a step (forward
    and weight gradient) instead of three. Otherwise only the drawn rows are embedded.
    """
    embed = rows_of(model, data)

    def penalty() -> torch.Tensor:
        return aon_penalty(model.weight)

    if not (sampling == "exact" or data.shape[0] <= DENSE_DETECTION_RATIO * draws):
        return lambda: (embedded_once(embed), None, penalty)

    def prepare_step():
        everything = model(data)
        return rows_in(everything), rows_in(everything.detach()), penalty

    return prepare_step


def train_warp(
    est,
    module: torch.nn.Module,
    prepare_step: Callable[[], tuple[Embed, Embed | None, Callable[[], torch.Tensor]]],
    index: LabelIndex,
    rng: np.random.Generator,
    device: torch.device,
    *,
    validate: Callable[[], float] | None = None,
    step_scale: float = 1.0,
    window_rule: str = "linear",
) -> None:
    """Adam on ``mean WARP + reg_lambda · penalty()`` through :func:`training.train`.

    ``est`` gives the hyper-parameters (``batch_size``, ``learning_rate``, ``sampling``,
    ``max_sampling``, ``margin``, ``reg_lambda``, the stopping settings), and the settings of
    :func:`~rankmetric.estimators.base.train_estimator` (checkpoints, early stopping).
    ``prepare_step()`` runs at the start of each step and returns ``(embed, embed_detached,
    penalty)``: the differentiable embedding of training samples by index (``None``: all), an
    optional cheaper one for the violation-detection pass, and the regulariser. ``step_scale``
    multiplies the step size of ``learning_rate=None`` (kernel WARCA scales it to its kernel
    rows); ``window_rule`` is that of :func:`auto_schedule`.

    Sets the fitted attributes of ``est``: ``batch_size_``, ``tol_window_``,
    ``learning_rate_``, ``n_iter_``, ``loss_curve_``, ``best_iter_``,
    ``initial_validation_score_``, ``validation_scores_``.
    """
    batch_size, tol_window, lr = auto_schedule(
        index.n_samples, est.batch_size, est.tol_window, est.learning_rate, window_rule
    )
    if est.learning_rate is None:
        lr *= step_scale
    draws = auto_draws(index.n_samples, est.max_sampling, est.sampling)
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    # Under torchrun every rank draws the same global batch of pairs and scores its slice
    # (the sequential sampler's draws depend on every pair's outcome: it runs unsharded).
    sharded = distributed.init_from_env() and est.sampling != "sequential"
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
            margin=est.margin,
            sampling=est.sampling,
            device=device,
            embed_detached=embed_detached,
        )
        if sharded:  # the mean over this rank's pairs -> the mean over the global batch
            warp = distributed.global_mean(warp * (stop - start), batch_size)
        return warp + est.reg_lambda * penalty()

    result = train_estimator(
        est, module, optimizer, loss_step, rng=rng, validate=validate,
        stopping=Stopping(tol=est.tol, window=tol_window), hint=est._untrained_hint,
    )  # fmt: skip
    vars(est).update(training_history(result))
    est.batch_size_, est.tol_window_, est.learning_rate_ = batch_size, tol_window, lr
    est.loss_curve_ = [float(h["loss"]) for h in result.history]
