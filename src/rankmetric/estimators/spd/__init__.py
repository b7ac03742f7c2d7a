"""The SPD family: estimators on stacks of SPD matrices (n, c, c).

- :class:`SPDNetEmbedding` (``spdnet``): an SPD network (:class:`rankmetric.models.SPDNet`) trained
  with any metric-learning loss of :data:`LOSSES`; its private helpers are the network side
  (``_network``: sizes, start, embeddings, the fitted network rebuilt), the domains
  (``_domains``) and the untrained-start warning (``_untrained``).
- :class:`RPLEmbedding` (``rpl``): its Riemannian-potato configuration.
- :class:`MDM` (``mdm``): minimum distance to the Riemannian class means, the untrained baseline.

Geometry (congruence, whitening, means, distances) is :mod:`rankmetric.geometry`'s.
"""

from ...losses.registry import LOSSES, make_loss
from ._network import HEADS, default_hidden_sizes
from ._untrained import UNTRAINED_ADVICE, untrained_message
from .mdm import MDM
from .rpl import RPLEmbedding
from .spdnet import SPDNetEmbedding

__all__ = [
    "SPDNetEmbedding",
    "RPLEmbedding",
    "MDM",
    "LOSSES",
    "HEADS",
    "UNTRAINED_ADVICE",
    "make_loss",
    "default_hidden_sizes",
    "untrained_message",
]
