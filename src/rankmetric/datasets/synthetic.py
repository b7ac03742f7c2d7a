"""Synthetic data with known structure: Gaussian clusters and SPD-matrix clusters."""

from __future__ import annotations

import numpy as np

from .._utils import make_rng

__all__ = ["make_gaussian_clusters", "make_spd_clusters"]


def make_gaussian_clusters(
    n_samples: int = 300,
    n_features: int = 10,
    n_classes: int = 3,
    n_informative: int | None = None,
    class_sep: float = 1.5,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian classes that differ only in the first ``n_informative`` features.

    Class ``c`` has mean ``class_sep · v_c`` on the informative features, where the ``v_c`` are
    distinct random vertices of the hypercube {-1, +1}^n_informative (so two class means are at
    least ``2 · class_sep`` apart), and 0 on the others; every feature has unit within-class
    variance. The remaining ``n_features - n_informative`` features are pure noise, which hurts
    the Euclidean distance and is what a learned metric should discard. Classes are balanced
    (sizes differ by at most one) and samples are shuffled.

    Parameters
    ----------
    n_samples : int, default=300
    n_features : int, default=10
    n_classes : int, default=3
    n_informative : int, optional
        Defaults to ``max(1, ceil(log2(n_classes)))``, the fewest that give distinct vertices.
    class_sep : float, default=1.5
        Half the smallest distance between two class means.
    random_state : None, int, RandomState or Generator
        Seed; the same seed gives the same data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int64
        Class codes ``0..n_classes-1``.
    """
    n_informative = _check_cluster_args(n_samples, n_features, n_classes, n_informative, class_sep)
    rng = make_rng(random_state)
    vertices = _distinct_sign_vectors(n_classes, n_informative, rng)
    y = rng.permutation(np.arange(n_samples) % n_classes)
    X = rng.standard_normal((n_samples, n_features))
    X[:, :n_informative] += class_sep * vertices[y]
    return X, y.astype(np.int64)


def _check_counts(n_samples, n_features, n_classes, class_sep, names=("n_samples", "n_features")):
    for name, value in zip(names, (n_samples, n_features)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if not isinstance(n_classes, (int, np.integer)) or not 2 <= n_classes <= n_samples:
        raise ValueError(f"n_classes must be an integer in [2, {names[0]}], got {n_classes!r}.")
    if not np.isfinite(class_sep) or class_sep < 0:
        raise ValueError(f"class_sep must be a finite number >= 0, got {class_sep!r}.")


def _check_cluster_args(n_samples, n_features, n_classes, n_informative, class_sep) -> int:
    _check_counts(n_samples, n_features, n_classes, class_sep)
    if n_informative is None:
        n_informative = min(n_features, max(1, int(np.ceil(np.log2(n_classes)))))
    if not isinstance(n_informative, (int, np.integer)) or not 1 <= n_informative <= n_features:
        raise ValueError(f"n_informative must be in [1, n_features], got {n_informative!r}.")
    if n_informative < 63 and 2**n_informative < n_classes:
        raise ValueError(
            f"n_informative={n_informative} gives only {2**n_informative} distinct class means "
            f"for n_classes={n_classes}; raise n_informative."
        )
    return int(n_informative)


def _distinct_sign_vectors(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct random rows of {-1, +1}^dim, shape (n, dim)."""
    if dim < 63:
        codes = rng.choice(2**dim, size=n, replace=False)
        bits = (codes[:, None] >> np.arange(dim)) & 1
        return 2.0 * bits - 1.0
    while True:  # 2^dim is astronomically larger than n: a collision is practically impossible
        signs = rng.choice([-1.0, 1.0], size=(n, dim))
        if len(np.unique(signs, axis=0)) == n:
            return signs


def make_spd_clusters(
    n_matrices: int = 200,
    n_channels: int = 4,
    n_classes: int = 3,
    class_sep: float = 1.0,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Classes of SPD matrices scattered around class means (a wrapped Gaussian per class).

    Class means are ``M_c = expm(class_sep · A_c)`` and samples ``X = M_c^½ expm(T) M_c^½``, with
    ``A_c`` and ``T`` random symmetric matrices of expected squared Frobenius norm 1 (so the
    affine-invariant distance of a sample from its class mean is about 1, and class means lie
    about ``class_sep · √2`` apart in the log-Euclidean sense). Classes are balanced and samples
    shuffled.

    Parameters
    ----------
    n_matrices : int, default=200
    n_channels : int, default=4
        Size ``c`` of each matrix.
    n_classes : int, default=3
    class_sep : float, default=1.0
        Spread of the class means relative to the within-class spread.
    random_state : None, int, RandomState or Generator

    Returns
    -------
    X : ndarray of shape (n_matrices, n_channels, n_channels), float64 SPD
    y : ndarray of shape (n_matrices,), int64
    """
    _check_counts(n_matrices, n_channels, n_classes, class_sep, ("n_matrices", "n_channels"))
    rng = make_rng(random_state)
    means_sqrt = _spd_function(class_sep * _random_symmetric(rng, n_classes, n_channels), 0.5)
    y = rng.permutation(np.arange(n_matrices) % n_classes)
    noise = _spd_function(_random_symmetric(rng, n_matrices, n_channels), 1.0)
    root = means_sqrt[y]
    X = root @ noise @ root
    return (X + X.transpose(0, 2, 1)) / 2.0, y.astype(np.int64)


def _random_symmetric(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """(n, c, c) symmetric Gaussian matrices with E||A||²_F = 1."""
    G = rng.standard_normal((n, c, c))
    return (G + G.transpose(0, 2, 1)) / 2.0 / np.sqrt(c * (c + 1) / 2.0)


def _spd_function(A: np.ndarray, power: float) -> np.ndarray:
    """``expm(power · A)`` for a stack of symmetric matrices, via eigh."""
    eigenvalues, vectors = np.linalg.eigh(A)
    return (vectors * np.exp(power * eigenvalues)[:, None, :]) @ vectors.transpose(0, 2, 1)
