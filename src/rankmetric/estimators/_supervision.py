"""Weak supervision: pairs and triplets, in one call convention for every learner.

The convention (``docs/pairs.md`` is its user-facing page) has two equivalent forms:

* **indices into X**: ``est.fit_pairs(X, pairs, y)`` with ``X`` of shape (n_samples, n_features),
  ``pairs`` an int array of shape (n_pairs, 2) of row indices into ``X`` and ``y`` of shape
  (n_pairs,); ``est.fit_triplets(X, triplets)`` with ``triplets`` of shape (n_triplets, 3):
  (anchor, positive, negative), "the anchor is closer to the positive than to the negative".
* **stacked points** (metric-learn's layout): ``est.fit_pairs(pairs, y)`` with ``pairs`` a float
  array of shape (n_pairs, 2, n_features), and ``est.fit_triplets(triplets)`` with shape
  (n_triplets, 3, n_features). The points are de-duplicated (identical rows become one item), so
  both forms give the same fit.

``y`` holds pair labels, ``+1`` similar and ``−1`` dissimilar (``1``/``0`` and booleans are
accepted), for ITML, KISSME, LMNN and WARCA; real-valued similarities in ``[−1, 1]`` for SSNE.

Degenerate supervision (checked here, once for every learner):

* a pair that joins an item to itself (same index, or identical rows) carries no information: it
  is dropped, silently when it is labelled similar, with a ``UserWarning`` when it is labelled
  dissimilar (a contradiction); a triplet whose negative is its anchor or its positive is dropped
  with a warning;
* ``ValueError`` when nothing can be learned: no usable pair (or triplet) left, fewer than
  :data:`MIN_PAIRS` usable pairs, pair labels of one kind only (all similar: the metric would
  collapse; all dissimilar: nothing to pull together), or similarities that are all equal;
* ``UserWarning`` when the result is likely useless: fewer usable pairs of a kind (or triplets)
  than ``n_features``, so that directions of the space are left unconstrained.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._validation import check_finite, check_labels, check_min_per_class, check_scale
from .._validation.points import distinct_rows
from ..sampling import PairIndex

__all__ = [
    "MIN_PAIRS",
    "PairSupervision",
    "TripletSupervision",
    "check_labelled_samples",
    "check_pair_supervision",
    "check_triplet_supervision",
    "distinct_rows",
    "triplets_from_pairs",
    "pairs_from_triplets",
    "split_pairs",
]

#: The fewest usable pairs a learner accepts (with binary labels: at least one of each kind).
MIN_PAIRS = 2
#: Tolerance on ``|similarity| ≤ 1``.
_RANGE_TOL = 1e-6
#: Elements compared at once when looking for pairs of identical rows.
_CHUNK_ELEMENTS = 1 << 22


def check_labelled_samples(
    estimator, X, y, scale=None, formed: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks of ``fit(X, y)`` with class labels: parameters, data, scale and labels.

    Parameters
    ----------
    estimator : BaseEstimator
        Its parameters are validated; it gets ``n_features_in_``.
    X, y
        The samples and their class labels.
    scale : dtype, optional
        When given, magnitudes of ``X`` whose squared distances overflow (or underflow) in this
        dtype are refused (:func:`rankmetric._validation.check_scale`).
    formed : str, optional
        What two samples of a class form for the learner (``"positive pairs"``, ``"target
        neighbours"``): when given, one class at least must have two samples.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    classes : ndarray of shape (n_classes,)
    codes : ndarray of shape (n_samples,), int64
    """
    estimator._validate_params()
    X, y = validate_data(estimator, X, y, dtype=[np.float64, np.float32])
    if scale is not None:
        check_scale(X, scale)
    check_classification_targets(y)
    classes, codes = check_labels(y, X.shape[0])
    if formed is not None:
        check_min_per_class(codes, 2, what=formed)
    return X, classes, codes


@dataclass(frozen=True)
class PairSupervision:
    """Checked pairs: points, usable pairs of row indices and their targets.

    Attributes
    ----------
    X : ndarray of shape (n_points, n_features)
    a, b : ndarray of shape (n_pairs,), int64
        Row indices into ``X`` of the two ends; ``X[a] != X[b]`` row-wise.
    y : ndarray of shape (n_pairs,), float64
        ``+1`` / ``−1`` (binary labels) or similarities in ``[−1, 1]``.
    """

    X: np.ndarray
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray

    @property
    def similar(self) -> np.ndarray:
        """``y > 0``: pairs labelled similar."""
        return self.y > 0


@dataclass(frozen=True)
class TripletSupervision:
    """Checked triplets ``(anchor, positive, negative)`` of row indices into ``X``."""

    X: np.ndarray
    anchor: np.ndarray
    positive: np.ndarray
    negative: np.ndarray


def _split_call(X, tuples, y, size: int, name: str):
    """``(X, tuples, y)`` in the indices form, from either form of the convention.

    A 3-D first argument is stacked tuples (then the second argument, if any, is ``y``): its
    points become the rows of ``X``, every row in its place.
    """
    call = f"fit_{name}({name}{', y' if size == 2 else ''})"
    if np.ndim(X) == 3:
        stacked = np.asarray(X)
        if (y if size == 2 else tuples) is not None:
            raise ValueError(
                f"stacked {name} of shape (n, {size}, n_features) come without X: call {call}."
            )
        if stacked.shape[1] != size or stacked.shape[0] == 0:
            raise ValueError(
                f"stacked {name} must have shape (n_{name}, {size}, n_features) with "
                f"n_{name} > 0, got {stacked.shape}."
            )
        points = stacked.reshape(-1, stacked.shape[2])
        indices = np.arange(points.shape[0], dtype=np.int64).reshape(-1, size)
        return points, indices, tuples if size == 2 else None
    if tuples is None:
        raise ValueError(
            f"{name} missing: pass {call.replace('(', '(X, ', 1)} with row indices of shape "
            f"(n, {size}), or stacked {name} of shape (n, {size}, n_features)."
        )
    return X, tuples, y


def _points(estimator, X, tuples, size: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated points and int64 indices ``(n, size)`` into them: only the points the tuples
    use, each distinct point once, in the order they first appear, whichever form the call
    takes (so that both forms give the same fit, and no preprocessing sees other rows)."""
    flat = validate_data(estimator, X, dtype=[np.float64, np.float32])
    idx = check_indices(tuples, size, name, flat.shape[0])
    _check_fit_memory(estimator, flat, idx, name)
    # the rows used, in order of first appearance (the stacked form uses every row, in order)
    values, first_pos = np.unique(idx.ravel(), return_index=True)
    used = values[np.argsort(first_pos)]
    position = np.empty(flat.shape[0], dtype=np.int64)
    position[used] = np.arange(used.shape[0])
    idx = position[idx]
    in_order = used.shape[0] == flat.shape[0] and np.array_equal(used, np.arange(flat.shape[0]))
    rows = flat if in_order else flat[used]
    first, inverse = distinct_rows(rows)
    if first.shape[0] == rows.shape[0]:  # no duplicate points: no copy
        return rows, idx
    return rows[first], inverse[idx].astype(np.int64)


def _check_fit_memory(estimator, flat: np.ndarray, idx: np.ndarray, name: str) -> None:
    """Refuse, before any work, a fit whose points the memory budget cannot hold twice more.

    Counted: the points the tuples use (at most ``idx.size``) in float64, once for a copy of the
    distinct points and once for the learner's working copy (its PCA input, or the pairs'
    differences), and 24 bytes a point for their de-duplication; what the caller already holds
    is not counted. Every learner of the convention needs at least that much.
    """
    from ..resources import check_memory

    points = min(flat.shape[0], idx.size)
    need = points * (2 * 8 * flat.shape[1] + 24)
    check_memory(
        need,
        f"{type(estimator).__name__}'s fit on {idx.shape[0]:,} {name} ({points:,} points of "
        f"{flat.shape[1]:,} features: a copy of the distinct points, the learner's working copy "
        "and their de-duplication)",
        f"Fit on a sample of the {name}, or reduce the features first.",
    )


def check_indices(tuples, size: int, name: str, n: int, rows_of: str = "X") -> np.ndarray:
    """Row indices of the indices form, checked: int64 of shape (n_tuples, size) in [0, n)
    (the rows of ``rows_of``, as the message names them)."""
    idx = np.asarray(tuples)
    if idx.ndim != 2 or idx.shape[1] != size:
        raise ValueError(f"{name} must have shape (n_{name}, {size}), got {idx.shape}.")
    if idx.shape[0] == 0:
        raise ValueError(f"{name} is empty.")
    if not np.issubdtype(idx.dtype, np.integer):
        if not (np.issubdtype(idx.dtype, np.floating) and np.all(idx == np.round(idx))):
            raise ValueError(f"{name} must hold integer row indices, got dtype {idx.dtype}.")
    idx = idx.astype(np.int64)
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(
            f"{name[:-1]} indices must lie in [0, {n}) (rows of {rows_of}), got values in "
            f"[{idx.min()}, {idx.max()}]."
        )
    return idx


def _same_rows(X: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X[a] == X[b]`` row-wise (or ``a == b``), in chunks of bounded memory."""
    same = a == b
    step = max(1, _CHUNK_ELEMENTS // max(X.shape[1], 1))
    for start in range(0, a.shape[0], step):  # chunks of pairs, vectorised inside
        sl = slice(start, start + step)
        same[sl] |= np.all(X[a[sl]] == X[b[sl]], axis=1)
    return same


def _binary_targets(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) (one label per pair), got {y.shape}.")
    if y.dtype == bool:
        return np.where(y, 1.0, -1.0)
    if not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"pair labels y must be +1 (similar) or -1 (dissimilar), got {y.dtype}.")
    check_finite(y.astype(np.float64), "y")
    values = np.unique(y)
    if np.isin(values, (-1, 1)).all():
        return y.astype(np.float64)
    if np.isin(values, (0, 1)).all():
        return np.where(y > 0, 1.0, -1.0)
    raise ValueError(
        "pair labels y must be +1 (similar) or -1 (dissimilar) (or 1/0), got values "
        f"{values[:5].tolist()}."
    )


def check_similarity_targets(y, n: int, name: str = "similarities") -> np.ndarray:
    """One similarity in [-1, 1] per pair (clipped to it after the check), float64."""
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one per pair), got {y.shape}.")
    check_finite(y, name)
    if np.abs(y).max() > 1 + _RANGE_TOL:
        raise ValueError(
            f"{name} must lie in [-1, 1] (the range of a dot product of unit vectors), got "
            f"values in [{y.min():.6g}, {y.max():.6g}]."
        )
    return np.clip(y, -1.0, 1.0)


#: ``targets`` of :func:`check_pair_supervision`: ``check(y, n_pairs) -> float64 targets``.
_TARGETS = {"binary": _binary_targets, "similarity": check_similarity_targets}


def check_pair_supervision(
    estimator,
    X,
    pairs=None,
    y=None,
    *,
    targets: str = "binary",
) -> PairSupervision:
    """Validate pair supervision given in either form of the convention.

    Parameters
    ----------
    estimator : BaseEstimator
        Gets ``n_features_in_`` (through scikit-learn's ``validate_data``).
    X, pairs, y
        ``(X, pairs, y)`` with row indices, or ``(pairs, y)`` with stacked pairs in ``X``'s place.
    targets : {"binary", "similarity"}
        ``y`` as ±1 labels or as similarities in ``[−1, 1]``.

    Returns
    -------
    PairSupervision
        The usable pairs (self-pairs dropped), after the degenerate-supervision checks of the
        module docstring.
    """
    X, pairs, y = _split_call(X, pairs, y, 2, "pairs")
    X, idx = _points(estimator, X, pairs, 2, "pairs")
    if y is None:
        raise ValueError("y missing: one label (or similarity) per pair.")
    t = _TARGETS[targets](y, idx.shape[0])
    a, b = idx[:, 0], idx[:, 1]
    self_pair = _same_rows(X, a, b)
    contradictory = int(np.count_nonzero(self_pair & (t < 1)))
    if contradictory:
        warnings.warn(
            f"{contradictory} pair(s) join an item to itself but are not labelled fully "
            "similar; they were dropped.",
            UserWarning,
            stacklevel=3,
        )
    keep = ~self_pair
    a, b, t = a[keep], b[keep], t[keep]
    name = type(estimator).__name__
    if a.shape[0] < MIN_PAIRS:
        raise ValueError(
            f"{name} needs at least {MIN_PAIRS} pairs of distinct items, got {a.shape[0]} "
            f"(after dropping {int(self_pair.sum())} pair(s) joining an item to itself)."
        )
    d = X.shape[1]
    if targets == "binary":
        n_sim = int(np.count_nonzero(t > 0))
        n_dis = a.shape[0] - n_sim
        if n_sim == 0 or n_dis == 0:
            kind = "similar" if n_dis == 0 else "dissimilar"
            raise ValueError(
                f"all {a.shape[0]} usable pairs are {kind}: {name} needs both similar (+1) and "
                "dissimilar (-1) pairs (with one kind only the metric either collapses or has "
                "nothing to pull together)."
            )
        if min(n_sim, n_dis) < d:
            _warn_few(f"{n_sim} similar and {n_dis} dissimilar pairs", d, "metric")
    else:
        if np.ptp(t) == 0:
            raise ValueError(
                f"all {a.shape[0]} usable pairs have the same target similarity {t[0]:g}: "
                f"{name} cannot learn which pairs are more alike."
            )
        if a.shape[0] < d:
            _warn_few(f"{a.shape[0]} pairs", d, "embedding")
    return PairSupervision(X=X, a=a, b=b, y=t)


def _warn_few(what: str, n_features: int, result: str) -> None:
    """Fewer constraints (of a kind) than features leave directions unconstrained."""
    warnings.warn(
        f"only {what} for {n_features} features: directions are left unconstrained; the "
        f"{result} is likely of little use.",
        UserWarning,
        stacklevel=4,
    )


def check_triplet_supervision(estimator, X, triplets=None) -> TripletSupervision:
    """Validate ``(anchor, positive, negative)`` triplets given in either form of the convention.

    Triplets whose negative is the same item as the anchor or the positive are dropped with a
    ``UserWarning`` (they contradict themselves or say nothing); ``ValueError`` when none is left,
    a ``UserWarning`` when fewer than ``n_features`` are.

    Returns
    -------
    TripletSupervision
    """
    X, triplets, _ = _split_call(X, triplets, None, 3, "triplets")
    X, idx = _points(estimator, X, triplets, 3, "triplets")
    a, p, n = idx.T
    bad = _same_rows(X, a, n) | _same_rows(X, p, n)
    if bad.any():
        warnings.warn(
            f"{int(bad.sum())} triplet(s) have a negative equal to their anchor or positive; "
            "they were dropped.",
            UserWarning,
            stacklevel=3,
        )
    a, p, n = a[~bad], p[~bad], n[~bad]
    name = type(estimator).__name__
    if a.shape[0] == 0:
        raise ValueError(f"{name}: no usable triplet (anchor, positive, negative) is left.")
    if a.shape[0] < X.shape[1]:
        _warn_few(f"{a.shape[0]} triplets", X.shape[1], "metric")
    return TripletSupervision(X=X, anchor=a, positive=p, negative=n)


def pairs_from_triplets(t: TripletSupervision) -> PairSupervision:
    """(anchor, positive) as similar pairs and (anchor, negative) as dissimilar pairs."""
    m = t.anchor.shape[0]
    return PairSupervision(
        X=t.X,
        a=np.concatenate([t.anchor, t.anchor]),
        b=np.concatenate([t.positive, t.negative]),
        y=np.concatenate([np.ones(m), -np.ones(m)]),
    )


def triplets_from_pairs(
    s: PairSupervision, max_triplets: int, rng: np.random.Generator
) -> TripletSupervision:
    """Triplets ``(i, j, l)`` from a similar pair ``(i, j)`` and a dissimilar pair ``(i, l)``.

    Every similar pair, in both orientations, meets every dissimilar pair of its first item; when
    that makes more than ``max_triplets`` triplets, a uniform sample of ``max_triplets`` of them
    is kept (drawn by ``rng``). Raises ``ValueError`` when no similar and dissimilar pair share an
    item (see :class:`rankmetric.sampling.PairIndex`).
    """
    index = PairIndex.from_pairs(s.a, s.b, s.similar, s.X.shape[0])
    first, second = index.first, index.second
    degree = index.n_negatives(first)
    ends = np.cumsum(degree)
    total = int(ends[-1])
    if total > max_triplets:
        q = np.sort(rng.choice(total, size=max_triplets, replace=False))
    else:
        q = np.arange(total)
    row = np.searchsorted(ends, q, side="right")
    offset = q - (ends[row] - degree[row])
    return TripletSupervision(
        X=s.X,
        anchor=first[row],
        positive=second[row],
        negative=index.partners[index.indptr[first[row]] + offset],
    )


def split_pairs(X1, X2=None, *, point_ndim: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The two sides of pairs in the one pair-distance convention (``docs/pairs.md``).

    ``pair_distances(X1, X2=None)`` (and SSNE's ``score_pairs``) take either two arrays of
    matching points, or, with ``X2`` omitted, the stacked pairs.

    Parameters
    ----------
    X1 : array-like of shape (n_pairs, *point_shape), or (n_pairs, 2, *point_shape)
        The first point of each pair, or the stacked pairs when ``X2`` is None.
    X2 : array-like of shape (n_pairs, *point_shape), optional
        The second point of each pair.
    point_ndim : int, default=1
        Dimensions of one point: 1 for feature vectors, 2 for (SPD) matrices.

    Returns
    -------
    A, B : ndarray of shape (n_pairs, *point_shape)

    Examples
    --------
    >>> import numpy as np
    >>> A, B = split_pairs(np.zeros((4, 2, 3)))
    >>> A.shape, B.shape
    ((4, 3), (4, 3))
    """
    A = np.asarray(X1)
    if X2 is None:
        if A.ndim != point_ndim + 2 or A.shape[1] != 2:
            shape = "(n_pairs, 2, n_features)" if point_ndim == 1 else "(n_pairs, 2, c, c)"
            raise ValueError(
                f"without X2, X1 must hold stacked pairs of shape {shape}, got {A.shape}; "
                "or pass the second points as X2."
            )
        return A[:, 0], A[:, 1]
    B = np.asarray(X2)
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"X1 and X2 must have as many rows: {A.shape[0]} != {B.shape[0]}.")
    return A, B
