"""A generic active-set optimiser: alternate constraint searches and optimiser runs.

Used by LMNN and multiple-metric LMNN: scipy's L-BFGS-B, or gradient descent with Weinberger's
step adaptation (×1.01 after a decrease, ÷2 after an increase), runs on a fixed active set for a
few iterations; a fresh search then refreshes the set. The loop ends when the optimiser has
settled *and* the search finds nothing new, or at the iteration cap.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from ..._threads import single_blas_thread
from ..._utils import progress, to_tensor
from ..._validation import warn_at_caller

__all__ = [
    "numpy_objective",
    "optimize_fixed",
    "optimize_on_active_sets",
    "optimize_with_progress",
]


def numpy_objective(loss_and_grad, shape: tuple[int, ...], like: torch.Tensor):
    """``f(flat x) -> (loss, flat gradient)`` in float64 NumPy, for the optimisers.

    ``loss_and_grad`` takes the parameters as a tensor of ``shape`` on the device and of the
    dtype of ``like`` (the data) and returns ``(loss, gradient)`` tensors.
    """

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = loss_and_grad(to_tensor(flat.reshape(shape), like.device, like.dtype))
        return float(loss), grad.double().cpu().numpy().ravel()

    return fun


def _warn_unless(converged: bool, est) -> None:
    if not converged:
        warn_at_caller(
            f"{type(est).__name__} stopped at max_iter={est.max_iter} before converging; "
            "increase max_iter or tol.",
            ConvergenceWarning,
        )


#: The settings of :func:`optimize_on_active_sets`, read from the estimator of the same names.
_SETTINGS = ("solver", "max_iter", "active_set_update", "tol", "learning_rate")


def optimize_on_active_sets(
    search,
    objective,
    x0: np.ndarray,
    *,
    solver: str,
    max_iter: int,
    active_set_update: int,
    tol: float,
    learning_rate: float,
    on_round=None,
):
    """Alternate impostor searches and optimiser runs until neither changes anything.

    Parameters
    ----------
    search : callable ``(x, previous ActiveSet or None) -> ActiveSet``
        The active set at parameters ``x`` (an ndarray of ``x0``'s shape).
    objective : callable ``ActiveSet -> f``
        ``f(flat x) -> (loss, flat gradient)`` in float64 NumPy on that active set.
    x0 : ndarray
        Initial parameters.
    solver, max_iter, active_set_update, tol, learning_rate
        As the parameters of :class:`LMNN`.
    on_round : callable ``(n_iter, loss, n_new_pairs) -> None``, optional
        Called after every round (progress reports).

    Returns
    -------
    x, n_iter, loss, active, converged
        Final parameters, iterations run, objective on the last active set, that active set
        (which holds every violator when converged) and whether it converged.
    """
    x, n_iter, lr, rounds = x0, 0, float(learning_rate), 0
    active = search(x, None)
    n = active.targets.shape[0]
    while True:
        # Short first rounds: the initial active set is large and shrinks fast.
        budget = min(active_set_update, 2**rounds, max_iter - n_iter)
        fun = objective(active)
        x, steps, loss, settled, lr = _SOLVERS[solver](fun, x, budget, lr, tol)
        del fun  # its index structures of the pairs, freed before the next search
        n_iter, rounds = n_iter + max(steps, 1), rounds + 1
        fresh = search(x, active)
        n_new = int((~torch.isin(fresh.pair_keys(n), active.pair_keys(n))).sum())
        if on_round is not None:
            on_round(n_iter, loss, n_new)
        if settled and n_new == 0:
            return x, n_iter, loss, active, True
        if n_iter >= max_iter:
            return x, n_iter, loss, active, False
        active = fresh


def optimize_with_progress(est, search, objective, x0: np.ndarray, desc: str):
    """:func:`optimize_on_active_sets` with ``est``'s solver settings and a progress bar.

    ``est`` has ``solver``, ``max_iter``, ``active_set_update``, ``tol``, ``learning_rate`` and
    ``verbose`` (LMNN and multiple-metric LMNN); the bar (on a terminal, when ``verbose``) shows
    the iterations, the objective and the new impostor pairs of the last search. Warns
    (``ConvergenceWarning``) when ``max_iter`` ends the run. Returns ``(x, n_iter, loss,
    active)`` as :func:`optimize_on_active_sets`, less ``converged``.
    """
    with progress(total=est.max_iter, desc=desc, verbose=est.verbose) as bar:

        def report(n_iter, loss, n_new):
            bar.update(n_iter - bar.n)
            bar.set_postfix(objective=f"{loss:.6g}", new_pairs=n_new)

        settings = {name: getattr(est, name) for name in _SETTINGS}
        *result, converged = optimize_on_active_sets(
            search, objective, x0, on_round=report, **settings
        )
    _warn_unless(converged, est)
    return result


def _lbfgs(fun, L: np.ndarray, budget: int, lr: float, tol: float):
    """At most ``budget`` L-BFGS-B iterations from ``L``; returns (L, steps, loss, settled,
    ``lr``), as :func:`_adaptive_descent` (L-BFGS has no learning rate: ``lr`` is returned)."""
    with single_blas_thread():  # tiny BLAS calls on r·D vectors: threads only hurt
        result = minimize(
            fun,
            L.ravel(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": budget, "ftol": tol, "gtol": 1e-10},
        )
    # Stopping before the budget means convergence (status 0) or a line search that cannot
    # progress in float32 (status 2): both leave nothing to gain on this active set.
    settled = result.nit < budget or result.status == 0
    return result.x.reshape(L.shape), int(result.nit), float(result.fun), settled, lr


def _adaptive_descent(fun, L: np.ndarray, budget: int, lr: float, tol: float):
    """Gradient descent, step ×1.01 after a decrease and ÷2 after an increase (Weinberger).

    Returns (L, accepted steps, loss, settled, learning rate).
    """
    x = L.ravel()
    loss, grad = fun(x)
    steps, tries, settled, non_finite = 0, 0, False, 0
    while steps < budget and tries < 50 * budget:
        tries += 1
        with np.errstate(over="ignore", invalid="ignore"):
            candidate = x - lr * grad
        new_loss, new_grad = fun(candidate) if np.isfinite(candidate).all() else (np.inf, grad)
        if not np.isfinite(new_loss):  # an overflowing step is refused like an increase
            non_finite += 1
            lr /= 2.0
            continue
        if new_loss > loss:
            lr /= 2.0
            continue
        settled = loss - new_loss <= tol * max(abs(loss), 1.0)
        x, loss, grad, lr, steps = candidate, new_loss, new_grad, lr * 1.01, steps + 1
        if settled:
            break
    if steps == 0 and non_finite == tries > 0:
        raise ValueError(
            f"LMNN(solver='gd'): every step tried, down to learning_rate={lr * 2:.3g}, made the "
            "objective non-finite; lower learning_rate."
        )
    return x.reshape(L.shape), steps, loss, settled, lr


#: The optimisers of ``solver``: ``(fun, x, budget, lr, tol) -> (x, steps, loss, settled, lr)``.
_SOLVERS = {"lbfgs": _lbfgs, "gd": _adaptive_descent}


def optimize_fixed(est, fun, x0: np.ndarray):
    """Run ``est``'s solver on one fixed objective (no constraint search: e.g. given triplets).

    Parameters
    ----------
    est : LMNN
        Its ``solver``, ``max_iter``, ``tol`` and ``learning_rate`` are used.
    fun : callable ``flat x -> (loss, flat gradient)``
    x0 : ndarray

    Returns
    -------
    x, n_iter, loss
        Warns (``ConvergenceWarning``) when ``max_iter`` ends the run.
    """
    solver = _SOLVERS[est.solver]
    x, steps, loss, settled, _ = solver(fun, x0, est.max_iter, est.learning_rate, est.tol)
    _warn_unless(settled, est)
    return x, max(steps, 1), loss
