"""The network side of the SPD estimators: parameters, sizes, the principal start, embeddings.

Helpers of :class:`~rankmetric.estimators.spdnet.SPDNetEmbedding` (and its RPL configuration):
the hyper-parameters every SPD-network estimator shares (:data:`SPDNET_PARAMETER_CONSTRAINTS`),
the BiMap sizes (:func:`default_hidden_sizes`, :func:`parse_hidden_sizes`), the principal start
of reducing BiMaps (:func:`principal_init`), the whitening congruence and the embeddings the
loss and validation compare.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real

import numpy as np
import torch

from .._validation import (
    BOOLEAN,
    CHECKPOINTS,
    DEVICE,
    NONE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    InstanceOf,
    Interval,
    Options,
)
from ..geometry._common import orient_columns
from ..geometry.matrix_functions import eigh, spd_log, symmetrize
from ..losses.lifted import LiftedStructureLoss
from ..losses.potato import RiemannianPotatoLoss, embedding_distances
from ..losses.triplet import TripletLoss
from ..models.spdnet import SPDNet, sym_to_vec
from ..training import per_query_scores

__all__ = [
    "HEADS",
    "VALIDATION_METRICS",
    "SPDNET_PARAMETER_CONSTRAINTS",
    "default_hidden_sizes",
    "parse_hidden_sizes",
    "translation_invariant",
]


HEADS = ("spd", "log", "linear")
INITS = ("identity", "random")
BIMAPS = ("free", "stiefel")
OUTPUTS = ("spd", "log", "vector")
#: The hyper-parameters every SPD-network estimator shares (the loss's own are added by each).
VALIDATION_METRICS = ("recall@1", "map")
SPDNET_PARAMETER_CONSTRAINTS = {
    "hidden_sizes": [
        NONE,
        POSITIVE_INT,
        InstanceOf((str, list, tuple, np.ndarray), "a list of sizes"),
    ],
    "head": [Options(*HEADS)],
    "distance": [InstanceOf(str, "a distance name")],  # aliases resolved by ``_distance``
    "bimap": [Options(*BIMAPS)],
    "init": [Options(*INITS)],
    "eps": [Interval(Real, 0, None, closed="neither")],
    "relative_eps": [BOOLEAN],
    "batchnorm": [BOOLEAN],
    "n_classes_per_batch": [NONE, Interval(Integral, 2, None, closed="left")],
    "n_per_class": [Interval(Integral, 2, None, closed="left")],
    "max_iter": [Interval(Integral, 0, None, closed="left")],  # 0: the untrained reference
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "validation_fraction": [Interval(Real, 0, 1, closed="left")],
    "validation_every": [POSITIVE_INT],
    "patience": [NONE, POSITIVE_INT],
    "validation_metric": [Options(*VALIDATION_METRICS)],
    "validation_distance": [NONE, InstanceOf(str, "a distance name")],  # resolved in fit
    "selection_se": [Interval(Real, 0, None, closed="left")],
    "output": [Options(*OUTPUTS)],
    "whiten": [BOOLEAN],
    "random_state": [RANDOM_STATE],
    "device": [DEVICE],
    "verbose": VERBOSE,
    **CHECKPOINTS,
}
# validation ranks the held-out matrices leave-one-out among themselves: at most 500 of them under
# AIRM (an AIRM validation of 1000 x 1000 pairs takes ~13 s on one loaded core; 500 x 500 about
# 3 s), at most 2000 under the cheap Euclidean / log-Euclidean distances.
MAX_VALIDATION_QUERIES = {"airm": 500, "other": 2000}


def translation_invariant(loss_fn: torch.nn.Module) -> bool:
    """Whether a loss sees vector embeddings only through their Euclidean differences.

    The potato (Euclidean distances between vectors, and to their class means), and the triplet
    and lifted losses under the (squared) Euclidean distance. Adding a constant vector to every
    embedding leaves such a loss unchanged, so the gradient of a linear head's bias is zero but
    for rounding: Adam normalises that rounding noise into steps of the full learning rate, and a
    one-ulp change of the input (or another CPU's summation order) moved the fitted bias of
    ``RPLEmbedding`` by 0.07. The estimators keep such a bias at 0 (a translation of every
    embedding, which changes no distance).
    """
    if isinstance(loss_fn, RiemannianPotatoLoss):
        return True
    return isinstance(loss_fn, TripletLoss | LiftedStructureLoss) and loss_fn.metric in (
        "euclidean",
        "sqeuclidean",
    )


def take_rows(values: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor | None:
    """``values[rows]``, or None without values (no domains)."""
    return None if values is None else values[rows]


def validation_queries(val_idx: np.ndarray, rng: np.random.Generator, airm: bool) -> np.ndarray:
    """The held-out matrices validation ranks, capped (tighter under AIRM)."""
    cap = MAX_VALIDATION_QUERIES["airm" if airm else "other"]
    if val_idx.size > cap:  # draws nothing on small sets
        return np.sort(rng.choice(val_idx, cap, replace=False))
    return val_idx


def default_hidden_sizes(n_channels: int) -> tuple[int, ...]:
    """Version 0.1's network: one BiMap halving the size, ``(max(2, ceil(c / 2)),)``.

    ``(c,)`` when ``c < 2``. The estimators now default to ``(c, c)``; this is kept for
    ``hidden_sizes=default_hidden_sizes(c)``, the original SPDNet reduction.
    """
    return (min(n_channels, max(2, -(-n_channels // 2))),)


def parse_hidden_sizes(sizes, n_channels: int) -> list[int]:
    """``hidden_sizes`` as a list of BiMap output sizes for inputs of size ``n_channels``.

    Parameters
    ----------
    sizes : int, sequence of int or str
        One size, a list, or a comma-separated string ``"12,12,6"`` (the command line's form).
    n_channels : int
        Input size ``c``.

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Unless the sizes are integers, non-empty, positive and non-increasing from ``c``.
    """
    original = sizes
    if isinstance(sizes, str):
        sizes = [s for s in sizes.replace(" ", "").split(",") if s]
    elif isinstance(sizes, Integral):
        sizes = [sizes]
    try:
        sizes = [int(s) for s in sizes]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"hidden_sizes must be integers, got {original!r}.") from exc
    chain = [n_channels, *sizes]
    if (
        not sizes
        or min(sizes) < 1
        or any(b > a for a, b in zip(chain[:-1], chain[1:], strict=True))
    ):
        raise ValueError(
            f"hidden_sizes must be a non-empty, non-increasing list of positive sizes at most "
            f"the input size {n_channels}, got {original!r}."
        )
    return sizes


def extra_group(loss_fn: torch.nn.Module) -> list[dict]:
    """The loss's own parameters (Proxy-NCA proxies) as a Euclidean parameter group."""
    params = list(loss_fn.parameters())
    return [{"params": params}] if params else []


def training_embedding(
    net: SPDNet, X: torch.Tensor, domains: torch.Tensor | None = None
) -> torch.Tensor:
    """What the loss compares: SPD outputs (n, h, h), ``vec(log Y)`` or head vectors."""
    Y = net(X, domains)
    return as_vectors(Y) if net.log_output else Y


def validation_embedding(
    net: SPDNet, X: torch.Tensor, distance: str, domains: torch.Tensor | None = None
) -> torch.Tensor:
    """What validation compares: the training embedding, or ``vec(log Y)`` for log-Euclidean."""
    Y = training_embedding(net, X, domains)
    if Y.ndim == 3 and distance == "log_euclidean":
        return sym_to_vec(spd_log(Y.double()))  # the Euclidean distance of transform's vectors
    return Y


def as_vectors(Y: torch.Tensor) -> torch.Tensor:
    """Vectors as they are; symmetric matrices (n, h, h) as ``vec`` (√2 off-diagonal)."""
    return sym_to_vec(Y) if Y.ndim == 3 else Y


@torch.no_grad()
def principal_init(net: SPDNet, X: torch.Tensor) -> None:
    """Reducing BiMaps start on the leading eigenvectors of the mean squared log of their inputs.

    For whitened inputs (mean at the identity) these are the directions where the log-matrices
    vary most: a PCA-like start that keeps as much of the log-Euclidean geometry as the size
    allows. Square BiMaps keep their identity start. Inputs are propagated layer by layer, in
    evaluation mode (batch normalisation does not update its running mean here).
    """
    was_training = net.training
    net.eval()
    Y = X
    for layer in net.layers:
        if getattr(layer, "weight", None) is not None:
            d_in, d_out = layer.weight.shape
            if d_out < d_in:
                L = spd_log(Y.double())
                second_moment = symmetrize((L @ L).mean(dim=0))
                _, vectors = eigh(second_moment)
                leading = orient_columns(vectors[:, -d_out:].flip(-1))  # the same on any CPU
                layer.weight.copy_(leading.to(layer.weight.dtype))
        Y = layer(Y)
    net.train(was_training)


def validation_scorer(
    net: SPDNet,
    X: torch.Tensor,
    codes: torch.Tensor,
    domains: torch.Tensor | None,
    distance: str,
    metric: str,
) -> Callable[[], torch.Tensor]:
    """A closure scoring the network per held-out query, leave-one-out among the queries ``X``.

    As the test protocol of the tables: every matrix is ranked against the other held-out
    ones (never against training matrices, which the loss has already pulled together), under
    ``distance``. Per-query R@1 or average precision (:func:`~rankmetric.model_selection.
    per_query_scores`); NaN for a query with no other of its class.
    """

    @torch.no_grad()
    def score() -> torch.Tensor:
        was_training = net.training
        net.eval()  # batch normalisation: running statistics
        try:
            Z = validation_embedding(net, X, distance, domains)
            dist = embedding_distances(Z, Z, metric=distance).double()
        finally:
            net.train(was_training)
        dist.fill_diagonal_(torch.inf)
        relevant = codes[:, None] == codes[None, :]
        relevant.fill_diagonal_(False)
        return per_query_scores(dist, relevant, metric)

    return score


def congruence(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``W X W`` for symmetric ``W`` (c, c) and a stack ``X`` (n, c, c)."""
    return symmetrize(W @ X @ W)
