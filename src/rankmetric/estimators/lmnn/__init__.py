r"""Large Margin Nearest Neighbour metric learning (Weinberger & Saul, JMLR 2009): LMNN and mLMNN.

The objective over a linear map :math:`L` (``components_``, shape (r, D)) is

.. math::

    \varepsilon(L) = (1 - \mu) \sum_{i,\, j \rightsquigarrow i} \lVert L(x_i - x_j) \rVert^2
    + \mu \sum_{i,\, j \rightsquigarrow i,\, l} (1 - y_{il})
      \bigl[1 + \lVert L(x_i - x_j) \rVert^2 - \lVert L(x_i - x_l) \rVert^2\bigr]_+

with :math:`j \rightsquigarrow i` the :math:`k` (``n_target_neighbors``) target neighbours of
:math:`i` (same class, nearest in the input space) and :math:`y_{il} = 1` when :math:`i` and
:math:`l` share a class. Impostor pairs :math:`(i, l)` enter through an *active set*: the pairs
inside the margin radius :math:`\max_j \lVert L(x_i - x_j) \rVert^2 + 1` found by a chunked
neighbour search, refreshed every
``active_set_update`` iterations of scipy's L-BFGS-B (or of gradient descent with Weinberger's
step adaptation). Fitting ends when the optimiser has converged on the active set *and* a fresh
search finds no violated triplet outside
it, so the result is a stationary point of the full objective.

:math:`\mu` is ``push_weight``. The pieces live in one module each: the target neighbours and the
impostor search (:mod:`.search`, where the optional ceiling
``MAX_ACTIVE_SET_BYTES`` is set), the objective and its Laplacian-form gradient
(``_objective``), the active-set optimiser (``_active_set``); the estimators
are :class:`LMNN` (``lmnn.py``) and :class:`MultiMetricLMNN` (``mlmnn.py``).
"""

from ..._validation import deprecated_alias
from ._active_set import optimize_on_active_sets, optimize_with_progress
from ._objective import laplacian_gradient, lmnn_loss_and_grad, triplet_terms
from .lmnn import LMNN, MAX_PAIR_TRIPLETS
from .mlmnn import MultiMetricLMNN, mlmnn_loss_and_grad
from .search import (
    PAIR_BYTES,
    PAIR_BYTES_PER_K,
    ActiveSet,
    find_impostors,
    find_target_neighbors,
    pair_sq_distances,
    search_active_set,
)
from .search import (
    check_active_set_size as check_active_set_size,
)
from .search import (
    estimate_impostor_pairs as estimate_impostor_pairs,
)

__all__ = [
    "LMNN",
    "MAX_PAIR_TRIPLETS",
    "PAIR_BYTES",
    "PAIR_BYTES_PER_K",
    "ActiveSet",
    "MultiMetricLMNN",
    "find_impostors",
    "find_target_neighbors",
    "laplacian_gradient",
    "lmnn_loss_and_grad",
    "mlmnn_loss_and_grad",  # the names before 0.2, deprecated
    "optimize_on_active_sets",
    "optimize_with_progress",
    "pair_sq_distances",
    "search_active_set",
    "triplet_terms",
]

# The names before 0.2 (British spelling), kept this release with a FutureWarning.
optimise_on_active_sets = deprecated_alias(optimize_on_active_sets, "optimise_on_active_sets")
optimise_with_progress = deprecated_alias(optimize_with_progress, "optimise_with_progress")
