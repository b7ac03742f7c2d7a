"""PyTorch modules: the linear map of WARCA, the sphere tanh embedding of SSNE, SPDNet of RPL."""

from .linear import LinearMap
from .spdnet import BiMap, LogEig, ReEig, SPDBatchNorm, SPDNet, batch_karcher_mean
from .sphere import SphereTanhEmbedding, sphere_similarity
from .stiefel import StiefelAdam, StiefelSGD

__all__ = [
    "LinearMap",
    "SphereTanhEmbedding",
    "sphere_similarity",
    "SPDNet",
    "BiMap",
    "ReEig",
    "LogEig",
    "SPDBatchNorm",
    "batch_karcher_mean",
    "StiefelAdam",
    "StiefelSGD",
]
