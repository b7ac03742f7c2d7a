r"""Pairwise distances and similarities for batch losses, and the checks every batch loss shares.

One dispatcher, one formula per metric, so that every loss of :mod:`rankmetric.losses` (the deep
baselines and the Riemannian potato) measures a batch the same way:

* vectors ``(n, d)``: ``"euclidean"`` :math:`\Vert x - y \Vert_2`, ``"sqeuclidean"``
  :math:`\Vert x - y \Vert_2^2`, ``"cosine"``
  :math:`1 - x^\top y / (\Vert x \Vert \, \Vert y \Vert)`;
* SPD matrices ``(n, c, c)``: ``"airm"`` (affine-invariant Riemannian) and ``"log_euclidean"``,
  delegated to :mod:`rankmetric.geometry`'s dispatcher (:func:`rankmetric.geometry.distance`,
  :func:`rankmetric.geometry.pairwise_distance`);
* any callable ``f(x, y) -> (n_x, n_y)`` tensor (the distance is injected, not subclassed).

Names resolve through :func:`rankmetric.geometry.canonical_metric`, the one resolver of metric
names: pyRiemann's ``"riemann"``, ``"logeuclid"`` and ``"euclid"`` are accepted (case ignored).

The Euclidean distance is computed from the Gram matrix (one matrix product, no ``(n, n, d)``
tensor); its gradient at a zero distance (the diagonal, or duplicated points) is set to 0, the
minimum-norm subgradient, instead of the ``inf``/NaN of a plain ``sqrt``.

Extreme scales: the vector metrics are computed on the vectors divided by a power of two close
to their largest magnitude (:func:`power_of_two_scale`, detached), and the distances multiplied
back. Division and multiplication by a power of two are exact, so at ordinary scales the values
and gradients are bit-identical to the plain formula, while the squares inside it no longer
overflow (embeddings around 1e20 in float32) or underflow (around 1e-20). ``"euclidean"`` is
then finite wherever the distance itself is; ``"cosine"`` (rescaled row by row) is exact at any
scale; ``"sqeuclidean"`` and the ``"dot"`` similarity grow like the scale squared and overflow
only when their value does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F

from .._distances import paired_squared_euclidean, squared_euclidean
from ..geometry.aliases import canonical_metric
from ..geometry.dispatch import distance as spd_distance
from ..geometry.dispatch import pairwise_distance as spd_pairwise_distance
from ..geometry.distances import safe_sqrt
from .precision import is_compiling

# alike: the end of __all__ and the option tuples are shaped like those of
# estimators/spd/_network.py; the names differ
__all__ = [
    "Metric",
    "Similarity",
    "VECTOR_METRICS",
    "SPD_METRICS",
    "SIMILARITIES",
    "pairwise_distance",
    "paired_distance",
    "pairwise_similarity",
    "MetricSelector",
    "check_batch",
    "label_masks",
    "zero_loss",
    "masked_logsumexp",
    "power_of_two_scale",
    "unit_rows",
]

VECTOR_METRICS = ("euclidean", "sqeuclidean", "cosine")
SPD_METRICS = ("airm", "log_euclidean")
SIMILARITIES = ("cosine", "dot")

PairwiseFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Metric = Literal["euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"] | PairwiseFn
Similarity = Literal["cosine", "dot"] | PairwiseFn


class MetricSelector:
    """Mixin of the losses and miners that take ``metric=``: ``distance``, its name before 0.2.

    The constructor keyword ``distance=`` still works this release, with a ``FutureWarning``
    (:func:`rankmetric._validation.renamed_keywords`); the attribute stays readable.
    """

    @property
    def distance(self):
        """The old name of the attribute ``metric``."""
        return self.metric


def pairwise_distance(
    x: torch.Tensor, metric: Metric = "euclidean", y: torch.Tensor | None = None
) -> torch.Tensor:
    """Distances between every row of ``x`` and every row of ``y``.

    Parameters
    ----------
    x : tensor of shape (n_x, d) or (n_x, c, c)
        Vectors, or SPD matrices for ``"airm"`` / ``"log_euclidean"``.
    metric : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable
        A callable is called as ``metric(x, y)`` (with ``y = x`` when ``y`` is None) and must
        return a tensor of shape (n_x, n_y).
    y : tensor of shape (n_y, d) or (n_y, c, c), optional
        Defaults to ``x``; then the diagonal of a vector metric is exactly 0.

    Returns
    -------
    tensor of shape (n_x, n_y)
        Differentiable distances, in the dtype of ``x``.

    See Also
    --------
    rankmetric.losses.paired_distance : Distances of matching rows only.
    rankmetric.losses.pairwise_similarity : Similarities instead of distances.
    rankmetric.geometry.pairwise_distance : The SPD-matrix distances it dispatches to.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import pairwise_distance
    >>> x = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    >>> pairwise_distance(x)
    tensor([[0., 5.],
            [5., 0.]])
    >>> pairwise_distance(x, "sqeuclidean", y=x[:1])
    tensor([[ 0.],
            [25.]])
    """
    if callable(metric):
        return _call_injected(metric, x, x if y is None else y)
    metric = canonical_metric(metric, VECTOR_METRICS + SPD_METRICS, name="distance")
    if metric in SPD_METRICS:
        _check_matrices(x, y, metric)
        return spd_pairwise_distance(x, y, metric)
    _check_vectors(x, y, metric)
    if metric == "cosine":
        return 1.0 - _cosine(x, y)
    return _rescaled(squared_euclidean, x, y, metric)


# alike: numpydoc See Also / Examples skeleton alike in neighbors/_search.py; the functions differ
def paired_distance(x: torch.Tensor, y: torch.Tensor, metric: Metric = "euclidean") -> torch.Tensor:
    """Distances between matching rows, ``d(x_i, y_i)``: O(n) work instead of an (n, n) matrix.

    Parameters
    ----------
    x, y : tensors of shape (n, d) or (n, c, c)
    metric : {"euclidean", "sqeuclidean", "cosine", "airm", "log_euclidean"} or callable
        As in :func:`pairwise_distance`. A callable only computes matrices, so its (n, n) matrix
        ``metric(x, y)`` is formed and its diagonal returned.

    Returns
    -------
    tensor of shape (n,)

    See Also
    --------
    rankmetric.losses.pairwise_distance : Distances between every row of two sets.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import paired_distance
    >>> x, y = torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0], [1.0, 1.0]])
    >>> paired_distance(x, y)
    tensor([5., 0.])
    """
    if callable(metric):
        return torch.diagonal(_call_injected(metric, x, y))
    metric = canonical_metric(metric, VECTOR_METRICS + SPD_METRICS, name="distance")
    if x.shape != y.shape:
        shapes = f"{tuple(x.shape)} and {tuple(y.shape)}"
        raise ValueError(f"x and y must have the same shape, got {shapes}.")
    if metric in SPD_METRICS:
        _check_matrices(x, None, metric)
        return spd_distance(x, y, metric)
    _check_vectors(x, y, metric)
    if metric == "cosine":
        return 1.0 - (unit_rows(x) * unit_rows(y)).sum(dim=1)
    return _rescaled(paired_squared_euclidean, x, y, metric)


def pairwise_similarity(
    x: torch.Tensor, metric: Similarity = "cosine", y: torch.Tensor | None = None
) -> torch.Tensor:
    """Similarities between every row of ``x`` and every row of ``y`` (larger = more alike).

    Parameters
    ----------
    x : tensor of shape (n_x, d)
    metric : {"cosine", "dot"} or callable
        ``"cosine"``: :math:`x^\\top y / (\\Vert x \\Vert \\, \\Vert y \\Vert)`; ``"dot"``:
        :math:`x^\\top y`; a callable ``metric(x, y)`` returning shape (n_x, n_y).
    y : tensor of shape (n_y, d), optional
        Defaults to ``x``.

    Returns
    -------
    tensor of shape (n_x, n_y)

    See Also
    --------
    rankmetric.losses.pairwise_distance : Distances instead of similarities.
    rankmetric.losses.MultiSimilarityLoss : A loss on these similarities.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import pairwise_similarity
    >>> pairwise_similarity(torch.tensor([[1.0, 0.0], [1.0, 1.0]])).round(decimals=4)
    tensor([[1.0000, 0.7071],
            [0.7071, 1.0000]])
    """
    if callable(metric):
        return _call_injected(metric, x, x if y is None else y)
    metric = canonical_metric(metric, SIMILARITIES, name="similarity")
    _check_vectors(x, y, metric)
    if metric == "cosine":
        return _cosine(x, y)
    return x @ (x if y is None else y).T


def check_batch(
    embeddings: torch.Tensor, labels: torch.Tensor, *, allow_matrices: bool = False
) -> torch.Tensor:
    """Validate a batch for a loss and return its labels as int64 on the embeddings' device.

    Parameters
    ----------
    embeddings : tensor of shape (B, d), or (B, c, c) when ``allow_matrices``
        Floating point and finite.
    labels : integer tensor or array-like of shape (B,)
    allow_matrices : bool, default=False
        Accept square matrices (SPD embeddings for the Riemannian metrics).

    Returns
    -------
    labels : int64 tensor of shape (B,)

    Raises
    ------
    ValueError
        Wrong shape or dtype, a label count different from the batch size, NaN or infinity.
    """
    if not isinstance(embeddings, torch.Tensor):
        raise ValueError(f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}.")
    shape = tuple(embeddings.shape)
    is_matrix = embeddings.ndim == 3 and shape[1] == shape[2]
    if not (embeddings.ndim == 2 or (allow_matrices and is_matrix)):
        expected = "(B, d) or (B, c, c)" if allow_matrices else "(B, d)"
        raise ValueError(f"embeddings must have shape {expected}, got {shape}.")
    if shape[0] == 0:
        raise ValueError("embeddings are empty (a batch of 0 samples).")
    if not embeddings.dtype.is_floating_point:
        raise ValueError(f"embeddings must be floating point, got dtype {embeddings.dtype}.")
    labels = torch.as_tensor(labels, device=embeddings.device)
    if labels.ndim != 1 or labels.shape[0] != shape[0]:
        raise ValueError(
            f"labels must have shape ({shape[0]},) to match the embeddings, "
            f"got {tuple(labels.shape)}."
        )
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}.")
    # The guard syncs with the device, so a compiled graph (torch.compile) leaves it out: it runs
    # in eager mode, the compiled caller checks its inputs once outside the graph if it wants to.
    if not is_compiling() and not bool(torch.isfinite(embeddings).all()):
        raise ValueError("embeddings contain NaN or infinity.")
    return labels.long()


def label_masks(
    labels: torch.Tensor, ref_labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean masks of the positive and negative pairs of a batch (or batch × reference set).

    Parameters
    ----------
    labels : tensor of shape (B,)
    ref_labels : tensor of shape (M,), optional
        Labels of a separate reference set; then every equal-label pair is positive.

    Returns
    -------
    positive : bool tensor of shape (B, B) or (B, M)
        ``labels[i] == labels[j]`` and ``i != j`` (the latter only without ``ref_labels``).
    negative : bool tensor of shape (B, B) or (B, M)
        ``labels[i] != labels[j]``.
    """
    if ref_labels is not None:
        same = labels[:, None] == ref_labels[None, :]
        return same, ~same
    same = labels[:, None] == labels[None, :]
    not_self = ~torch.eye(labels.shape[0], dtype=torch.bool, device=labels.device)
    return same & not_self, ~same


def zero_loss(*tensors: torch.Tensor) -> torch.Tensor:
    """A scalar 0 attached to the graph of ``tensors`` (``backward()`` works, with zero grads)."""
    return sum(t.sum() * 0.0 for t in tensors)


def masked_logsumexp(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise :math:`\\log \\sum_{j : \\mathrm{mask}_{ij}} e^{x_{ij}}`, finite values and
    gradients everywhere.

    Parameters
    ----------
    x : tensor of shape (n, m)
    mask : bool tensor of shape (n, m)

    Returns
    -------
    values : tensor of shape (n,)
        The masked log-sum-exp of each row; an arbitrary finite number for a row with an empty mask.
    nonempty : bool tensor of shape (n,)
        Rows with at least one selected entry (select ``values`` with it, e.g. ``torch.where``).
    """
    nonempty = mask.any(dim=1)
    mask = mask | ~nonempty[:, None]
    return torch.logsumexp(x.masked_fill(~mask, -torch.inf), dim=1), nonempty


def power_of_two_scale(*tensors: torch.Tensor | None, dim: int | None = None) -> torch.Tensor:
    """A detached power of two ``s`` with ``s ≤ max |t| < 2s`` over ``tensors`` (0.5 for zeros).

    Dividing by ``s`` and multiplying back is exact in binary floating point, so a formula
    evaluated on ``t / s`` and rescaled gives bit-identical results at ordinary scales while its
    intermediate squares stay near 1 (no overflow at 1e20 nor underflow at 1e-20 in float32).

    Parameters
    ----------
    *tensors : tensors (None entries are skipped)
        With ``dim=None``, any shapes; otherwise one tensor.
    dim : int, optional
        Reduce over this dimension only (kept, size 1): one scale per row for ``dim=1``.

    Returns
    -------
    tensor
        A 0-dimensional tensor (``dim=None``) or the row scales, in the tensors' dtype, without
        gradient.

    Examples
    --------
    >>> import torch
    >>> float(power_of_two_scale(torch.tensor([3e20, -1.0])))
    2.9514790517935283e+20
    """
    present = [t.detach() for t in tensors if t is not None]
    if dim is not None:
        largest = present[0].abs().amax(dim=dim, keepdim=True)
    elif any(t.numel() == 0 for t in present):
        return present[0].new_ones(())
    else:
        largest = present[0].abs().amax()
        for t in present[1:]:
            largest = torch.maximum(largest, t.abs().amax())
    _, exponent = torch.frexp(largest)  # largest = mantissa · 2^exponent, mantissa in [0.5, 1)
    # 2^(exponent − 1) exactly (0.5 for zeros); never above largest, so never inf
    return torch.ldexp(torch.ones_like(largest), exponent - 1)


# alike: numpydoc Parameters / Returns / Examples skeleton alike in _distances.py; the functions
# differ
def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """``x_i / ||x_i||`` for every row, exact from about 1e-31 to the largest float32 (0 for 0).

    ``torch.nn.functional.normalize`` squares the entries, so rows of norm around 1e20 in float32
    become 0, and it divides rows of norm below ``eps = 1e-12`` by ``eps`` instead of
    normalising them. Here each row is first divided by a power of two close to its largest
    entry (:func:`power_of_two_scale`), which leaves rows of ordinary scale bit-identical to
    ``normalize``; only rows whose largest entry is below ``tiny / eps`` of the dtype (about
    1e-31 in float32, 1e-292 in float64) are divided by that floor instead, as ``normalize``
    does below its ``eps``, so that the gradient (about ``1 / ||x_i||``) stays finite.

    Parameters
    ----------
    x : tensor of shape (n, d)

    Returns
    -------
    tensor of shape (n, d)

    Examples
    --------
    >>> import torch
    >>> unit_rows(torch.tensor([[3e20, 4e20], [0.0, 0.0]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    if x.numel() == 0:
        return F.normalize(x, dim=1)
    info = torch.finfo(x.dtype)
    scale = power_of_two_scale(x, dim=1).clamp_min(info.tiny / info.eps)
    # the rescaled rows have their largest entry in [1, 2), so a norm >= 1 unless floored
    return F.normalize(x / scale, dim=1, eps=1.0)


def _call_injected(metric: PairwiseFn, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = metric(x, y)
    expected = (x.shape[0], y.shape[0])
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"the injected metric must return a tensor of shape {expected}, got {got}."
        )
    return out


def _check_vectors(x: torch.Tensor, y: torch.Tensor | None, metric: str) -> None:
    for name, t in (("x", x), ("y", y)):
        if t is not None and t.ndim != 2:
            raise ValueError(
                f"metric {metric!r} needs vectors of shape (n, d); {name} has shape "
                f"{tuple(t.shape)} (use 'airm' or 'log_euclidean' for SPD matrices)."
            )
    if y is not None and y.shape[1] != x.shape[1]:
        raise ValueError(f"x and y have different dimensions: {x.shape[1]} and {y.shape[1]}.")


def _check_matrices(x: torch.Tensor, y: torch.Tensor | None, metric: str) -> None:
    for name, t in (("x", x), ("y", y)):
        if t is not None and (t.ndim != 3 or t.shape[1] != t.shape[2]):
            raise ValueError(
                f"metric {metric!r} needs SPD matrices of shape (n, c, c); {name} has shape "
                f"{tuple(t.shape)}."
            )


def _rescaled(kernel: Callable, x: torch.Tensor, y: torch.Tensor | None, metric: str):
    """``"euclidean"`` or ``"sqeuclidean"`` by ``kernel`` of the rows divided by a power of two."""
    scale = power_of_two_scale(x, y)
    sq = kernel(x / scale, None if y is None else y / scale)
    if metric == "sqeuclidean":
        return sq * scale * scale  # (· s) · s: no inf · 0 when s² overflows
    return safe_sqrt(sq) * scale


def _cosine(x: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
    x_unit = unit_rows(x)
    y_unit = x_unit if y is None else unit_rows(y)
    return x_unit @ y_unit.T
