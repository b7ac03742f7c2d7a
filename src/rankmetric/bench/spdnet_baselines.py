"""The deep baselines of the RPL table, trained on RPL's own SPDNet backbone and budget.

RPL (:class:`~rankmetric.estimators.rpl.RPLEmbedding`) trains an SPDNet ``[c, h]`` on SPD
matrices with the Riemannian potato loss on its SPD outputs. A baseline here trains the *same*
network with a Euclidean deep-metric-learning loss on the vectorised logarithm of those outputs,
``sym_to_vec(log f(Σ))`` (Euclidean distances there are log-Euclidean distances between the
outputs), with everything else as RPLEmbedding does it: inputs whitened by their Riemannian mean,
the same class-balanced batches, Riemannian Adam on the Stiefel weights, the same number of
steps, and early stopping on the mean average precision of a stratified validation split.
For one seed the split, the initial BiMap weights and the batches are drawn in RPLEmbedding's
order, so RPL and a baseline start from the same network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch

from .._utils import make_rng, to_tensor, torch_generator
from .._validation import check_labels
from ..estimators.rpl import _mean_average_precision, _stratified_split, default_hidden_sizes
from ..geometry.matrix_functions import spd_inv_sqrt, spd_log, symmetrize
from ..geometry.means import riemannian_mean
from ..losses.lifted import LiftedStructureLoss
from ..losses.multi_similarity import MultiSimilarityLoss
from ..losses.npair import NPairLoss
from ..losses.pair_distances import pairwise_distance
from ..losses.proxy_nca import ProxyNCALoss
from ..losses.triplet import TripletLoss
from ..models.spdnet import SPDNet, sym_to_vec
from ..models.stiefel import StiefelAdam
from ..sampling import LabelIndex
from ..training import train

__all__ = ["BASELINE_LOSSES", "make_loss", "fit_spdnet_baseline", "whiten", "log_vectors"]

#: Baseline id -> loss description (their published defaults; margins 1 for unnormalised vectors).
BASELINE_LOSSES = {
    "triplet-random": "TripletLoss(margin=1, mining='random')",
    "triplet-semihard": "TripletLoss(margin=1, mining='semihard')",
    "lifted": "LiftedStructureLoss(margin=1)",
    "npair": "NPairLoss(l2_weight=0.002)",
    "proxy-nca": "ProxyNCALoss(one proxy per class)",
    "multi-similarity": "MultiSimilarityLoss(alpha=2, beta=50, base=0.5, epsilon=0.1)",
}
_MAX_GALLERY = 1000  # training matrices the validation queries are ranked against (as RPL)


def make_loss(
    name: str, n_classes: int, dim: int, generator: torch.Generator, device: torch.device
) -> torch.nn.Module:
    """The loss module of baseline ``name`` for ``dim``-dimensional embeddings."""
    if name == "triplet-random":
        return TripletLoss(margin=1.0, mining="random", generator=generator)
    if name == "triplet-semihard":
        return TripletLoss(margin=1.0, mining="semihard")
    if name == "lifted":
        return LiftedStructureLoss(margin=1.0)
    if name == "npair":
        return NPairLoss()
    if name == "proxy-nca":
        return ProxyNCALoss(n_classes, dim, generator=generator, device=device)
    if name == "multi-similarity":
        return MultiSimilarityLoss()
    raise ValueError(f"unknown baseline {name!r}; choose from {list(BASELINE_LOSSES)}.")


def whiten(X: torch.Tensor) -> torch.Tensor:
    """The whitening ``M^{-1/2}`` by the Riemannian mean ``M`` of a stack (as RPLEmbedding).

    Parameters
    ----------
    X : float64 tensor of shape (n, c, c)

    Returns
    -------
    tensor of shape (c, c)
        The whitening matrix ``M^{-1/2}``.
    """
    return spd_inv_sqrt(riemannian_mean(X))


def log_vectors(Y: torch.Tensor) -> torch.Tensor:
    """``sym_to_vec(log Y)`` of SPD matrices (n, h, h) → (n, h (h + 1) / 2)."""
    return sym_to_vec(spd_log(Y))


def fit_spdnet_baseline(
    X: np.ndarray,
    y: np.ndarray,
    loss_name: str,
    budget: Mapping,
    *,
    seed: int,
    device: str = "cpu",
) -> tuple[Callable[[np.ndarray], np.ndarray], dict]:
    """Train SPDNet with a baseline loss; return the embedding function and a training record.

    Parameters
    ----------
    X : ndarray of shape (n_samples, c, c)
        SPD matrices.
    y : ndarray of shape (n_samples,)
    loss_name : str
        A key of :data:`BASELINE_LOSSES`.
    budget : dict
        RPLEmbedding's training settings: ``hidden_sizes`` (None: its default), ``max_iter``,
        ``learning_rate``, ``n_per_class``, ``validation_fraction``, ``validation_every``,
        ``patience``, ``eps``.
    seed : int
    device : str

    Returns
    -------
    transform : callable ``(n, c, c) ndarray -> (n, h (h + 1) / 2) ndarray``
    record : dict
        ``n_iter``, ``best_iter``, ``validation_score``.
    """
    dev = torch.device(device)
    _, codes = check_labels(y, X.shape[0])
    rng = make_rng(seed)
    X64 = to_tensor(X, dev, torch.float64)
    W = whiten(X64)
    Xw = symmetrize(W @ X64 @ W).float()
    c = X.shape[1]
    hidden = budget.get("hidden_sizes") or default_hidden_sizes(c)
    train_idx, val_idx = _stratified_split(codes, budget["validation_fraction"], rng)
    net = SPDNet([c, *hidden], eps=budget["eps"], log_output=True,
                 generator=torch_generator(rng), device=dev)  # fmt: skip
    dim = hidden[-1] * (hidden[-1] + 1) // 2
    loss_fn = make_loss(loss_name, int(codes.max()) + 1, dim, torch_generator(rng), dev)
    groups = net.parameter_groups()
    if list(loss_fn.parameters()):
        groups.append({"params": list(loss_fn.parameters())})
    codes_t = torch.as_tensor(codes, device=dev)
    index = LabelIndex.from_codes(codes[train_idx])
    n_classes = len(np.unique(codes))

    def embed(rows: torch.Tensor) -> torch.Tensor:
        return sym_to_vec(net(Xw[rows]))

    def loss_step(step: int) -> torch.Tensor:
        picked = index.class_balanced_batch(n_classes, budget["n_per_class"], rng)
        batch = torch.as_tensor(train_idx[picked], device=dev)
        return loss_fn(embed(batch), codes_t[batch])

    validate = None
    if val_idx.size:
        gallery = torch.as_tensor(rng.permutation(train_idx)[:_MAX_GALLERY], device=dev)
        queries = torch.as_tensor(val_idx, device=dev)

        @torch.no_grad()
        def validate() -> float:
            dist = pairwise_distance(embed(queries), "euclidean", embed(gallery))
            return _mean_average_precision(
                dist, codes_t[queries][:, None] == codes_t[gallery][None]
            )

    result = train(
        torch.nn.ModuleDict({"net": net, "loss": loss_fn}),
        StiefelAdam(groups, lr=budget["learning_rate"]),
        loss_step,
        rng=rng,
        max_iter=budget["max_iter"],
        validate=validate,
        validation_every=budget["validation_every"],
        patience=budget["patience"],
        desc=loss_name,
    )
    net.eval()

    @torch.no_grad()
    def transform(Z: np.ndarray) -> np.ndarray:
        Z64 = to_tensor(Z, dev, torch.float64)
        return sym_to_vec(net(symmetrize(W @ Z64 @ W).float())).cpu().numpy()

    record = {
        "n_iter": int(result.n_iter),
        "best_iter": result.best_step,
        "validation_score": None if result.best_step is None else float(result.best_score),
    }
    return transform, record
