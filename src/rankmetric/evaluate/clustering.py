"""Clustering quality of an embedding: k-means, then NMI and pairwise F1 against the labels."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.metrics import normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

from .._threads import call_threads, data_work
from .._validation import Interval, check_param
from ._inputs import as_label_array, embedding_tensors, encode_labels
from ._kmeans import kmeans_labels

__all__ = ["clustering_scores", "nmi_score", "pairwise_f1"]


def _check_pair(labels_true, labels_pred) -> tuple[np.ndarray, np.ndarray]:
    """Two label arrays of the same non-zero length, encoded as integers."""
    labels_true = as_label_array(labels_true, "labels_true")
    labels_pred = as_label_array(labels_pred, "labels_pred")
    if labels_true.shape[0] != labels_pred.shape[0]:
        raise ValueError(
            f"labels_true and labels_pred have different lengths: "
            f"{labels_true.shape[0]} != {labels_pred.shape[0]}."
        )
    if labels_true.shape[0] == 0:
        raise ValueError("labels_true is empty.")
    _, (true_codes,) = encode_labels(labels_true, lengths=[len(labels_true)], names=["labels_true"])
    _, (pred_codes,) = encode_labels(labels_pred, lengths=[len(labels_pred)], names=["labels_pred"])
    return true_codes, pred_codes


def nmi_score(labels_true, labels_pred) -> float:
    """Normalised mutual information ``I(T; P) / ((H(T) + H(P)) / 2)`` (scikit-learn's default).

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        The classes ``T``.
    labels_pred : array-like of shape (n_samples,)
        The clusters ``P`` (any labels: only the partition counts).

    Returns
    -------
    float in [0, 1]
        1 when the two partitions are the same, 0 when they are independent.

    See Also
    --------
    rankmetric.evaluate.pairwise_f1 : Another agreement score of two labellings.
    rankmetric.evaluate.clustering_scores : Both scores of a k-means clustering.

    Examples
    --------
    >>> from rankmetric.evaluate import nmi_score
    >>> nmi_score([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> round(nmi_score([0, 0, 1, 1], [0, 1, 0, 1]), 4)
    0.0
    """
    true_codes, pred_codes = _check_pair(labels_true, labels_pred)
    return float(normalized_mutual_info_score(true_codes, pred_codes, average_method="arithmetic"))


def _pairs(counts: np.ndarray) -> float:
    """Number of unordered pairs ``Σ c (c − 1) / 2`` within groups of the given sizes."""
    counts = np.asarray(counts, dtype=np.float64)
    return float(np.sum(counts * (counts - 1.0)) / 2.0)


def pairwise_f1(labels_true, labels_pred) -> float:
    r"""F1 of "same cluster" against "same class" over all unordered pairs of samples.

    With :math:`n_{ij}` the contingency table (class :math:`i`, cluster :math:`j`),

    .. math::

        & \mathrm{TP} = \sum_{i,j} \binom{n_{ij}}{2}, \quad
          P = \frac{\mathrm{TP}}{\sum_j \binom{n_{\cdot j}}{2}}, \quad
          R = \frac{\mathrm{TP}}{\sum_i \binom{n_{i \cdot}}{2}}, \\
        & F_1 = \frac{2 P R}{P + R}
          = \frac{2\, \mathrm{TP}}{\sum_j \binom{n_{\cdot j}}{2} + \sum_i \binom{n_{i \cdot}}{2}}.

    Cost :math:`O(n + \operatorname{nnz}(n_{ij}))`; no pair is enumerated.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
    labels_pred : array-like of shape (n_samples,)

    Returns
    -------
    float in [0, 1]
        0 when no two samples share a cluster (precision then is 0/0, taken as 0).

    See Also
    --------
    rankmetric.evaluate.nmi_score : An information-theoretic agreement score.
    rankmetric.evaluate.clustering_scores : Both scores of a k-means clustering.

    Examples
    --------
    >>> from rankmetric.evaluate import pairwise_f1
    >>> round(pairwise_f1([0, 0, 0, 1], [0, 0, 1, 1]), 4)  # precision 1/2, recall 1/3
    0.4
    >>> pairwise_f1(["a", "a", "b", "b"], [1, 1, 0, 0])  # the same partition, other names
    1.0
    """
    true_codes, pred_codes = _check_pair(labels_true, labels_pred)
    same_class = _pairs(np.bincount(true_codes))
    if same_class == 0:
        raise ValueError("no two samples share a class, so pairwise F1 is undefined.")
    table = contingency_matrix(true_codes, pred_codes, sparse=True)
    true_positives = _pairs(table.data)
    same_cluster = _pairs(np.bincount(pred_codes))
    return 2.0 * true_positives / (same_cluster + same_class)


@call_threads(lambda a: data_work(a["embeddings"]) * len(np.unique(np.asarray(a["labels"]))))
# alike: other public names' numpydoc sections (See Also, Examples) in shape; texts differ
def clustering_scores(
    embeddings,
    labels,
    n_clusters: int | None = None,
    random_state=0,
    n_init: int = 1,
    *,
    kmeans: str = "torch",
) -> dict[str, float]:
    """k-means on the embeddings, scored against the labels by NMI and pairwise F1.

    Parameters
    ----------
    embeddings : array-like or tensor of shape (n_samples, n_features)
    labels : array-like of shape (n_samples,)
        At least two classes.
    n_clusters : int, optional
        Number of k-means clusters; defaults to the number of classes.
    random_state : int, RandomState or None, default=0
        Seed of the k-means seeding.
    n_init : int, default=1
        k-means restarts (the best inertia is kept).
    kmeans : {"torch", "faiss", "sklearn"}, default="torch"
        ``"torch"``: the project's k-means (greedy k-means++ seeding, Lloyd iterations, chunked
        assignment by matrix products; ``docs/evaluation.md``); ``"faiss"``: ``faiss.Kmeans``
        (needs faiss); ``"sklearn"``: scikit-learn's ``KMeans`` with ``random_state``, for
        results comparable with earlier versions (which used it with ``n_init=10``).

    Returns
    -------
    dict
        ``{"nmi": nmi_score(labels, clusters), "f1": pairwise_f1(labels, clusters)}``.

    See Also
    --------
    rankmetric.evaluate.nmi_score : The NMI of two labellings.
    rankmetric.evaluate.pairwise_f1 : The pairwise F1 of two labellings.
    rankmetric.evaluate.retrieval_report : Rank scores and clustering scores together.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.evaluate import clustering_scores
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> clustering_scores(X, [0, 0, 0, 1, 1, 1])
    {'nmi': 1.0, 'f1': 1.0}
    """
    X, _ = embedding_tensors(embeddings, None, ("embeddings", ""), "cpu")
    classes, (codes,) = encode_labels(labels, lengths=[X.shape[0]], names=["labels"])
    if classes.shape[0] < 2:
        raise ValueError("labels hold a single class; clustering scores need at least two.")
    n_clusters = classes.shape[0] if n_clusters is None else n_clusters
    check_param(
        "n_clusters",
        n_clusters,
        [Interval(Integral, 2, X.shape[0], closed="both", right_label="n_samples")],
    )
    clusters = kmeans_labels(
        X, int(n_clusters), n_init=n_init, random_state=random_state, backend=kmeans
    )
    return {"nmi": nmi_score(codes, clusters), "f1": pairwise_f1(codes, clusters)}
