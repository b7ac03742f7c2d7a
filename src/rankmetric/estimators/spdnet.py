"""SPDNetEmbedding: one SPD embedding network, trained with any metric-learning loss.

A scikit-learn transformer over :class:`rankmetric.models.spdnet.SPDNet`, trained with
:func:`rankmetric.training.train` and a :class:`rankmetric.models.stiefel.StiefelAdam` optimiser.
It takes a stack of SPD matrices (n, c, c), e.g. the output of ``pyriemann.estimation.Covariances``
or :class:`rankmetric.preprocessing.RegionCovariances`. The loss is a parameter
(:data:`LOSSES`): every row of the RPL table is this estimator with another loss, and
:class:`~rankmetric.estimators.rpl.RPLEmbedding` is its Riemannian-potato configuration.

The network: inputs whitened by their Riemannian mean, then ``BiMap → ReEig`` blocks, then a head:

* ``head="spd"``: the SPD output ``Y``; losses compare outputs with the Riemannian ``distance``;
* ``head="log"``: ``vec(log Y)`` (Euclidean distances = log-Euclidean distances of outputs);
* ``head="linear"``: a learned linear map of ``vec(log Y)`` (identity start).

With ``init="identity"`` square BiMaps start as the identity and reducing ones on the leading
eigenvectors of the mean squared logarithm of their inputs (a PCA of the whitened log-matrices),
so the untrained network reproduces (or, when it reduces, approximates) the log-Euclidean
distance of the whitened inputs — the untrained reference of the RPL table. Validation includes
the untrained network (step 0): a fit keeps the earliest validated parameters within one paired
standard error of the best validation score, so it leaves its start only for a gain larger
than the validation noise; a fit that keeps step 0 warns (a ``UserWarning`` with what to try,
:data:`UNTRAINED_ADVICE`), and ``max_iter=0`` builds the untrained reference on purpose.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import distributed
from .._utils import make_rng, resolve_device, to_tensor, torch_generator
from .._validation import (
    BOOLEAN,
    CHECKPOINTS,
    DEVICE,
    NONE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    InstanceOf,
    Interval,
    Options,
    check_labels,
    check_min_per_class,
    check_spd_array,
    deprecate_positional_args,
)
from ..geometry.aliases import canonical_metric
from ..geometry.dispatch import distance as spd_distance
from ..geometry.matrix_functions import eigh, spd_inv_sqrt, spd_log, symmetrize
from ..geometry.means import riemannian_mean
from ..io import register_estimator
from ..losses.lifted import LiftedStructureLoss
from ..losses.multi_similarity import MultiSimilarityLoss
from ..losses.npair import NPairLoss
from ..losses.potato import DISTANCES, RiemannianPotatoLoss, embedding_distances
from ..losses.proxy_nca import ProxyNCALoss
from ..losses.triplet import TripletLoss
from ..models.spdnet import SPDNet, sym_to_vec
from ..models.stiefel import StiefelAdam
from ..sampling import LabelIndex
from ..training import TrainingResult, UntrainedModelWarning, train
from .base import MetricLearnerMixin, fit_context

__all__ = [
    "SPDNetEmbedding",
    "LOSSES",
    "HEADS",
    "UNTRAINED_ADVICE",
    "make_loss",
    "default_hidden_sizes",
    "untrained_message",
]

#: Loss id -> description (published defaults; margins 1 for unnormalised embeddings).
LOSSES = {
    "rpl": "RiemannianPotatoLoss (see RPLEmbedding for its parameters)",
    "triplet": "TripletLoss(margin=1, mining='all') on the SPD outputs' Riemannian distance "
    "(DSML-Triplet; needs head='spd')",
    "triplet-random": "TripletLoss(margin=1, mining='random')",
    "triplet-semihard": "TripletLoss(margin=1, mining='semihard')",
    "lifted": "LiftedStructureLoss(margin=1)",
    "npair": "NPairLoss(l2_weight=0.002)",
    "proxy-nca": "ProxyNCALoss(one proxy per class)",
    "multi-similarity": "MultiSimilarityLoss(alpha=2, beta=50, base=0.5, epsilon=0.1)",
}
HEADS = ("spd", "log", "linear")
INITS = ("identity", "random")
BIMAPS = ("free", "stiefel")
_VECTOR_ONLY = ("npair", "proxy-nca", "multi-similarity")  # need vector embeddings
_OUTPUTS = ("spd", "log", "vector")
#: The hyper-parameters every SPD-network estimator shares (the loss's own are added by each).
VALIDATION_METRICS = ("recall@1", "map")
SPDNET_PARAMETER_CONSTRAINTS = {
    "hidden_sizes": [
        NONE,
        POSITIVE_INT,
        InstanceOf((str, list, tuple, np.ndarray), "a list of sizes"),
    ],
    "head": [Options(*HEADS)],
    "distance": [InstanceOf(str, "a distance name")],  # aliases resolved by ``_distance``
    "bimap": [Options(*BIMAPS)],
    "init": [Options(*INITS)],
    "eps": [Interval(Real, 0, None, closed="neither")],
    "relative_eps": [BOOLEAN],
    "batchnorm": [BOOLEAN],
    "n_classes_per_batch": [NONE, Interval(Integral, 2, None, closed="left")],
    "n_per_class": [Interval(Integral, 2, None, closed="left")],
    "max_iter": [Interval(Integral, 0, None, closed="left")],  # 0: the untrained reference
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "validation_fraction": [Interval(Real, 0, 1, closed="left")],
    "validation_every": [POSITIVE_INT],
    "patience": [NONE, POSITIVE_INT],
    "validation_metric": [Options(*VALIDATION_METRICS)],
    "validation_distance": [NONE, InstanceOf(str, "a distance name")],  # resolved in fit
    "selection_se": [Interval(Real, 0, None, closed="left")],
    "output": [Options(*_OUTPUTS)],
    "whiten": [BOOLEAN],
    "random_state": [RANDOM_STATE],
    "device": [DEVICE],
    "verbose": VERBOSE,
    **CHECKPOINTS,
}
_CHUNK = 2048  # matrices per forward pass in transform
# validation ranks the held-out matrices leave-one-out among themselves: at most 500 of them under
# AIRM (an AIRM validation of 1000 x 1000 pairs takes ~13 s on one loaded core; 500 x 500 about
# 3 s), at most 2000 under the cheap Euclidean / log-Euclidean distances.
_MAX_QUERIES = {"airm": 500, "other": 2000}


def default_hidden_sizes(n_channels: int) -> tuple[int, ...]:
    """Version 0.1's network: one BiMap halving the size, ``(max(2, ceil(c / 2)),)``.

    ``(c,)`` when ``c < 2``. The estimators now default to ``(c, c)``; this is kept for
    ``hidden_sizes=default_hidden_sizes(c)``, the original SPDNet reduction.
    """
    return (min(n_channels, max(2, -(-n_channels // 2))),)


def make_loss(
    name: str,
    *,
    n_classes: int,
    dim: int | None,
    distance: str = "airm",
    params: dict | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.nn.Module:
    """The loss module ``name`` of :data:`LOSSES`.

    Parameters
    ----------
    name : str
        A key of :data:`LOSSES`.
    n_classes : int
        Number of classes (potato statistics, proxies).
    dim : int or None
        Embedding dimension for vector embeddings; ``None`` for SPD embeddings.
    distance : {"airm", "log_euclidean"}, default="airm"
        Riemannian distance between SPD embeddings (ignored for vectors).
    params : dict, optional
        Keyword arguments overriding the loss's defaults.
    generator : torch.Generator, optional
        For random mining and proxy initialisation.
    device : torch device, optional

    Returns
    -------
    torch.nn.Module
        ``loss(embeddings, labels) -> scalar``.
    """
    params = dict(params or {})
    spd = dim is None
    if spd and name in _VECTOR_ONLY:
        raise ValueError(f"loss {name!r} needs vector embeddings: use head='log' or 'linear'.")
    metric = distance if spd else "euclidean"
    if name == "rpl":
        params.setdefault("n_classes", n_classes)
        return RiemannianPotatoLoss(distance=distance, **params).to(device)
    if name in ("triplet", "triplet-random", "triplet-semihard"):
        mining = {"triplet": "all", "triplet-random": "random", "triplet-semihard": "semihard"}
        params = {"margin": 1.0, "mining": mining[name], **params}
        if params["mining"] == "random":
            params.setdefault("generator", generator)
        return TripletLoss(distance=metric, **params)
    if name == "lifted":
        return LiftedStructureLoss(**{"margin": 1.0, **params})
    if name == "npair":
        return NPairLoss(**params)
    if name == "proxy-nca":
        return ProxyNCALoss(n_classes, dim, generator=generator, device=device, **params)
    if name == "multi-similarity":
        return MultiSimilarityLoss(**params)
    raise ValueError(f"loss must be one of {list(LOSSES)}, got {name!r}.")


@register_estimator
class SPDNetEmbedding(MetricLearnerMixin, BaseEstimator):
    r"""Learn an embedding of SPD matrices with an SPDNet and any metric-learning loss.

    Each step draws a class-balanced batch (``n_per_class`` samples of ``n_classes_per_batch``
    classes) and minimises the loss on the network's outputs. Training keeps the parameters of
    the earliest validated step whose score (R@1 by default) is within one standard error of the
    best one, the untrained network (step 0) included (``selection_se``).

    Parameters
    ----------
    loss : str, default="rpl"
        A key of :data:`LOSSES`: ``"rpl"``, ``"triplet"`` (DSML-Triplet, on SPD outputs),
        ``"triplet-random"``, ``"triplet-semihard"``, ``"lifted"``, ``"npair"``, ``"proxy-nca"``,
        ``"multi-similarity"``.
    loss_params : dict, optional
        Keyword arguments of the loss (overriding its defaults, see :func:`make_loss`).
    hidden_sizes : int, sequence of int, str or None, default=None
        Output size of each BiMap (non-increasing, at most ``c``); an int means one layer and a
        string ``"12,12,6"`` a list (for the command line). ``None``: ``(c, c)``, two square
        re-weighting layers.
    head : {"linear", "log", "spd"}, default="linear"
        What the loss sees: a linear map of ``vec(log Y)`` (identity start), ``vec(log Y)``, or
        the SPD output ``Y`` compared with the Riemannian ``distance``.
    distance : {"airm", "log_euclidean"}, default="airm"
        Riemannian distance between SPD outputs (``head="spd"``), for the loss, validation and
        :meth:`pair_distances`; pyRiemann's ``"riemann"`` / ``"logeuclid"`` are accepted.
    bimap : {"free", "stiefel"}, default="free"
        BiMap weights: any matrix (a square BiMap can re-weight directions) or orthonormal
        columns (Riemannian Adam on the Stiefel manifold; the original SPDNet).
    init : {"identity", "random"}, default="identity"
        ``"identity"``: square BiMaps start as the identity, reducing ones on the leading
        principal directions of their inputs' logarithms; ``"random"``: random orthonormal.
    eps : float, default=0.05
        ReEig floor, relative to each matrix's mean eigenvalue when ``relative_eps``.
    relative_eps : bool, default=True
        Floor at :math:`\epsilon \operatorname{tr}(X) / c` (a ReEig that clamps on whitened
        data) instead of :math:`\epsilon`.
    batchnorm : bool, default=False
        Riemannian batch normalisation after every BiMap
        (:class:`~rankmetric.models.spdnet.SPDBatchNorm`: batch Karcher mean, geodesic running
        mean, learnable SPD bias; Brooks et al. 2019). Off by default: it did not raise the
        validation R@1 (``docs/rpl.md``).
    n_classes_per_batch : int or None, default=None
        Classes per batch (``None``: all classes).
    n_per_class : int, default=8
        Samples per class in a batch (classes with fewer samples are drawn with repetition).
    max_iter : int, default=3000
        Largest number of optimisation steps (0: the untrained reference, no training);
        validation early stopping (``patience``) usually ends the fit well before. ``0``
        builds the **untrained reference** on purpose: the network's start (whitening and,
        with ``init="identity"``, the identity / principal start fitted on all the matrices,
        nothing held out), no training and no warning; ``best_iter_`` is 0. With the default
        network its vectors are the log-Euclidean vectors of the whitened matrices,
        pyRiemann's tangent space at the Riemannian mean (up to the 5 % ReEig floor). A fit
        with ``max_iter >= 1`` that keeps the untrained network (``best_iter_ == 0``) warns
        with a ``UserWarning`` saying so and what to try (:data:`UNTRAINED_ADVICE`).
    learning_rate : float, default=1e-2
        Step size of the (Riemannian) Adam optimiser.
    validation_fraction : float, default=0.2
        Share of each class held out to score the embedding every ``validation_every`` steps
        (the held-out matrices ranked leave-one-out among themselves, as the test protocol
        does, under ``validation_distance``; at most 2000 of them, 500 under AIRM); the best
        parameters are kept. 0 disables validation.
    validation_every : int, default=10
        Steps between two validations.
    patience : int or None, default=20
        Validations without improvement before stopping (``None``: run ``max_iter`` steps).
    validation_metric : {"recall@1", "map"}, default="recall@1"
        What validation scores: the share of held-out matrices whose nearest other held-out
        matrix has their class (R@1, the figure the RPL table reports), or mean average
        precision.
    validation_distance : str or None, default=None
        Distance of the validation ranking. ``None``: the training distance (the Riemannian
        ``distance`` for ``head="spd"``, else Euclidean between head vectors). With
        ``head="spd"``, ``"log_euclidean"`` validates the distance of :meth:`transform`'s
        vectors (what a k-NN on them uses); ``"airm"`` is AIRM between outputs.
    selection_se : float, default=1.0
        Which validated parameters are kept: the earliest validated step, the untrained network
        (step 0) included, whose validation score is within ``selection_se`` standard errors of
        the best one (standard error of the per-query score differences, paired over the same
        held-out matrices; Breiman's one-standard-error rule). A gain within the validation
        noise thus neither replaces the untrained start nor buys more training. 0: the best step.
    output : {"vector", "log", "spd"}, default="vector"
        What :meth:`transform` returns: the embedding vectors (the head's output, or
        ``vec(log Y)`` with off-diagonal entries scaled by √2), or, without a linear head, the SPD
        output ``Y`` (n, h, h) or its logarithm.
    whiten : bool, default=True
        Whiten the inputs by the Riemannian (Karcher) mean ``M`` of the training matrices,
        ``X ↦ M^{-1/2} X M^{-1/2}``.
    random_state : int, Generator or None
        Seed of the validation split, the network's start and the batches (same seed, same
        model on the CPU).
    device : str or None
        Torch device; ``None`` picks CUDA when available.
    verbose : bool or int, default=False
        Show a progress bar (on a terminal).
    checkpoint_dir : str or path-like, optional
        Folder for resumable checkpoints (see :func:`rankmetric.training.train`).
    checkpoint_every : int, default=100
        Steps between two checkpoints.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    whitening_ : ndarray of shape (c, c)
    weights_ : list of ndarray
        The BiMap weights, shapes (c, h1), (h1, h2), ...
    head_weight_, head_bias_ : ndarray or None
        The linear head (``head="linear"``).
    batchnorm_means_, batchnorm_log_biases_ : list of ndarray
        Running means and log-biases of the batch-normalisation layers (empty without).
    n_iter_ : int
    best_iter_ : int or None
        Step whose parameters were kept (0: the untrained network, which a fit with
        ``max_iter >= 1`` reports with a ``UserWarning``; also 0 for ``max_iter=0``); ``None``
        without validation.
    initial_validation_score_, validation_score_ : float or None
        Validation score (``validation_metric``) of the untrained network and of the kept one.
    validation_gain_ : tuple of float or None
        (mean per-query gain of the best step over step 0, its standard error) on validation.
    loss_curve_ : ndarray of shape (``n_iter_``,)
        Training loss per step.
    n_features_in_ : int
        Size ``c`` of the matrices seen by ``fit``.

    See Also
    --------
    rankmetric.RPLEmbedding : This network with the Riemannian potato ranking loss.
    rankmetric.models.SPDNet : The network itself, for training inside PyTorch.
    rankmetric.preprocessing.TangentSpace : A fixed (untrained) map of SPD matrices to vectors.
    rankmetric.preprocessing.Covariances : Multichannel signals to the SPD inputs it takes.

    References
    ----------
    .. [1] Z. Huang and L. Van Gool. A Riemannian Network for SPD Matrix Learning. AAAI 2017.
    .. [2] B. H. Kim, Y.-J. Suh, H. Lee and S. Jo. Nonlinear Ranking Loss on Riemannian Potato
       Embedding. KAIST and Looxid Labs, poster (the loss baselines of its Table 1).

    Examples
    --------
    >>> from rankmetric import SPDNetEmbedding
    >>> from rankmetric.datasets import make_spd_clusters
    >>> X, y = make_spd_clusters(60, n_channels=4, n_classes=3, random_state=0)
    >>> net = SPDNetEmbedding(
    ...     loss="multi-similarity",
    ...     hidden_sizes=3,
    ...     max_iter=20,
    ...     validation_fraction=0.0,
    ...     random_state=0,
    ...     device="cpu",
    ... )
    >>> net.fit(X, y).transform(X).shape
    (60, 6)
    >>> [w.shape for w in net.weights_]
    [(4, 3)]
    """

    _parameter_constraints = {
        **SPDNET_PARAMETER_CONSTRAINTS,
        "loss": [Options(*LOSSES)],
        "loss_params": [NONE, InstanceOf(dict, "a dict")],
    }

    @deprecate_positional_args
    def __init__(
        self,
        *,
        loss: str = "rpl",
        loss_params: dict | None = None,
        hidden_sizes: int | str | Sequence[int] | None = None,
        head: str = "linear",
        distance: str = "airm",
        bimap: str = "free",
        init: str = "identity",
        eps: float = 0.05,
        relative_eps: bool = True,
        batchnorm: bool = False,
        n_classes_per_batch: int | None = None,
        n_per_class: int = 8,
        max_iter: int = 3000,
        learning_rate: float = 1e-2,
        validation_fraction: float = 0.2,
        validation_every: int = 10,
        patience: int | None = 20,
        validation_metric: str = "recall@1",
        validation_distance: str | None = None,
        selection_se: float = 1.0,
        output: str = "vector",
        whiten: bool = True,
        random_state=None,
        device: str | None = None,
        verbose: bool | int = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
    ) -> None:
        self.loss = loss
        self.loss_params = loss_params
        self.hidden_sizes = hidden_sizes
        self.head = head
        self.distance = distance
        self.bimap = bimap
        self.init = init
        self.eps = eps
        self.relative_eps = relative_eps
        self.batchnorm = batchnorm
        self.n_classes_per_batch = n_classes_per_batch
        self.n_per_class = n_per_class
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.validation_fraction = validation_fraction
        self.validation_every = validation_every
        self.patience = patience
        self.validation_metric = validation_metric
        self.validation_distance = validation_distance
        self.selection_se = selection_se
        self.output = output
        self.whiten = whiten
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.target_tags.required = False  # scikit-learn's y=None check feeds 2-D X
        return tags

    # ------------------------------------------------------------------ the loss (overridden)

    def _loss_name(self) -> str:
        return self.loss

    def _loss_kwargs(self) -> dict:
        return dict(self.loss_params or {})

    def _store_loss_state(self, loss_fn: torch.nn.Module) -> None:
        """Hook for fitted attributes of the loss (the potato statistics of RPL)."""

    # ------------------------------------------------------------------ fit

    @fit_context
    def fit(self, X, y):
        """Train the network on SPD matrices ``X`` (n_samples, c, c) with class labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, c, c)
            SPD matrices.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self
        """
        self._check_params()
        distributed.init_from_env()
        X, y = self._validate_spd(X, y=y, reset=True)
        check_classification_targets(y)
        self.classes_, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        n_channels = X.shape[1]
        sizes = [n_channels, *self._hidden_sizes(n_channels)]
        device = resolve_device(self.device)
        rng = make_rng(self.random_state)
        X_t = to_tensor(X, device, torch.float64)
        self.whitening_ = self._fit_whitening(X_t)
        X_t = _congruence(X_t, to_tensor(self.whitening_, device, torch.float64)).float()

        untrained = self.max_iter == 0  # the untrained reference: nothing held out
        if untrained:
            train_idx, val_idx = np.arange(codes.shape[0]), np.empty(0, dtype=np.int64)
        else:
            train_idx, val_idx = _stratified_split(codes, self.validation_fraction, rng)
        net = self._build_network(sizes, torch_generator(rng), device)
        if self.init == "identity":
            _principal_init(net, X_t[train_idx])
        loss_fn = self._build_loss(net, torch_generator(rng), device)
        codes_t = torch.as_tensor(codes, device=device)
        index = LabelIndex.from_codes(codes[train_idx])
        n_classes = self.n_classes_per_batch or len(self.classes_)

        def loss_step(step: int) -> torch.Tensor:
            batch = torch.as_tensor(
                train_idx[index.class_balanced_batch(n_classes, self.n_per_class, rng)],
                device=device,
            )
            # under torchrun: every rank draws the same batch, embeds its slice, and computes the
            # loss on the gathered embeddings (exact single-process gradient; distributed.py)
            local = _training_embedding(net, X_t[distributed.shard(batch)])
            return loss_fn(distributed.all_gather_with_grad(local), codes_t[batch])

        validate, candidates = None, None
        module = torch.nn.ModuleDict({"net": net, "loss": loss_fn})  # checkpoints keep the loss
        if val_idx.size:
            queries = self._validation_queries(val_idx, rng)
            candidates = _Candidates(
                [net, loss_fn], self._validation_score(net, X_t, codes_t, queries)
            )
            candidates.validate()  # the untrained network, step 0
            validate = candidates.validate
            module["candidates"] = candidates  # in the checkpoints: a resumed fit selects alike
        groups = net.parameter_groups() + _extra_group(loss_fn)
        result = train(
            module,
            StiefelAdam(groups, lr=self.learning_rate),
            loss_step,
            rng=rng,
            max_iter=self.max_iter,
            validate=validate,
            validation_every=self.validation_every,
            patience=self.patience,
            verbose=self.verbose,
            desc=type(self).__name__,
            hint=UNTRAINED_ADVICE,
            checkpoint_dir=self.checkpoint_dir,
            checkpoint_every=self.checkpoint_every,
            fingerprint=getattr(self, "_fit_fingerprint", None),
        )
        self.validation_gain_ = None
        if candidates is not None:
            # the candidates are step 0 and the first validations (train restores the state of
            # its best validation, which holds the candidates up to that one)
            validated = [h["step"] for h in result.history if "val_score" in h]
            steps = [0, *validated[: candidates.scores.shape[0] - 1]]
            chosen, self.validation_gain_ = candidates.select(self.selection_se)
            candidates.restore(chosen)
            result.best_step, result.best_score = steps[chosen], candidates.mean(chosen)
        if untrained:
            result.best_step, result.best_score = 0, float("nan")
        net.train()
        self.initial_validation_score_ = None if candidates is None else candidates.mean(0)
        self._store_fitted(net, loss_fn, result)
        if untrained:
            self.validation_score_ = None
        elif self.best_iter_ == 0:
            _warn_untrained_kept(self)
        return self

    def _build_network(
        self, sizes: list[int], generator: torch.Generator, device: torch.device
    ) -> SPDNet:
        head_dim = None
        if self.head == "linear":
            head_dim = sizes[-1] * (sizes[-1] + 1) // 2
        return SPDNet(
            sizes,
            eps=self.eps,
            relative_eps=self.relative_eps,
            bimap=self.bimap,
            init="identity" if self.init == "identity" else "random",
            log_output=self.head != "spd",
            head_dim=head_dim,
            head_init="identity" if self.init == "identity" else "glorot",
            batchnorm=self.batchnorm,
            generator=generator,
            device=device,
        )

    def _build_loss(
        self, net: SPDNet, generator: torch.Generator, device: torch.device
    ) -> torch.nn.Module:
        h = net.sizes[-1]
        dim = None if self.head == "spd" else h * (h + 1) // 2
        return make_loss(
            self._loss_name(),
            n_classes=len(self.classes_),
            dim=dim,
            distance=self._distance(),
            params=self._loss_kwargs(),
            generator=generator,
            device=device,
        )

    def _store_fitted(self, net: SPDNet, loss_fn, result: TrainingResult) -> None:
        """Fitted attributes as NumPy arrays (the parameters of the best validated step)."""
        self.weights_ = [b.weight.detach().cpu().numpy() for b in net.bimaps]
        head = net.head
        self.head_weight_ = None if head is None else head.weight.detach().cpu().numpy()
        self.head_bias_ = None if head is None else head.bias.detach().cpu().numpy()
        norms = net.batchnorms
        self.batchnorm_means_ = [bn.running_mean.detach().cpu().numpy() for bn in norms]
        self.batchnorm_log_biases_ = [bn.log_bias.detach().cpu().numpy() for bn in norms]
        self._store_loss_state(loss_fn)
        self.n_iter_ = result.n_iter
        self.best_iter_ = result.best_step
        self.validation_score_ = None if result.best_step is None else float(result.best_score)
        self.loss_curve_ = np.array([h["loss"] for h in result.history], dtype=np.float64)

    def _validation_queries(self, val_idx, rng) -> np.ndarray:
        """The held-out matrices validation ranks, capped (tighter under AIRM)."""
        airm = self.head == "spd" and self._validation_distance() == "airm"
        cap = _MAX_QUERIES["airm" if airm else "other"]
        if val_idx.size > cap:  # draws nothing on small sets
            return np.sort(rng.choice(val_idx, cap, replace=False))
        return val_idx

    def _validation_score(self, net, X_t, codes_t, queries):
        """A closure scoring the network per held-out query, leave-one-out within ``queries``.

        As the test protocol of the tables: every matrix is ranked against the other held-out
        ones (never against training matrices, which the loss has already pulled together).
        Per-query R@1 or average precision; NaN for a query with no other of its class.
        """
        queries_t = torch.as_tensor(queries, device=X_t.device)
        distance = self._validation_distance()
        codes = codes_t[queries_t]

        @torch.no_grad()
        def score() -> torch.Tensor:
            was_training = net.training
            net.eval()  # batch normalisation: running statistics
            try:
                Z = _validation_embedding(net, X_t[queries_t], distance)
                dist = embedding_distances(Z, Z, distance=distance).double()
            finally:
                net.train(was_training)
            dist.fill_diagonal_(torch.inf)
            relevant = codes[:, None] == codes[None, :]
            relevant.fill_diagonal_(False)
            return _per_query_scores(dist, relevant, self.validation_metric)

        return score

    def _fit_whitening(self, X_t: torch.Tensor) -> np.ndarray:
        """``M^{-1/2}`` for the Riemannian mean ``M`` of the training matrices (or the identity)."""
        if not self.whiten:
            return np.eye(X_t.shape[-1])
        return spd_inv_sqrt(riemannian_mean(X_t)).cpu().numpy()

    # ------------------------------------------------------------------ transform

    def transform(self, X) -> np.ndarray:
        """Embed SPD matrices.

        Parameters
        ----------
        X : array-like of shape (n_samples, c, c)

        Returns
        -------
        ndarray
            (n_samples, d) for ``output="vector"`` (``d = h (h + 1) / 2``), (n_samples, h, h)
            otherwise (``h = hidden_sizes[-1]``), in the dtype of ``X`` (float32 or float64).
        """
        Y, dtype = self._outputs(X, log=self.output != "spd")
        if self.output == "vector" and Y.ndim == 3:
            Y = sym_to_vec(Y)
        return Y.cpu().numpy().astype(dtype, copy=False)

    @property
    def _n_features_out(self) -> int:
        """Columns of :meth:`transform` for ``output="vector"`` (head width, or ``h (h + 1) / 2``).

        scikit-learn's ``get_feature_names_out`` names them ``"<classname>0"``, ...
        """
        if self.output != "vector":
            raise ValueError(
                f"output={self.output!r} gives matrices, which have no column names; "
                "use output='vector'."
            )
        if getattr(self, "head_weight_", None) is not None:
            return self.head_weight_.shape[0]
        h = self.weights_[-1].shape[1] if self.weights_ else self.n_features_in_
        return h * (h + 1) // 2

    def pair_distances(self, X1, X2) -> np.ndarray:
        """Learned distance between paired SPD matrices ``X1[k]``, ``X2[k]``.

        The distance the model was trained with: the Riemannian ``distance`` between SPD outputs
        (``head="spd"``), otherwise the Euclidean distance between embedding vectors.

        Parameters
        ----------
        X1, X2 : array-like of shape (n_pairs, c, c)

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        spd = self.head == "spd"
        Y1, _ = self._outputs(X1, log=not spd)
        Y2, _ = self._outputs(X2, log=not spd)
        if Y1.shape[0] != Y2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {Y1.shape[0]} != {Y2.shape[0]}.")
        with torch.no_grad():
            if not spd:
                Y1, Y2 = _as_vectors(Y1), _as_vectors(Y2)
                return torch.linalg.vector_norm(Y1.double() - Y2.double(), dim=1).cpu().numpy()
            return spd_distance(Y1.double(), Y2.double(), self._distance()).cpu().numpy()

    def _outputs(self, X, log: bool = False) -> tuple[torch.Tensor, np.dtype]:
        """The network's outputs (SPD, log or head vectors), and X's dtype.

        Computed in float64 (the fitted float32 parameters cast up), so that an output does not
        depend on which other matrices share its chunk.
        """
        check_is_fitted(self, "weights_")
        X, _ = self._validate_spd(X, reset=False)
        device = resolve_device(self.device)
        net = self._network(device, log)
        W = to_tensor(self.whitening_, device, torch.float64)
        outputs = []
        with torch.no_grad():
            for start in range(0, X.shape[0], _CHUNK):
                chunk = to_tensor(X[start : start + _CHUNK], device, torch.float64)
                outputs.append(net(_congruence(chunk, W)))
        return torch.cat(outputs), X.dtype

    def _network(self, device: torch.device, log_output: bool = False) -> SPDNet:
        """The SPDNet rebuilt from the fitted arrays (head included when there is one)."""
        sizes = [self.n_features_in_, *(w.shape[1] for w in self.weights_)]
        head = getattr(self, "head_weight_", None)
        net = SPDNet(
            sizes,
            eps=self.eps,
            relative_eps=self.relative_eps,
            bimap=self.bimap,
            log_output=log_output,
            head_dim=None if head is None else head.shape[0],
            batchnorm=bool(getattr(self, "batchnorm_means_", None)),
            dtype=torch.float64,
            device=device,
        )
        with torch.no_grad():
            for bimap, weight in zip(net.bimaps, self.weights_, strict=True):
                bimap.weight.copy_(to_tensor(weight, device))
            for bn, mean, log_bias in zip(
                net.batchnorms, self.batchnorm_means_, self.batchnorm_log_biases_, strict=True
            ):
                bn.running_mean.copy_(to_tensor(mean, device))
                bn.log_bias.copy_(to_tensor(log_bias, device))
            if head is not None:
                net.head.weight.copy_(to_tensor(head, device))
                net.head.bias.copy_(to_tensor(self.head_bias_, device))
        return net.eval()

    # ------------------------------------------------------------------ validation

    def _distance(self) -> str:
        return canonical_metric(self.distance, DISTANCES, name="distance")

    def _validation_distance(self) -> str:
        """The validation ranking's distance: Euclidean for vector heads, else a Riemannian one."""
        if self.head != "spd":
            return self._distance()  # ignored: vectors are compared with the Euclidean distance
        if self.validation_distance is None:
            return self._distance()
        return canonical_metric(self.validation_distance, DISTANCES, name="validation_distance")

    def _validate_spd(self, X, y=None, *, reset: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """``X`` checked as a stack of SPD matrices (n, c, c) (and ``y`` by scikit-learn)."""
        kwargs = {"allow_nd": True, "dtype": [np.float64, np.float32], "reset": reset}
        if y is None:
            X = validate_data(self, X, ensure_min_samples=1, **kwargs)
        else:
            X, y = validate_data(self, X, y, ensure_min_samples=2, **kwargs)
        return check_spd_array(X), y

    def _default_hidden_sizes(self, n_channels: int) -> list[int]:
        return [n_channels, n_channels]

    def _hidden_sizes(self, n_channels: int) -> list[int]:
        sizes = self.hidden_sizes
        if sizes is None:
            return self._default_hidden_sizes(n_channels)
        if isinstance(sizes, str):
            sizes = [s for s in sizes.replace(" ", "").split(",") if s]
        elif isinstance(sizes, Integral):
            sizes = [sizes]
        try:
            sizes = [int(s) for s in sizes]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"hidden_sizes must be integers, got {self.hidden_sizes!r}.") from exc
        chain = [n_channels, *sizes]
        if (
            not sizes
            or min(sizes) < 1
            or any(b > a for a, b in zip(chain[:-1], chain[1:], strict=True))
        ):
            raise ValueError(
                f"hidden_sizes must be a non-empty, non-increasing list of positive sizes at most "
                f"the input size {n_channels}, got {self.hidden_sizes!r}."
            )
        return sizes

    def _check_params(self) -> None:
        """The declared constraints, then the rules that tie parameters together."""
        self._validate_params()
        self._distance()
        if self.validation_distance is not None:
            canonical_metric(self.validation_distance, DISTANCES, name="validation_distance")
        if self.head == "linear" and self.output != "vector":
            raise ValueError(f"output={self.output!r} needs head='spd' or 'log' (not 'linear').")
        if self._loss_name() in _VECTOR_ONLY and self.head == "spd":
            raise ValueError(f"loss {self._loss_name()!r} needs head='log' or 'linear'.")
        if self._loss_name() == "triplet" and self.head != "spd":
            raise ValueError("loss 'triplet' (DSML-Triplet) compares SPD outputs: head='spd'.")
        if self.relative_eps and self.eps >= 1:
            raise ValueError(f"a relative eps must be < 1, got {self.eps}.")


#: What to try when a fit keeps the untrained SPD network (also for a shared training warning).
UNTRAINED_ADVICE = (
    "What to try: (1) compare with what needs no network first: the untrained network is the "
    "log-Euclidean (tangent-space) geometry of the whitened matrices, and a tangent space + "
    "logistic regression or pyRiemann's MDM may be all the data support (`rankmetric bench "
    "rpl-spd` puts them beside RPL); (2) if the validation part is small, hold out more "
    "(validation_fraction) or accept smaller gains (selection_se=0.5 or 0); (3) a lower "
    "learning_rate, another loss (loss='multi-similarity', 'triplet-semihard', ...) or a reducing "
    "network (hidden_sizes); (4) better matrices: another covariance estimator "
    "(Covariances(estimator=...)), band-pass filtering, or re-centring each session when trials "
    "come from several; (5) max_iter=0 builds the untrained reference on purpose, without this "
    "warning."
)


def untrained_message(estimator: SPDNetEmbedding) -> str:
    """Why a fitted SPD network is its untrained start (``best_iter_ == 0``), in one sentence.

    Parameters
    ----------
    estimator : fitted SPDNetEmbedding or RPLEmbedding

    Returns
    -------
    str
        The name of the estimator, the validation scores of step 0 and of the best step with the
        paired standard error of their difference, and, when step 0 already scores 1, that nothing
        was left to learn; :data:`UNTRAINED_ADVICE` says what to try.

    Examples
    --------
    >>> import warnings
    >>> from rankmetric.datasets import make_spd_clusters
    >>> from rankmetric.estimators.spdnet import SPDNetEmbedding, untrained_message
    >>> X, y = make_spd_clusters(60, n_channels=4, n_classes=3, random_state=0)
    >>> est = SPDNetEmbedding(max_iter=5, learning_rate=1e-12, random_state=0, device="cpu")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = est.fit(X, y)
    >>> est.best_iter_, untrained_message(est) in str(caught[-1].message)
    (0, True)
    """
    name = type(estimator).__name__
    metric = estimator.validation_metric
    start = estimator.initial_validation_score_
    gain, noise = estimator.validation_gain_ or (0.0, 0.0)
    text = (
        f"{name} kept the untrained network (best_iter_ == 0): over {estimator.n_iter_} steps "
        f"no validated step beat its validation {metric} of {start:.3f} by more than "
        f"{estimator.selection_se:g} paired standard error (best gain {gain:+.3f} ± {noise:.3f})."
    )
    if start >= 1.0:
        text += " The untrained network already scores 1 on validation: nothing was left to learn."
    return text


def _warn_untrained_kept(estimator: SPDNetEmbedding) -> None:
    """Warn that a fit kept its untrained network (the one place SPD fits say so).

    The category is the library's :class:`~rankmetric.training.UntrainedModelWarning`; the text
    is :func:`untrained_message` followed by :data:`UNTRAINED_ADVICE`.
    """
    warnings.warn(
        f"{untrained_message(estimator)} {UNTRAINED_ADVICE}",
        UntrainedModelWarning,
        stacklevel=_caller_stacklevel(),
    )


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside rankmetric (the user's ``fit`` call)."""
    package = str(Path(__file__).resolve().parents[1])
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


class _Candidates(torch.nn.Module):
    """Every validated step's per-query scores and parameters, and the one-standard-error rule.

    :meth:`validate` is the closure :func:`rankmetric.training.train` calls at each validation:
    it records the per-query scores and the parameters of ``targets`` (flattened, float64) and
    returns the mean score (for early stopping). :meth:`select` then picks the earliest recorded
    candidate, the untrained network first, whose score is within ``k`` paired standard errors
    of the best one (Breiman's one-standard-error rule); :meth:`restore` loads its parameters.
    The records are buffers, so checkpoints carry them and a resumed fit selects as an
    uninterrupted one (a few kB per validation for the networks of the RPL table).
    """

    def __init__(self, targets: list[torch.nn.Module], per_query) -> None:
        super().__init__()
        object.__setattr__(self, "_targets", list(targets))  # not submodules
        self.per_query = per_query
        self.register_buffer("scores", torch.empty(0, 0, dtype=torch.float64))
        self.register_buffer("states", torch.empty(0, 0, dtype=torch.float64))

    def _flat_state(self) -> torch.Tensor:
        tensors = [v for t in self._targets for v in t.state_dict().values()]
        return torch.cat([v.detach().reshape(-1).double().cpu() for v in tensors])

    def validate(self) -> float:
        scores = self.per_query().detach().double().cpu()
        state = self._flat_state()
        self.scores = torch.cat([self.scores.reshape(-1, scores.numel()), scores[None]])
        self.states = torch.cat([self.states.reshape(-1, state.numel()), state[None]])
        return float(scores.nanmean())

    def mean(self, i: int) -> float:
        return float(self.scores[i].nanmean())

    def restore(self, i: int) -> None:
        """Load the parameters recorded with candidate ``i`` into the targets."""
        flat, start = self.states[i], 0
        for target in self._targets:
            state = target.state_dict()
            for name, value in state.items():
                n = value.numel()
                chunk = flat[start : start + n].reshape(value.shape)
                state[name] = chunk.to(dtype=value.dtype, device=value.device)
                start += n
            target.load_state_dict(state)

    def select(self, k: float) -> tuple[int, tuple[float, float]]:
        """``(candidate index, (mean gain of the best over the first candidate, its SE))``."""
        means = [self.mean(i) for i in range(self.scores.shape[0])]
        best = int(np.argmax(means))
        chosen = best
        for i in range(best):
            gain, noise = _paired_gain(self.scores[best], self.scores[i])
            # never a trained step that validates below the untrained one
            if gain <= k * noise and (i == 0 or means[i] >= means[0]):
                chosen = i
                break
        return chosen, _paired_gain(self.scores[best], self.scores[0])

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, *args):
        for name in ("scores", "states"):  # the records grow: take the checkpoint's sizes
            key = prefix + name
            if key in state_dict:
                self._buffers[name] = state_dict[key].detach().clone().double()
            elif strict:
                missing.append(key)


def _extra_group(loss_fn: torch.nn.Module) -> list[dict]:
    """The loss's own parameters (Proxy-NCA proxies) as a Euclidean parameter group."""
    params = list(loss_fn.parameters())
    return [{"params": params}] if params else []


def _training_embedding(net: SPDNet, X: torch.Tensor) -> torch.Tensor:
    """What the loss compares: SPD outputs (n, h, h), ``vec(log Y)`` or head vectors."""
    return _as_vectors(net(X)) if net.log_output else net(X)


def _validation_embedding(net: SPDNet, X: torch.Tensor, distance: str) -> torch.Tensor:
    """What validation compares: the training embedding, or ``vec(log Y)`` for log-Euclidean."""
    Y = _training_embedding(net, X)
    if Y.ndim == 3 and distance == "log_euclidean":
        return sym_to_vec(spd_log(Y.double()))  # the Euclidean distance of transform's vectors
    return Y


def _as_vectors(Y: torch.Tensor) -> torch.Tensor:
    return sym_to_vec(Y) if Y.ndim == 3 else Y


@torch.no_grad()
def _principal_init(net: SPDNet, X: torch.Tensor) -> None:
    """Reducing BiMaps start on the leading eigenvectors of the mean squared log of their inputs.

    For whitened inputs (mean at the identity) these are the directions where the log-matrices
    vary most: a PCA-like start that keeps as much of the log-Euclidean geometry as the size
    allows. Square BiMaps keep their identity start. Inputs are propagated layer by layer, in
    evaluation mode (batch normalisation does not update its running mean here).
    """
    was_training = net.training
    net.eval()
    Y = X
    for layer in net.layers:
        if getattr(layer, "weight", None) is not None:
            d_in, d_out = layer.weight.shape
            if d_out < d_in:
                L = spd_log(Y.double())
                second_moment = symmetrize((L @ L).mean(dim=0))
                _, vectors = eigh(second_moment)
                layer.weight.copy_(vectors[:, -d_out:].flip(-1).to(layer.weight.dtype))
        Y = layer(Y)
    net.train(was_training)


def _congruence(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``W X W`` for symmetric ``W`` (c, c) and a stack ``X`` (n, c, c)."""
    return symmetrize(W @ X @ W)


def _stratified_split(
    codes: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random (train, validation) indices holding out ``round(fraction · n_c)`` samples per class.

    Every class keeps at least 2 training samples; no validation set is formed when fewer than 2
    samples would be held out in total.
    """
    counts = np.bincount(codes)
    n_val = np.clip(np.round(fraction * counts).astype(np.int64), 0, np.maximum(counts - 2, 0))
    if n_val.sum() < 2:
        return np.arange(codes.shape[0]), np.empty(0, dtype=np.int64)
    order = np.lexsort((rng.random(codes.shape[0]), codes))  # random order within each class
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty_like(order)
    rank[order] = np.arange(codes.shape[0]) - starts[codes[order]]
    is_val = rank < n_val[codes]
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


def _per_query_scores(dist: torch.Tensor, relevant: torch.Tensor, metric: str) -> torch.Tensor:
    """Per-query validation score of a gallery ranked by ``dist``.

    Parameters
    ----------
    dist : tensor of shape (n_queries, n_gallery)
    relevant : bool tensor of shape (n_queries, n_gallery)
    metric : {"recall@1", "map"}
        Whether the nearest gallery item is relevant (ties: the first), or average precision.

    Returns
    -------
    float64 tensor of shape (n_queries,)
        NaN for queries without any relevant gallery item.
    """
    order = torch.argsort(dist, dim=1, stable=True)
    hits = torch.gather(relevant, 1, order).to(torch.float64)
    n_rel = hits.sum(dim=1)
    if metric == "recall@1":
        scores = hits[:, 0].clone()
    else:
        ranks = torch.arange(1, hits.shape[1] + 1, dtype=torch.float64, device=hits.device)
        precision = hits.cumsum(dim=1) / ranks
        scores = (precision * hits).sum(dim=1) / n_rel.clamp_min(1.0)
    return torch.where(n_rel > 0, scores, torch.nan)


def _paired_gain(scores: torch.Tensor, start: torch.Tensor) -> tuple[float, float]:
    """Mean per-query gain over the start and its standard error (paired over the queries)."""
    diff = (scores - start)[~torch.isnan(scores) & ~torch.isnan(start)]
    if diff.numel() < 2:
        return (float(diff.sum()), 0.0)
    return float(diff.mean()), float(diff.std() / diff.numel() ** 0.5)


def _mean_average_precision(dist: torch.Tensor, relevant: torch.Tensor) -> float:
    """Mean over queries (rows) of the average precision of the gallery ranked by ``dist``.

    Parameters
    ----------
    dist : tensor of shape (n_queries, n_gallery)
    relevant : bool tensor of shape (n_queries, n_gallery)

    Returns
    -------
    float
        Queries without any relevant item are left out (0 when none has one).
    """
    scores = _per_query_scores(dist, relevant, "map")
    return float(scores.nanmean()) if bool((~torch.isnan(scores)).any()) else 0.0
