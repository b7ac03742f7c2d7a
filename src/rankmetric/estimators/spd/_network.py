"""The network side of the SPD estimators: parameters, sizes, start, embeddings, the fitted net.

Helpers of :class:`~rankmetric.estimators.spd.SPDNetEmbedding` (and its RPL configuration):
the hyper-parameters every SPD-network estimator shares (:data:`SPDNET_PARAMETER_CONSTRAINTS`),
the checked input stack (:func:`check_spd_stack`, MDM's too), the BiMap sizes
(:func:`default_hidden_sizes`, :func:`parse_hidden_sizes`), the whitening matrix
(:func:`fit_whitening`), the principal start of reducing BiMaps (:func:`principal_init`), the
embeddings the loss and validation compare, and a fitted model's network rebuilt from its arrays
(:func:`fitted_network`) and its float64 outputs (:func:`fitted_outputs`). Congruence and
whitening are :mod:`rankmetric.geometry`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted, validate_data

from ..._utils import resolve_device, to_tensor
from ..._validation import BOOLEAN, CHECKPOINTS, NONE, POSITIVE_INT, InstanceOf, Interval, Options
from ..._validation.checks import transform_domain_codes
from ...geometry.aliases import canonical_metric
from ...geometry.checks import check_spd
from ...geometry.dispatch import distance as spd_distance
from ...geometry.eigen import eigh, orient_columns
from ...geometry.matrix_functions import spd_log, symmetrize
from ...geometry.tangent import congruence, mean_whitening
from ...losses.lifted import LiftedStructureLoss
from ...losses.potato import DISTANCES, RiemannianPotatoLoss, embedding_distances
from ...losses.triplet import TripletLoss
from ...models.spdnet import BIMAP_MANIFOLDS, INITS, SPDNet, check_sizes, sym_to_vec
from ...training import RETRIEVAL_METRICS, per_query_scores
from .._early_stopping import EARLY_STOPPING_CONSTRAINTS
from .._init_parameters import TRAINING_PARAMETER_CONSTRAINTS
from .._supervision import split_pairs

__all__ = [
    "HEADS",
    "SPDNET_PARAMETER_CONSTRAINTS",
    "check_spd_stack",
    "default_hidden_sizes",
    "fit_whitening",
    "fitted_network",
    "fitted_outputs",
    "fitted_pair_distances",
    "parse_hidden_sizes",
    "select_validated_step",
    "translation_invariant",
]


HEADS = ("spd", "log", "linear")
OUTPUTS = ("spd", "log", "vector")
#: The hyper-parameters every SPD-network estimator shares (the loss's own are added by each).
SPDNET_PARAMETER_CONSTRAINTS = {
    "hidden_sizes": [
        NONE,
        POSITIVE_INT,
        InstanceOf((str, list, tuple, np.ndarray), "a list of sizes"),
    ],
    "head": [Options(*HEADS)],
    "distance": [InstanceOf(str, "a distance name")],  # aliases resolved by ``_distance``
    "bimap": [Options(*BIMAP_MANIFOLDS)],  # the network's own options: it is built with them
    "init": [Options(*INITS)],
    "eps": [Interval(Real, 0, None, closed="neither")],
    "relative_eps": [BOOLEAN],
    "batchnorm": [BOOLEAN],
    "n_classes_per_batch": [NONE, Interval(Integral, 2, None, closed="left")],
    "n_per_class": [Interval(Integral, 2, None, closed="left")],
    "max_iter": [Interval(Integral, 0, None, closed="left")],  # 0: the untrained reference
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    **EARLY_STOPPING_CONSTRAINTS,
    "validation_metric": [Options(*RETRIEVAL_METRICS)],
    "validation_distance": [NONE, InstanceOf(str, "a distance name")],  # resolved in fit
    "selection_se": [Interval(Real, 0, None, closed="left")],
    "output": [Options(*OUTPUTS)],
    "whiten": [BOOLEAN],
    **TRAINING_PARAMETER_CONSTRAINTS,
    **CHECKPOINTS,
}
# validation ranks the held-out matrices leave-one-out among themselves: at most 500 of them under
# AIRM (an AIRM validation of 1000 x 1000 pairs takes ~13 s on one loaded core; 500 x 500 about
# 3 s), at most 2000 under the cheap Euclidean / log-Euclidean distances.
MAX_VALIDATION_QUERIES = {"airm": 500, "other": 2000}
_CHUNK = 2048  # matrices per forward pass of a fitted network


def check_spd_stack(estimator, X, y=None, *, reset: bool, ensure_min_samples: int = 1):
    """``(X, y)``: ``X`` checked (by scikit-learn, then :func:`~rankmetric.geometry.check_spd`)
    as a stack of SPD matrices (n, c, c) in float64 or float32, ``y`` by scikit-learn."""
    kwargs = {"allow_nd": True, "dtype": [np.float64, np.float32], "reset": reset}
    kwargs["ensure_min_samples"] = ensure_min_samples
    if y is None:
        X = validate_data(estimator, X, **kwargs)
    else:
        X, y = validate_data(estimator, X, y, **kwargs)
    if X.ndim != 3 or X.shape[1] != X.shape[2]:
        raise ValueError(f"X must have shape (n_matrices, c, c), got {X.shape}.")
    return check_spd(X), y


def fit_whitening(X: torch.Tensor, whiten: bool) -> torch.Tensor:
    """``M^{-1/2}`` for the Riemannian mean ``M`` of ``X`` (the identity unless ``whiten``), in
    ``X``'s dtype and device."""
    if whiten:
        return mean_whitening(X)
    return torch.eye(X.shape[-1], dtype=X.dtype, device=X.device)


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
        The output sizes ``[h1, ..., hk]``.

    Raises
    ------
    ValueError
        When ``sizes`` is empty, and as :func:`rankmetric.models.spdnet.check_sizes` on
        ``[c, *sizes]``.
    """
    if isinstance(sizes, str):
        sizes = [s for s in sizes.replace(" ", "").split(",") if s]
    sizes = list(np.atleast_1d(sizes))  # one int: one layer
    if not sizes:
        raise ValueError("hidden_sizes must hold at least one size.")
    return check_sizes([n_channels, *sizes], "[c, *hidden_sizes]")[1:]


def training_embedding(
    net: SPDNet, X: torch.Tensor, domains: torch.Tensor | None = None
) -> torch.Tensor:
    """What the loss compares: SPD outputs (n, h, h), ``vec(log Y)`` or head vectors."""
    Y = net(X, domains)
    return as_vectors(Y) if net.log_output else Y


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
    ``distance``. Per-query R@1 or average precision (:func:`~rankmetric.training.
    per_query_scores`); NaN for a query with no other of its class.
    """

    @torch.no_grad()
    def score() -> torch.Tensor:
        was_training = net.training
        net.eval()  # batch normalisation: running statistics
        try:
            Z = training_embedding(net, X, domains)
            if Z.ndim == 3 and distance == "log_euclidean":  # the distance of transform's vectors
                Z = sym_to_vec(spd_log(Z.double()))
            dist = embedding_distances(Z, Z, metric=distance).double()
        finally:
            net.train(was_training)
        dist.fill_diagonal_(torch.inf)
        relevant = codes[:, None] == codes[None, :]
        relevant.fill_diagonal_(False)
        return per_query_scores(dist, relevant, metric)

    return score


def select_validated_step(candidates, result, selection_se: float):
    """Apply the one-standard-error rule to a ``train`` run's validated steps.

    The candidates are step 0 and the first validations (``train`` restores the state of its
    best validation, which holds the candidates up to that one). Restores the chosen step's
    parameters, sets ``result.best_step`` / ``best_score`` and returns ``(score of step 0, (gain,
    its standard error))``, or ``(None, None)`` without validation.
    """
    if candidates is None:
        return None, None
    validated = [h["step"] for h in result.history if "val_score" in h]
    steps = [0, *validated[: candidates.scores.shape[0] - 1]]
    chosen, gain = candidates.select(selection_se)
    candidates.restore(chosen)
    result.best_step, result.best_score = steps[chosen], candidates.mean(chosen)
    return candidates.mean(0), gain


def fitted_network(
    est, device: torch.device, log_output: bool = False, n_domains: int = 0
) -> SPDNet:
    """The float64 SPDNet of a fitted estimator ``est``, rebuilt from its arrays (head included
    when there is one), in evaluation mode, with room for ``n_domains`` new domains after the
    fitted ones."""
    seen = getattr(est, "domains_", None)
    n_seen = 0 if seen is None else len(seen)
    head = getattr(est, "head_weight_", None)
    net = SPDNet(
        [est.n_features_in_, *(w.shape[1] for w in est.weights_)],
        eps=est.eps,
        relative_eps=est.relative_eps,
        bimap=est.bimap,
        log_output=log_output,
        head_dim=None if head is None else head.shape[0],
        batchnorm=bool(getattr(est, "batchnorm_means_", None)),
        n_domains=n_seen + n_domains if n_seen else 0,
        dtype=torch.float64,
        device=device,
    )
    with torch.no_grad():
        for bimap, weight in zip(net.bimaps, est.weights_, strict=True):
            bimap.weight.copy_(to_tensor(weight, device))
        for bn, mean, log_bias in zip(
            net.batchnorms, est.batchnorm_means_, est.batchnorm_log_biases_, strict=True
        ):
            bn.running_mean.copy_(to_tensor(mean, device))
            bn.log_bias.copy_(to_tensor(log_bias, device))
        domain_means = est.batchnorm_domain_means_ if n_seen else []
        for bn, means in zip(net.batchnorms, domain_means, strict=n_seen > 0):
            bn.domain_means[:n_seen] = to_tensor(means, device)
        if head is not None:
            net.head.weight.copy_(to_tensor(head, device))
            net.head.bias.copy_(to_tensor(est.head_bias_, device))
    return net.eval()


@torch.no_grad()
def fitted_outputs(est, X, log: bool = False, domains=None) -> tuple[torch.Tensor, np.dtype]:
    """The outputs (SPD, log or head vectors) of a fitted estimator ``est`` on ``X``, and X's dtype.

    Computed in float64 (the fitted float32 parameters cast up) and in chunks, so that an output
    does not depend on which other matrices share its chunk. A model fitted with ``domains``
    normalises a seen domain at its stored statistics and a new one (all of ``X`` without
    ``domains``) at its own: whitened at its own mean, then its own batch-normalisation means.
    """
    check_is_fitted(est, "weights_")
    X, _ = check_spd_stack(est, X, reset=False)
    device = resolve_device(est.device)
    chunks = range(0, X.shape[0], _CHUNK)
    seen = getattr(est, "domains_", None)
    if seen is None:
        if domains is not None:
            raise ValueError("domains given to a model fitted without domains.")
        W = to_tensor(est.whitening_, device, torch.float64)
        net = fitted_network(est, device, log)
        return torch.cat([net(congruence(_rows(X, i, device), W)) for i in chunks]), X.dtype
    codes, new = transform_domain_codes(seen, domains, X.shape[0])
    net = fitted_network(est, device, log, n_domains=len(new))
    W = [to_tensor(est.domain_whitening_, device, torch.float64)]
    for d in new:  # a new domain: whitened at its own mean, then its own BN means
        X_d = to_tensor(X[codes == d], device, torch.float64)
        W.append(fit_whitening(X_d, est.whiten)[None])
        if net.batchnorms:
            net.adapt_domain(congruence(X_d, W[-1][0]), d)
    W, codes_t = torch.cat(W), torch.as_tensor(codes, device=device)
    outputs = []
    for i in chunks:
        rows = codes_t[i : i + _CHUNK]
        outputs.append(net(congruence(_rows(X, i, device), W[rows]), rows))
    return torch.cat(outputs), X.dtype


def _rows(X: np.ndarray, start: int, device) -> torch.Tensor:
    """The chunk of ``X`` from row ``start``, as float64 on ``device``."""
    return to_tensor(X[start : start + _CHUNK], device, torch.float64)


def fitted_pair_distances(est, X1, X2=None) -> np.ndarray:
    """``est.pair_distances(X1, X2)``: the distance ``est`` was trained with, between outputs."""
    if X2 is None:
        X1, X2 = split_pairs(X1, point_ndim=2)
    spd = est.head == "spd"
    if getattr(est, "domains_", None) is not None:  # X1 and X2 embedded as one new domain
        X1, _ = check_spd_stack(est, X1, reset=False)
        X2, _ = check_spd_stack(est, X2, reset=False)
        Y, _ = fitted_outputs(est, np.concatenate([X1, X2]), log=not spd)
        Y1, Y2 = Y[: len(X1)], Y[len(X1) :]
    else:
        Y1, _ = fitted_outputs(est, X1, log=not spd)
        Y2, _ = fitted_outputs(est, X2, log=not spd)
    if Y1.shape[0] != Y2.shape[0]:
        raise ValueError(f"X1 and X2 must have as many rows: {Y1.shape[0]} != {Y2.shape[0]}.")
    with torch.no_grad():
        if not spd:
            Y1, Y2 = as_vectors(Y1), as_vectors(Y2)
            return torch.linalg.vector_norm(Y1.double() - Y2.double(), dim=1).cpu().numpy()
        metric = canonical_metric(est.distance, DISTANCES, name="distance")
        return spd_distance(Y1.double(), Y2.double(), metric).cpu().numpy()
