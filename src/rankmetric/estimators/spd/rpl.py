"""RPLEmbedding: an SPD network trained with the Riemannian Potato-based Ranking Loss (Kim et al.).

The RPL configuration of :class:`~rankmetric.estimators.spd.SPDNetEmbedding`: the same network,
training loop and validation, with :class:`rankmetric.losses.potato.RiemannianPotatoLoss` as the
loss and its parameters as the estimator's. It takes a stack of SPD matrices (n, c, c), e.g. the
output of ``pyriemann.estimation.Covariances``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import torch

from ..._validation import DEPRECATED, Interval, Options, deprecate_positional_args
from ...io import register_estimator
from ...losses.potato import CENTERS
from .._held_out import HELD_OUT_PARAMETER_CONSTRAINTS
from .._init_parameters import store_parameters
from ._network import SPDNET_PARAMETER_CONSTRAINTS
from .spdnet import SPDNetEmbedding

__all__ = ["RPLEmbedding"]


@register_estimator
class RPLEmbedding(SPDNetEmbedding):
    r"""Learn an embedding of SPD matrices with the Riemannian Potato-based Ranking Loss.

    ``SPDNetEmbedding(loss="rpl")`` with the potato's parameters exposed; see
    :class:`~rankmetric.estimators.spd.SPDNetEmbedding` for the network, the training loop
    and the parameters not listed here.

    Parameters
    ----------
    hidden_sizes : int, sequence of int, str or None, default=None
        Output size of each BiMap; ``None``: ``(c, c)``.
    distance : {"airm", "log_euclidean"}, default="airm"
        Riemannian distance between SPD outputs (``head="spd"``); pyRiemann's ``"riemann"`` /
        ``"logeuclid"`` accepted. With a vector head the potato uses the Euclidean distance.
    potato : {"pairwise", "class"}, default="pairwise"
        ``"pairwise"``: z-scores of anchor-to-sample distances (v0.1); ``"class"``: of each
        sample's distance to its class's batch mean (the poster's class-centred potato).
        ``"pairwise"`` scored higher on the validation parts of JapaneseVowels and fmnist-regcov
        (``benchmarks/bench_rpl_tune.py``, ``docs/rpl.md``).
    z_threshold : float, default=0
        The potato's ``z_th``: positives with a z-score above it and negatives below
        ``z_th + margin`` are hard (see :class:`~rankmetric.losses.potato.RiemannianPotatoLoss`).
    margin : float, default=1
        The potato's margin ``m``, in units of its (log-)standard deviation. ``m = 1`` beat
        ``m = 2`` in validation R@1 on both sets (``docs/rpl.md``).
    neg_weight : float, default=1
        ``λ``, weight of the negative term of the loss.
    momentum : float, default=0.1
        ``α``, rate of the online update of the potato statistics, in (0, 1].
    temperature : float, default=0
        Ranked-List-Loss temperature: 0 averages the hinge terms uniformly, ``T > 0`` weights
        each violator by :math:`\exp(T \cdot \mathrm{hinge})`.
    head : {"linear", "log", "spd"}, default="linear"
        What the loss sees (see :class:`~rankmetric.estimators.spd.SPDNetEmbedding`).
    bimap, init, eps, relative_eps, batchnorm, n_classes_per_batch, n_per_class, max_iter,
    learning_rate, validation_fraction, validation_every, n_iter_no_change, validation_metric,
    validation_distance, selection_se, output, whiten, random_state, device, verbose,
    checkpoint_dir, checkpoint_every, held_out_check, fallback, patience
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.

    Attributes
    ----------
    potato_log_mu_, potato_log_sigma_ : ndarray of shape (n_classes,)
        The potato statistics (mean and standard deviation of the within-class log-distances) at
        the end of training.
    classes_, whitening_, weights_, head_weight_, head_bias_ : ndarray or list of ndarray
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.
    batchnorm_means_, batchnorm_log_biases_ : list of ndarray
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.
    domains_, domain_whitening_, batchnorm_domain_means_ : ndarray, ndarray or list, or None
        The domains given to ``fit`` and their statistics, as
        :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.
    n_iter_, best_iter_, initial_validation_score_, validation_score_ : int or float or None
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.
    held_out_check_ : dict or None
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.
    validation_gain_, loss_curve_, n_features_in_ : tuple, ndarray or int
        As :class:`~rankmetric.estimators.spd.SPDNetEmbedding`.

    See Also
    --------
    rankmetric.SPDNetEmbedding : The same network with any other loss.
    rankmetric.losses.RiemannianPotatoLoss : The loss, for training any PyTorch model.
    rankmetric.models.SPDNet : The network itself (BiMap, ReEig, LogEig layers).
    rankmetric.preprocessing.Covariances : Multichannel signals to the SPD inputs it takes.

    References
    ----------
    .. [1] B. H. Kim, Y.-J. Suh, H. Lee and S. Jo. Nonlinear Ranking Loss on Riemannian Potato
       Embedding. KAIST and Looxid Labs, poster.
    .. [2] Z. Huang and L. Van Gool. A Riemannian Network for SPD Matrix Learning. AAAI 2017.
    .. [3] A. Barachant, A. Andreev and M. Congedo. The Riemannian Potato: an automatic and
       adaptive artifact detection method for online experiments using Riemannian geometry.
       TOBI Workshop IV, 2013.

    Examples
    --------
    >>> from rankmetric import RPLEmbedding
    >>> from rankmetric.datasets import make_spd_clusters
    >>> X, y = make_spd_clusters(60, n_channels=4, n_classes=3, random_state=0)
    >>> rpl = RPLEmbedding(
    ...     hidden_sizes=3, max_iter=20, validation_fraction=0.0, random_state=0, device="cpu"
    ... )
    >>> rpl.fit(X, y).transform(X).shape
    (60, 6)
    >>> rpl.potato_log_mu_.shape
    (3,)
    """

    _parameter_constraints = {
        **HELD_OUT_PARAMETER_CONSTRAINTS,
        **SPDNET_PARAMETER_CONSTRAINTS,
        "potato": [Options(*CENTERS)],
        "z_threshold": [Interval(Real, None, None, closed="neither")],
        "margin": [Interval(Real, 0, None, closed="left")],
        "neg_weight": [Interval(Real, 0, None, closed="left")],
        "momentum": [Interval(Real, 0, 1, closed="right")],
        "temperature": [Interval(Real, 0, None, closed="left")],
    }

    # alike: SPDNetEmbedding's parameters, repeated (scikit-learn reads the signature)
    @deprecate_positional_args
    def __init__(
        self,
        *,
        hidden_sizes: int | str | Sequence[int] | None = None,
        distance: str = "airm",
        potato: str = "pairwise",
        z_threshold: float = 0.0,
        margin: float = 1.0,
        neg_weight: float = 1.0,
        momentum: float = 0.1,
        temperature: float = 0.0,
        head: str = "linear",
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

    def _loss_name(self) -> str:
        return "rpl"

    def _loss_kwargs(self) -> dict:
        return {
            "z_threshold": self.z_threshold,
            "margin": self.margin,
            "neg_weight": self.neg_weight,
            "momentum": self.momentum,
            "temperature": self.temperature,
            "center": self.potato,
        }

    def _store_loss_state(self, loss_fn: torch.nn.Module) -> None:
        self.potato_log_mu_ = loss_fn.log_mu.detach().cpu().double().numpy()
        self.potato_log_sigma_ = loss_fn.log_sigma.detach().cpu().double().numpy()
