"""The losses an SPD network (or any embedding network) can be trained with, by name.

:data:`LOSSES` maps each name to a description of its published defaults, and :func:`make_loss`
builds the module. :class:`~rankmetric.estimators.spd.SPDNetEmbedding` takes one of these
names as ``loss=``; every row of the RPL table is that estimator with another loss.
"""

from __future__ import annotations

import torch

from .lifted import LiftedStructureLoss
from .multi_similarity import MultiSimilarityLoss
from .npair import NPairLoss
from .potato import RiemannianPotatoLoss
from .proxy_nca import ProxyNCALoss
from .triplet import TripletLoss

__all__ = ["LOSSES", "VECTOR_ONLY_LOSSES", "make_loss"]

#: Loss id -> description (published defaults; margins 1 for unnormalised embeddings).
LOSSES = {
    "rpl": "RiemannianPotatoLoss (see RPLEmbedding for its parameters)",
    "triplet": "TripletLoss(margin=1, mining='all') on the SPD outputs' Riemannian distance "
    "(DSML-Triplet; needs head='spd')",
    "triplet-random": "TripletLoss(margin=1, mining='random')",
    "triplet-semihard": "TripletLoss(margin=1, mining='semihard')",
    "lifted": "LiftedStructureLoss(margin=1)",
    "npair": "NPairLoss(l2_weight=0.002)",
    "proxy-nca": "ProxyNCALoss(one proxy per class)",
    "multi-similarity": "MultiSimilarityLoss(alpha=2, beta=50, base=0.5, epsilon=0.1)",
}
#: The losses that need vector embeddings (not SPD matrices).
VECTOR_ONLY_LOSSES = ("npair", "proxy-nca", "multi-similarity")
_TRIPLET_MINING = {"triplet": "all", "triplet-random": "random", "triplet-semihard": "semihard"}


def make_loss(
    name: str,
    *,
    n_classes: int,
    dim: int | None,
    distance: str = "airm",
    params: dict | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.nn.Module:
    """The loss module ``name`` of :data:`LOSSES`.

    Parameters
    ----------
    name : str
        A key of :data:`LOSSES`.
    n_classes : int
        Number of classes (potato statistics, proxies).
    dim : int or None
        Embedding dimension for vector embeddings; ``None`` for SPD embeddings.
    distance : {"airm", "log_euclidean"}, default="airm"
        Riemannian distance between SPD embeddings (ignored for vectors); pyRiemann's
        ``"riemann"`` / ``"logeuclid"`` are accepted.
    params : dict, optional
        Keyword arguments overriding the loss's defaults.
    generator : torch.Generator, optional
        For random mining and proxy initialisation.
    device : torch device, optional
        Where the loss's own parameters and statistics live.

    Returns
    -------
    torch.nn.Module
        ``loss(embeddings, labels) -> scalar``.

    Raises
    ------
    ValueError
        For an unknown name, or a vector-only loss asked for SPD embeddings.

    See Also
    --------
    rankmetric.estimators.spd.SPDNetEmbedding : trains an SPD network with one of these.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses.registry import make_loss
    >>> loss = make_loss("lifted", n_classes=3, dim=6)
    >>> value = loss(torch.randn(12, 6), torch.arange(12) % 3)
    >>> value.ndim
    0
    """
    params = dict(params or {})
    spd = dim is None
    if spd and name in VECTOR_ONLY_LOSSES:
        raise ValueError(f"loss {name!r} needs vector embeddings: use head='log' or 'linear'.")
    if name == "rpl":
        params.setdefault("n_classes", n_classes)
        return RiemannianPotatoLoss(metric=distance, **params).to(device)
    if name in _TRIPLET_MINING:
        params = {"margin": 1.0, "mining": _TRIPLET_MINING[name], **params}
        if params["mining"] == "random":
            params.setdefault("generator", generator)
        return TripletLoss(metric=distance if spd else "euclidean", **params)
    if name == "lifted":
        return LiftedStructureLoss(**{"margin": 1.0, **params})
    if name == "npair":
        return NPairLoss(**params)
    if name == "proxy-nca":
        return ProxyNCALoss(n_classes, dim, generator=generator, device=device, **params)
    if name == "multi-similarity":
        return MultiSimilarityLoss(**params)
    raise ValueError(f"loss must be one of {list(LOSSES)}, got {name!r}.")
