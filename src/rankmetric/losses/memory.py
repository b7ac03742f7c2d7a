"""Cross-batch memory (Wang, Zhang, Huang & Scott, CVPR 2020): a queue of past embeddings.

The embeddings of a network drift slowly, so those of the last few batches are still informative
negatives and positives: :class:`CrossBatchMemory` keeps a FIFO queue of the last ``size``
embeddings (detached) and labels, and computes the wrapped loss of each new batch against the
whole queue as its reference set (``ref_emb=``, ``ref_labels=``). The batch is enqueued first,
so it is compared with itself too, except a sample with itself (its own slot is removed from the
positive pairs). Pairs are every (query, memory) pair, or those chosen by ``miner``, exactly as
pytorch-metric-learning's ``CrossBatchMemory``.
"""

from __future__ import annotations

import inspect

import torch
from torch import Tensor, nn

from .indices import IndicesTuple, all_pairs
from .pair_distances import check_batch

__all__ = ["CrossBatchMemory"]


class CrossBatchMemory(nn.Module):
    """Wrap a pair or triplet loss so that each batch is compared with a memory of past batches.

    Parameters
    ----------
    loss : nn.Module
        A loss taking ``(embeddings, labels, indices_tuple=, ref_emb=, ref_labels=)``: the pair and
        triplet losses of :mod:`rankmetric.losses` (``TripletLoss``, ``MultiSimilarityLoss``,
        ``LiftedStructureLoss``, ``NPairLoss``, ``WARPLoss``, ``SimilarityRegressionLoss``) or a
        pytorch-metric-learning loss.
    size : int
        Number of embeddings the memory holds (``≥`` the batch size).
    miner : callable, optional
        ``miner(embeddings, labels, ref_emb, ref_labels)`` returning an index tuple, e.g. a
        :mod:`~rankmetric.losses.miners` miner; default every (query, memory) pair.

    Attributes
    ----------
    embedding_memory : tensor of shape (size, ...) or None
        The queue (allocated at the first call, in the embeddings' dtype and device).
    label_memory : int64 tensor of shape (size,) or None
    n_filled : int
        How many slots hold an embedding.

    See Also
    --------
    rankmetric.losses.MultiSimilarityLoss : The loss the memory was introduced with.
    rankmetric.losses.MultiSimilarityMiner : Mining against the memory as reference set.

    References
    ----------
    .. [1] X. Wang, H. Zhang, W. Huang and M. R. Scott. Cross-Batch Memory for Embedding
       Learning. CVPR 2020.

    Examples
    --------
    >>> import torch
    >>> from rankmetric.losses import CrossBatchMemory, MultiSimilarityLoss
    >>> loss_fn = CrossBatchMemory(MultiSimilarityLoss(), size=64)
    >>> x, y = torch.randn(16, 4, requires_grad=True), torch.arange(16) % 4
    >>> loss_fn(x, y).backward()
    >>> loss_fn.n_filled
    16
    """

    def __init__(self, loss: nn.Module, size: int, *, miner: nn.Module | None = None) -> None:
        super().__init__()
        parameters = inspect.signature(loss.forward).parameters
        if not {"indices_tuple", "ref_emb", "ref_labels"} <= set(parameters):
            raise ValueError(
                f"{type(loss).__name__} does not take indices_tuple, ref_emb and ref_labels, "
                "so it cannot be used with a memory."
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an integer >= 1, got {size!r}.")
        self.loss = loss
        self.miner = miner
        self.size = size
        self.reset()

    def extra_repr(self) -> str:
        return f"size={self.size}"

    def reset(self) -> None:
        """Empty the memory.

        Returns
        -------
        None
            The next batch starts a new memory.
        """
        self.register_buffer("embedding_memory", None, persistent=False)
        self.register_buffer("label_memory", None, persistent=False)
        self.position = 0
        self.n_filled = 0

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """Enqueue a batch and return the wrapped loss of the batch against the memory.

        Parameters
        ----------
        embeddings : tensor of shape (B, ...)
            ``B ≤ size``.
        labels : integer tensor of shape (B,)

        Returns
        -------
        tensor
            What the wrapped loss returns.
        """
        labels = check_batch(embeddings, labels, allow_matrices=True)
        n = labels.shape[0]
        if n > self.size:
            raise ValueError(f"a batch of {n} does not fit a memory of size {self.size}.")
        self._allocate(embeddings)
        slots = (self.position + torch.arange(n, device=labels.device)) % self.size
        self.embedding_memory[slots] = embeddings.detach().to(self.embedding_memory.dtype)
        self.label_memory[slots] = labels
        self.position = (self.position + n) % self.size
        self.n_filled = min(self.n_filled + n, self.size)
        ref_emb = self.embedding_memory[: self.n_filled]
        ref_labels = self.label_memory[: self.n_filled]
        if self.miner is not None:
            indices = self.miner(embeddings, labels, ref_emb, ref_labels)
        else:
            indices = all_pairs(labels, ref_labels)
        indices = _without_self(indices, slots)
        return self.loss(
            embeddings, labels, indices_tuple=indices, ref_emb=ref_emb, ref_labels=ref_labels
        )

    def _allocate(self, embeddings: Tensor) -> None:
        memory = self.embedding_memory
        shape = (self.size, *embeddings.shape[1:])
        if memory is None or memory.shape != shape:
            if memory is not None:
                raise ValueError(
                    f"the memory holds embeddings of shape {tuple(memory.shape[1:])}, the batch "
                    f"{tuple(embeddings.shape[1:])}."
                )
            self.embedding_memory = embeddings.new_zeros(shape)
            self.label_memory = torch.zeros(self.size, dtype=torch.long, device=embeddings.device)
        elif memory.dtype != embeddings.dtype or memory.device != embeddings.device:
            self.embedding_memory = memory.to(embeddings.device, embeddings.dtype)
            self.label_memory = self.label_memory.to(embeddings.device)


def _without_self(indices: IndicesTuple, slots: Tensor) -> IndicesTuple:
    """Drop the positive pairs (or triplets) that pair a query with its own memory slot."""
    anchor, positive = indices[0], indices[1]
    keep = positive != slots[anchor]
    if len(indices) == 3:
        return tuple(t[keep] for t in indices)
    return anchor[keep], positive[keep], indices[2], indices[3]
