"""Brute-force references for the evaluation tests: explicit loops straight from the definitions."""

from __future__ import annotations

import numpy as np


def distance_matrix(Q: np.ndarray, G: np.ndarray, metric: str) -> np.ndarray:
    """All distances, one pair at a time, in float64."""
    Q, G = np.asarray(Q, np.float64), np.asarray(G, np.float64)
    D = np.empty((len(Q), len(G)))
    for i, q in enumerate(Q):
        for j, g in enumerate(G):
            if metric == "cosine":
                nq, ng = np.linalg.norm(q), np.linalg.norm(g)
                D[i, j] = 1.0 - (q @ g / (nq * ng) if nq > 0 and ng > 0 else 0.0)
            else:
                sq = float(np.sum((q - g) ** 2))
                D[i, j] = np.sqrt(sq) if metric == "euclidean" else sq
    return D


def ranked(row: np.ndarray, exclude: int | None = None) -> np.ndarray:
    """Gallery indices sorted by (distance, index), without ``exclude``."""
    order = [j for j in sorted(range(len(row)), key=lambda j: (row[j], j)) if j != exclude]
    return np.asarray(order, dtype=np.int64)


def knn(Q, G, k: int, metric: str, exclude_self: bool) -> tuple[np.ndarray, np.ndarray]:
    D = distance_matrix(Q, G, metric)
    idx = np.stack([ranked(D[i], i if exclude_self else None)[:k] for i in range(len(Q))])
    return np.take_along_axis(D, idx, axis=1), idx


def retrieval(X, y, ks, Xq=None, yq=None, metric: str = "euclidean") -> dict[str, float]:
    """Recall@K over all queries; P@1 and mAP@R over queries with R >= 1."""
    loo = Xq is None
    Xq, yq = (X, y) if loo else (Xq, yq)
    D = distance_matrix(Xq, X, metric)
    hits = {k: [] for k in ks}
    p1, aps = [], []
    for i in range(len(Xq)):
        order = ranked(D[i], i if loo else None)
        rel = np.asarray([y[j] == yq[i] for j in order])
        R = int(rel.sum())
        for k in ks:
            hits[k].append(bool(rel[:k].any()))
        if R == 0:
            continue
        p1.append(bool(rel[0]))
        ap = 0.0
        for pos in range(1, R + 1):
            if rel[pos - 1]:
                ap += rel[:pos].sum() / pos
        aps.append(ap / R)
    out = {f"recall@{k}": float(np.mean(hits[k])) for k in ks}
    out["precision@1"] = float(np.mean(p1))
    out["map@r"] = float(np.mean(aps))
    return out


def cmc(P, pid, G, gid, metric: str = "euclidean") -> np.ndarray:
    """curve[r-1] = fraction of probes whose first same-identity item has rank <= r."""
    D = distance_matrix(P, G, metric)
    first = []
    for i in range(len(P)):
        order = ranked(D[i])
        first.append(next(pos for pos, j in enumerate(order, 1) if gid[j] == pid[i]))
    first = np.asarray(first)
    return np.asarray([np.mean(first <= r) for r in range(1, len(G) + 1)])


def pairwise_f1(t, p) -> float:
    """Count every unordered pair explicitly."""
    tp = same_cluster = same_class = 0
    n = len(t)
    for i in range(n):
        for j in range(i + 1, n):
            a, b = t[i] == t[j], p[i] == p[j]
            tp += a and b
            same_class += a
            same_cluster += b
    precision = tp / same_cluster if same_cluster else 0.0
    recall = tp / same_class
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def integer_data(rng, n: int, d: int = 3, low: int = -2, high: int = 3) -> np.ndarray:
    """Small integers: every distance is exact in float32, and ties are frequent."""
    return rng.integers(low, high, size=(n, d)).astype(np.float32)


def axis_data(rng, n: int, d: int = 3) -> np.ndarray:
    """Multiples of ± unit axis vectors and zeros: cosine scores are exact and tie often."""
    X = np.zeros((n, d), dtype=np.float32)
    axes = rng.integers(0, d, n)
    X[np.arange(n), axes] = rng.choice([-2.0, -1.0, 1.0, 3.0], n)
    X[rng.random(n) < 0.1] = 0.0
    return X
