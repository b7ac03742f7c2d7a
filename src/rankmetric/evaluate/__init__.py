"""Evaluation of learned metrics: exact k-NN search, k-NN accuracy, retrieval, clustering, CMC.

Every ranking metric runs on one chunked exact search (queries in chunks, memory bounded by a
budget, ties broken by the lower gallery index) and accepts NumPy arrays or torch tensors and a
``device``. Definitions are given in each function's docstring and in ``docs/evaluation.md``.

=====================  ============================================================
``knn_search``         exact k nearest neighbours (leave-one-out when no gallery)
``knn_predict``        k-NN majority vote, ties as scikit-learn's ``KNeighborsClassifier``
``knn_accuracy``       accuracy of that vote
``retrieval_scores``   Recall@K, precision@1 and mAP@R in one pass
``retrieval_report``   mAP, MRR, R-precision, mAP@R, P@1, R@K, NMI/AMI; micro or macro
``recall_at_k``        RPL's R@K (leave-one-out)
``precision_at_1``     P@1
``map_at_r``           mAP@R (Musgrave et al. 2020)
``average_precision``  the one average-precision formula, from ranked hits or places
``clustering_scores``  k-means with k = #classes, then NMI and pairwise F1
``nmi_score``          normalised mutual information
``pairwise_f1``        F1 of "same cluster" vs "same class" pairs
``cmc_curve``          CMC at given ranks (two-view re-identification)
``reid_scores``        re-id CMC, full mAP and mINP under camera-aware protocols
``repeated_cv_knn``    5×2 stratified cross-validated k-NN accuracy → ``CVResult``
=====================  ============================================================

Verification (``verification.py``): ``verification_scores`` gives the ROC AUC, EER and TAR at
fixed FARs of pair distances (and the ROC curve, ``roc_curve_from_distances``);
``labelled_verification_scores`` scores all (or sampled) pairs of a labelled set.

``query_gallery_split`` forms the query and gallery rows of a re-identification test set;
``rerank_k_reciprocal`` (Zhong et al. 2017) and ``average_query_expansion`` re-rank them.
"""

from ._precision import average_precision
from .clustering import clustering_scores, nmi_score, pairwise_f1
from .cmc import cmc_curve
from .knn import knn_accuracy, knn_predict, knn_search
from .protocols import CVResult, repeated_cv_knn
from .reid import query_gallery_split, reid_scores
from .rerank import average_query_expansion, rerank_k_reciprocal
from .retrieval import map_at_r, precision_at_1, recall_at_k, retrieval_report, retrieval_scores
from .verification import (
    labelled_pairs,
    labelled_verification_scores,
    roc_curve_from_distances,
    verification_scores,
)

__all__ = [
    "knn_search",
    "knn_accuracy",
    "knn_predict",
    "retrieval_scores",
    "retrieval_report",
    "recall_at_k",
    "precision_at_1",
    "map_at_r",
    "average_precision",
    "clustering_scores",
    "nmi_score",
    "pairwise_f1",
    "cmc_curve",
    "reid_scores",
    "query_gallery_split",
    "rerank_k_reciprocal",
    "average_query_expansion",
    "repeated_cv_knn",
    "CVResult",
    "verification_scores",
    "roc_curve_from_distances",
    "labelled_pairs",
    "labelled_verification_scores",
]
