"""RPLEmbedding: an SPDNet trained with the Riemannian Potato-based Ranking Loss (Kim et al.).

A scikit-learn transformer over :class:`rankmetric.models.spdnet.SPDNet` and
:class:`rankmetric.losses.potato.RiemannianPotatoLoss`, trained with
:func:`rankmetric.training.train` and a :class:`rankmetric.models.stiefel.StiefelAdam` optimiser.
It takes a stack of SPD matrices (n, c, c), e.g. the output of ``pyriemann.estimation.Covariances``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import distributed
from .._utils import make_rng, resolve_device, to_tensor, torch_generator
from .._validation import check_labels, check_min_per_class, check_spd_array
from ..geometry.distances import airm_distance, log_euclidean_distance
from ..geometry.matrix_functions import spd_inv_sqrt, symmetrize
from ..geometry.means import riemannian_mean
from ..io import register_estimator
from ..losses.potato import DISTANCES, RiemannianPotatoLoss, embedding_distances
from ..models.spdnet import SPDNet, sym_to_vec
from ..models.stiefel import StiefelAdam
from ..sampling import LabelIndex
from ..training import TrainingResult, train
from .base import MetricLearnerMixin

__all__ = ["RPLEmbedding", "default_hidden_sizes"]

_OUTPUTS = ("spd", "log", "vector")
_CHUNK = 2048  # matrices per forward pass in transform
_MAX_GALLERY = 1000  # training matrices the validation queries are ranked against


def default_hidden_sizes(n_channels: int) -> tuple[int, ...]:
    """One BiMap halving the size: ``(max(2, ceil(c / 2)),)`` (or ``(c,)`` when ``c < 2``)."""
    return (min(n_channels, max(2, -(-n_channels // 2))),)


@register_estimator
class RPLEmbedding(MetricLearnerMixin, TransformerMixin, BaseEstimator):
    """Learn an SPD-to-SPD embedding with the Riemannian Potato-based Ranking Loss.

    The network is SPDNet ``[c, *hidden_sizes]`` (BiMap → ReEig blocks, Stiefel weights); each
    step draws a class-balanced batch (``n_per_class`` samples of ``n_classes_per_batch``
    classes) and minimises :class:`~rankmetric.losses.potato.RiemannianPotatoLoss` on the
    network's SPD outputs. Training stops early on a held-out validation split.

    Parameters
    ----------
    hidden_sizes : int, sequence of int, str or None, default=None
        Output size of each BiMap (non-increasing, at most ``c``); an int means one layer and a
        string ``"20,10"`` a list (for the command line). ``None``: ``(ceil(c / 2),)``.
    distance : {"airm", "log_euclidean"}, default="airm"
        Riemannian distance used by the loss, by validation and by :meth:`pair_distances`.
    z_threshold, margin, neg_weight, momentum, temperature : float
        Loss parameters ``z_th`` (0), ``m`` (2), ``λ`` (1), ``α`` (0.1) and the Ranked-List-Loss
        temperature (0: plain means); see :class:`~rankmetric.losses.potato.RiemannianPotatoLoss`.
        ``m = 2`` (the first default was 1) came out best of the validation grid of
        ``benchmarks/bench_rpl_tune.py``, by less than the seed-to-seed spread (``docs/rpl.md``).
    n_classes_per_batch : int or None, default=None
        Classes per batch (``None``: all classes).
    n_per_class : int, default=8
        Samples per class in a batch (classes with fewer samples are drawn with repetition).
    max_iter : int, default=300
        Optimisation steps.
    learning_rate : float, default=1e-2
        Step size of the Riemannian Adam optimiser.
    validation_fraction : float, default=0.2
        Share of each class held out to score the embedding (mean average precision of the
        held-out matrices ranked against the training ones, under ``distance``) every
        ``validation_every`` steps; the best parameters are kept. 0 disables validation.
    validation_every : int, default=10
        Steps between validations.
    patience : int or None, default=10
        Validations without improvement before stopping (``None``: run ``max_iter`` steps).
    output : {"vector", "log", "spd"}, default="vector"
        What :meth:`transform` returns: the SPD output ``Y`` (n, h, h), its logarithm (n, h, h),
        or the vectorised upper triangle of ``log Y`` with off-diagonal entries scaled by √2
        (n, h (h + 1) / 2), whose Euclidean distances are log-Euclidean distances between outputs.
    whiten : bool, default=True
        Whiten the inputs by the Riemannian (Karcher) mean ``M`` of the training matrices,
        ``X ↦ M^{-1/2} X M^{-1/2}`` (AIRM-isometric; puts the data around the identity, so that
        the ReEig floor ``eps`` is meaningful whatever the units of the signals).
    eps : float, default=1e-4
        ReEig eigenvalue floor.
    random_state : int, Generator or None
        Seed of every draw (initial weights, split, batches).
    device : str or None
        Torch device; ``None`` picks CUDA when available.
    verbose : bool or int, default=False
        Progress bar on a terminal.
    checkpoint_dir : str or path-like, optional
        Folder where ``checkpoint.pt`` is written every ``checkpoint_every`` steps; a fit that
        finds one there resumes from it, so a killed fit ends with the parameters of an
        uninterrupted one (same seed, CPU). The file is removed when the fit completes.
    checkpoint_every : int, default=100
        Steps between two checkpoints.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    whitening_ : ndarray of shape (c, c)
        ``M^{-1/2}`` (the identity when ``whiten=False``).
    weights_ : list of ndarray
        The BiMap weights, shapes (c, h1), (h1, h2), ... with orthonormal columns.
    potato_log_mu_, potato_log_sigma_ : ndarray of shape (n_classes,)
        The potato statistics (mean and standard deviation of within-class log-distances) at the
        end of training.
    n_iter_ : int
        Steps taken.
    best_iter_ : int or None
        Step whose parameters were kept (best validation score), ``None`` without validation.
    validation_score_ : float or None
        Best validation mean average precision.
    loss_curve_ : ndarray of shape (``n_iter_``,)
    n_features_in_ : int
        ``c``.
    """

    def __init__(
        self,
        hidden_sizes: int | str | Sequence[int] | None = None,
        *,
        distance: str = "airm",
        z_threshold: float = 0.0,
        margin: float = 2.0,
        neg_weight: float = 1.0,
        momentum: float = 0.1,
        temperature: float = 0.0,
        n_classes_per_batch: int | None = None,
        n_per_class: int = 8,
        max_iter: int = 300,
        learning_rate: float = 1e-2,
        validation_fraction: float = 0.2,
        validation_every: int = 10,
        patience: int | None = 10,
        output: str = "vector",
        whiten: bool = True,
        eps: float = 1e-4,
        random_state=None,
        device: str | None = None,
        verbose: bool | int = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
    ) -> None:
        self.hidden_sizes = hidden_sizes
        self.distance = distance
        self.z_threshold = z_threshold
        self.margin = margin
        self.neg_weight = neg_weight
        self.momentum = momentum
        self.temperature = temperature
        self.n_classes_per_batch = n_classes_per_batch
        self.n_per_class = n_per_class
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.validation_fraction = validation_fraction
        self.validation_every = validation_every
        self.patience = patience
        self.output = output
        self.whiten = whiten
        self.eps = eps
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    # ------------------------------------------------------------------ fit

    def fit(self, X, y) -> RPLEmbedding:
        """Train the SPDNet on SPD matrices ``X`` (n_samples, c, c) with class labels ``y``.

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

        train_idx, val_idx = _stratified_split(codes, self.validation_fraction, rng)
        net, loss_fn = self._build_model(sizes, rng, device)
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

        validate = None
        if val_idx.size:
            gallery = rng.permutation(train_idx)[:_MAX_GALLERY]
            validate = self._validation_score(net, X_t, codes_t, gallery, val_idx)
        result = train(
            torch.nn.ModuleDict({"net": net, "loss": loss_fn}),  # checkpoints keep the potato
            StiefelAdam(net.parameter_groups(), lr=self.learning_rate),
            loss_step,
            rng=rng,
            max_iter=self.max_iter,
            validate=validate,
            validation_every=self.validation_every,
            patience=self.patience,
            verbose=self.verbose,
            desc="RPLEmbedding",
            checkpoint_dir=self.checkpoint_dir,
            checkpoint_every=self.checkpoint_every,
        )
        self._store_fitted(net, loss_fn, result)
        return self

    def _build_model(
        self, sizes: list[int], rng: np.random.Generator, device: torch.device
    ) -> tuple[SPDNet, RiemannianPotatoLoss]:
        """The SPDNet (seeded from ``rng``) and the loss with one potato per class."""
        # log-Euclidean: the loss sees vec(log Y), whose Euclidean distances are log-Euclidean
        # distances between outputs, and the last ReEig shares its eigen-decomposition with LogEig.
        net = SPDNet(
            sizes,
            eps=self.eps,
            log_output=self.distance == "log_euclidean",
            generator=torch_generator(rng),
            device=device,
        )
        loss_fn = RiemannianPotatoLoss(
            self.z_threshold,
            self.margin,
            self.neg_weight,
            self.momentum,
            self.distance,
            temperature=self.temperature,
            n_classes=len(self.classes_),
        ).to(device)
        return net, loss_fn

    def _store_fitted(
        self, net: SPDNet, loss_fn: RiemannianPotatoLoss, result: TrainingResult
    ) -> None:
        """Fitted attributes as NumPy arrays (the parameters of the best validated step)."""
        self.weights_ = [b.weight.detach().cpu().numpy() for b in net.bimaps]
        self.potato_log_mu_ = loss_fn.log_mu.detach().cpu().numpy().astype(np.float64)
        self.potato_log_sigma_ = loss_fn.log_sigma.detach().cpu().numpy().astype(np.float64)
        self.n_iter_ = result.n_iter
        self.best_iter_ = result.best_step
        self.validation_score_ = None if result.best_step is None else result.best_score
        self.loss_curve_ = np.array([h["loss"] for h in result.history], dtype=np.float64)

    def _validation_score(self, net, X_t, codes_t, gallery, queries):
        """A closure scoring the network: mAP of ``queries`` ranked against ``gallery``."""
        gallery_t = torch.as_tensor(gallery, device=X_t.device)
        queries_t = torch.as_tensor(queries, device=X_t.device)

        @torch.no_grad()
        def score() -> float:
            dist = embedding_distances(
                _training_embedding(net, X_t[queries_t]),
                _training_embedding(net, X_t[gallery_t]),
                distance=self.distance,
            )
            relevant = codes_t[queries_t][:, None] == codes_t[gallery_t][None, :]
            return _mean_average_precision(dist, relevant)

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
            (n_samples, h (h + 1) / 2) for ``output="vector"``, (n_samples, h, h) otherwise
            (``h = hidden_sizes[-1]``), in the dtype of ``X`` (float32 or float64).
        """
        Y, dtype = self._outputs(X, log=self.output != "spd")
        if self.output == "vector":
            Y = sym_to_vec(Y)
        return Y.cpu().numpy().astype(dtype, copy=False)

    @property
    def _n_features_out(self) -> int:
        """Columns of :meth:`transform` for ``output="vector"``: ``h (h + 1) / 2``.

        ``get_feature_names_out`` then names them ``"rplembedding0"``, ``"rplembedding1"``, ...
        (entries of the upper triangle of ``log Y``, row by row).
        """
        h = self.weights_[-1].shape[1]
        if self.output != "vector":
            raise ValueError(
                f"output={self.output!r} gives matrices, which have no column names; "
                "use output='vector'."
            )
        return h * (h + 1) // 2

    def pair_distances(self, X1, X2) -> np.ndarray:
        """Learned distance ``distance(f(X1[k]), f(X2[k]))`` between paired SPD matrices.

        Unlike the Euclidean distance on :meth:`transform` (log-Euclidean for ``output="vector"``),
        this is the Riemannian distance the model was trained with.

        Parameters
        ----------
        X1, X2 : array-like of shape (n_pairs, c, c)

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        Y1, _ = self._outputs(X1)
        Y2, _ = self._outputs(X2)
        if Y1.shape[0] != Y2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {Y1.shape[0]} != {Y2.shape[0]}.")
        dist = airm_distance if self.distance == "airm" else log_euclidean_distance
        with torch.no_grad():
            return dist(Y1.double(), Y2.double()).cpu().numpy()

    def _outputs(self, X, log: bool = False) -> tuple[torch.Tensor, np.dtype]:
        """The network's SPD outputs (n, h, h) (their logarithms if ``log``) as a float32 tensor,
        and the input's dtype."""
        check_is_fitted(self, "weights_")
        X, _ = self._validate_spd(X, reset=False)
        device = resolve_device(self.device)
        net = self._network(device, log)
        W = to_tensor(self.whitening_, device, torch.float64)
        outputs = []
        with torch.no_grad():
            for start in range(0, X.shape[0], _CHUNK):
                chunk = to_tensor(X[start : start + _CHUNK], device, torch.float64)
                outputs.append(net(_congruence(chunk, W).float()))
        return torch.cat(outputs), X.dtype

    def _network(self, device: torch.device, log_output: bool = False) -> SPDNet:
        """The SPDNet rebuilt from ``weights_``."""
        sizes = [self.weights_[0].shape[0], *(w.shape[1] for w in self.weights_)]
        net = SPDNet(sizes, eps=self.eps, log_output=log_output, device=device)
        with torch.no_grad():
            for bimap, weight in zip(net.bimaps, self.weights_):
                bimap.weight.copy_(to_tensor(weight, device))
        return net.eval()

    # ------------------------------------------------------------------ validation

    def _validate_spd(self, X, y=None, *, reset: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """``X`` checked as a stack of SPD matrices (n, c, c) (and ``y`` by scikit-learn)."""
        kwargs = {"allow_nd": True, "dtype": [np.float64, np.float32], "reset": reset}
        if y is None:
            X = validate_data(self, X, ensure_min_samples=1, **kwargs)
        else:
            X, y = validate_data(self, X, y, ensure_min_samples=2, **kwargs)
        return check_spd_array(X), y

    def _hidden_sizes(self, n_channels: int) -> list[int]:
        sizes = self.hidden_sizes
        if sizes is None:
            return list(default_hidden_sizes(n_channels))
        if isinstance(sizes, str):
            sizes = [s for s in sizes.replace(" ", "").split(",") if s]
        elif isinstance(sizes, Integral):
            sizes = [sizes]
        try:
            sizes = [int(s) for s in sizes]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"hidden_sizes must be integers, got {self.hidden_sizes!r}.") from exc
        chain = [n_channels, *sizes]
        if not sizes or min(sizes) < 1 or any(b > a for a, b in zip(chain[:-1], chain[1:])):
            raise ValueError(
                f"hidden_sizes must be a non-empty, non-increasing list of positive sizes at most "
                f"the input size {n_channels}, got {self.hidden_sizes!r}."
            )
        return sizes

    def _check_params(self) -> None:
        _check_choice("distance", self.distance, DISTANCES)
        _check_choice("output", self.output, _OUTPUTS)
        _check_number("margin", self.margin, low=0)
        _check_number("neg_weight", self.neg_weight, low=0)
        _check_number("temperature", self.temperature, low=0)
        _check_number("z_threshold", self.z_threshold)
        _check_number("momentum", self.momentum, low=0, high=1, low_open=True)
        _check_number("learning_rate", self.learning_rate, low=0, low_open=True)
        _check_number("eps", self.eps, low=0, low_open=True)
        _check_number("validation_fraction", self.validation_fraction, low=0, high=1)
        if self.validation_fraction >= 1:
            raise ValueError(f"validation_fraction must be < 1, got {self.validation_fraction}.")
        _check_integer("n_per_class", self.n_per_class, low=2)
        _check_integer("max_iter", self.max_iter, low=1)
        _check_integer("validation_every", self.validation_every, low=1)
        if self.n_classes_per_batch is not None:
            _check_integer("n_classes_per_batch", self.n_classes_per_batch, low=2)
        if self.patience is not None:
            _check_integer("patience", self.patience, low=1)
        if not isinstance(self.whiten, (bool, np.bool_)):
            raise ValueError(f"whiten must be a bool, got {self.whiten!r}.")


def _training_embedding(net: SPDNet, X: torch.Tensor) -> torch.Tensor:
    """What the loss compares: SPD outputs (n, h, h), or ``vec(log Y)`` (n, h (h + 1) / 2) for a
    network with ``log_output`` (trained with the log-Euclidean distance)."""
    Y = net(X)
    return sym_to_vec(Y) if net.log_output else Y


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
    order = torch.argsort(dist, dim=1, stable=True)
    hits = torch.gather(relevant, 1, order).to(torch.float64)
    ranks = torch.arange(1, hits.shape[1] + 1, dtype=torch.float64, device=hits.device)
    precision = hits.cumsum(dim=1) / ranks
    n_rel = hits.sum(dim=1)
    ap = (precision * hits).sum(dim=1) / n_rel.clamp_min(1.0)
    has = n_rel > 0
    return float(ap[has].mean()) if bool(has.any()) else 0.0


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")


def _check_number(name, value, *, low=None, high=None, low_open=False) -> None:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}.")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")


def _check_integer(name, value, *, low) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
