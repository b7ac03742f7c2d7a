"""Verification metrics: ROC curve, ROC AUC, equal error rate and TAR at fixed FAR.

A verification task asks, for a pair of items, "same identity or not?". A learned metric answers
with a distance ``d`` (lower = more alike) and a threshold ``t``: the pair is *accepted* as
"same" when ``d ≤ t``. Over a set of pairs with flags ``same``,

    TAR(t) = #{same pairs with d ≤ t} / #{same pairs}        (true accept rate, = TPR)
    FAR(t) = #{different pairs with d ≤ t} / #{different pairs}   (false accept rate, = FPR)

and ``FRR(t) = 1 − TAR(t)``. The ROC curve is the set of ``(FAR(t), TAR(t))`` over every
threshold, from ``t = −∞`` (accept nothing: (0, 0)) to ``t = max d`` (accept all: (1, 1)); tied
distances move together, so the curve has one point per distinct distance. This is
scikit-learn's ``roc_curve`` with the score ``−d`` (its thresholds are ``−t``).

- ``roc_auc``: the area under that piecewise-linear curve (ties count one half: the probability
  that a random same pair is closer than a random different pair, plus half the probability of a
  tie), equal to scikit-learn's ``roc_auc_score(same, −d)``.
- ``eer``: the equal error rate, where ``FAR = FRR`` on the piecewise-linear ROC curve (linear
  interpolation between the two operating points around the crossing; exact when an operating
  point has ``FAR = FRR``).
- ``tar_at_far[f]``: the highest TAR of an operating point with ``FAR ≤ f`` (no interpolation:
  a threshold that achieves it exists), with the smallest threshold that achieves it. When
  ``f < 1 / #different pairs`` the only such point has ``FAR = 0``.

Everything comes from one sort of the distances: O(n log n) time, and on top of the inputs at
most about 40 bytes per *distinct* distance (int64 counts and float64 thresholds of every
operating point, and one temporary) and 17 bytes per pair while sorting (the permutation, the
sorted distances and flags): 20 million distinct distances take under 1 GB, and tied
(quantised) distances much less. The curve is returned without collinear points, as
scikit-learn's ``drop_intermediate=True`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real

import numpy as np
import torch

from .._distances import paired_squared_euclidean
from .._utils import make_rng
from .._validation import Interval, check_finite, check_labels, check_param
from ._inputs import check_int

__all__ = [
    "roc_curve_from_distances",
    "verification_scores",
    "labelled_pairs",
    "labelled_verification_scores",
]

#: Rows of the embedding compared at once by :func:`labelled_pairs` (all pairs).
PAIR_BLOCK_ELEMENTS = 1 << 22
#: Bytes per pair of :func:`labelled_pairs`' result (i, j, distance, same) and of scoring them
#: (:func:`verification_scores`' sort order, sorted distances and flags, cumulative counts).
_PAIR_BYTES, _SCORE_BYTES = 25, 49


def _check_pair_memory(n: int, n_pairs: int, per_pair: int, what: str) -> None:
    """Refuse, before any allocation, ``n_pairs`` pairs of ``n`` items the budget cannot hold."""
    from ..resources import check_memory, format_bytes, memory_budget

    budget = memory_budget().bytes
    fits = max(1, (budget or 0) // (2 * per_pair)) if budget else None
    hint = f" (about {fits:,} fit in half the budget)" if fits else ""
    check_memory(
        n_pairs * per_pair,
        f"{what} of all {n_pairs:,} pairs of {n:,} items (about {per_pair} bytes a pair)",
        f"Pass max_pairs= to score a uniform sample of pairs{hint}; "
        f"10,000,000 pairs need about {format_bytes(10**7 * per_pair)}.",
    )


def _as_array(x) -> np.ndarray:
    return np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x)


def _check_inputs(distances, same) -> tuple[np.ndarray, np.ndarray]:
    d, s = _as_array(distances), _as_array(same)
    if d.ndim != 1:
        raise ValueError(f"distances must have shape (n_pairs,), got {d.shape}.")
    if not np.issubdtype(d.dtype, np.number) or np.iscomplexobj(d):
        raise ValueError(f"distances must hold real numbers, got dtype {d.dtype}.")
    if s.shape != d.shape:
        raise ValueError(f"same must have shape {d.shape} (one flag per pair), got {s.shape}.")
    if s.dtype != bool:
        values = np.unique(s)
        if not (np.issubdtype(s.dtype, np.number) and np.isin(values, (0, 1)).all()):
            if np.issubdtype(s.dtype, np.number) and np.isin(values, (-1, 1)).all():
                s = s > 0
            else:
                raise ValueError(
                    "same must hold booleans, 0/1 or -1/+1 flags (same identity or not), got "
                    f"values {values[:5].tolist()}."
                )
        s = s.astype(bool)
    d = d.astype(np.float64, copy=False)
    check_finite(d, "distances")
    n_same = int(np.count_nonzero(s))
    if n_same == 0 or n_same == s.shape[0]:
        raise ValueError(
            "verification needs both same and different pairs, got "
            f"{n_same} same and {s.shape[0] - n_same} different."
        )
    return d, s


def _operating_points(d: np.ndarray, s: np.ndarray):
    """Cumulative accepted same / different counts at each distinct distance (ascending).

    Returns ``(tp, fp, thresholds)``, each with the point "accept nothing" (``t = −∞``) first.
    Temporaries are freed as soon as they are used (see the module docstring for the peak).
    """
    order = np.argsort(d, kind="stable")
    d_sorted = d[order]
    s_sorted = s[order]
    del order
    last = np.empty(d_sorted.shape[0], dtype=bool)  # last position of each run of tied distances
    np.not_equal(d_sorted[1:], d_sorted[:-1], out=last[:-1])
    last[-1] = True
    ends = np.flatnonzero(last)
    del last
    m = ends.shape[0] + 1
    thresholds = np.empty(m)
    thresholds[0] = -np.inf
    np.take(d_sorted, ends, out=thresholds[1:])
    del d_sorted
    cum = np.cumsum(s_sorted, dtype=np.int64)
    del s_sorted
    tp = np.zeros(m, dtype=np.int64)
    np.take(cum, ends, out=tp[1:])
    del cum
    fp = np.zeros(m, dtype=np.int64)
    np.add(ends, 1, out=fp[1:])
    fp[1:] -= tp[1:]
    return tp, fp, thresholds


def _drop_collinear(fp: np.ndarray, tp: np.ndarray) -> np.ndarray:
    """Indices of the points kept by scikit-learn's ``drop_intermediate=True``."""
    if fp.shape[0] <= 2:
        return np.arange(fp.shape[0])
    turn = np.ones(fp.shape[0], dtype=bool)  # keep a point where the curve changes direction
    step = np.diff(fp)
    np.not_equal(step[1:], step[:-1], out=turn[1:-1])
    step = np.diff(tp)
    turn[1:-1] |= step[1:] != step[:-1]
    del step
    return np.flatnonzero(turn)


def roc_curve_from_distances(
    distances, same, *, drop_intermediate: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The verification ROC curve ``(FAR, TAR, thresholds)`` of distances (lower = more alike).

    Parameters
    ----------
    distances : array-like or tensor of shape (n_pairs,)
        Distance of each pair; a pair is accepted as "same" when ``distance ≤ threshold``.
    same : array-like of shape (n_pairs,)
        ``True`` (or 1, or +1) for a pair of the same identity.
    drop_intermediate : bool, default=True
        Drop the points that lie on a straight segment between their neighbours (as
        scikit-learn's ``roc_curve``); the curve and its area do not change.

    Returns
    -------
    far, tar : ndarray of shape (n_points,)
        False and true accept rates, increasing, from (0, 0) to (1, 1).
    thresholds : ndarray of shape (n_points,)
        The distance threshold of each point (``-inf`` for the first: accept nothing). Equal to
        minus the thresholds of ``sklearn.metrics.roc_curve(same, -distances)``.

    See Also
    --------
    rankmetric.evaluate.verification_scores : AUC, EER and TAR at given FARs of the curve.

    Examples
    --------
    >>> far, tar, t = roc_curve_from_distances([0.1, 0.4, 0.35, 0.8], [1, 0, 1, 0])
    >>> far.tolist(), tar.tolist()
    ([0.0, 0.0, 1.0], [0.0, 1.0, 1.0])
    """
    d, s = _check_inputs(distances, same)
    tp, fp, thresholds = _operating_points(d, s)
    if drop_intermediate:
        keep = _drop_collinear(fp, tp)
        tp, fp, thresholds = tp[keep], fp[keep], thresholds[keep]
    return fp / fp[-1], tp / tp[-1], thresholds


def _area(fp: np.ndarray, tp: np.ndarray) -> float:
    """Trapezoid area under the step counts, exact in int64 arithmetic, then normalised."""
    n_diff, n_same = int(fp[-1]), int(tp[-1])
    heights = tp[1:] + tp[:-1]
    if 2 * n_diff * n_same < 2**62:  # Σ Δfp·(tp₋ + tp) ≤ 2·N·P: no overflow
        twice = int(np.dot(np.diff(fp), heights))
    else:  # pragma: no cover - beyond 10⁹ × 10⁹ pairs
        twice = float(np.dot(np.diff(fp).astype(np.float64), heights.astype(np.float64)))
    return float(twice / 2.0 / (float(n_diff) * float(n_same)))


def _eer(tp: np.ndarray, fp: np.ndarray, thresholds: np.ndarray) -> tuple[float, float]:
    """Crossing of FAR and FRR = 1 − TAR on the piecewise-linear ROC curve (from counts)."""
    n_same, n_diff = int(tp[-1]), int(fp[-1])
    # FAR − FRR = fp/N − 1 + tp/P ≥ 0  ⇔  fp·P + tp·N ≥ N·P (exact in int64)
    key = fp * n_same
    key += tp * n_diff
    k = int(np.searchsorted(key, n_diff * n_same, side="left"))  # first point with FAR ≥ FRR
    del key
    far = fp[k - 1 : k + 1] / n_diff
    gap = far - (1.0 - tp[k - 1 : k + 1] / n_same)
    if gap[-1] == 0.0 or k == 0:
        return float(fp[k] / n_diff), float(thresholds[k])
    w = -gap[0] / (gap[1] - gap[0])
    return float(far[0] + w * (far[1] - far[0])), float(thresholds[k])


def _check_far(far) -> tuple[float, ...]:
    values = (far,) if isinstance(far, Real) else tuple(far)
    for f in values:
        check_param("far", f, [Interval(Real, 0, 1, closed="right")])
    return tuple(float(f) for f in values)


def verification_scores(
    distances,
    same,
    far: float | Iterable[float] = (1e-1, 1e-2, 1e-3, 1e-4),
) -> dict:
    """ROC AUC, equal error rate and TAR at given FARs of a verification task.

    Definitions in the module docstring; distances are lower for more alike pairs. Exact (one
    sort, no binning), vectorised; peak memory about 40 bytes per distinct distance on top of
    the inputs (module docstring).

    Parameters
    ----------
    distances : array-like or tensor of shape (n_pairs,)
        Distance of each pair (any real numbers; a learned metric's distance, or minus a
        similarity).
    same : array-like of shape (n_pairs,)
        ``True`` (or 1, or +1) when the pair shows the same identity; both kinds must occur.
    far : float or iterable of floats in (0, 1], default=(1e-1, 1e-2, 1e-3, 1e-4)
        False accept rates at which the TAR is reported.

    Returns
    -------
    dict
        ``"roc_auc"`` (float), ``"eer"`` (float), ``"eer_threshold"`` (the distance threshold of
        the first operating point with FAR ≥ FRR), ``"tar_at_far"`` (``{f: (TAR, threshold)}``,
        accept when ``distance ≤ threshold``), ``"roc"`` (``{"far", "tar", "thresholds"}`` as
        :func:`roc_curve_from_distances` returns them), ``"n_same"``, ``"n_different"``.

    See Also
    --------
    rankmetric.evaluate.roc_curve_from_distances : The ROC curve these scores summarise.
    rankmetric.evaluate.labelled_verification_scores : The same over the pairs of a labelled set.
    rankmetric.PairClassifier : A thresholded classifier of pairs.

    Examples
    --------
    >>> s = verification_scores([0.1, 0.4, 0.35, 0.8], [1, 0, 1, 0], far=(0.5,))
    >>> s["roc_auc"], s["eer"], s["tar_at_far"][0.5]
    (1.0, 0.0, (1.0, 0.35))
    """
    rates = _check_far(far)
    d, s = _check_inputs(distances, same)
    tp, fp, thresholds = _operating_points(d, s)
    n_same, n_diff = int(tp[-1]), int(fp[-1])
    auc = _area(fp, tp)
    eer, eer_threshold = _eer(tp, fp, thresholds)
    tar_at = {}
    for f in rates:
        # points are sorted by FAR and TAR both; the last one with FAR ≤ f has the highest TAR
        k = int(np.searchsorted(fp, np.floor(f * n_diff + 1e-9), side="right")) - 1
        k = int(np.searchsorted(tp, tp[k], side="left"))  # the lowest FAR with that TAR
        tar_at[f] = (float(tp[k] / n_same), float(thresholds[k]))
    keep = _drop_collinear(fp, tp)  # the returned curve only; rates above use every point
    far_curve, tar_curve, thresholds = fp[keep] / n_diff, tp[keep] / n_same, thresholds[keep]
    return {
        "roc_auc": auc,
        "eer": eer,
        "eer_threshold": eer_threshold,
        "tar_at_far": tar_at,
        "roc": {"far": far_curve, "tar": tar_curve, "thresholds": thresholds},
        "n_same": n_same,
        "n_different": n_diff,
    }


def _as_points(embeddings) -> np.ndarray:
    E = _as_array(embeddings)
    if E.ndim != 2 or E.shape[0] < 2:
        raise ValueError(f"embeddings must have shape (n_samples >= 2, n_features), got {E.shape}.")
    E = E.astype(np.float64, copy=False)
    check_finite(E, "embeddings")
    return E


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of ``n`` items in row-major order, without ``triu_indices``' n × n
    mask: 24 bytes a pair at the peak, 16 returned."""
    rows = np.arange(n, dtype=np.int64)
    counts = n - 1 - rows
    i = np.repeat(rows, counts)
    j = np.arange(i.shape[0], dtype=np.int64)
    j -= np.repeat(np.cumsum(counts) - counts - rows - 1, counts)  # row r starts at j = r + 1
    return i, j


def _triangle_rows(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major position ``k`` among the pairs ``i < j`` of ``n`` items → ``(i, j)``."""
    # pairs before row i: i·n − i(i+1)/2; invert with the quadratic formula, then fix rounding
    i = np.floor((2 * n - 1 - np.sqrt((2.0 * n - 1) ** 2 - 8.0 * k)) / 2).astype(np.int64)
    before = lambda r: r * n - r * (r + 1) // 2  # noqa: E731
    i = np.where(before(i) > k, i - 1, i)
    i = np.where(before(i + 1) <= k, i + 1, i)
    j = k - before(i) + i + 1
    return i, j


def labelled_pairs(
    embeddings,
    labels,
    *,
    max_pairs: int | None = None,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Euclidean distances of all (or a seeded sample of) pairs ``i < j`` of a labelled set.

    Parameters
    ----------
    embeddings : array-like or tensor of shape (n_samples, n_features)
        Points in the space of the learned metric (``estimator.transform(X)``), so that the
        Euclidean distance there is the learned distance.
    labels : array-like of shape (n_samples,)
        Identities; a pair is "same" when its two labels are equal.
    max_pairs : int, optional
        Draw this many distinct pairs uniformly (without replacement) instead of all
        ``n (n − 1) / 2``; ``None`` takes them all (memory: about 33 bytes per pair returned).
    random_state : int, Generator or None
        Seed of the draw.

    Returns
    -------
    i, j : ndarray of shape (n_pairs,), int64
        The pairs, ``i < j``, in row-major order.
    distances : ndarray of shape (n_pairs,), float64
    same : ndarray of shape (n_pairs,), bool

    See Also
    --------
    rankmetric.evaluate.labelled_verification_scores : The verification scores of these pairs.
    rankmetric.losses.all_pairs : The index pairs of a batch, as tensors.

    Examples
    --------
    >>> i, j, d, same = labelled_pairs([[0.0], [1.0], [3.0]], [0, 0, 1])
    >>> d.tolist(), same.tolist()
    ([1.0, 3.0, 2.0], [True, False, False])
    """
    E = _as_points(embeddings)
    n = E.shape[0]
    labels = np.asarray(labels)
    _, codes = check_labels(labels, n, min_classes=1)
    total = n * (n - 1) // 2
    if max_pairs is None or max_pairs >= total:
        k = None
    else:
        max_pairs = check_int(max_pairs, "max_pairs")
        k = np.sort(make_rng(random_state).choice(total, size=max_pairs, replace=False))
    if k is None:
        _check_pair_memory(n, total, _PAIR_BYTES, "labelled_pairs")
        i, j = _all_pairs(n)
    else:
        i, j = _triangle_rows(k.astype(np.int64), n)
    distances = np.empty(i.shape[0], dtype=np.float64)
    step = max(1, PAIR_BLOCK_ELEMENTS // max(E.shape[1], 1))
    for start in range(0, i.shape[0], step):  # pair chunks: memory O(step · n_features)
        sl = slice(start, start + step)
        distances[sl] = np.sqrt(paired_squared_euclidean(E[i[sl]], E[j[sl]]))
    return i, j, distances, codes[i] == codes[j]


# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def labelled_verification_scores(
    embeddings,
    labels,
    *,
    far: float | Iterable[float] = (1e-1, 1e-2, 1e-3, 1e-4),
    max_pairs: int | None = None,
    random_state=None,
) -> dict:
    """:func:`verification_scores` over all (or sampled) pairs of a labelled set.

    Parameters
    ----------
    embeddings : array-like or tensor of shape (n_samples, n_features)
        ``estimator.transform(X)`` (the learned metric is Euclidean there) or raw features.
    labels : array-like of shape (n_samples,)
    far : float or iterable of floats, default=(1e-1, 1e-2, 1e-3, 1e-4)
    max_pairs : int, optional
        Score a uniform sample of this many pairs (seeded by ``random_state``) instead of all.
    random_state : int, Generator or None

    Returns
    -------
    dict
        As :func:`verification_scores`.

    See Also
    --------
    rankmetric.evaluate.labelled_pairs : The pairs and distances it scores.
    rankmetric.evaluate.verification_scores : The same scores of given distances.

    Examples
    --------
    >>> s = labelled_verification_scores([[0.0], [0.1], [5.0], [5.2]], [0, 0, 1, 1])
    >>> s["roc_auc"], s["n_same"], s["n_different"]
    (1.0, 2, 4)
    """
    n = len(embeddings)
    total = n * (n - 1) // 2
    if max_pairs is None or (isinstance(max_pairs, Integral) and max_pairs >= total):
        _check_pair_memory(n, total, _PAIR_BYTES + _SCORE_BYTES, "labelled_verification_scores")
    _, _, d, same = labelled_pairs(
        embeddings, labels, max_pairs=max_pairs, random_state=random_state
    )
    return verification_scores(d, same, far=far)
