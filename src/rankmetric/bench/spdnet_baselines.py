"""The rows of the RPL table: one SPD network estimator, one loss per row.

Every trained row is :class:`~rankmetric.estimators.spd.SPDNetEmbedding` with the same network,
budget and early stopping, and only the loss changed (:data:`ROWS`); RPL's rows are
:class:`~rankmetric.estimators.spd.RPLEmbedding`, its RPL configuration. There is no second
training loop here: :func:`fit_spdnet_row` builds the estimator and fits it. For one seed the
split, the initial network and the batches are drawn in the same order for every row, so all rows
start from the same network (the identity start: the untrained log-Euclidean reference).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ..estimators.spd import RPLEmbedding, SPDNetEmbedding
from ..geometry.matrix_functions import spd_log, sym_to_vec

__all__ = ["ROWS", "fit_spdnet_row", "log_vectors"]

#: Row id -> (estimator, loss, extra parameters): every row the same network and budget.
ROWS = {
    # trained under AIRM, validated under the log-Euclidean distance the table's R@1 reads
    "dsml-triplet": ("spdnet", "triplet", {"head": "spd", "validation_distance": "log_euclidean"}),
    "triplet-random": ("spdnet", "triplet-random", {}),
    "triplet-semihard": ("spdnet", "triplet-semihard", {}),
    "lifted": ("spdnet", "lifted", {}),
    "npair": ("spdnet", "npair", {}),
    "proxy-nca": ("spdnet", "proxy-nca", {}),
    "multi-similarity": ("spdnet", "multi-similarity", {}),
    "rpl": ("rpl", "rpl", {}),
    "rpl-class": ("rpl", "rpl", {"potato": "class"}),
    "rpl-pairwise": ("rpl", "rpl", {"potato": "pairwise"}),
}
#: Budget keys passed to the estimator (the network keys only when given).
_BUDGET_KEYS = ("max_iter", "learning_rate", "n_per_class", "validation_fraction",
                "validation_every", "n_iter_no_change", "validation_metric",
                "selection_se")  # fmt: skip
_NETWORK_KEYS = ("hidden_sizes", "eps", "relative_eps", "bimap", "init", "head", "batchnorm")


def fit_spdnet_row(
    X: np.ndarray, y: np.ndarray, row: str, budget: Mapping, *, seed: int, device: str = "cpu"
) -> tuple[SPDNetEmbedding, dict]:
    """Fit the estimator of ``row``; return it and a training record.

    Returns
    -------
    estimator : fitted SPDNetEmbedding (or RPLEmbedding)
    record : dict
        ``n_iter``, ``best_iter`` (0: the untrained start was kept), ``validation_score`` and
        ``initial_validation_score``.
    """
    if row not in ROWS:
        raise ValueError(f"unknown row {row!r}; choose from {list(ROWS)}.")
    kind, loss, extra = ROWS[row]
    params = {k: budget[k] for k in _BUDGET_KEYS if k in budget}
    params.update({k: budget[k] for k in _NETWORK_KEYS if budget.get(k) is not None})
    params.update(extra, random_state=seed, device=device)
    est = RPLEmbedding(**params) if kind == "rpl" else SPDNetEmbedding(loss=loss, **params)
    est.fit(X, y)
    record = {
        "n_iter": int(est.n_iter_),
        "best_iter": est.best_iter_,
        "validation_score": est.validation_score_,
        "initial_validation_score": est.initial_validation_score_,
    }
    return est, record


def log_vectors(Y: torch.Tensor) -> torch.Tensor:
    """``sym_to_vec(log Y)`` of SPD matrices (n, h, h) → (n, h (h + 1) / 2)."""
    return sym_to_vec(spd_log(Y))
