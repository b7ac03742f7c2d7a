"""Every public place that takes an SPD metric name resolves it through the one resolver.

``rankmetric.geometry.canonical_metric`` (the table ``METRIC_ALIASES``) is the one resolver: each
place below accepts every alias (pyRiemann's ``"riemann"``, ``"logeuclid"``, ``"euclid"``, ours,
any case) of the metrics it supports, with the same result as the canonical name, and rejects an
unknown name with a ``ValueError`` that lists the known names and aliases.
"""

import numpy as np
import pytest
import torch

from rankmetric import geometry
from rankmetric.estimators import RPLEmbedding, SPDNetEmbedding
from rankmetric.estimators.spdnet import make_loss
from rankmetric.losses import LiftedStructureLoss, RiemannianPotatoLoss, TripletLoss, TripletMiner
from rankmetric.losses.pair_distances import paired_distance, pairwise_distance
from rankmetric.losses.potato import embedding_distances
from rankmetric.preprocessing import DomainRecentering, TangentSpace

ALL = ("airm", "log_euclidean", "euclidean")
RIEMANNIAN = ("airm", "log_euclidean")


def _spd(n=12, c=3, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, c, c)))[0]
    return (Q * np.exp(0.5 * rng.standard_normal((n, 1, c)))) @ np.swapaxes(Q, 1, 2)


X = _spd()
Xt = torch.from_numpy(X)
y = np.repeat([0, 1, 2], 4)
yt = torch.from_numpy(y)
domains = np.tile(["a", "b"], 6)
FIT = {"max_iter": 1, "random_state": 0, "device": "cpu", "hidden_sizes": 2}


def _spdnet(m):
    est = SPDNetEmbedding(loss="triplet", head="spd", distance=m, validation_distance=m, **FIT)
    return est.fit(X, y).pair_distances(X[:4], X[4:8])


def _rpl(m):
    return (
        RPLEmbedding(distance=m, validation_fraction=0, **FIT)
        .fit(X, y)
        .pair_distances(X[:4], X[4:8])
    )


#: (place, the canonical names it supports, call(metric) -> result)
PLACES = [
    ("geometry.distance", ALL, lambda m: geometry.distance(Xt[:4], Xt[4:8], m)),
    ("geometry.pairwise_distance", ALL, lambda m: geometry.pairwise_distance(Xt, metric=m)),
    ("geometry.spd_mean", ALL, lambda m: geometry.spd_mean(Xt, m)),
    ("geometry.geodesic", RIEMANNIAN, lambda m: geometry.geodesic(Xt[0], Xt[1], 0.3, m)),
    ("geometry.log_map", ALL, lambda m: geometry.log_map(Xt, Xt[0], m)),
    ("geometry.exp_map", ALL, lambda m: geometry.exp_map(0.1 * Xt, Xt[0], m)),
    ("geometry.canonical_metric", ALL, geometry.canonical_metric),
    ("losses.pairwise_distance", RIEMANNIAN, lambda m: pairwise_distance(Xt, m)),
    ("losses.paired_distance", RIEMANNIAN, lambda m: paired_distance(Xt[:4], Xt[4:8], m)),
    ("losses.embedding_distances", RIEMANNIAN, lambda m: embedding_distances(Xt, None, m)),
    ("TripletLoss", RIEMANNIAN, lambda m: TripletLoss(distance=m)(Xt, yt)),
    ("LiftedStructureLoss", RIEMANNIAN, lambda m: LiftedStructureLoss(distance=m)(Xt, yt)),
    ("TripletMiner", RIEMANNIAN, lambda m: TripletMiner(distance=m)(Xt, yt)),
    ("RiemannianPotatoLoss", RIEMANNIAN, lambda m: RiemannianPotatoLoss(distance=m)(Xt, yt)),
    ("make_loss", RIEMANNIAN, lambda m: make_loss("triplet", n_classes=3, dim=None, distance=m)),
    ("SPDNetEmbedding", RIEMANNIAN, _spdnet),
    ("RPLEmbedding", RIEMANNIAN, _rpl),
    ("TangentSpace", ALL, lambda m: TangentSpace(metric=m, device="cpu").fit_transform(X)),
    (
        "DomainRecentering",
        ALL,
        lambda m: DomainRecentering(metric=m, device="cpu").fit_transform(X, domains=domains),
    ),
]


def _same(a, b) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b, strict=True))
    if isinstance(a, torch.nn.Module):
        return type(a) is type(b) and a.distance == b.distance
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.filterwarnings("ignore:SPDNetEmbedding kept the untrained network")
@pytest.mark.parametrize("place, supported, call", PLACES, ids=[p[0] for p in PLACES])
def test_every_alias_accepted_and_unknown_names_listed(place, supported, call):
    aliases = {a: c for a, c in geometry.METRIC_ALIASES.items() if c in supported}
    assert set(aliases.values()) == set(supported)
    reference = {c: call(c) for c in supported}
    for alias, canonical in aliases.items():
        for spelling in (alias, alias.upper()):
            assert _same(call(spelling), reference[canonical]), (place, spelling)
    with pytest.raises(ValueError) as info:
        call("wasserstein")
    message = str(info.value)
    assert "wasserstein" in message
    for name in aliases:
        assert name in message, (place, name, message)
