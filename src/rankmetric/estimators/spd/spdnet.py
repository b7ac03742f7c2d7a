"""SPDNetEmbedding: one SPD embedding network, trained with any metric-learning loss.

A scikit-learn transformer over :class:`rankmetric.models.spdnet.SPDNet`, trained with
:func:`rankmetric.training.train` and a :class:`rankmetric.models.stiefel.StiefelAdam` optimiser.
It takes a stack of SPD matrices (n, c, c), e.g. the output of ``pyriemann.estimation.Covariances``
or :class:`rankmetric.preprocessing.RegionCovariances`. The loss is a parameter
(:data:`LOSSES`): every row of the RPL table is this estimator with another loss, and
:class:`~rankmetric.estimators.spd.RPLEmbedding` is its Riemannian-potato configuration.

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

from collections.abc import Sequence

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets

from ... import distributed
from ..._utils import make_rng, resolve_device, to_tensor, torch_generator
from ..._validation import (
    DEPRECATED,
    NONE,
    InstanceOf,
    Options,
    check_labels,
    check_min_per_class,
    deprecate_positional_args,
)
from ...geometry.aliases import canonical_metric
from ...geometry.tangent import congruence
from ...io import register_estimator
from ...losses.potato import DISTANCES
from ...losses.registry import LOSSES, VECTOR_ONLY_LOSSES, make_loss
from ...models.spdnet import SPDNet, sym_to_vec
from ...models.stiefel import StiefelAdam
from ...preprocessing.recentring import DomainsRequestMixin
from ...training import OneStandardErrorSelector, TrainingResult, split_validation
from .._docstrings import fill_doc
from .._early_stopping import RENAMED_PATIENCE
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from .._init_parameters import store_parameters
from ..base import MetricLearnerMixin, fit_context, train_estimator
from ._domains import batch_drawer, fit_domain_codes, start_domain_statistics
from ._network import (
    SPDNET_PARAMETER_CONSTRAINTS,
    check_spd_stack,
    fit_whitening,
    fitted_outputs,
    fitted_pair_distances,
    parse_hidden_sizes,
    principal_init,
    select_validated_step,
    training_embedding,
    translation_invariant,
    validation_queries,
    validation_scorer,
)
from ._untrained import UNTRAINED_ADVICE, warn_untrained_kept

__all__ = ["SPDNetEmbedding"]


@register_estimator
@fill_doc
class SPDNetEmbedding(DomainsRequestMixin, MetricLearnerMixin, BaseEstimator):
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
        (:class:`~rankmetric.models.batchnorm.SPDBatchNorm`: batch Karcher mean, geodesic running
        mean, learnable SPD bias; Brooks et al. 2019). Off by default: it did not raise the
        validation R@1 (``docs/rpl.md``). With ``fit(..., domains=...)`` it keeps one running
        mean per domain (TSMNet's domain-specific batch normalisation).
    n_classes_per_batch : int or None, default=None
        Classes per batch (``None``: all classes).
    n_per_class : int, default=8
        Samples per class in a batch (classes with fewer samples are drawn with repetition).
    max_iter : int, default=3000
        Largest number of optimisation steps; validation early stopping
        (``n_iter_no_change``) usually ends the fit well before. ``0`` builds the **untrained
        reference** on purpose: the network's start fitted on all the matrices, no training, no
        warning, ``best_iter_ == 0`` (with the default network: pyRiemann's tangent space at the
        Riemannian mean, up to the 5 % ReEig floor). A fit with ``max_iter >= 1`` that keeps its
        start warns (:data:`UNTRAINED_ADVICE`).
    learning_rate : float, default=1e-2
        Step size of the (Riemannian) Adam optimiser.
    validation_fraction : float, default=0.2
        Share of each class held out to score the embedding every ``validation_every`` steps
        (the held-out matrices ranked leave-one-out among themselves, as the test protocol
        does, under ``validation_distance``; at most 2000 of them, 500 under AIRM); the best
        parameters are kept. 0 disables validation.
    validation_every : int, default=10
        Steps between two validations.
    n_iter_no_change : int or None, default=20
        Validations without improvement before stopping (``None``: run ``max_iter`` steps).
    validation_metric : {"map", "recall@1"}, default="map"
        What validation scores: mean average precision of each held-out matrix's ranking of
        the others, or R@1 (the figure the RPL table reports). mAP since 0.2: it reads every
        rank, where R@1 of a few dozen EEG trials hid real gains (``docs/rpl.md``, "Does RPL
        learn on EEG").
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
    %(held_out_check_only)s
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned distance below (or not better), return the
        reference instead: the untrained network (``max_iter=0``) fitted on the same data.
    %(patience)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    classes_ : ndarray of shape (n_classes,)
    whitening_ : ndarray of shape (c, c)
    weights_ : list of ndarray
        The BiMap weights, shapes (c, h1), (h1, h2), ...
    head_weight_, head_bias_ : ndarray or None
        The linear head (``head="linear"``).
    batchnorm_means_, batchnorm_log_biases_ : list of ndarray
        Running means and log-biases of the batch-normalisation layers (empty without).
    domains_ : ndarray of shape (n_domains,) or None
        The domain labels given to :meth:`fit` (``None`` without ``domains``).
    domain_whitening_ : ndarray of shape (n_domains, c, c) or None
        ``M_d^{-1/2}`` for each domain's Riemannian mean ``M_d`` (with ``domains``).
    batchnorm_domain_means_ : list of ndarray of shape (n_domains, h, h)
        Each batch normalisation's running mean per domain (with ``domains`` and
        ``batchnorm``; empty otherwise).
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
    rankmetric.preprocessing.DomainRecentering : Per-domain re-centring in front of any model.

    References
    ----------
    .. [1] Z. Huang and L. Van Gool. A Riemannian Network for SPD Matrix Learning. AAAI 2017.
    .. [2] B. H. Kim, Y.-J. Suh, H. Lee and S. Jo. Nonlinear Ranking Loss on Riemannian Potato
       Embedding. KAIST and Looxid Labs, poster (the loss baselines of its Table 1).
    .. [3] D. Brooks, O. Schwander, F. Barbaresco, J.-Y. Schneider and M. Cord. Riemannian
       batch normalization for SPD neural networks. NeurIPS 2019.
    .. [4] R. Kobler, J. Hirayama, Q. Zhao and M. Kawanabe. SPD domain-specific batch
       normalization to crack interpretable unsupervised domain adaptation in EEG. NeurIPS 2022.

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

    #: The held-out check's reference: the untrained network (``max_iter=0``), same data.
    _reference_params = {"max_iter": 0}
    _held_out_hint = "try a lower learning_rate, another loss or selection_se (docs/rpl.md)"

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        **SPDNET_PARAMETER_CONSTRAINTS,
        "loss": [Options(*LOSSES)],
        "loss_params": [NONE, InstanceOf(dict, "a dict")],
    }
    _renamed_parameters = RENAMED_PATIENCE

    # alike: the signature is spelled out, not inherited (scikit-learn reads the parameters)
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
        n_iter_no_change: int | None = 20,
        validation_metric: str = "map",
        validation_distance: str | None = None,
        selection_se: float = 1.0,
        output: str = "vector",
        whiten: bool = True,
        # alike: the tail every trained estimator repeats (scikit-learn reads the signature)
        random_state=None,
        device: str | None = None,
        verbose: bool | int = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
        patience=DEPRECATED,
    ) -> None:
        store_parameters(self, locals())

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
    @fill_doc
    def fit(self, X, y, domains=None):
        """Train the network on SPD matrices ``X`` (n_matrices, c, c) with class labels ``y``.

        Parameters
        ----------
        %(labelled_spd)s
        domains : array-like of shape (n_matrices,), optional
            Domain (session, subject) of each matrix: each domain whitened at its own mean and,
            with ``batchnorm=True``, normalised at its own running means, every batch drawn from
            one domain (TSMNet's domain-specific batch normalisation). Routed by scikit-learn's
            metadata routing in a Pipeline, as for
            :class:`~rankmetric.preprocessing.DomainRecentering`.

        Returns
        -------
        self
        """
        self._check_params()
        distributed.init_from_env()
        X, y = check_spd_stack(self, X, y, reset=True, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, codes = check_labels(y, X.shape[0])
        check_min_per_class(codes, 2)
        n = X.shape[0]
        self.domains_, domain_idx = fit_domain_codes(domains, n, self.batchnorm, self.whiten)
        n_channels = X.shape[1]
        hidden = [n_channels] * 2 if self.hidden_sizes is None else self.hidden_sizes
        sizes = [n_channels, *parse_hidden_sizes(hidden, n_channels)]
        device = resolve_device(self.device)
        rng = make_rng(self.random_state)
        X_t = to_tensor(X, device, torch.float64)
        W = fit_whitening(X_t, self.whiten)
        self.whitening_ = W.cpu().numpy()
        self.domain_whitening_ = None
        if domain_idx is None:
            X_t = congruence(X_t, W).float()
        else:  # each domain whitened by its own mean (DomainRecentering's re-centring)
            per_domain = [X_t[torch.as_tensor(domain_idx == d)] for d in range(len(self.domains_))]
            W = torch.stack([fit_whitening(Xd, self.whiten) for Xd in per_domain])
            self.domain_whitening_ = W.cpu().numpy()
            X_t = congruence(X_t, W[torch.as_tensor(domain_idx, device=device)]).float()

        untrained = self.max_iter == 0  # the untrained reference: nothing held out
        if untrained:
            train_idx, val_idx = np.arange(codes.shape[0]), np.empty(0, dtype=np.int64)
        else:
            train_idx, val_idx = split_validation(
                codes, self.validation_fraction, "stratified", rng
            )
        net = self._build_network(sizes, torch_generator(rng), device)
        if self.init == "identity":
            principal_init(net, X_t[train_idx])
        if domain_idx is not None and net.batchnorms:
            start_domain_statistics(net, X_t, train_idx, domain_idx, self.domains_)
        loss_fn = self._build_loss(net, torch_generator(rng), device)
        if net.head is not None and translation_invariant(loss_fn):
            net.head.bias.requires_grad_(False)  # no effect on the loss: kept at 0 (see there)
        codes_t = torch.as_tensor(codes, device=device)
        domains_t = None if domain_idx is None else torch.as_tensor(domain_idx, device=device)
        n_classes = self.n_classes_per_batch or len(self.classes_)
        draw = batch_drawer(train_idx, codes, domain_idx, n_classes, self.n_per_class, rng)

        def loss_step(step: int) -> torch.Tensor:
            batch = torch.as_tensor(draw(), device=device)
            # under torchrun: every rank draws the same batch, embeds its slice, and computes the
            # loss on the gathered embeddings (exact single-process gradient; distributed.py)
            rows = distributed.shard(batch)
            local = training_embedding(
                net, X_t[rows], None if domains_t is None else domains_t[rows]
            )
            return loss_fn(distributed.all_gather_with_grad(local), codes_t[batch])

        candidates = None
        module = torch.nn.ModuleDict({"net": net, "loss": loss_fn})  # checkpoints keep the loss
        if val_idx.size:
            distance = self._validation_distance()
            airm = self.head == "spd" and distance == "airm"
            queries = torch.as_tensor(validation_queries(val_idx, rng, airm), device=device)
            query_domains = None if domains_t is None else domains_t[queries]
            score = validation_scorer(
                net, X_t[queries], codes_t[queries], query_domains, distance, self.validation_metric
            )
            candidates = OneStandardErrorSelector([net, loss_fn], score)
            candidates.validate()  # the untrained network, step 0
            module["candidates"] = candidates  # in the checkpoints: a resumed fit selects alike
        proxies = list(loss_fn.parameters())  # Proxy-NCA's, a Euclidean group
        groups = net.parameter_groups() + ([{"params": proxies}] if proxies else [])
        result = train_estimator(
            self, module, StiefelAdam(groups, lr=self.learning_rate), loss_step, rng=rng,
            validate=None if candidates is None else candidates.validate, score_start=False,
            hint=UNTRAINED_ADVICE,
        )  # fmt: skip
        self.initial_validation_score_, self.validation_gain_ = select_validated_step(
            candidates, result, self.selection_se
        )
        if untrained:
            result.best_step, result.best_score = 0, float("nan")
        net.train()
        self._store_fitted(net, loss_fn, result)
        if untrained:
            self.validation_score_ = None
        elif self.best_iter_ == 0:
            warn_untrained_kept(self)
        return self

    def fit_transform(self, X, y, domains=None) -> np.ndarray:
        """:meth:`fit`, then :meth:`transform` of ``X`` (with the same ``domains``).

        Parameters
        ----------
        X : array-like of shape (n_samples, c, c)
        y : array-like of shape (n_samples,)
        domains : array-like of shape (n_samples,), optional
            As :meth:`fit`.

        Returns
        -------
        ndarray
            As :meth:`transform`.
        """
        return self.fit(X, y, domains=domains).transform(X, domains=domains)

    def _build_network(
        self, sizes: list[int], generator: torch.Generator, device: torch.device
    ) -> SPDNet:
        h = sizes[-1]
        return SPDNet(
            sizes,
            eps=self.eps,
            relative_eps=self.relative_eps,
            bimap=self.bimap,
            init=self.init,
            log_output=self.head != "spd",
            head_dim=h * (h + 1) // 2 if self.head == "linear" else None,
            head_init="identity" if self.init == "identity" else "glorot",
            batchnorm=self.batchnorm,
            n_domains=0 if self.domains_ is None else len(self.domains_),
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
        self.batchnorm_domain_means_ = [
            bn.domain_means.detach().cpu().numpy() for bn in norms if bn.n_domains
        ]
        self._store_loss_state(loss_fn)
        self.n_iter_ = result.n_iter
        self.best_iter_ = result.best_step
        self.validation_score_ = None if result.best_step is None else float(result.best_score)
        self.loss_curve_ = np.array([h["loss"] for h in result.history], dtype=np.float64)

    # ------------------------------------------------------------------ transform

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

    def pair_distances(self, X1, X2=None) -> np.ndarray:
        """Learned distance between paired SPD matrices ``X1[k]``, ``X2[k]`` (or stacked pairs).

        The distance the model was trained with: the Riemannian ``distance`` between SPD outputs
        (``head="spd"``), otherwise the Euclidean distance between embedding vectors. A model
        fitted with ``domains`` embeds ``X1`` and ``X2`` together as one new domain.

        Parameters
        ----------
        X1 : array-like of shape (n_pairs, c, c), or (n_pairs, 2, c, c)
            The first matrix of each pair, or the stacked pairs when ``X2`` is None (the one
            pair-distance convention, ``docs/pairs.md``).
        X2 : array-like of shape (n_pairs, c, c), optional
            The second matrix of each pair.

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        return fitted_pair_distances(self, X1, X2)

    def transform(self, X, domains=None) -> np.ndarray:
        """Embed SPD matrices.

        Parameters
        ----------
        X : array-like of shape (n_samples, c, c)
        domains : array-like of shape (n_samples,), optional
            Only for a model fitted with ``domains``: the domain of each matrix. A domain seen in
            :meth:`fit` is normalised at its stored running means; a **new** domain (or all of
            ``X`` when ``domains`` is None) at the Riemannian means of its own matrices in
            ``X``, layer by layer (unsupervised adaptation: give a new domain's matrices
            together, at least 2).

        Returns
        -------
        ndarray
            (n_samples, d) for ``output="vector"`` (``d = h (h + 1) / 2``), (n_samples, h, h)
            otherwise (``h = hidden_sizes[-1]``), in the dtype of ``X`` (float32 or float64).
        """
        Y, dtype = fitted_outputs(self, X, log=self.output != "spd", domains=domains)
        if self.output == "vector" and Y.ndim == 3:
            Y = sym_to_vec(Y)
        return Y.cpu().numpy().astype(dtype, copy=False)

    def _distance(self) -> str:
        return canonical_metric(self.distance, DISTANCES, name="distance")

    def _validation_distance(self) -> str:
        """The validation ranking's distance: Euclidean for vector heads, else a Riemannian one."""
        if self.head != "spd" or self.validation_distance is None:
            return self._distance()  # vector heads: ignored (compared with the Euclidean distance)
        return canonical_metric(self.validation_distance, DISTANCES, name="validation_distance")

    def _check_params(self) -> None:
        """The declared constraints, then the rules that tie parameters together."""
        self._validate_params()
        self._distance()
        if self.validation_distance is not None:  # its name is checked with any head
            canonical_metric(self.validation_distance, DISTANCES, name="validation_distance")
        if self.head == "linear" and self.output != "vector":
            raise ValueError(f"output={self.output!r} needs head='spd' or 'log' (not 'linear').")
        if self._loss_name() in VECTOR_ONLY_LOSSES and self.head == "spd":
            raise ValueError(f"loss {self._loss_name()!r} needs head='log' or 'linear'.")
        if self._loss_name() == "triplet" and self.head != "spd":
            raise ValueError("loss 'triplet' (DSML-Triplet) compares SPD outputs: head='spd'.")
        if self.relative_eps and self.eps >= 1:
            raise ValueError(f"a relative eps must be < 1, got {self.eps}.")
