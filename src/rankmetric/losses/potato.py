r"""Riemannian Potato-based Ranking Loss (RPL).

Kim, Suh, Lee & Jo, "Nonlinear Ranking Loss on Riemannian Potato Embedding" (KAIST, Looxid Labs).

For an anchor :math:`i` of class :math:`c` and every other sample :math:`j` of the batch, with
:math:`d_{ij}` the Riemannian distance between their embeddings, the potato of class :math:`c`
(the geometric mean :math:`\mu_c` and geometric standard deviation :math:`\sigma_c` of within-class
distances, kept as buffers and updated online) turns distances into z-scores

.. math:: z_{ij} = \frac{\log d_{ij} - \log \mu_c}{\log \sigma_c} .

Hard positives :math:`\hat P_i = \{j \ne i : y_j = c,\ z_{ij} > z_{th}\}` are pulled inside the
potato and hard negatives :math:`\hat N_i = \{j : y_j \ne c,\ z_{ij} < z_{th} + m\}` pushed out of
it:

.. math::

    L_P(i) &= \operatorname{mean}_{j \in \hat P_i} [z_{ij} - z_{th}]_+ , \qquad
    L_N(i) = \operatorname{mean}_{j \in \hat N_i} [z_{th} + m - z_{ij}]_+ , \\
    L &= \operatorname{mean}_i \big(L_P(i) + \lambda L_N(i)\big)

(an empty set contributes 0).

The potato update (the Riemannian potato's recursive rule, Barachant et al. 2013) runs in training
mode, before the z-scores are computed, on the within-class pairs :math:`i < j` of the batch,
detached:

.. math::

    \log \mu_c \leftarrow (1 - \alpha) \log \mu_c + \alpha m_c , \qquad
    \log^2 \sigma_c \leftarrow (1 - \alpha) \log^2 \sigma_c + \alpha v_c ,

with :math:`m_c` the batch mean of :math:`\log d` over class-:math:`c` pairs and :math:`v_c` the
batch mean of :math:`(\log d - \log \mu_c)^2` around the *new* :math:`\log \mu_c`. A class seen
for the first time takes the batch statistics directly. Under ``torch.distributed`` the per-class
sums behind :math:`m_c` and :math:`v_c` are all-reduced, so every rank holds the same potato.

``center="class"`` is the poster's class-centered potato (the Riemannian potato of Barachant et al.
scores each sample's distance to a mean): with :math:`M_c` the Riemannian mean of the
class-:math:`c` embeddings of the batch (:math:`\arg\min_M \sum_i \delta^2(Y_i, M)`: the arithmetic
mean for vectors and the log-Euclidean mean :math:`\exp(\operatorname{mean} \log Y_i)` under that
distance, and the AIRM (Karcher) mean, computed iteratively, all three differentiated through;
the Karcher mean by the implicit function theorem), :math:`d_{ic} = \delta(Y_i, M_c)` and
:math:`z_{ic} = (\log d_{ic} - \log \mu_c) / \log \sigma_c` for every class :math:`c` present in
the batch,

.. math::

    L_P(i) = [z_{i y_i} - z_{th}]_+ , \qquad
    L_N(i) = \operatorname{mean}_{c \ne y_i :\ z_{ic} < z_{th} + m} [z_{th} + m - z_{ic}]_+ ,

and the potato statistics of class :math:`c` are updated online (same rule, momentum
:math:`\alpha`) from the distances of its members to :math:`M_c`. Each sample is judged against
whole class potatoes instead of individual anchors.
"""

from __future__ import annotations

import torch

from .._distributed import all_reduce_max, all_reduce_sum_
from .._validation import check_option, renamed_keywords
from ..geometry.aliases import canonical_metric
from ..geometry.matrix_functions import divided_differences, spd_exp, spd_log, symmetrize
from ..geometry.means import riemannian_mean
from ..geometry.tangent import congruence
from .base import MetricLoss, finite_loss, non_negative
from .pair_distances import (
    SPD_METRICS,
    MetricSelector,
    check_batch,
    label_masks,
    pairwise_distance,
)
from .precision import is_compiling, mixed_precision

__all__ = ["RiemannianPotatoLoss", "embedding_distances", "DISTANCES", "CENTERS", "CENTRES"]

DISTANCES = SPD_METRICS  # ("airm", "log_euclidean"); pyRiemann's names are accepted as aliases
CENTERS = ("pairwise", "class")
CENTRES = CENTERS  # the British spelling of 0.2, kept for old imports
#: A z-score deviation ``log d − log μ`` within this many ulps of the larger of the two is
#: rounding (see ``RiemannianPotatoLoss.z_scores``).
_ROUNDING_ULPS = 8


@renamed_keywords(distance="metric")
def embedding_distances(
    A: torch.Tensor, B: torch.Tensor | None = None, metric: str = "airm"
) -> torch.Tensor:
    """Pairwise distances between embeddings: Riemannian for SPD matrices, Euclidean for vectors.

    Parameters
    ----------
    A : tensor of shape (nA, c, c) or (nA, d)
        SPD matrices (3-D) or vectors (2-D).
    B : tensor of shape (nB, c, c) or (nB, d), optional
        Defaults to ``A``.
    metric : {"airm", "log_euclidean"}, default="airm"
        Distance between SPD matrices: affine-invariant Riemannian
        (:math:`\\sqrt{\\sum_k \\log^2 \\lambda_k(A, B)}`) or log-Euclidean
        (:math:`\\Vert \\log A - \\log B \\Vert_F`); pyRiemann's ``"riemann"`` and
        ``"logeuclid"`` are accepted. Ignored for vectors (Euclidean distance).

    Returns
    -------
    tensor of shape (nA, nB)
        Differentiable distances (zero gradient at zero distance), from
        :func:`rankmetric.losses.pair_distances.pairwise_distance`.
    """
    metric = canonical_metric(metric, DISTANCES, name="metric")
    return pairwise_distance(A, "euclidean" if A.ndim == 2 else metric, B)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """Per-row (weighted) mean of ``values`` over ``mask``; rows with an empty mask give 0.

    With ``temperature > 0`` each entry is weighted by ``exp(temperature · value)`` (normalised
    over the row's mask, weights detached), the Ranked List Loss weighting of violators.
    """
    if temperature > 0:
        logits = torch.where(mask, temperature * values.detach(), -torch.inf)
        row_max = logits.amax(dim=1, keepdim=True).clamp_min(0.0)
        weights = torch.exp(logits - row_max)
    else:
        weights = mask.to(values.dtype)
    # ``values`` is finite and ``weights`` is 0 off the mask, so an empty row gives 0 / tiny = 0.
    total = weights.sum(dim=1).clamp_min(torch.finfo(values.dtype).tiny)
    return (weights * values).sum(dim=1) / total


class RiemannianPotatoLoss(MetricSelector, MetricLoss):
    """Riemannian Potato-based Ranking Loss over a batch of embeddings and class labels.

    Parameters
    ----------
    z_threshold : float, default=0
        ``z_th``: positives with ``z > z_th`` and negatives with ``z < z_th + margin`` are hard.
    margin : float, default=1
        ``m``, in units of the potato's (log-)standard deviation.
    neg_weight : float, default=1
        :math:`\\lambda`, weight of the negative term.
    momentum : float, default=0.1
        :math:`\\alpha`, rate of the online update of the potato statistics, in (0, 1].
    metric : {"airm", "log_euclidean"}, default="airm"
        Distance between SPD embeddings (``"riemann"``/``"logeuclid"`` accepted); vector
        embeddings always use the Euclidean distance.
    temperature : float, default=0
        0 averages the hinge terms of each set uniformly; ``T > 0`` weights each violator
        by ``exp(T · hinge)`` as in the Ranked List Loss (Wang et al., CVPR 2019), weights detached.
    n_classes : int, optional
        Number of classes (labels are ``0..n_classes−1``). ``None`` grows the statistics buffers
        as larger labels appear.
    eps : float, default=1e-6
        Distances are clamped at ``eps`` before the logarithm (identical embeddings).
    min_log_sigma : float, default=0.05
        Floor on :math:`\\log \\sigma_c` so that a potato built from one or two pairs gives
        finite z-scores.
    center : {"pairwise", "class"}, default="pairwise"
        ``"pairwise"``: z-scores of anchor-to-sample distances (v0.1); ``"class"``: z-scores
        of each sample's distance to the batch mean of each class (the poster's potato; see the
        module docstring).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``"none"`` returns :math:`L_P(i) + \\lambda L_N(i)` of every sample :math:`i`, shape
        (B,), in batch order (0 for a sample of a class whose potato is not initialised);
        ``"mean"`` (the loss of the paper) is their mean.

    Attributes
    ----------
    log_mu : tensor of shape (n_classes,)
        Running mean of ``log d`` over within-class pairs, per class (:math:`\\log \\mu_c`).
    log_sigma : tensor of shape (n_classes,)
        Running standard deviation of ``log d`` over within-class pairs (:math:`\\log \\sigma_c`).
    seen : bool tensor of shape (n_classes,)
        Whether a class's potato has been initialised; anchors of unseen classes contribute 0.

    See Also
    --------
    rankmetric.RPLEmbedding : The estimator that trains an SPD network with this loss.
    rankmetric.geometry.pairwise_airm : The affine-invariant distances it ranks.
    rankmetric.losses.MultiSimilarityLoss : A Euclidean ranking loss of the same benchmark.

    Notes
    -----
    Call as ``loss(embeddings, labels)`` with ``embeddings`` of shape (B, c, c) (SPD) or (B, d)
    and integer ``labels`` of shape (B,). The statistics are updated in training mode only
    (``loss.train()``, the default); in ``eval()`` mode the stored potato is used as is.
    The cost is one (B, B) distance matrix and O(B²) masked arithmetic, no loop over anchors.

    References
    ----------
    .. [1] B. H. Kim, Y.-J. Suh, H. Lee and S. Jo. Nonlinear Ranking Loss on Riemannian Potato
       Embedding. KAIST and Looxid Labs, poster.
    .. [2] A. Barachant, A. Andreev and M. Congedo. The Riemannian Potato: an automatic and
       adaptive artifact detection method for online experiments using Riemannian geometry.
       TOBI Workshop IV, 2013.
    .. [3] X. Wang, Y. Hua, E. Kodirov, G. Hu, R. Garnier and N. M. Robertson. Ranked List Loss
       for Deep Metric Learning. CVPR 2019 (``temperature``).

    Examples
    --------
    >>> import torch
    >>> from rankmetric.datasets import make_spd_clusters
    >>> from rankmetric.losses import RiemannianPotatoLoss
    >>> X, y = make_spd_clusters(12, n_channels=3, n_classes=2, random_state=0)
    >>> loss_fn = RiemannianPotatoLoss(n_classes=2)
    >>> loss = loss_fn(torch.as_tensor(X), torch.as_tensor(y))
    >>> loss.shape
    torch.Size([])
    >>> loss_fn.log_mu.shape
    torch.Size([2])
    """

    @renamed_keywords(distance="metric", centre="center")
    def __init__(
        self,
        z_threshold: float = 0.0,
        margin: float = 1.0,
        neg_weight: float = 1.0,
        momentum: float = 0.1,
        metric: str = "airm",
        *,
        temperature: float = 0.0,
        n_classes: int | None = None,
        eps: float = 1e-6,
        min_log_sigma: float = 0.05,
        center: str = "pairwise",
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        metric = canonical_metric(metric, DISTANCES, name="metric")
        if not 0 < momentum <= 1:
            raise ValueError(f"momentum must be in (0, 1], got {momentum}.")
        if n_classes is not None and (int(n_classes) != n_classes or n_classes < 1):
            raise ValueError(f"n_classes must be a positive integer or None, got {n_classes!r}.")
        if eps <= 0:
            raise ValueError(f"eps must be > 0, got {eps}.")
        if min_log_sigma <= 0:
            raise ValueError(f"min_log_sigma must be > 0, got {min_log_sigma}.")
        check_option("center", center, CENTERS)
        self.center = center
        self.z_threshold = float(z_threshold)
        self.margin = non_negative("margin", margin)
        self.neg_weight = non_negative("neg_weight", neg_weight)
        self.momentum = float(momentum)
        self.metric = metric
        self.temperature = non_negative("temperature", temperature)
        self.eps = float(eps)
        self.min_log_sigma = float(min_log_sigma)
        size = 0 if n_classes is None else int(n_classes)
        self.fixed_classes = n_classes is not None
        self.register_buffer("log_mu", torch.zeros(size))
        self.register_buffer("log_sigma", torch.ones(size))
        self.register_buffer("seen", torch.zeros(size, dtype=torch.bool))

    @property
    def centre(self) -> str:
        """The British spelling of :attr:`center` (0.2), readable this release."""
        return self.center

    def extra_repr(self) -> str:
        return (
            f"z_threshold={self.z_threshold}, margin={self.margin}, neg_weight={self.neg_weight}, "
            f"momentum={self.momentum}, metric={self.metric!r}, "
            f"temperature={self.temperature}, n_classes={self.log_mu.shape[0]}, "
            f"center={self.center!r}, {super().extra_repr()}"
        )

    @finite_loss
    @mixed_precision
    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The loss of a batch.

        Parameters
        ----------
        embeddings : tensor of shape (B, c, c) or (B, d)
            SPD embeddings or vectors.
        labels : integer tensor of shape (B,)
            Class codes in ``0..n_classes−1``.

        Returns
        -------
        scalar tensor, or tensor of shape (B,) with ``reduction="none"``
        """
        labels = self._check_inputs(embeddings, labels)
        if self.center == "class":  # each sample against the batch mean of each class (B, K)
            classes = torch.unique(labels)
            means = _class_means(embeddings, labels, classes, self.metric)
            log_d = embedding_distances(embeddings, means, self.metric).clamp_min(self.eps).log()
            own = labels[:, None] == classes[None, :]
            other, potato, columns = ~own, classes[None, :], classes
        else:  # each anchor against every sample (B, B), in the anchor's potato
            log_d = embedding_distances(embeddings, metric=self.metric).clamp_min(self.eps).log()
            own, other = label_masks(labels)
            potato, columns = labels[:, None], None
        if self.training:
            self._update_statistics(log_d.detach(), labels, own, columns)
        z = self.z_scores(log_d, potato)
        known = self.seen[potato]
        hard_pos = own & known & (z > self.z_threshold)
        hard_neg = other & known & (z < self.z_threshold + self.margin)
        loss_pos = _masked_mean(torch.relu(z - self.z_threshold), hard_pos, self.temperature)
        loss_neg = _masked_mean(
            torch.relu(self.z_threshold + self.margin - z), hard_neg, self.temperature
        )
        return self.reduce(loss_pos + self.neg_weight * loss_neg)

    def z_scores(self, log_d: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """:math:`z = (\\log d - \\log \\mu_c) / \\log \\sigma_c` in the potato of class ``c``.

        A deviation within rounding of 0 is made exactly 0: a potato built from a single pair
        (pairwise) or from a class of two (class-centred: both members are equally far from
        their mean) has ``log_mu`` equal to those very log-distances, so their z-scores are 0
        but for the last bit, right at the hinge ``z_th = 0``: whether they count as hard then
        depended on the CPU's rounding (another gradient, another model). Deviations under
        :data:`_ROUNDING_ULPS` ulps of the larger magnitude are rounding, not signal, and are
        set to 0 (the same subgradient everywhere).

        Parameters
        ----------
        log_d : tensor of shape (B, N)
            Log-distances.
        labels : integer tensor of shape (B,), or broadcastable to (B, N)
            The class whose potato scores each entry: the anchors' labels (B,) for
            anchor-to-sample distances, ``classes[None, :]`` for distances to class means.

        Returns
        -------
        tensor of shape (B, N)
        """
        potato = labels[:, None] if labels.ndim == 1 else labels
        log_mu = self.log_mu[potato].to(log_d.dtype)
        log_sigma = self.log_sigma[potato].to(log_d.dtype).clamp_min(self.min_log_sigma)
        deviation = log_d - log_mu
        ulp = torch.finfo(deviation.dtype).eps * torch.maximum(log_d.abs(), log_mu.abs())
        deviation = torch.where(deviation.abs() <= _ROUNDING_ULPS * ulp, 0.0, deviation)
        return deviation / log_sigma

    @torch.no_grad()
    def _update_statistics(
        self,
        log_d: torch.Tensor,
        labels: torch.Tensor,
        within: torch.Tensor,
        columns: torch.Tensor | None = None,
    ) -> None:
        """Online update of each class's potato from a batch's within-class distances.

        Pairwise: the pairs ``i < j`` of ``within`` (B, B). Class-centered (``columns`` given,
        the classes of the K columns of ``log_d``): each sample's distance to its class mean.
        """
        if columns is None:
            pairs = torch.triu(within, diagonal=1).to(torch.float64)  # (B, B), 1 on pairs used
        else:
            pairs = within.to(torch.float64)  # (B, K), 1 on each sample's own class
        values = log_d.to(torch.float64) * pairs
        per_anchor = torch.stack([pairs.sum(1), values.sum(1), (values * values).sum(1)])
        one_hot = torch.nn.functional.one_hot(labels, self.log_mu.shape[0]).to(torch.float64)
        count, s1, s2 = all_reduce_sum_(per_anchor @ one_hot)  # per-class sums, (3, n_classes)
        present = count > 0
        safe_count = count.clamp_min(1.0)
        batch_mean = s1 / safe_count
        old_mu = self.log_mu.to(torch.float64)
        old_var = self.log_sigma.to(torch.float64) ** 2
        seen = self.seen
        alpha = self.momentum
        new_mu = torch.where(seen, (1 - alpha) * old_mu + alpha * batch_mean, batch_mean)
        spread = (s2 - 2 * new_mu * s1 + count * new_mu**2) / safe_count
        new_var = torch.where(seen, (1 - alpha) * old_var + alpha * spread, spread).clamp_min(0.0)
        self.log_mu.copy_(torch.where(present, new_mu, old_mu))
        self.log_sigma.copy_(torch.where(present, new_var.sqrt(), old_var.sqrt()))
        self.seen |= present

    def _check_inputs(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = check_batch(embeddings, labels, allow_matrices=True)
        if labels.shape[0] < 2:
            raise ValueError("a batch needs at least 2 embeddings to form pairs.")
        if is_compiling() and self.fixed_classes:
            return labels  # no host sync in a compiled graph; eager calls check the codes
        if int(labels.min()) < 0:
            raise ValueError("labels must be non-negative class codes 0..n_classes-1.")
        self._ensure_classes(int(labels.max()) + 1)
        return labels

    def _ensure_classes(self, needed: int) -> None:
        """Grow the statistics buffers to ``needed`` classes (unless ``n_classes`` was fixed)."""
        current = self.log_mu.shape[0]
        if self.fixed_classes:
            if needed > current:
                raise ValueError(f"labels must be < n_classes={current}, got label {needed - 1}.")
            return
        needed = all_reduce_max(needed, self.log_mu.device)
        if needed > current:
            grow = needed - current
            self.log_mu = torch.cat([self.log_mu, self.log_mu.new_zeros(grow)])
            self.log_sigma = torch.cat([self.log_sigma, self.log_sigma.new_ones(grow)])
            self.seen = torch.cat([self.seen, self.seen.new_zeros(grow)])

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        incoming = state_dict.get(prefix + "log_mu")
        if incoming is not None and not self.fixed_classes and incoming.shape != self.log_mu.shape:
            self.log_mu = torch.zeros_like(incoming, device=self.log_mu.device)
            self.log_sigma = torch.ones_like(incoming, device=self.log_sigma.device)
            self.seen = torch.zeros(incoming.shape, dtype=torch.bool, device=self.seen.device)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _class_means(
    embeddings: torch.Tensor, labels: torch.Tensor, classes: torch.Tensor, distance: str
) -> torch.Tensor:
    """Mean embedding of each class in ``classes``: arithmetic for vectors, log-Euclidean or
    Riemannian (:class:`_KarcherMean`) for SPD matrices; shape (K, d) or (K, c, c), in the
    embeddings' dtype, all three differentiated through."""
    weights = (labels[:, None] == classes[None, :]).to(embeddings.dtype)  # (B, K)
    weights = weights / weights.sum(0)
    if embeddings.ndim == 2:
        return weights.T @ embeddings
    if distance == "log_euclidean":
        logs = spd_log(embeddings)
        return spd_exp(torch.einsum("bk,bij->kij", weights, logs))
    # a loop over the K classes of the batch (not over samples): one Karcher mean per class
    means = [_KarcherMean.apply(embeddings[labels == c]) for c in classes.tolist()]
    return torch.stack(means)


class _KarcherMean(torch.autograd.Function):
    r"""The AIRM (Karcher) mean of a stack (n, c, c), differentiated by the implicit function
    theorem (it used to be detached: the gradient then missed the mean's dependence on the
    embeddings, and a gradient check of the class-centred AIRM potato failed).

    The mean :math:`M` is computed iteratively, in float64 (:func:`riemannian_mean`). Write
    :math:`Z_i = W Y_i W` with :math:`W = M^{-1/2}` (the whitened matrices, with mean
    :math:`I`) and :math:`M' = M^{1/2} (I + E) M^{1/2}`. The Karcher condition
    :math:`\sum_i \log((I + E)^{-1/2} Z_i (I + E)^{-1/2}) = 0` has the differential in
    :math:`E` at 0

    .. math:: \mathcal J[E] = -\tfrac12 \sum_i U_i \big((U_i^\top E U_i) \circ K_i\big)
        U_i^\top, \qquad K_{i,ab} = (\lambda_a + \lambda_b) \Delta_{i,ab},

    with :math:`Z_i = U_i \operatorname{diag}(\lambda) U_i^\top` and :math:`\Delta_i` the
    divided differences of the logarithm (the Loewner matrix of :math:`D \log_{Z_i}`), and the
    differential :math:`D \log_{Z_i}[W\, dY_i\, W]` in :math:`Y_i`. Both are self-adjoint,
    so for an incoming gradient :math:`G` of :math:`M`,

    .. math:: V = \mathcal J^{-1}\big[\operatorname{sym}(M^{1/2} G M^{1/2})\big], \qquad
        \nabla_{Y_i} = -W \, D \log_{Z_i}[V] \, W .

    :math:`\mathcal J` is formed as a (p, p) matrix on the symmetric basis, p = c (c + 1) / 2,
    in one batched product: no loop over samples.
    """

    @staticmethod
    def forward(ctx, Y: torch.Tensor) -> torch.Tensor:
        Y64 = Y.detach().to(torch.float64)
        M = riemannian_mean(Y64, tol=1e-12, max_iter=100)
        ctx.save_for_backward(Y64, M)
        return M.to(Y.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_M: torch.Tensor) -> torch.Tensor:
        Y, M = ctx.saved_tensors
        c = M.shape[-1]
        lam_M, U_M = torch.linalg.eigh(M)
        root = (U_M * lam_M.sqrt()) @ U_M.mT  # M^{1/2}
        W = (U_M * lam_M.rsqrt()) @ U_M.mT  # M^{-1/2}
        lam, U = torch.linalg.eigh(congruence(Y, W))  # Z_i, (n, c), (n, c, c)
        delta = divided_differences(lam, lam.log(), torch.reciprocal)  # (n, c, c)
        K = (lam[..., :, None] + lam[..., None, :]) * delta
        # the symmetric basis: E_ab = E_ba = 1/√2 (a < b), E_aa = 1 (orthonormal)
        rows, cols = torch.triu_indices(c, c, device=M.device)
        p = rows.shape[0]
        basis = torch.zeros(p, c, c, dtype=M.dtype, device=M.device)
        weight = torch.where(rows == cols, 1.0, 0.5**0.5).to(M.dtype)
        basis[torch.arange(p), rows, cols] = weight
        basis[torch.arange(p), cols, rows] = weight
        rotated = U.mT[:, None] @ basis[None] @ U[:, None]  # (n, p, c, c)
        J_basis = -0.5 * (U[:, None] @ (rotated * K[:, None]) @ U.mT[:, None]).sum(0)
        J = torch.einsum("kab,lab->kl", basis, J_basis)  # (p, p), symmetric
        G = root @ symmetrize(grad_M.to(M.dtype)) @ root
        v = torch.linalg.solve(J, torch.einsum("kab,ab->k", basis, G))
        V = torch.einsum("k,kab->ab", v, basis)
        dlog = U @ ((U.mT @ V @ U) * delta) @ U.mT  # D log_{Z_i}[V], (n, c, c)
        return (-W @ dlog @ W).to(grad_M.dtype)
