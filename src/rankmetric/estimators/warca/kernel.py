r"""Kernel WARCA (Jose & Fleuret, ECCV 2016, eq. 8–10): exact, or Nyström for large N.

The embedding of :math:`x` is :math:`A \kappa(x)` with
:math:`\kappa(x) = (k(x, x_1), \dots, k(x, x_N))`. Two modes:

* **exact** (``n_landmarks=None`` and N ≤ 20 000): ``A`` of shape (r, N) on the N × N kernel,
  regulariser :math:`\tfrac12 \lVert A K A^\top - I \rVert_F^2`. Each step computes
  :math:`M = K A^\top` (N × r) once; the batch
  embeddings are rows of ``M``, and the loss and regulariser gradients (exact, ``K`` included)
  need nothing N × N besides ``K`` itself.
* **Nyström** (``n_landmarks=m``, or N > 20 000 by default):
  :math:`\Phi = k(X, L)\, K_{LL}^{-1/2}` (N × m) with :math:`\Phi \Phi^\top \approx K`;
  :math:`A K A^\top = (A\Phi)(A\Phi)^\top`, so with :math:`W = A\Phi` of shape (r, m) the problem
  is linear WARCA on :math:`\Phi` with the AON regulariser
  :math:`\tfrac12 \lVert W W^\top - I \rVert_F^2`. Memory O(N·m).

Both store ``components_`` (r, n_support) and ``support_vectors_`` (n_support, D) so that
``transform(X) = k(X, support_vectors_) @ components_.T``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted, validate_data

from ..._utils import resolve_device, to_tensor
from ..._validation import (
    DEPRECATED,
    NONE,
    POSITIVE_INT,
    Options,
    deprecate_positional_args,
    warn_deprecated,
)
from ...io import register_estimator
from ...kernels import KERNEL_PARAMETER_CONSTRAINTS, NystroemMap, default_gamma, pairwise_kernel
from ...losses.regularizers import kernel_aon_penalty
from ...models.linear import LinearMap
from .._docstrings import fill_doc
from .._early_stopping import RENAMED_PATIENCE
from .._init_parameters import store_parameters
from ..base import MetricLearnerMixin, fit_context
from .base import WARP_PARAMETER_CONSTRAINTS, BaseWARCA
from .solver import rows_in, rows_of, train_warp
from .validation import compare_with_euclidean, make_validator

__all__ = ["KernelWARCA"]

#: Largest N trained with the exact N × N kernel when ``n_landmarks`` is None (our choice).
EXACT_MAX_SAMPLES = 20_000
#: Landmarks of the Nyström map used beyond ``EXACT_MAX_SAMPLES`` when ``n_landmarks`` is None.
DEFAULT_LANDMARKS = 2000
#: Default rank when ``n_components`` is None (capped by the number of support points).
DEFAULT_COMPONENTS = 64
#: Bound on ``rows × n_support`` kernel entries computed at once by ``transform``.
TRANSFORM_CHUNK_ELEMENTS = 1 << 24


#: ``learning_rate=None``: the step size of :func:`~rankmetric.estimators.warca.auto_schedule`
#: times ``min(1, KERNEL_ROW_MASS / mean_i Σ_j |K_ij|)``. Adam moves every coefficient of a row
#: of ``A`` by about the step size at first, so the embedding of ``x`` moves by up to
#: ``lr · Σ_j |k(x, x_j)|``, which grows with N; this keeps that first move as large as linear
#: WARCA's on about 64 standardised features, the inputs its step size was chosen on.
KERNEL_ROW_MASS = 64.0
#: An optional fixed ceiling (bytes) on the kernels of one fit, on top of the process's memory
#: budget (:mod:`rankmetric.resources`), which alone bounds them when this is None.
MAX_KERNEL_BYTES: int | None = None


def _check_kernel_memory(n: int, n_landmarks: int | None, exact: bool) -> None:
    """Raise before the kernels of a fit outgrow the memory budget (or ``MAX_KERNEL_BYTES``).

    Counted in float32 numbers: the exact N × N kernel and one temporary of its size; or the
    N × m Nyström features and one temporary, plus the m × m landmark kernel, its
    eigendecomposition and the normaliser.
    """
    from ...resources import check_memory

    m = min(n_landmarks or DEFAULT_LANDMARKS, n)
    need = 4 * (2 * n * n if exact else 2 * n * m + 4 * m * m)
    what = f"an N × N = {n} × {n} kernel"
    if not exact:
        what = f"N × m = {n} × {m} Nyström features and an m × m = {m} × {m} landmark kernel"
    advice = "Use fewer n_landmarks, a subsample, or WARCA."
    if MAX_KERNEL_BYTES is not None and need > MAX_KERNEL_BYTES:
        raise ValueError(
            f"KernelWARCA would need {what}: about {need / 2**30:.1f} GiB (limit "
            f"rankmetric.estimators.warca.kernel.MAX_KERNEL_BYTES = "
            f"{MAX_KERNEL_BYTES / 2**30:.1f} GiB). {advice}"
        )
    check_memory(need, f"KernelWARCA's {what}", advice)


def _step_scale(rows: torch.Tensor) -> float:
    """``min(1, KERNEL_ROW_MASS / mean_i Σ_j |rows_ij|)``: the factor of ``learning_rate=None``."""
    mass = float(rows.abs().sum(dim=1).mean())
    return min(1.0, KERNEL_ROW_MASS / mass) if mass > 0 else 1.0


@register_estimator
@fill_doc
class KernelWARCA(MetricLearnerMixin, BaseWARCA):
    r"""Non-linear WARCA in a kernel space, exact or with a Nyström approximation.

    Parameters
    ----------
    n_components : int, optional
        Rank ``r`` of the embedding. Default ``min(64, n_support)``.
    kernel : {"chi2_rbf", "rbf", "poly", "linear", "precomputed"}, default="chi2_rbf"
        ``chi2_rbf`` (:math:`\exp(-\gamma \sum_d (a_d - b_d)^2 / (a_d + b_d))`, non-negative
        features such as histograms) is
        the re-identification default of the paper. With ``"precomputed"``, ``fit`` takes the
        N × N training kernel and ``transform`` takes ``K(X_new, X_train)`` (exact mode only).
    gamma : float, optional
        Kernel width; default from :func:`rankmetric.kernels.default_gamma`
        (:math:`1 / (D \operatorname{Var} X)` for rbf, :math:`1 / \operatorname{mean} \chi^2` for
        chi2_rbf, :math:`1/D` for poly).
    degree : int, default=3
        Polynomial degree.
    coef0 : float, default=1.0
        Polynomial offset (the reference uses 0; 1 keeps lower-order terms on standardised data).
    n_landmarks : int, optional
        Nyström landmarks ``m`` (drawn uniformly from the training set). ``None``: exact kernel up
        to 20 000 samples, 2 000 landmarks beyond.
    validation_fraction : float, default=0.0
        As in :class:`rankmetric.WARCA`. ``"auto"``, its former default, is deprecated: it
        meant ``0`` with a check on held-out identities, which every learner now runs by
        default (``held_out_check``).
    margin, reg_lambda, batch_size, sampling, max_sampling, max_iter, validation_every,
    validation_split, validation_metric, n_iter_no_change, tol, tol_window, positives,
    random_state, device, verbose, checkpoint_dir, checkpoint_every :
        As in :class:`rankmetric.WARCA`. ``reg_lambda`` defaults to 1e-3 (the reference's VIPeR
        setting): on a normalised kernel (:math:`k(x, x) = 1`) an embedding with
        :math:`A K A^\top = I` has all distances below :math:`\sqrt 2`, so the margin of 1
        needs room to grow the scale.
        ``batch_size=None`` and ``tol_window=None`` scale to the data as in WARCA.
    learning_rate : float or None, default=None
        Adam step size. None scales it to the data and to the kernel: WARCA's rule
        (:math:`0.01 \sqrt{512 / \mathtt{batch\_size}}`) times
        :math:`\min(1,\, 64 / \operatorname{mean}_i \sum_j |K_{ij}|)` (Nyström: the rows of the
        features :math:`\Phi`), since a step on ``A`` moves an embedding by up to the step
        size times the mass of its kernel row, which grows with N (:data:`KERNEL_ROW_MASS`).
        The default was 0.01 before 0.2, whose loss spikes to over 30× its start at VIPeR's 1,264
        items before it falls back (``docs/warca.md``, "Spikes and divergence"); on validation
        identities of three histogram stand-ins of 474 items the two are within seed noise
        (``docs/warca.md``, "Kernel WARCA's defaults").
    %(held_out_check_only)s
    fallback : {None, "reference"}, default=None
        ``"reference"``: when the check finds the learned distance below (or not better), return the
        reference instead: ``transform`` returns its input (the Euclidean distance).
    %(patience)s

    Attributes
    ----------
    %(held_out_check_attribute)s
    components_ : ndarray of shape (n_components, n_support)
        :math:`A` (exact) or :math:`W K_{LL}^{-1/2}` (Nyström).
    support_vectors_ : ndarray of shape (n_support, n_features) or None
        Training points (exact) or landmarks (Nyström); None for a precomputed kernel.
    gamma_ : float
        The kernel width used.
    approximation_ : str
        ``"exact"`` or ``"nystroem"``.
    n_iter_, batch_size_, tol_window_, learning_rate_, loss_curve_, validation_scores_,
    initial_validation_score_, best_iter_, reference_scores_, n_features_in_ :
        As in :class:`rankmetric.WARCA` (``reference_scores_`` is None for a precomputed
        kernel: there are no inputs to take Euclidean distances of).

    See Also
    --------
    rankmetric.WARCA : The linear model, for features where a linear map suffices.
    rankmetric.losses.WARPLoss : The rank-weighted loss both WARCA models minimise.
    rankmetric.SSNE : Another nonlinear embedding, a tanh map onto the unit sphere.

    References
    ----------
    .. [1] C. Jose and F. Fleuret. Scalable Metric Learning via Weighted Approximate Rank
       Component Analysis. ECCV 2016 (kernelised form, eq. 8–10).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import KernelWARCA
    >>> X, y = load_iris(return_X_y=True)
    >>> kw = KernelWARCA(kernel="rbf", n_components=2, max_iter=50, tol=None, random_state=0)
    >>> kw.fit(X, y).transform(X).shape
    (150, 2)
    >>> kw.approximation_
    'exact'
    """

    _untrained_hint = (
        "Try learning_rate=None (the default, scaled to the kernel), a smaller learning_rate, "
        "another gamma "
        "or reg_lambda, or a validation set (validation_fraction, validation_split='groups' for "
        "re-identification) to keep the best step; docs/warca.md, 'When a fit does not learn'."
    )

    _held_out_hint = (
        "try another gamma or reg_lambda, or validation_split='groups' with validation_fraction"
    )

    _parameter_constraints = {
        **WARP_PARAMETER_CONSTRAINTS,
        **KERNEL_PARAMETER_CONSTRAINTS,
        "n_landmarks": [NONE, POSITIVE_INT],
        "validation_fraction": [
            *WARP_PARAMETER_CONSTRAINTS["validation_fraction"],
            Options("auto"),
        ],
    }
    _renamed_parameters = RENAMED_PATIENCE

    # alike: the signature is spelled out, not inherited (scikit-learn reads the parameters)
    @deprecate_positional_args
    def __init__(
        self,
        *,
        n_components: int | None = None,
        kernel: str = "chi2_rbf",
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        n_landmarks: int | None = None,
        margin: float = 1.0,
        reg_lambda: float = 1e-3,
        batch_size: int = 512,
        sampling: str = "batched",
        max_sampling: int = 128,
        max_iter: int = 2000,
        learning_rate: float | None = None,
        validation_every: int = 50,
        validation_fraction: float | str = 0.0,
        validation_split: str = "stratified",
        validation_metric: str = "recall@1",
        n_iter_no_change: int | None = 10,
        tol: float | None = 1e-2,
        tol_window: int = 50,
        positives: str = "all",
        # alike: the tail every trained estimator repeats (scikit-learn reads the signature)
        random_state=None,
        device: str | None = None,
        verbose: bool = False,
        checkpoint_dir: str | None = None,
        checkpoint_every: int = 100,
        held_out_check: bool | str = "auto",
        fallback: str | None = None,
        patience=DEPRECATED,
    ) -> None:
        store_parameters(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = self.kernel == "chi2_rbf"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # ------------------------------------------------------------------ fitting

    def _check_params(self) -> None:
        self._validate_params()
        if self.validation_fraction == "auto":  # former default: 0 + the held-out check
            warn_deprecated(
                "KernelWARCA(validation_fraction='auto')",
                "It is validation_fraction=0 with held_out_check='auto', both the defaults "
                "(every learner's held-out check); pass those",
                stacklevel=None,
            )
        if self.kernel == "precomputed" and self.n_landmarks is not None:
            raise ValueError(
                "n_landmarks needs the features: it cannot be used with kernel='precomputed'."
            )

    def _kernel_to(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """``k(X, Y)`` under the fitted kernel, in the dtype of ``X``."""
        params = {"gamma": self.gamma_, "degree": self.degree, "coef0": self.coef0}
        return pairwise_kernel(X, Y, self.kernel, dtype=X.dtype, **params)

    @fit_context
    def fit(self, X, y, X_val=None, y_val=None, *, cameras=None) -> KernelWARCA:
        """Learn ``A`` from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) kernel
            Training features, or the training kernel when ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
        X_val, y_val : optional
            Deprecated (removed in 0.3; a ``FutureWarning``): set ``validation_fraction``
            instead. Validation features (or ``K(X_val, X_train)`` when precomputed) and labels
            for early stopping on ``validation_metric`` (by default leave-one-out recall@1 among the
            validation items, whose labels need not occur in ``y``). Not together with
            ``validation_fraction``.
        cameras : array-like of shape (n_samples,), optional
            Camera id of each row of ``X``, for ``positives="cross_camera"`` (checked, then
            unused, with ``positives="all"``), as :meth:`rankmetric.WARCA.fit`. In a
            ``Pipeline``: ``fit(X, y, kernelwarca__cameras=cameras)``.

        Returns
        -------
        self
        """
        self._check_params()
        precomputed = self.kernel == "precomputed"
        X, codes, X_val, val_codes, index, rng = self._labelled_data(
            X, y, X_val, y_val, cameras, precomputed=precomputed
        )
        device = resolve_device(self.device)
        data = to_tensor(X, device)
        exact = self.n_landmarks is None and X.shape[0] <= EXACT_MAX_SAMPLES
        _check_kernel_memory(X.shape[0], self.n_landmarks, exact)
        self.gamma_ = float(
            self.gamma if self.gamma is not None else default_gamma(data, self.kernel, rng)
        )
        fit = self._fit_exact if exact else self._fit_nystroem
        embed_rows = fit(data, index, rng, device, X_val, val_codes)
        self.reference_scores_ = None  # a precomputed kernel has no inputs to compare with
        if not precomputed:
            compare_with_euclidean(self, embed_rows, X, codes, X_val, val_codes, rng, device)
        return self

    def _n_components(self, n_support: int) -> int:
        r = min(DEFAULT_COMPONENTS, n_support) if self.n_components is None else self.n_components
        if r > n_support:
            raise ValueError(
                f"n_components={r} exceeds the {n_support} support points: A K Aᵀ = I needs "
                "r ≤ rank(K)."
            )
        return r

    def _fit_exact(self, data, index, rng, device, X_val, val_codes) -> Callable:
        """``A`` (r, N) on the full kernel; one ``K Aᵀ`` per step, nothing else N × N."""
        K = data if self.kernel == "precomputed" else self._kernel_to(data, data)
        n = K.shape[0]
        model = LinearMap(n, self._n_components(n), device=device)
        model.reset_parameters(rng, "random")

        def prepare_step():
            KA = model(K)  # (N, r) with gradient: the batch embeddings are its rows
            detached = KA.detach()
            return (
                rows_in(KA),
                rows_in(detached),
                partial(kernel_aon_penalty, model.weight, KA=detached),
            )

        validate = None
        if X_val is not None:
            val_kernel = to_tensor(X_val, device)
            if self.kernel != "precomputed":
                val_kernel = self._kernel_to(val_kernel, data)
            validate = make_validator(
                self.validation_metric,
                lambda indices: model(K)[indices],  # rows of K Aᵀ, as in training
                rows_of(model, val_kernel),
                index.codes,
                val_codes,
                rng,
                device,
            )
        train_warp(
            self, model, prepare_step, index, rng, device,
            validate=validate, step_scale=_step_scale(K),
        )  # fmt: skip
        self.components_ = model.weight.detach().cpu().numpy()
        self.support_vectors_ = None if self.kernel == "precomputed" else data.cpu().numpy()
        self.approximation_ = "exact"
        return lambda rows: model(self._kernel_to(to_tensor(rows, device), data))

    def _fit_nystroem(self, data, index, rng, device, X_val, val_codes) -> Callable:
        """Linear WARCA on Nyström features Φ (N, m); ``components_ = W K_LL^{−1/2}``."""
        n = data.shape[0]
        m = min(self.n_landmarks or DEFAULT_LANDMARKS, n)
        landmarks = data[torch.as_tensor(np.sort(rng.choice(n, m, replace=False)), device=device)]
        feature_map = NystroemMap.fit(landmarks, self.kernel, self.gamma_, self.degree, self.coef0)
        features = feature_map.transform(data)  # (N, m)
        model = LinearMap(m, self._n_components(m), device=device)
        model.reset_parameters(rng, "random")

        val_features = None if X_val is None else feature_map.transform(to_tensor(X_val, device))
        self._train_linear_map(
            model, features, index, val_features, val_codes, rng, device,
            step_scale=_step_scale(features),
        )  # fmt: skip
        with torch.no_grad():
            self.components_ = (model.weight @ feature_map.normalizer).cpu().numpy()
        self.support_vectors_ = landmarks.cpu().numpy()
        self.approximation_ = "nystroem"
        return lambda rows: model(feature_map.transform(to_tensor(rows, device)))

    # ------------------------------------------------------------------ transform

    @property
    def _n_features_out(self) -> int:
        """Number of output columns: the rows of ``components_`` (the inputs' after a fallback)."""
        return self.n_features_in_ if self._reference_in_use() else self.components_.shape[0]

    def _use_reference(self) -> None:
        """``fallback="reference"``: ``transform`` returns its input (the Euclidean distance)."""

    def transform(self, X) -> np.ndarray:
        """Embed ``X`` (n_samples, n_features) — or ``K(X, X_train)`` when precomputed.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_train)
            Samples to embed, or their kernel values against the training samples when
            ``kernel="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples, n_components), in the dtype of ``X`` (float32/float64).
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        if self._reference_in_use():  # fallback="reference": the Euclidean distance
            return X.copy()
        if self.kernel == "precomputed":
            return X @ self.components_.T.astype(X.dtype, copy=False)
        device = resolve_device(self.device)
        dtype = torch.float64 if X.dtype == np.float64 else torch.float32
        support = to_tensor(self.support_vectors_, device, dtype)
        components = to_tensor(self.components_, device, dtype)
        rows = max(1, TRANSFORM_CHUNK_ELEMENTS // support.shape[0])
        out = np.empty((X.shape[0], components.shape[0]), dtype=X.dtype)
        for start in range(0, X.shape[0], rows):
            chunk = to_tensor(X[start : start + rows], device, dtype)
            out[start : start + rows] = (
                (self._kernel_to(chunk, support) @ components.T).cpu().numpy()
            )
        return out
