"""One-standard-error model selection over the validated steps of a training run.

:func:`rankmetric.training.train` validates a network every few steps and keeps the best
validated parameters. :class:`OneStandardErrorSelector` records more: every validated step's
per-query scores and parameters, so that a fit can keep the *earliest* step whose score is within
``k`` paired standard errors of the best one (Breiman's one-standard-error rule), the untrained
network first. A gain within the validation noise then neither replaces the untrained start nor
buys more training. The SPD estimators (``selection_se``) select this way, on the per-query
scores of :func:`per_query_scores`, the one validation scorer (:mod:`rankmetric.training._scoring`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from ._scoring import per_query_scores

__all__ = ["OneStandardErrorSelector", "paired_gain", "per_query_scores"]  # the scorer re-exported


def paired_gain(scores: torch.Tensor, start: torch.Tensor) -> tuple[float, float]:
    """Mean per-query gain of ``scores`` over ``start`` and its standard error.

    Paired over the queries: the differences of the two score vectors, NaN entries of either
    left out.

    Parameters
    ----------
    scores, start : tensor of shape (n_queries,)
        Per-query scores of two candidates on the same queries.

    Returns
    -------
    (float, float)
        The mean difference and its standard error (0 with fewer than two queries).

    Examples
    --------
    >>> import torch
    >>> gain, noise = paired_gain(torch.tensor([1.0, 1.0, 0.0]), torch.tensor([0.0, 1.0, 0.0]))
    >>> round(gain, 3), round(noise, 3)
    (0.333, 0.333)
    """
    diff = (scores - start)[~torch.isnan(scores) & ~torch.isnan(start)]
    if diff.numel() < 2:
        return (float(diff.sum()), 0.0)
    return float(diff.mean()), float(diff.std() / diff.numel() ** 0.5)


#: Two scores (or a gain and its bound) within this many ulps of the larger are a tie.
_TIE_ULPS = 64


def _at_least(a: float, b: float) -> bool:
    """``a >= b``, counting values equal up to rounding as equal.

    The rule's comparisons meet exact mathematical ties: with 0/1 recall scores, a candidate
    that differs from another on a single query (or on ``p`` queries better and ``m`` worse
    with ``(p − m)² = p + m``) has a gain of exactly one standard error. Computed, the two differ
    in the last bits, by an amount that depends on the CPU's summation order, so a plain
    ``gain <= noise`` kept another step (another model) on another CPU.
    """
    return a >= b - _TIE_ULPS * np.finfo(np.float64).eps * max(abs(a), abs(b))


class OneStandardErrorSelector(torch.nn.Module):
    """Every validated step's per-query scores and parameters, and the one-standard-error rule.

    :meth:`validate` is the closure :func:`rankmetric.training.train` calls at each validation:
    it records the per-query scores and the parameters of ``targets`` (flattened, float64) and
    returns the mean score (for early stopping). :meth:`select` then picks the earliest recorded
    candidate, the untrained network first, whose score is within ``k`` paired standard errors
    of the best one; :meth:`restore` loads its parameters. The records are buffers, so
    checkpoints carry them and a resumed fit selects as an uninterrupted one (a few kB per
    validation for the networks of the RPL table).

    Parameters
    ----------
    targets : sequence of torch.nn.Module
        The modules whose state is recorded and restored (not registered as submodules).
    per_query : callable
        ``per_query() -> tensor (n_queries,)``: the current per-query validation scores (NaN for
        a query that cannot be scored).

    Attributes
    ----------
    scores : float64 tensor of shape (n_candidates, n_queries)
    states : float64 tensor of shape (n_candidates, n_parameters)

    See Also
    --------
    paired_gain : the mean gain and standard error the rule compares.
    rankmetric.training.train : the loop that calls :meth:`validate`.

    References
    ----------
    .. [1] L. Breiman, J. Friedman, R. Olshen and C. Stone, *Classification and Regression
       Trees*, Wadsworth, 1984 (the one-standard-error rule).

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(1, 1)
    >>> rows = iter([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    >>> selector = OneStandardErrorSelector([net], lambda: torch.tensor(next(rows)))
    >>> selector.validate(), selector.validate()
    (0.3333333333333333, 1.0)
    >>> selector.select(1.0)[0]  # +0.67 ± 0.33: beyond one standard error
    1
    """

    def __init__(
        self, targets: Sequence[torch.nn.Module], per_query: Callable[[], torch.Tensor] | None
    ) -> None:
        super().__init__()
        object.__setattr__(self, "_targets", list(targets))  # not submodules
        self.per_query = per_query
        self.register_buffer("scores", torch.empty(0, 0, dtype=torch.float64))
        self.register_buffer("states", torch.empty(0, 0, dtype=torch.float64))

    def _flat_state(self) -> torch.Tensor:
        tensors = [v for t in self._targets for v in t.state_dict().values()]
        return torch.cat([v.detach().reshape(-1).double().cpu() for v in tensors])

    def validate(self) -> float:
        """Record the current per-query scores and parameters; return the mean score."""
        scores = self.per_query().detach().double().cpu()
        state = self._flat_state()
        self.scores = torch.cat([self.scores.reshape(-1, scores.numel()), scores[None]])
        self.states = torch.cat([self.states.reshape(-1, state.numel()), state[None]])
        return float(scores.nanmean())

    def mean(self, i: int) -> float:
        """Mean validation score of candidate ``i`` (NaN queries left out)."""
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
        """The candidate the rule keeps.

        Parameters
        ----------
        k : float
            Standard errors of tolerance (0: the best candidate).

        Returns
        -------
        (int, (float, float))
            The index of the earliest candidate within ``k`` paired standard errors of the best
            one (a trained candidate scoring below the first is never kept), and the mean gain of
            the best over the first candidate with its standard error. A gain equal to ``k``
            standard errors up to rounding is within (the same choice on every CPU).
        """
        means = [self.mean(i) for i in range(self.scores.shape[0])]
        best = int(np.argmax(means))  # the earliest of the best, ties up to rounding included
        best = next((i for i in range(best) if _at_least(means[i], means[best])), best)
        chosen = best
        for i in range(best):
            gain, noise = paired_gain(self.scores[best], self.scores[i])
            # never a trained step that validates below the untrained one
            if _at_least(k * noise, gain) and (i == 0 or _at_least(means[i], means[0])):
                chosen = i
                break
        return chosen, paired_gain(self.scores[best], self.scores[0])

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, *args):
        for name in ("scores", "states"):  # the records grow: take the checkpoint's sizes
            key = prefix + name
            if key in state_dict:
                self._buffers[name] = state_dict[key].detach().clone().double()
            elif strict:
                missing.append(key)
