"""The relevant columns of each query, for the ranking kernel shared by every exact ranking score.

Each consumer (``retrieval_scores``, ``retrieval_report``, ``reid_scores``) scores a chunk of
queries against the whole gallery, writes ``+inf`` over the entries its protocol removes, and
hands the relevant columns of each query to :func:`~rankmetric.neighbors.relevant_places`,
which returns the place of every relevant item without sorting keys or copying dtypes.
"""

from __future__ import annotations

import torch


class ClassColumns:
    """The gallery columns of every class, in column order (a CSR index of the labels).

    Parameters
    ----------
    codes : int64 tensor of shape (n_gallery,)
        Class code of each gallery item.
    n_classes : int
        Number of codes (query codes may exceed the gallery's).
    """

    def __init__(self, codes: torch.Tensor, n_classes: int):
        self.order = torch.argsort(codes, stable=True)
        self.size = torch.bincount(codes, minlength=n_classes)
        self.start = torch.cumsum(self.size, dim=0) - self.size

    def of(self, query_codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``columns`` (n, w) of each query's class and ``inside`` (n, w): the real entries."""
        size = self.size[query_codes]
        width = max(int(size.max()) if size.numel() else 0, 1)
        j = torch.arange(width, device=query_codes.device)
        inside = j < size.unsqueeze(1)
        at = (self.start[query_codes].unsqueeze(1) + j).clamp_(max=max(self.order.shape[0] - 1, 0))
        return self.order[at], inside
