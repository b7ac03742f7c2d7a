"""PyTorch losses: ``loss(embeddings, labels)`` for any network's embeddings.

Every loss derives from :class:`MetricLoss` and takes torch's ``reduction=`` ("mean" | "sum" |
"none"); the penalties on weights live in :mod:`rankmetric.losses.regularizers`. The pair and
triplet losses also take mined ``indices_tuple=`` (:mod:`~rankmetric.losses.miners`) and a
reference set ``ref_emb=, ref_labels=``; :class:`CrossBatchMemory` keeps one across batches.

The estimators train with these same modules, so a formula lives in one place.
"""

from .base import BatchMetricLoss, MetricLoss
from .indices import all_pairs, all_triplets, to_pairs, to_triplets
from .lifted import LiftedStructureLoss
from .memory import CrossBatchMemory
from .miners import BatchHardMiner, Miner, MultiSimilarityMiner, TripletMiner
from .multi_similarity import MultiSimilarityLoss
from .npair import NPairLoss
from .pair_distances import paired_distance, pairwise_distance, pairwise_similarity
from .potato import RiemannianPotatoLoss
from .proxy_nca import ProxyNCALoss
from .regularizers import (
    aon_penalty,
    group_norm_penalty,
    group_soft_threshold_,
    kernel_aon_penalty,
)
from .similarity import (
    SimilarityRegressionLoss,
    jaccard_similarity_targets,
    label_similarity_targets,
)
from .triplet import TripletLoss
from .warp import WARPLoss

__all__ = [
    "BatchMetricLoss",
    "MetricLoss",
    "WARPLoss",
    "SimilarityRegressionLoss",
    "RiemannianPotatoLoss",
    "TripletLoss",
    "LiftedStructureLoss",
    "NPairLoss",
    "ProxyNCALoss",
    "MultiSimilarityLoss",
    "Miner",
    "TripletMiner",
    "BatchHardMiner",
    "MultiSimilarityMiner",
    "CrossBatchMemory",
    "all_pairs",
    "all_triplets",
    "to_pairs",
    "to_triplets",
    "pairwise_distance",
    "paired_distance",
    "pairwise_similarity",
    "aon_penalty",
    "kernel_aon_penalty",
    "group_norm_penalty",
    "group_soft_threshold_",
    "label_similarity_targets",
    "jaccard_similarity_targets",
]
