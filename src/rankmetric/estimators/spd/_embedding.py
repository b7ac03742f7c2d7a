"""The embedding side of the SPD estimators: the network rebuilt from the fitted arrays.

:class:`SPDEmbeddingMixin` gives :class:`~rankmetric.estimators.spd.SPDNetEmbedding` (and its
RPL configuration) what a fitted model does: the network's outputs in float64, chunked
(:meth:`~SPDEmbeddingMixin._outputs`), the per-domain statistics of a model fitted with
``domains`` (a new domain adapted to its own means), :meth:`~SPDEmbeddingMixin.pair_distances`
and the output width. The estimator keeps ``transform`` itself (scikit-learn's ``set_output``
wraps the ``transform`` a class defines).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ..._utils import resolve_device, to_tensor
from ...geometry.dispatch import distance as spd_distance
from ...models.spdnet import SPDNet
from ._domains import transform_domain_codes
from ._network import as_vectors, congruence
from .._supervision import split_pairs

__all__ = ["SPDEmbeddingMixin"]

_CHUNK = 2048  # matrices per forward pass in transform


class SPDEmbeddingMixin:
    """Outputs, pair distances and output width of a fitted SPD network estimator.

    Needs the estimator's ``_validate_spd``, ``_distance`` and its fitted arrays
    (``weights_``, ``whitening_``, ``head_weight_``, ``batchnorm_*_``, ``domains_``).
    """

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
        if X2 is None:
            X1, X2 = split_pairs(X1, point_ndim=2)
        spd = self.head == "spd"
        if getattr(self, "domains_", None) is not None:
            X1, _ = self._validate_spd(X1, reset=False)
            X2, _ = self._validate_spd(X2, reset=False)
            Y, _ = self._outputs(np.concatenate([X1, X2]), log=not spd)
            Y1, Y2 = Y[: len(X1)], Y[len(X1) :]
        else:
            Y1, _ = self._outputs(X1, log=not spd)
            Y2, _ = self._outputs(X2, log=not spd)
        if Y1.shape[0] != Y2.shape[0]:
            raise ValueError(f"X1 and X2 must have as many rows: {Y1.shape[0]} != {Y2.shape[0]}.")
        with torch.no_grad():
            if not spd:
                Y1, Y2 = as_vectors(Y1), as_vectors(Y2)
                return torch.linalg.vector_norm(Y1.double() - Y2.double(), dim=1).cpu().numpy()
            return spd_distance(Y1.double(), Y2.double(), self._distance()).cpu().numpy()

    def _outputs(self, X, log: bool = False, domains=None) -> tuple[torch.Tensor, np.dtype]:
        """The network's outputs (SPD, log or head vectors), and X's dtype.

        Computed in float64 (the fitted float32 parameters cast up), so that an output does not
        depend on which other matrices share its chunk.
        """
        check_is_fitted(self, "weights_")
        X, _ = self._validate_spd(X, reset=False)
        device = resolve_device(self.device)
        seen = getattr(self, "domains_", None)
        if seen is None:
            if domains is not None:
                raise ValueError("domains given to a model fitted without domains.")
            W = to_tensor(self.whitening_, device, torch.float64)
            net = self._network(device, log)
            with torch.no_grad():
                chunks = range(0, X.shape[0], _CHUNK)
                outputs = [net(congruence(self._rows(X, i, device), W)) for i in chunks]
            return torch.cat(outputs), X.dtype
        codes, new = transform_domain_codes(seen, domains, X.shape[0])
        net = self._network(device, log, n_domains=len(new))
        W = [to_tensor(self.domain_whitening_, device, torch.float64)]
        with torch.no_grad():
            for d in new:  # a new domain: whitened at its own mean, then its own BN means
                X_d = to_tensor(X[codes == d], device, torch.float64)
                if X_d.shape[0] < 2:
                    raise ValueError(
                        "a new domain has a single matrix: adapting to its own mean would map it "
                        "to the identity. Give a new domain's matrices together."
                    )
                W.append(to_tensor(self._fit_whitening(X_d), device, torch.float64)[None])
                if net.batchnorms:
                    net.adapt_domain(congruence(X_d, W[-1][0]), d)
            W, codes_t = torch.cat(W), torch.as_tensor(codes, device=device)
            outputs = []
            for i in range(0, X.shape[0], _CHUNK):
                rows = codes_t[i : i + _CHUNK]
                outputs.append(net(congruence(self._rows(X, i, device), W[rows]), rows))
        return torch.cat(outputs), X.dtype

    @staticmethod
    def _rows(X: np.ndarray, start: int, device) -> torch.Tensor:
        """The chunk of ``X`` from row ``start``, as float64 on ``device``."""
        return to_tensor(X[start : start + _CHUNK], device, torch.float64)

    def _network(self, device: torch.device, log_output: bool = False, n_domains: int = 0):
        """The SPDNet rebuilt from the fitted arrays (head included when there is one), with
        room for ``n_domains`` new domains after the fitted ones."""
        seen = getattr(self, "domains_", None)
        n_seen = 0 if seen is None else len(seen)
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
            n_domains=n_seen + n_domains if n_seen else 0,
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
            for bn, means in zip(net.batchnorms, self._domain_means(), strict=n_seen > 0):
                bn.domain_means[:n_seen] = to_tensor(means, device)
            if head is not None:
                net.head.weight.copy_(to_tensor(head, device))
                net.head.bias.copy_(to_tensor(self.head_bias_, device))
        return net.eval()

    # ------------------------------------------------------------------ validation

    def _domain_means(self) -> list[np.ndarray]:
        """The fitted per-domain running means of each batch normalisation (none without)."""
        if getattr(self, "domains_", None) is None:
            return []
        return self.batchnorm_domain_means_
