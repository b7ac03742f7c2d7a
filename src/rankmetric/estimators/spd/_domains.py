"""Domain labels of the SPD estimators: per-domain batch normalisation (TSMNet's SPDDSMBN).

``SPDNetEmbedding.fit(X, y, domains=...)`` (with ``batchnorm=True``) trains the network's batch
normalisations with one running Riemannian mean per domain (session, subject): every training
step draws its class-balanced batch from the training matrices of *one* domain (drawn at random),
so each batch is normalised at its own domain's batch mean. ``transform(X, domains=...)``
normalises a domain seen in ``fit`` at its stored running means, and a new domain at the
Riemannian means of its own matrices, computed layer by layer
(:meth:`rankmetric.models.spdnet.SPDNet.adapt_domain`): unsupervised adaptation, which needs the
new domain's matrices together. The labels travel through scikit-learn's metadata routing as
those of :class:`~rankmetric.preprocessing.DomainRecentering`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..._validation.checks import domain_codes
from ...models.spdnet import SPDNet
from ...sampling import LabelIndex

__all__ = ["batch_drawer", "fit_domain_codes", "start_domain_statistics"]


def fit_domain_codes(
    domains, n: int, batchnorm: bool, whiten: bool
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(domain names, domain code per matrix)`` of a fit, or ``(None, None)`` without domains.

    Domains are used by the per-domain whitening (``whiten=True``) and batch normalisation
    (``batchnorm=True``); with neither they would change nothing, which raises a ``ValueError``.
    """
    if domains is None:
        return None, None
    if not (batchnorm or whiten):
        raise ValueError(
            "domains are used by the per-domain whitening (whiten=True) and batch "
            "normalisation (batchnorm=True); with neither they would change nothing."
        )
    return domain_codes(domains, n)


def batch_drawer(
    train_idx: np.ndarray,
    codes: np.ndarray,
    domains: np.ndarray | None,
    n_classes: int,
    n_per_class: int,
    rng: np.random.Generator,
) -> Callable[[], np.ndarray]:
    """A drawer of class-balanced batches of training rows (of one random domain with domains).

    Parameters
    ----------
    train_idx : int ndarray
        Training rows.
    codes : int ndarray of shape (n_samples,)
        Class code of every row.
    domains : int ndarray of shape (n_samples,) or None
        Domain code of every row.
    n_classes, n_per_class : int
        The batch: ``n_per_class`` samples of each of ``n_classes`` classes (fewer classes when
        the domain has fewer).
    rng : numpy.random.Generator

    Returns
    -------
    callable
        ``draw() -> rows`` (indices into the full data); with ``domains``, all of one domain,
        drawn uniformly among the training domains with a class of two samples or more.
    """
    if domains is None:
        index = LabelIndex.from_codes(codes[train_idx])
        return lambda: train_idx[index.class_balanced_batch(n_classes, n_per_class, rng)]
    rows_of, index_of = [], []
    for d in np.unique(domains[train_idx]):
        rows = train_idx[domains[train_idx] == d]
        if np.bincount(codes[rows]).max() >= 2:
            rows_of.append(rows)
            index_of.append(LabelIndex.from_codes(codes[rows]))
    if not rows_of:
        raise ValueError("no training domain has two matrices of one class.")

    def draw() -> np.ndarray:
        k = int(rng.integers(len(rows_of)))
        return rows_of[k][index_of[k].class_balanced_batch(n_classes, n_per_class, rng)]

    return draw


def start_domain_statistics(
    net: SPDNet, X: torch.Tensor, rows: np.ndarray, domains: np.ndarray, names: np.ndarray
) -> None:
    """Start every domain's running means at the Riemannian means of its training matrices.

    Layer by layer (:meth:`~rankmetric.models.spdnet.SPDNet.adapt_domain`), so the untrained
    network (step 0, and ``max_iter=0``) already centres each domain at its own mean, as a new
    domain is centred at ``transform`` time.

    Parameters
    ----------
    net : SPDNet
        With ``n_domains = len(names)``.
    X : tensor of shape (n_samples, c, c)
        The (whitened) matrices.
    rows : int ndarray
        The training rows.
    domains : int ndarray of shape (n_samples,)
        Domain code of every row.
    names : ndarray
        The domain labels (for the error message).
    """
    counts = np.bincount(domains[rows], minlength=len(names))
    if counts.min() < 2:
        raise ValueError(
            f"domain {names[int(np.argmin(counts))]!r} has fewer than 2 training matrices: its "
            "batch normalisation statistics cannot be estimated."
        )
    for d in range(len(names)):
        net.adapt_domain(X[rows[domains[rows] == d]], d)
