"""SSNE's solver: proximal stochastic gradient steps on the group-norm objective.

:class:`ProximalStepper` is the optimiser of :class:`rankmetric.estimators.ssne.SSNE` (heavy-ball
SGD, a linearly decaying step size, the group soft-threshold of the columns of ``W`` and the
block-coordinate variant of the paper); the estimator is its scikit-learn face.
"""

from __future__ import annotations

import numpy as np
import torch

from ..losses.regularizers import group_soft_threshold_
from ..models.sphere import SphereTanhEmbedding

__all__ = ["MOMENTUM", "ProximalStepper"]

#: Momentum of the proximal SGD steps.
MOMENTUM = 0.9


class ProximalStepper:
    """Proximal stochastic gradient steps on ``loss + reg_lambda · Σ_m ||w_m||``.

    Heavy-ball SGD (``v ← β v + ∇loss``, ``W ← W − η v``) with a step size ``η`` decaying linearly
    from ``learning_rate`` to 0, followed by the group soft-threshold of the columns of ``W`` by
    ``τ = η · reg_lambda / (1 − β)``. The ``1 / (1 − β)`` matches the threshold to the step that
    momentum actually takes (``η / (1 − β)`` times the gradient once ``v`` has settled), so a fixed
    point satisfies ``0 ∈ ∇loss + reg_lambda · ∂R``: the iteration minimises the stated objective
    with or without momentum (``β = 0`` is plain proximal SGD). A threshold of ``η · reg_lambda``
    with ``β = 0.9`` would minimise ``loss + reg_lambda / 10 · R`` instead.

    With ``block_size`` set, a step is block-coordinate: the gradient of every column outside a
    random block of ``block_size`` columns is masked, and those columns and their momentum are
    restored after the optimiser step (they neither move nor forget), so each column follows the
    same heavy-ball iteration over the steps that draw it; only the block is thresholded.
    """

    def __init__(
        self,
        module: SphereTanhEmbedding,
        *,
        learning_rate: float,
        reg_lambda: float,
        max_iter: int,
        block_size: int | None,
        momentum: float = MOMENTUM,
    ) -> None:
        self.weight = module.weight
        self.optimizer = torch.optim.SGD(module.parameters(), lr=learning_rate, momentum=momentum)
        self.learning_rate, self.reg_lambda, self.max_iter = learning_rate, reg_lambda, max_iter
        self.momentum = momentum
        self.block_size = block_size
        self.lr = learning_rate
        self.block: torch.Tensor | None = None
        self.frozen: torch.Tensor | None = None
        self.frozen_velocity: torch.Tensor | None = None
        self.mask: torch.Tensor | None = None
        if block_size is not None:
            self.weight.register_hook(lambda grad: grad * self.mask)

    @property
    def threshold(self) -> float:
        """``τ`` of the current step: ``η · reg_lambda / (1 − β)``."""
        return self.lr * self.reg_lambda / (1.0 - self.momentum)

    def begin(self, step: int, rng: np.random.Generator) -> None:
        """Set this step's size and, for block-coordinate steps, draw its block of columns."""
        self.lr = self.learning_rate * (1.0 - step / self.max_iter)
        self.optimizer.param_groups[0]["lr"] = self.lr
        if self.block_size is None:
            return
        n_columns = self.weight.shape[1]
        cols = rng.choice(n_columns, size=self.block_size, replace=False)
        self.block = torch.as_tensor(cols, device=self.weight.device)
        self.mask = torch.zeros(n_columns, dtype=self.weight.dtype, device=self.weight.device)
        self.mask[self.block] = 1.0
        self.frozen = self.weight.detach().clone()
        velocity = self.optimizer.state.get(self.weight, {}).get("momentum_buffer")
        self.frozen_velocity = None if velocity is None else velocity.clone()

    def proximal_step(self) -> None:
        """After the optimiser step: restore the columns outside the block, then threshold."""
        if self.block is not None:
            outside = self.mask == 0
            self.weight[:, outside] = self.frozen[:, outside]
            velocity = self.optimizer.state.get(self.weight, {}).get("momentum_buffer")
            if velocity is not None and self.frozen_velocity is not None:
                velocity[:, outside] = self.frozen_velocity[:, outside]
        group_soft_threshold_(self.weight, self.threshold, self.block)
