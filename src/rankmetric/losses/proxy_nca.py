r"""Proxy NCA loss (Movshovitz-Attias et al., ICCV 2017): NCA against one learnable proxy per class.

With unit-norm embeddings :math:`\hat x = x / \Vert x \Vert` and proxies
:math:`\hat p_z = p_z / \Vert p_z \Vert`, the squared Euclidean distance
:math:`d(x, z) = \Vert \hat x - \hat p_z \Vert^2` and a softmax scale :math:`s` (1 in the paper),

.. math::

    \ell(x, y) = -\log \frac{e^{-s\, d(x, y)}}{\sum_{z \in Z'} e^{-s\, d(x, z)}} ,
    \qquad L = \operatorname{mean}_{\text{batch}} \ell ,

where :math:`Z' = Z \setminus \{y\}` (the paper's eq. 9: the positive proxy is left out of the
denominator, ``exclude_positive=True``) or :math:`Z' = Z` (a plain softmax over all proxies, the
convention of pytorch-metric-learning's ``ProxyNCALoss``). Cost: a (B, n_classes) distance matrix.
"""

from __future__ import annotations

from numbers import Integral, Real

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import Interval, check_param
from ._docstrings import fill_doc
from .base import BatchMetricLoss
from .indices import anchor_weights, check_indices_tuple
from .pair_distances import pairwise_distance, unit_rows
from .precision import compute_dtype, is_compiling

__all__ = ["ProxyNCALoss"]


#: The constructor's checks, declared as the estimators' ``_parameter_constraints``.
_CONSTRAINTS = {
    "n_classes": [Interval(Integral, 2, None, closed="left")],
    "embedding_dim": [Interval(Integral, 1, None, closed="left")],
    "softmax_scale": [Interval(Real, 0, None, closed="neither")],
}


@fill_doc
class ProxyNCALoss(BatchMetricLoss):
    """Proxy NCA with one learnable proxy per class (the proxies are an ``nn.Parameter``).

    Parameters
    ----------
    n_classes : int
        Number of classes ``≥ 2``; labels must be the codes ``0..n_classes−1``.
    embedding_dim : int
        Dimension ``d`` of the embeddings (and of the proxies).
    softmax_scale : float, default=1.0
        ``s > 0``, multiplies the negative squared distances before the softmax.
    exclude_positive : bool, default=True
        Leave the positive proxy out of the denominator (the paper) or not (a plain softmax).
    generator : torch.Generator, optional
        Random source of the proxies' initialisation, ``N(0, 1)`` entries (on the CPU).
    dtype : torch.dtype, default=torch.float32
    device : str or torch.device, optional
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns ``ℓ(x, y)`` of every sample, shape (B,), in batch order; ``"mean"``
        (the loss of the paper) is their mean.

    Attributes
    ----------
    proxies : nn.Parameter of shape (n_classes, embedding_dim)
        Unnormalised proxies (normalised inside the loss); train them with the embedding model.

    See Also
    --------
    rankmetric.losses.NPairLoss : A softmax over in-batch positives instead of proxies.
    rankmetric.losses.MultiSimilarityLoss : A pair-based loss of the same benchmark.

    Notes
    -----
    %(call_convention)s

    * ``embeddings``: tensor of shape (B, embedding_dim); same device as the proxies; the same
      dtype, or float16 / bfloat16 against float32 proxies (computed in float32, see
      :mod:`rankmetric.losses.precision`).
    * ``labels``: class codes in ``0..n_classes−1``.
    * ``indices_tuple``: mined triplets or pairs: each sample's term is weighted by how often it is
      an anchor of the tuple, divided by the largest such count (pytorch-metric-learning's miner
      weights for its proxy losses); ``"mean"`` still divides by B.
    * the result: scalar tensor, or tensor of shape (B,) with ``reduction="none"``.

    References
    ----------
    Movshovitz-Attias, Toshev, Leung, Ioffe & Singh, *No Fuss Distance Metric Learning using
    Proxies*, ICCV 2017.

    %(example_batch)s
    >>> loss_fn = losses.ProxyNCALoss(n_classes=4, embedding_dim=3)
    >>> loss_fn.proxies.shape
    torch.Size([4, 3])
    >>> loss = loss_fn(x, y)
    >>> loss.backward()
    >>> x.grad.shape
    torch.Size([8, 3])
    """

    def __init__(
        self,
        n_classes: int,
        embedding_dim: int,
        *,
        softmax_scale: float = 1.0,
        exclude_positive: bool = True,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        given = {"n_classes": n_classes, "embedding_dim": embedding_dim}
        for name, value in {**given, "softmax_scale": softmax_scale}.items():
            check_param(name, value, _CONSTRAINTS[name])
        self.softmax_scale = float(softmax_scale)
        self.exclude_positive = bool(exclude_positive)
        init = torch.randn(n_classes, embedding_dim, generator=generator, dtype=dtype)
        self.proxies = nn.Parameter(init.to(device))

    # alike: a property and extra_repr of an nn.Module, shaped like BiMap's (models/spdnet.py); the
    # fields differ
    @property
    def n_classes(self) -> int:
        return self.proxies.shape[0]

    def extra_repr(self) -> str:
        return (
            f"n_classes={self.proxies.shape[0]}, embedding_dim={self.proxies.shape[1]}, "
            f"softmax_scale={self.softmax_scale}, exclude_positive={self.exclude_positive}, "
            f"{super().extra_repr()}"
        )

    def batch_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if ref_emb is not None or ref_labels is not None:
            raise ValueError(
                "ProxyNCALoss compares the batch with its proxies: it takes no ref_emb or "
                "ref_labels."
            )
        self._check_inputs(embeddings, labels)
        x_unit = unit_rows(embeddings)
        proxies_unit = unit_rows(self.proxies.to(embeddings.dtype))
        logits = -self.softmax_scale * pairwise_distance(x_unit, "sqeuclidean", proxies_unit)
        positive_logit = logits.gather(1, labels[:, None])[:, 0]
        if self.exclude_positive:
            own_class = F.one_hot(labels, self.n_classes).bool()
            logits = logits.masked_fill(own_class, -torch.inf)
        terms = torch.logsumexp(logits, dim=1) - positive_logit
        if indices_tuple is not None:
            indices = check_indices_tuple(
                indices_tuple, labels.shape[0], labels.shape[0], labels.device
            )
            terms = terms * anchor_weights(indices, labels.shape[0], terms.dtype)
        return self.reduce(terms)

    def _check_inputs(self, embeddings: torch.Tensor, labels: torch.Tensor) -> None:
        if embeddings.shape[1] != self.proxies.shape[1]:
            raise ValueError(
                f"embeddings have dimension {embeddings.shape[1]}, the proxies "
                f"{self.proxies.shape[1]} (embedding_dim)."
            )
        same_precision = compute_dtype(embeddings.dtype) == compute_dtype(self.proxies.dtype)
        if not same_precision or embeddings.device != self.proxies.device:
            raise ValueError(
                f"embeddings are {embeddings.dtype} on {embeddings.device} but the proxies are "
                f"{self.proxies.dtype} on {self.proxies.device}; move the loss with .to(...)."
            )
        if not is_compiling() and (int(labels.min()) < 0 or int(labels.max()) >= self.n_classes):
            raise ValueError(
                f"labels must be class codes in 0..{self.n_classes - 1}, got values in "
                f"[{int(labels.min())}, {int(labels.max())}]."
            )
