"""Index tuples: the mined pairs and triplets a loss can be given, and the reference set.

Two shapes, pytorch-metric-learning's (PML's), so that miners are shared between losses and with
PML's miners:

* triplets ``(a, p, n)``: anchor ``a`` with positive ``p`` and negative ``n``;
* pairs ``(a1, p, a2, n)``: the positive pairs ``(a1[i], p[i])`` and the negative pairs
  ``(a2[j], n[j])``.

Anchors (``a``, ``a1``, ``a2``) index the query embeddings of the loss call, partners (``p``,
``n``) the reference set: ``ref_emb`` when given, else the queries themselves. A triplet loss
given pairs takes every (positive pair, negative pair) with the same anchor (PML's
``convert_to_triplets``, same order); a pair loss given triplets takes ``(a, p, a, n)``.

Every conversion is vectorised and allocates O(output), never a (n_pairs × n_pairs) or (B, B, B)
tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ._docstrings import fill_doc
from .base import check_reference_arguments
from .pair_distances import check_batch, label_masks

__all__ = [
    "IndicesTuple",
    "check_indices_tuple",
    "check_reference",
    "to_pairs",
    "to_triplets",
    "pair_masks",
    "pair_counts",
    "all_pairs",
    "all_triplets",
    "anchor_weights",
]

IndicesTuple = tuple[Tensor, Tensor, Tensor] | tuple[Tensor, Tensor, Tensor, Tensor]


def check_reference(
    embeddings: Tensor,
    labels: Tensor,
    ref_emb: Tensor | None,
    ref_labels: Tensor | None,
    *,
    allow_matrices: bool = False,
    name: str = "the loss",
) -> tuple[Tensor, Tensor]:
    """The reference set of a loss call: ``(ref_emb, ref_labels)``, or the queries themselves.

    Parameters
    ----------
    embeddings : tensor of shape (B, ...)
        The queries (already checked).
    labels : int64 tensor of shape (B,)
    ref_emb : tensor of shape (M, ...), optional
        Reference embeddings, same trailing shape, dtype and device as ``embeddings``.
    ref_labels : integer tensor of shape (M,), optional
        Required with ``ref_emb``; refused without it
        (:func:`rankmetric.losses.base.check_reference_arguments`).
    name : str, default="the loss"
        The caller named in that refusal.

    Returns
    -------
    ref_emb, ref_labels : tensors
        ``embeddings, labels`` when no reference set is given.
    """
    if ref_emb is None:
        check_reference_arguments(name, ref_emb, ref_labels)
        return embeddings, labels
    if ref_labels is None:
        raise ValueError("ref_emb needs ref_labels (the labels of the reference set).")
    ref_labels = check_batch(ref_emb, ref_labels, allow_matrices=allow_matrices)
    if ref_emb.shape[1:] != embeddings.shape[1:]:
        raise ValueError(
            f"ref_emb rows have shape {tuple(ref_emb.shape[1:])}, the embeddings' "
            f"{tuple(embeddings.shape[1:])}."
        )
    if ref_emb.device != embeddings.device:
        raise ValueError(
            f"ref_emb is on {ref_emb.device} but the embeddings on {embeddings.device}."
        )
    return ref_emb.to(embeddings.dtype), ref_labels


def check_indices_tuple(
    indices_tuple: Sequence[Tensor], n_queries: int, n_refs: int, device: torch.device
) -> IndicesTuple:
    """Validate a PML-shaped index tuple and return it as int64 tensors on ``device``.

    Parameters
    ----------
    indices_tuple : tuple of 3 or 4 one-dimensional integer tensors
        ``(a, p, n)`` or ``(a1, p, a2, n)``.
    n_queries : int
        Bound of the anchors (``a``, ``a1``, ``a2``).
    n_refs : int
        Bound of the partners (``p``, ``n``).
    device : torch.device

    Returns
    -------
    tuple of int64 tensors
    """
    if not isinstance(indices_tuple, (tuple, list)) or len(indices_tuple) not in (3, 4):
        raise ValueError(
            "indices_tuple must be a tuple (a, p, n) of triplets or (a1, p, a2, n) of pairs, "
            f"got {type(indices_tuple).__name__} of length "
            f"{len(indices_tuple) if isinstance(indices_tuple, (tuple, list)) else '?'}."
        )
    names = ("a", "p", "n") if len(indices_tuple) == 3 else ("a1", "p", "a2", "n")
    out = []
    for name, idx in zip(names, indices_tuple, strict=True):
        idx = torch.as_tensor(idx, device=device)
        if idx.ndim != 1 or idx.dtype.is_floating_point or idx.dtype == torch.bool:
            raise ValueError(
                f"indices_tuple[{name}] must be a 1-D integer tensor, got shape "
                f"{tuple(idx.shape)} and dtype {idx.dtype}."
            )
        bound = n_queries if name.startswith("a") else n_refs
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= bound):
            raise ValueError(f"indices_tuple[{name}] holds indices outside 0..{bound - 1}.")
        out.append(idx.long())
    lengths = [t.shape[0] for t in out]
    if (len(out) == 3 and len(set(lengths)) != 1) or (
        len(out) == 4 and (lengths[0] != lengths[1] or lengths[2] != lengths[3])
    ):
        raise ValueError(f"indices_tuple has mismatched lengths {lengths}.")
    return tuple(out)


def reference_call(
    embeddings: Tensor,
    labels: Tensor,
    indices_tuple: Sequence[Tensor] | None,
    ref_emb: Tensor | None,
    ref_labels: Tensor | None,
    *,
    allow_matrices: bool = False,
    name: str = "the loss",
) -> tuple[Tensor | None, Tensor | None, IndicesTuple | None]:
    """A loss call's reference set and index tuple, both checked.

    Parameters
    ----------
    embeddings, labels : tensors
        The checked batch.
    indices_tuple : tuple of tensors, optional
        Mined pairs or triplets (:func:`check_indices_tuple`, bounded by the batch and the
        reference set).
    ref_emb, ref_labels : tensors, optional
        The reference set (:func:`check_reference`).
    allow_matrices : bool, default=False
        Whether the reference set may be SPD matrices.
    name : str, default="the loss"
        The caller named in the refusal of ``ref_labels`` without ``ref_emb``.

    Returns
    -------
    ref_emb, ref_labels : tensors or None
        The checked reference set; ``None, None`` when it is the batch itself (the form
        :func:`~rankmetric.losses.pair_distances.pairwise_distance` and
        :func:`~rankmetric.losses.pair_distances.label_masks` take).
    indices : tuple of int64 tensors or None
        The checked ``indices_tuple``.
    """
    same = ref_emb is None
    ref_emb, ref_labels = check_reference(
        embeddings, labels, ref_emb, ref_labels, allow_matrices=allow_matrices, name=name
    )
    indices = None
    if indices_tuple is not None:
        n_refs = ref_labels.shape[0]
        indices = check_indices_tuple(indices_tuple, labels.shape[0], n_refs, labels.device)
    return (None, None, indices) if same else (ref_emb, ref_labels, indices)


# alike: numpydoc See Also / Examples skeleton alike in neighbors/_search.py, vec_to_sym and
# exp_map; the functions differ
@fill_doc
def to_pairs(indices_tuple: IndicesTuple) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(a1, p, a2, n)``: pairs as they are, triplets ``(a, p, n)`` as ``(a, p, a, n)``.

    Parameters
    ----------
    %(indices_tuple)s

    Returns
    -------
    a1, p, a2, n : Tensor of shape (n_positive,) and (n_negative,), int64
        Anchors and positives of the positive pairs, anchors and negatives of the negative pairs.

    See Also
    --------
    rankmetric.losses.to_triplets : The other conversion.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import to_pairs
    >>> triplets = (torch.tensor([0]), torch.tensor([1]), torch.tensor([2]))
    >>> [t.tolist() for t in to_pairs(triplets)]
    [[0], [1], [0], [2]]
    """
    if len(indices_tuple) == 4:
        return indices_tuple
    a, p, n = indices_tuple
    return a, p, a, n


# alike: numpydoc sections shaped like all_pairs' and all_triplets' below; the conversions differ
@fill_doc
def to_triplets(indices_tuple: IndicesTuple) -> tuple[Tensor, Tensor, Tensor]:
    """``(a, p, n)``: triplets as they are; pairs give every (positive, negative) with one anchor.

    In PML's order (positive pairs in the given order, then for each its anchor's negative pairs
    in the given order), in O(n_triplets) memory: the negative pairs are grouped by anchor with a
    stable sort, and each positive pair is repeated as many times as its anchor has negatives.

    Parameters
    ----------
    %(indices_tuple)s

    Returns
    -------
    a, p, n : Tensor of shape (n_triplets,), int64
        Anchors, positives and negatives.

    See Also
    --------
    rankmetric.losses.to_pairs : The other conversion.
    rankmetric.losses.all_triplets : Every valid triplet of a batch.

    Examples
    --------
    >>> import torch
    >>> pairs = all_pairs(torch.tensor([0, 0, 1]))
    >>> [t.tolist() for t in pairs]
    [[0, 1], [1, 0], [0, 1, 2, 2], [2, 2, 0, 1]]
    >>> [t.tolist() for t in to_triplets(pairs)]
    [[0, 1], [1, 0], [2, 2]]
    """
    if len(indices_tuple) == 3:
        return indices_tuple
    a1, p, a2, n = indices_tuple
    if a1.numel() == 0 or a2.numel() == 0:
        empty = a1.new_empty(0)
        return empty, empty.clone(), empty.clone()
    size = int(torch.maximum(a1.max(), a2.max())) + 1
    order = torch.sort(a2, stable=True).indices
    counts = torch.bincount(a2, minlength=size)
    starts = counts.cumsum(0) - counts
    per_pos = counts[a1]
    pos = torch.repeat_interleave(torch.arange(a1.shape[0], device=a1.device), per_pos)
    negatives = n[order[starts[a1[pos]] + run_offsets(per_pos)]]
    return a1[pos], p[pos], negatives


def run_offsets(counts: Tensor) -> Tensor:
    """``[0, 1, …, c₀ − 1, 0, 1, …, c₁ − 1, …]``: each position's offset within its run.

    The runs have the lengths ``counts`` (as :func:`torch.repeat_interleave` repeats an item
    ``counts[i]`` times), so ``starts.repeat_interleave(counts) + run_offsets(counts)`` lists
    every index of every run, without a loop.

    Parameters
    ----------
    counts : int64 Tensor of shape (n_runs,)
        Non-negative run lengths.

    Returns
    -------
    int64 Tensor of shape (counts.sum(),)

    Examples
    --------
    >>> import torch
    >>> run_offsets(torch.tensor([2, 0, 3])).tolist()
    [0, 1, 0, 1, 2]
    """
    first = torch.repeat_interleave(counts.cumsum(0) - counts, counts)
    return torch.arange(first.shape[0], device=counts.device) - first


def pair_masks(indices_tuple: IndicesTuple, n_queries: int, n_refs: int) -> tuple[Tensor, Tensor]:
    """Bool masks (B, M) of the positive and the negative pairs of a tuple (repeats collapse)."""
    a1, p, a2, n = to_pairs(indices_tuple)
    device = a1.device
    positive = torch.zeros(n_queries, n_refs, dtype=torch.bool, device=device)
    negative = torch.zeros(n_queries, n_refs, dtype=torch.bool, device=device)
    positive[a1, p] = True
    negative[a2, n] = True
    return positive, negative


def pair_counts(a: Tensor, b: Tensor, n_queries: int, n_refs: int, dtype: torch.dtype) -> Tensor:
    """How many times each pair ``(a[i], b[i])`` occurs, as a (B, M) matrix of ``dtype``."""
    counts = torch.zeros(n_queries * n_refs, dtype=dtype, device=a.device)
    counts.index_add_(0, a * n_refs + b, torch.ones(a.shape[0], dtype=dtype, device=a.device))
    return counts.reshape(n_queries, n_refs)


def all_pairs(
    labels: Tensor, ref_labels: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Every positive and negative pair, ``(a1, p, a2, n)``, in row-major order.

    Without ``ref_labels`` a sample is not its own positive; with them every query-reference
    pair of equal labels is positive (PML's ``get_all_pairs_indices``).

    Parameters
    ----------
    labels : Tensor of shape (B,)
        Labels of the queries (the batch).
    ref_labels : Tensor of shape (M,), optional
        Labels of a separate reference set (e.g. a cross-batch memory); None: the batch itself.

    Returns
    -------
    a1, p : Tensor of shape (n_positive,), int64
        Query and reference index of each positive pair.
    a2, n : Tensor of shape (n_negative,), int64
        Query and reference index of each negative pair.

    See Also
    --------
    rankmetric.losses.all_triplets : Every valid triplet.
    rankmetric.losses.MultiSimilarityMiner : A mined subset of these pairs.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import all_pairs
    >>> [t.tolist() for t in all_pairs(torch.tensor([0, 0, 1]))]
    [[0, 1], [1, 0], [0, 1, 2, 2], [2, 2, 0, 1]]
    """
    positive, negative = label_masks(labels, ref_labels)
    a1, p = torch.nonzero(positive, as_tuple=True)
    a2, n = torch.nonzero(negative, as_tuple=True)
    return a1, p, a2, n


def all_triplets(labels: Tensor, ref_labels: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Every valid triplet ``(a, p, n)`` in row-major (a, p, n) order, without a (B, M, M) mask.

    The same triplets in the same order as PML's ``get_all_triplets_indices``; memory is
    O(B·M + n_triplets).

    Parameters
    ----------
    labels : Tensor of shape (B,)
        Labels of the queries (the batch).
    ref_labels : Tensor of shape (M,), optional
        Labels of a separate reference set; None: the batch itself.

    Returns
    -------
    a, p, n : Tensor of shape (n_triplets,), int64
        Anchors, positives and negatives.

    See Also
    --------
    rankmetric.losses.all_pairs : Every positive and negative pair.
    rankmetric.losses.TripletMiner : Mined subsets of these triplets.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import all_triplets
    >>> [t.tolist() for t in all_triplets(torch.tensor([0, 0, 1, 1]))]
    [[0, 0, 1, 1, 2, 2, 3, 3], [1, 1, 0, 0, 3, 3, 2, 2], [2, 3, 2, 3, 0, 1, 0, 1]]
    """
    return to_triplets(all_pairs(labels, ref_labels))


def anchor_weights(indices_tuple: IndicesTuple, n_queries: int, dtype: torch.dtype) -> Tensor:
    """Per-query weight: how often it is an anchor of the tuple, divided by the largest count.

    PML's ``convert_to_weights(..., using_ref=True)``: all ones for an empty tuple.
    """
    anchors = indices_tuple[0] if len(indices_tuple) == 3 else torch.cat(indices_tuple[::2])
    if anchors.numel() == 0:
        return torch.ones(n_queries, dtype=dtype, device=anchors.device)
    counts = torch.bincount(anchors, minlength=n_queries).to(dtype)
    return counts / counts.max()
