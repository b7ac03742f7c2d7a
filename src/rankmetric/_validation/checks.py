"""Data checks: each raises a ``ValueError`` whose message names the problem.

Bad input never turns into a silent wrong answer: non-finite values (:func:`check_finite`), values
whose squared distances overflow the arithmetic (:func:`check_scale`), class labels
(:func:`check_labels`, over the one label encoder :func:`encode_labels`), classes too small to
form pairs (:func:`check_min_per_class`), domain labels (:func:`domain_codes`, the encoder's codes
of sessions or subjects, and :func:`transform_domain_codes`); SPD matrices are checked by
:func:`rankmetric.geometry.check_spd`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "SCALE_HEADROOM_TERMS",
    "NonFiniteError",
    "as_label_array",
    "check_domain_sizes",
    "check_finite",
    "check_labels",
    "check_min_per_class",
    "check_scale",
    "domain_codes",
    "encode_labels",
    "transform_domain_codes",
]


#: Elements :func:`check_finite` tests at once: a memory-mapped array is never read whole.
FINITE_CHUNK_ELEMENTS = 1 << 22


class NonFiniteError(ValueError):
    """The error of :func:`check_finite`; ``row`` is the first row holding NaN or infinity (a
    reader of a text file adds the file's line)."""

    def __init__(self, message: str, row: int):
        super().__init__(message)
        self.row = row


def check_finite(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Raise if ``X`` holds NaN or infinity, naming the first row that does (rows are tested
    in chunks of bounded memory).

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric._validation import check_finite
    >>> try:
    ...     check_finite(np.array([[1.0, 2.0], [3.0, np.nan]]), "X")
    ... except ValueError as exc:  # a NonFiniteError, whose .row is 1
    ...     print(exc, exc.row)
    X contains NaN or infinity (row 1; a missing value?). 1
    """
    values = np.asarray(X)
    if values.dtype.kind not in "fc":  # integers and booleans are finite
        return X
    rows = values.reshape(1, -1) if values.ndim == 0 else values
    n = rows.shape[0]
    step = max(1, FINITE_CHUNK_ELEMENTS // max(1, rows[:1].size))
    for start in range(0, n, step):  # chunks of rows, vectorised inside
        finite = np.isfinite(rows[start : start + step]).reshape(min(step, n - start), -1)
        finite = finite.all(axis=1)
        if not finite.all():
            row = start + int(np.argmin(finite))
            raise NonFiniteError(f"{name} contains NaN or infinity (row {row}; a missing "
                                 "value?).", row)  # fmt: skip
    return X


#: Terms a sum of squared distances may add up (an objective's sum over pairs) before it must
#: still be finite: the headroom :func:`check_scale` keeps below the largest float.
SCALE_HEADROOM_TERMS = 10**6


def check_scale(X: np.ndarray, dtype=np.float32, name: str = "X") -> np.ndarray:
    """Raise if the magnitude of ``X`` overflows or underflows squared distances in ``dtype``.

    Distance-based estimators compute ``||a||² + ||b||² − 2aᵀb`` and sums of such terms over
    many pairs. For finite ``X`` this is representable when ``4 · n_features · max|X|²`` times
    :data:`SCALE_HEADROOM_TERMS` stays below the largest ``dtype`` number (about
    ``max|X| < 4.6e15`` for 4 float32 features, ``3.4e150`` in float64), and the squares of the
    largest values do not underflow to zero (``max|X| > 1.1e-19`` in float32, ``1.5e-154`` in
    float64). Outside that range the arithmetic returns inf, nan or zeros, so the input is
    refused with a ``ValueError`` that says so and suggests standardising.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite input (checked by ``validate_data`` before).
    dtype : numpy dtype, default=np.float32
        The arithmetic the estimator computes in.
    name : str, default="X"

    Returns
    -------
    X : ndarray
        Unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric._validation import check_scale
    >>> check_scale(np.ones((3, 2))).shape
    (3, 2)
    """
    X = np.asarray(X)
    if X.size == 0 or X.dtype.kind not in "fiu":
        return X
    largest = float(np.max(np.abs(X)))
    if largest == 0.0 or not np.isfinite(largest):
        return X
    info = np.finfo(dtype)
    n_features = X.shape[1] if X.ndim > 1 else 1
    high = float(np.sqrt(float(info.max) / (4.0 * n_features * SCALE_HEADROOM_TERMS)))
    low = float(np.sqrt(float(info.tiny)))
    if largest > high or largest < low:
        problem = "overflow" if largest > high else "underflow to zero"
        raise ValueError(
            f"{name} has values of magnitude up to {largest:.3g}: the squared distances of "
            f"such input {problem} in {np.dtype(dtype).name} arithmetic (this method needs "
            f"max|{name}| between {low:.2g} and {high:.2g} for {n_features} features). "
            "Standardise the input first (e.g. sklearn.preprocessing.StandardScaler, or "
            "rescale its units)."
        )
    return X


def check_labels(
    y, n_samples: int | None = None, *, min_classes: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Validate class labels and encode them as integers ``0..Q-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (integers or strings).
    n_samples : int, optional
        Expected number of labels (the number of rows of ``X``).
    min_classes : int, default=2
        Fewest distinct classes the caller can learn from.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels.
    codes : ndarray of shape (n_samples,), dtype int64
        ``classes[codes] == y``.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different lengths: {n_samples} samples but {y.shape[0]} labels."
        )
    if y.shape[0] == 0:
        raise ValueError("y is empty.")
    from sklearn.utils.multiclass import type_of_target  # scikit-learn only when labels come

    kind = type_of_target(y, input_name="y", raise_unknown=True)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"y must hold class labels, got target type {kind!r}.")
    classes, (codes,) = encode_labels(y)
    if classes.shape[0] < min_classes:
        raise ValueError(
            f"y has {classes.shape[0]} class(es); at least {min_classes} are needed "
            "to learn a metric."
        )
    return classes, codes


def as_label_array(y, name: str = "y", n_samples: int | None = None) -> np.ndarray:
    """Labels (NumPy, torch or a list) as a one-dimensional NumPy array, checked.

    Parameters
    ----------
    y : array-like or tensor of shape (n_samples,)
    name : str, default="y"
        Named in the error messages.
    n_samples : int, optional
        The number of samples ``y`` labels.

    Returns
    -------
    ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        ``y`` is not one-dimensional, holds NaN or infinity, or has another length.

    Examples
    --------
    >>> import torch
    >>> as_label_array(torch.tensor([1, 0]), "labels").tolist()
    [1, 0]
    """
    if hasattr(y, "detach"):  # a torch tensor, without importing torch here
        y = y.detach().cpu().numpy()
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {y.shape}.")
    if y.dtype.kind == "f":
        check_finite(y, name)
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but there are {n_samples} samples.")
    return y


def encode_labels(
    *labels, names=None, lengths=None, min_classes: int = 1
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The one label encoder: a shared code book over label arrays, codes ``0..Q-1``.

    Parameters
    ----------
    *labels : array-like of shape (n_i,)
        One or more label arrays (train and test labels, query and gallery identities, ...),
        encoded together so that equal labels get equal codes across them.
    names : sequence of str, optional
        The arrays' names. When given, each array is checked first (:func:`as_label_array`:
        torch tensors accepted, one-dimensional, finite) and so are the labels together
        (:func:`check_labels`: class labels, at least ``min_classes`` of them), with messages
        that name the arrays. Without it the arrays are encoded as they are.
    lengths : sequence of int, optional
        With ``names``: the number of samples each array labels.
    min_classes : int, default=1
        With ``names``: fewest distinct labels over all arrays.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels of all arrays.
    codes : list of ndarray of shape (n_i,), dtype int64
        ``classes[codes[i]] == labels[i]``, one array per argument.

    Examples
    --------
    >>> classes, (train, test) = encode_labels(["b", "a", "b"], ["a", "c"])
    >>> classes.tolist(), train.tolist(), test.tolist()
    (['a', 'b', 'c'], [1, 0, 1], [0, 2])
    >>> encode_labels([0, 1], names=["y_query"], lengths=[3])
    Traceback (most recent call last):
    ValueError: y_query has 2 labels but there are 3 samples.
    """
    if not labels:
        raise ValueError("encode_labels needs at least one label array.")
    if names is None:
        arrays = [np.asarray(y) for y in labels]
        joined = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        classes, codes = np.unique(joined, return_inverse=True)
        codes = codes.reshape(-1).astype(np.int64)
    else:
        lengths = [None] * len(labels) if lengths is None else lengths
        arrays = [
            as_label_array(y, name, n) for y, name, n in zip(labels, names, lengths, strict=True)
        ]
        try:
            joined = np.concatenate(arrays)
        except (TypeError, ValueError) as exc:  # pragma: no cover - exotic mixes of label types
            raise ValueError(f"labels of {', '.join(names)} cannot be compared ({exc}).") from exc
        classes, codes = check_labels(joined, min_classes=min_classes)
    return classes, np.split(codes, np.cumsum([a.shape[0] for a in arrays])[:-1])


#: Label of the one domain of a fit without ``domains``, and of a transform's batch without them.
ONE_DOMAIN, NEW_DOMAIN = "<all>", "<new domain>"


def check_domain_sizes(names, codes: np.ndarray, which) -> None:
    """``ValueError`` if a domain whose own mean must be computed has a single matrix.

    Parameters
    ----------
    names : sequence
        Every domain's label, by code.
    codes : int ndarray of shape (n,)
        The domain code of each matrix.
    which : iterable of int
        The codes of the domains whose mean is computed.

    Examples
    --------
    >>> try:
    ...     check_domain_sizes(["a", "b"], np.array([0, 0, 1]), [1])
    ... except ValueError as error:
    ...     print(str(error).split(":")[0])
    domain 'b' has a single matrix
    """
    counts = np.bincount(codes, minlength=len(names))
    for k in which:
        if counts[k] < 2:
            raise ValueError(
                f"domain {names[k]!r} has a single matrix: re-centring it at its own mean would "
                "map it to the identity. Give a new domain's matrices together, or a domain seen "
                "in fit."
            )


def domain_codes(domains, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(names, codes)`` of ``domains`` (one label per matrix, NaN refused; ``None``: one domain).

    Parameters
    ----------
    domains : array-like of shape (n,) or None
    n : int
        Number of matrices.

    Returns
    -------
    names : ndarray of shape (n_domains,), sorted
    codes : int64 ndarray of shape (n,)

    Examples
    --------
    >>> names, codes = domain_codes(["tue", "mon", "tue"], 3)
    >>> names.tolist(), codes.tolist()
    (['mon', 'tue'], [1, 0, 1])
    """
    if domains is None:
        return np.array([ONE_DOMAIN]), np.zeros(n, dtype=np.int64)
    labels = np.asarray(domains)
    if labels.shape != (n,):
        raise ValueError(
            f"domains must have shape ({n},), one label per matrix, got {labels.shape}."
        )
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError("domains contains NaN or infinity.")
    if labels.dtype.kind == "O":
        labels = labels.astype(str)
    names, (codes,) = encode_labels(labels)
    return names, codes


def transform_domain_codes(seen: np.ndarray, domains, n: int) -> tuple[np.ndarray, list[int]]:
    """Codes of a transform's domains: a seen domain keeps its code, new ones come after.

    A new domain is re-centred at its own mean, so it needs two matrices or more.

    Parameters
    ----------
    seen : ndarray of shape (n_seen,)
        The domains of ``fit``.
    domains : array-like of shape (n,) or None
        ``None``: all the matrices form one new domain.
    n : int

    Returns
    -------
    codes : int64 ndarray of shape (n,)
        In ``[0, n_seen + n_new)``.
    new : list of int
        The codes of the new domains (``n_seen``, ``n_seen + 1``, ...).

    Raises
    ------
    ValueError
        If a new domain has a single matrix.

    Examples
    --------
    >>> codes, new = transform_domain_codes(np.array(["mon", "tue"]), ["wed", "mon", "wed"], 3)
    >>> codes.tolist(), new
    ([2, 0, 2], [2])
    """
    if domains is None:
        names, local = np.array([NEW_DOMAIN]), np.zeros(n, dtype=np.int64)
    else:
        names, local = domain_codes(domains, n)
    lookup = {name: k for k, name in enumerate(seen.tolist())}
    new_names = [name for name in names.tolist() if name not in lookup or domains is None]
    lookup.update({name: len(seen) + k for k, name in enumerate(new_names)})
    mapping = np.array([lookup[name] for name in names.tolist()], dtype=np.int64)
    new = list(range(len(seen), len(seen) + len(new_names)))
    check_domain_sizes(np.array([*seen.tolist(), *new_names], dtype=object), mapping[local], new)
    return mapping[local], new


def check_min_per_class(codes: np.ndarray, minimum: int = 2, what: str = "positive pairs") -> None:
    """Raise unless at least one class has ``minimum`` samples (needed to form ``what``)."""
    counts = np.bincount(codes)
    if counts.max() < minimum:
        raise ValueError(
            f"every class has fewer than {minimum} samples, so no {what} can be formed."
        )
