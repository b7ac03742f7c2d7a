"""k-means for the clustering scores: the project's own on torch (chunked), or faiss / scikit-learn.

``"torch"`` runs greedy k-means++ seeding (as scikit-learn: ``2 + ⌊ln k⌋`` candidates per
centre, the one that lowers the inertia most is kept) and Lloyd iterations whose assignment is
one matrix product per chunk of points (``‖c‖² − 2 xᵀc``, no n × k × d temporary); after the
first iterations, when few centres still move, an assignment scores only the centres that moved
(and all of them for the points whose own centre moved), which gives the labels of a full
assignment (up to the last bit of exact ties between coinciding centres); an empty cluster is
moved to the point farthest from its centre. It stops when the centres move less
than ``tol`` times the mean per-feature variance (scikit-learn's rule) or after ``max_iter``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._distances import partial_squared_euclidean, squared_euclidean_in_place
from .._utils import make_rng, torch_generator
from .._validation import check_option
from ..neighbors import faiss_available, squared_norms
from ._inputs import check_int

BACKENDS = ("torch", "faiss", "sklearn")
_CHUNK_BYTES = 64 * 2**20


def check_backend(backend: str) -> str:
    check_option("kmeans", backend, BACKENDS)
    if backend == "faiss":
        if not faiss_available():
            raise ValueError("kmeans='faiss' needs the faiss package; use kmeans='torch'.")
    return backend


def _nearest(X: torch.Tensor, C: torch.Tensor):
    """Each point's nearest centre and its score ``‖c‖² − 2 xᵀc`` there (the squared distance
    less ``‖x‖²``), chunk by chunk; ties go to the lower centre index."""
    n, k = X.shape[0], C.shape[0]
    labels = torch.empty(n, dtype=torch.int64, device=X.device)
    best = torch.empty(n, dtype=X.dtype, device=X.device)
    step = max(1, _CHUNK_BYTES // (4 * max(k, 1)))
    for start in range(0, n, step):  # loop over chunks of points
        part = partial_squared_euclidean(X[start : start + step], C)  # ‖c‖² − 2 xᵀc
        if part.device.type == "cpu":  # NumPy's argmin is about twice torch's min here
            idx = torch.from_numpy(part.numpy().argmin(axis=1))
            best[start : start + step] = part.gather(1, idx.unsqueeze(1)).squeeze(1)
        else:
            best[start : start + step], idx = part.min(dim=1)
        labels[start : start + step] = idx
    return labels, best


def _reassign(X, C: torch.Tensor, new: torch.Tensor, labels: torch.Tensor, own: torch.Tensor):
    """The nearest centres among ``new`` given those among ``C`` (``labels``, scores ``own``),
    scoring only what changed: a point whose centre stayed keeps it unless a centre that moved
    now scores lower (ties: the lower index); a point whose centre moved is scored anew."""
    moved = (new != C).any(dim=1).nonzero().squeeze(1)
    if 2 * moved.numel() > C.shape[0]:  # most centres moved: one full assignment is cheaper
        return _nearest(X, new)
    stale = torch.isin(labels, moved).nonzero().squeeze(1)
    labels, own = labels.clone(), own.clone()
    if moved.numel():
        cand, score = _nearest(X, new[moved])
        cand = moved[cand]
        take = (score < own) | ((score == own) & (cand < labels))
        labels = torch.where(take, cand, labels)
        own = torch.where(take, score, own)
    if stale.numel():
        labels[stale], own[stale] = _nearest(X[stale], new)
    return labels, own


def _seed(X: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """Greedy k-means++ centres (rows of ``X``)."""
    n = X.shape[0]
    trials = 2 + int(math.log(k))
    first = int(torch.randint(n, (1,), generator=gen, device=X.device))
    centres = [first]
    closest = squared_euclidean_in_place(X, X[first : first + 1]).squeeze(1)
    for _ in range(1, k):  # loop over centres (k), vectorised over points
        weights = closest.double()
        total = float(weights.sum())
        if total <= 0.0:  # fewer distinct points than clusters: any unused point
            candidates = torch.randint(n, (trials,), generator=gen, device=X.device)
        else:
            candidates = torch.multinomial(weights / total, trials, replacement=True, generator=gen)
        cand = X[candidates]
        to_cand = squared_euclidean_in_place(X, cand)
        merged = torch.minimum(closest.unsqueeze(1), to_cand)
        best = int(merged.double().sum(dim=0).argmin())
        centres.append(int(candidates[best]))
        closest = merged[:, best].contiguous()
    return X[torch.as_tensor(centres, device=X.device)].clone()


def _lloyd(X, x_sq, C, max_iter: int, tol: float):
    """Lloyd iterations; each assignment scores only the centres that moved (and every centre
    for the points whose own centre moved), which gives the labels of a full assignment."""
    n, k = X.shape[0], C.shape[0]
    labels, own = _nearest(X, C)
    previous = None
    for _ in range(max_iter):  # loop over iterations
        if previous is not None and torch.equal(labels, previous):
            break  # no point changed cluster: the centres are final (scikit-learn's rule)
        previous = labels
        sums = torch.zeros((k, X.shape[1]), dtype=X.dtype, device=X.device)
        sums.index_add_(0, labels, X)
        counts = torch.bincount(labels, minlength=k)
        empty = (counts == 0).nonzero().squeeze(1)
        if empty.numel():  # move each empty cluster to one of the farthest points
            far = torch.topk((own + x_sq).clamp_(min=0.0), min(int(empty.numel()), n)).indices
            sums[empty[: far.numel()]] = X[far]
            counts[empty[: far.numel()]] = 1
        new = sums / counts.clamp(min=1).unsqueeze(1).to(X.dtype)
        shift = float((new - C).double().square().sum())
        if shift <= tol:
            C = new
            break
        labels, own = _reassign(X, C, new, labels, own)
        C = new
    labels, own = _nearest(X, C)
    return labels, float((own + x_sq).clamp_(min=0.0).double().sum())


def kmeans_labels(
    X: torch.Tensor, n_clusters: int, *, n_init: int = 1, random_state=0, backend="torch",
    max_iter: int = 300, tol: float = 1e-4,
) -> np.ndarray:  # fmt: skip
    """Cluster labels of the rows of ``X`` (the best inertia over ``n_init`` restarts)."""
    n_init = check_int(n_init, "n_init")
    backend = check_backend(backend)
    if backend == "sklearn":
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=int(n_clusters), n_init=n_init, random_state=random_state)
        return km.fit_predict(X.detach().cpu().numpy())
    rng = make_rng(random_state)
    if backend == "faiss":
        try:
            import faiss
        except ImportError:  # check_backend asked first; a broken install still says what
            raise ImportError("kmeans='faiss' needs faiss: pip install faiss-cpu") from None

        data = np.ascontiguousarray(X.detach().cpu().numpy(), dtype=np.float32)
        km = faiss.Kmeans(
            data.shape[1], int(n_clusters), niter=max_iter if max_iter < 100 else 100,
            nredo=n_init, seed=int(rng.integers(0, 2**31 - 1)), verbose=False,
        )  # fmt: skip
        km.train(data)
        return km.index.search(data, 1)[1].ravel().astype(np.int64)
    Xt = X.detach()  # float32 or float64: the evaluation functions' embeddings
    x_sq = squared_norms(Xt)
    threshold = tol * float(Xt.double().var(dim=0).mean()) if Xt.shape[0] > 1 else 0.0
    gen = torch_generator(rng, Xt.device)
    best_labels, best_inertia = None, math.inf
    for _ in range(n_init):  # loop over restarts
        centres = _seed(Xt, int(n_clusters), gen)
        labels, inertia = _lloyd(Xt, x_sq, centres, max_iter, threshold)
        if inertia < best_inertia:
            best_labels, best_inertia = labels, inertia
    return best_labels.cpu().numpy()
