"""Every public place that takes a metric name resolves it through the one resolver.

SPD places (geometry, batch losses, SPD estimators and transformers) and vector places (the
exact search of ``neighbors``, every ``evaluate`` metric with ``metric=``, ``rankmetric evaluate
--metric``, the batch losses on vectors) alike.

``rankmetric.geometry.canonical_metric`` (the table ``METRIC_ALIASES``) is the one resolver: each
place below accepts every alias (pyRiemann's ``"riemann"``, ``"logeuclid"``, ``"euclid"``, ours,
any case) of the metrics it supports, with the same result as the canonical name, and rejects an
unknown name with a ``ValueError`` that lists the known names and aliases.
"""

import numpy as np
import pytest
import torch

from rankmetric import evaluate, geometry, neighbors
from rankmetric.estimators import RPLEmbedding, SPDNetEmbedding
from rankmetric.estimators.spd import make_loss
from rankmetric.losses import LiftedStructureLoss, RiemannianPotatoLoss, TripletLoss, TripletMiner
from rankmetric.losses.pair_distances import paired_distance, pairwise_distance
from rankmetric.losses.potato import embedding_distances
from rankmetric.neighbors import Gallery
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
    ("TripletLoss", RIEMANNIAN, lambda m: TripletLoss(metric=m)(Xt, yt)),
    ("LiftedStructureLoss", RIEMANNIAN, lambda m: LiftedStructureLoss(metric=m)(Xt, yt)),
    ("TripletMiner", RIEMANNIAN, lambda m: TripletMiner(metric=m)(Xt, yt)),
    ("RiemannianPotatoLoss", RIEMANNIAN, lambda m: RiemannianPotatoLoss(metric=m)(Xt, yt)),
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


#: The vector metrics' places: ``"euclidean"`` and its alias ``"euclid"`` (pyRiemann's name), any
#: case, through the same resolver (``neighbors.check_metric`` delegates to it).
VECTOR = ("euclidean",)
V = np.random.default_rng(1).standard_normal((24, 3)).astype(np.float32)
Vt = torch.from_numpy(V)
ids = np.repeat(np.arange(6), 4)
cams = np.tile([0, 1], 12)


def _cli_evaluate(m, tmp=[]):  # noqa: B006 - one temporary file for the module
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    if not tmp:
        tmp.append(Path(tempfile.mkdtemp()) / "emb.npz")
        np.savez(tmp[0], X=V, y=ids)
    run = subprocess.run(
        [sys.executable, "-m", "rankmetric", "evaluate", str(tmp[0]), "--metric", m, "--json"],
        capture_output=True,
        text=True,
    )
    if run.returncode:
        raise ValueError(run.stderr)
    return json.loads(run.stdout)


PLACES += [
    ("neighbors.check_metric", VECTOR, neighbors.check_metric),
    ("neighbors.Gallery.build", VECTOR, lambda m: Gallery.build(Vt, m).metric),
    ("evaluate.knn_search", VECTOR, lambda m: evaluate.knn_search(V, k=2, metric=m)),
    (
        "evaluate.knn_accuracy",
        VECTOR,
        lambda m: evaluate.knn_accuracy(V[::2], ids[::2], V[1::2], ids[1::2], metric=m),
    ),
    ("evaluate.retrieval_scores", VECTOR, lambda m: evaluate.retrieval_scores(V, ids, metric=m)),
    ("evaluate.recall_at_k", VECTOR, lambda m: evaluate.recall_at_k(V, ids, metric=m)),
    ("evaluate.precision_at_1", VECTOR, lambda m: evaluate.precision_at_1(V, ids, metric=m)),
    ("evaluate.map_at_r", VECTOR, lambda m: evaluate.map_at_r(V, ids, metric=m)),
    (
        "evaluate.retrieval_report",
        VECTOR,
        lambda m: evaluate.retrieval_report(V, ids, metric=m, clustering=False),
    ),
    (
        "evaluate.cmc_curve",
        VECTOR,
        lambda m: evaluate.cmc_curve(V[::2], ids[::2], V[1::2], ids[1::2], ranks=(1, 2), metric=m),
    ),
    (
        "evaluate.reid_scores",
        VECTOR,
        lambda m: evaluate.reid_scores(
            V[::2], ids[::2], cams[::2], V[1::2], ids[1::2], cams[1::2], ranks=(1, 2), metric=m
        )["cmc"],
    ),
    (
        "evaluate.rerank_k_reciprocal",
        VECTOR,
        lambda m: evaluate.rerank_k_reciprocal(V[:6], V[6:], k1=4, k2=2, metric=m),
    ),
    (
        "evaluate.average_query_expansion",
        VECTOR,
        lambda m: evaluate.average_query_expansion(V[:6], V[6:], k=2, metric=m)[0],
    ),
    ("cli evaluate --metric", VECTOR, _cli_evaluate),
    ("losses.pairwise_distance (vectors)", VECTOR, lambda m: pairwise_distance(Vt, m)),
    (
        "losses.paired_distance (vectors)",
        VECTOR,
        lambda m: paired_distance(Vt[:4], Vt[4:8], m),
    ),
    ("TripletLoss (vectors)", VECTOR, lambda m: TripletLoss(metric=m)(Vt, torch.from_numpy(ids))),
    (
        "TripletMiner (vectors)",
        VECTOR,
        lambda m: TripletMiner(metric=m)(Vt, torch.from_numpy(ids)),
    ),
]


def _same(a, b) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b, strict=True))
    if isinstance(a, torch.nn.Module):
        return (
            type(a) is type(b)
            and getattr(a, "metric", None) == getattr(b, "metric", None)
            and a.distance == b.distance
        )
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
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
