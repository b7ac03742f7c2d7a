"""The ``*CV`` learners: each learner's class and search space over ``TunedMetricLearner``."""

from __future__ import annotations

import numpy as np

from .._registry import ESTIMATORS
from .._utils import make_rng
from ..estimators.itml import ITML
from ..estimators.lmnn import LMNN
from ..estimators.pair_covariance import KISSME, XQDA
from ..estimators.ssne import SSNE
from ..estimators.warca import WARCA, KernelWARCA
from ._search import TunedMetricLearner, ranks_below


def _start_from_components(self, previous) -> dict:
    """A promoted candidate's ``init``: the map of its previous round (WARCA, LMNN)."""
    return {"init": np.asarray(previous.components_, dtype=np.float64)}


class WARCACV(TunedMetricLearner):
    """:class:`~rankmetric.WARCA` with rank, λ and learning rate chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default),
    ``reg_lambda`` (1e-3 … 1e-1), ``learning_rate`` (the default's rule, 0.003, 0.03); a promoted
    candidate starts from its previous round's map. Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from rankmetric import WARCA
    >>> from rankmetric.tuning import WARCACV
    >>> X, y = load_iris(return_X_y=True)
    >>> cv = WARCACV(WARCA(max_iter=50, tol=None), n_candidates=3, random_state=0).fit(X, y)
    >>> cv.best_estimator_.__class__.__name__
    'WARCA'
    """

    _learner = WARCA
    _grid = {
        "n_components": ranks_below((8, 16, 32, 64)),
        "reg_lambda": [1e-3, 1e-2, 1e-1],
        "learning_rate": [None, 3e-3, 3e-2],
    }
    _warm_start = _start_from_components


class KernelWARCACV(TunedMetricLearner):
    """:class:`~rankmetric.KernelWARCA` with kernel width, λ, rank and steps chosen in ``fit``.

    Space: ``gamma`` (the default width of :func:`rankmetric.kernels.default_gamma` times 1/4,
    1/2, 1, 2, 4, on the training part), ``reg_lambda`` (0, 1e-4, 1e-3, 1e-2), ``n_components``
    (16, 32, 64 below the input dimension, and the default) and ``max_iter`` (500, 1000, 2000).
    Parameters and attributes: see :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import KernelWARCACV
    >>> X = np.random.default_rng(0).random((40, 6))
    >>> space = KernelWARCACV().search_space(X, np.arange(40) % 4, None)
    >>> sorted(space), len(space["gamma"])
    (['gamma', 'max_iter', 'n_components', 'reg_lambda'], 5)
    """

    _learner = KernelWARCA

    def search_space(self, X, y, template) -> dict:
        from ..kernels import default_gamma

        template = KernelWARCA() if template is None else template
        base = template.gamma
        if base is None:
            rng = make_rng(0 if template.random_state is None else template.random_state)
            base = default_gamma(np.asarray(X, dtype=np.float64), template.kernel, rng)
        return {
            "gamma": [None] + [float(base * f) for f in (0.25, 0.5, 2.0, 4.0)],
            "reg_lambda": [0.0, 1e-4, 1e-3, 1e-2],
            "n_components": ranks_below((16, 32, 64))(X),
            "max_iter": [500, 1000, 2000],
        }


class SSNECV(TunedMetricLearner):
    """:class:`~rankmetric.SSNE` with its dimension and λ chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default) and
    ``reg_lambda`` (1e-5 … 1e-2). Parameters and attributes: see :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import SSNECV
    >>> SSNECV().search_space(np.zeros((10, 20)), np.arange(10) % 2, None)["n_components"]
    [None, 8, 16]
    """

    _learner = SSNE
    _grid = {"n_components": ranks_below((8, 16, 32, 64)), "reg_lambda": [1e-5, 1e-4, 1e-3, 1e-2]}


class ITMLCV(TunedMetricLearner):
    """:class:`~rankmetric.ITML` with its slack weight γ chosen inside ``fit``.

    Space: ``slack_weight`` (0.01 … 100). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import ITMLCV
    >>> ITMLCV().search_space(np.zeros((10, 3)), np.arange(10) % 2, None)
    {'slack_weight': [0.01, 0.1, 1.0, 10.0, 100.0]}
    """

    _learner = ITML
    _grid = {"slack_weight": [0.01, 0.1, 1.0, 10.0, 100.0]}


# alike: each *CV class names its learner, its grid and shows its space, on purpose
class KISSMECV(TunedMetricLearner):
    """:class:`~rankmetric.KISSME` with its PCA dimension and ridge chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the default) and
    ``regularization`` (1e-6, 1e-4, 1e-2, 1e-1). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import KISSMECV
    >>> KISSMECV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["n_components"]
    [None]
    """

    _learner = KISSME
    _grid = {
        "n_components": ranks_below((8, 16, 32, 64)),
        "regularization": [1e-6, 1e-4, 1e-2, 1e-1],
    }


# alike: each *CV class names its learner, its grid and shows its space, on purpose
class XQDACV(TunedMetricLearner):
    """:class:`~rankmetric.XQDA` with its dimension and ridge chosen inside ``fit``.

    Space: ``n_components`` (8, 16, 32, 64 below the input dimension, and the paper's rule,
    the default) and ``regularization`` (1e-4 … 1). Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import XQDACV
    >>> XQDACV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["regularization"]
    [0.0001, 0.001, 0.01, 0.1, 1.0]
    """

    _learner = XQDA
    _grid = {
        "n_components": ranks_below((8, 16, 32, 64)),
        "regularization": [1e-4, 1e-3, 1e-2, 1e-1, 1.0],
    }


# alike: each *CV class names its learner, its grid and shows its space, on purpose
class LMNNCV(TunedMetricLearner):
    """:class:`~rankmetric.LMNN` with its k and push weight chosen inside ``fit``.

    Space: ``n_target_neighbors`` (1, 3, 5) and ``push_weight`` (0.25, 0.5, 0.75); a promoted
    candidate starts from its previous round's map. Parameters and attributes: see
    :class:`TunedMetricLearner`.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmetric.tuning import LMNNCV
    >>> LMNNCV().search_space(np.zeros((10, 4)), np.arange(10) % 2, None)["n_target_neighbors"]
    [1, 3, 5]
    """

    _learner = LMNN
    _grid = {"n_target_neighbors": [1, 3, 5], "push_weight": [0.25, 0.5, 0.75]}
    _warm_start = _start_from_components


def _complete_docstring(cls: type) -> None:
    """Give a ``*CV`` class the shared Parameters and Attributes of
    :class:`TunedMetricLearner`, a See Also and the References, before its Examples."""
    import re

    shared = TunedMetricLearner.__doc__
    sections = shared[shared.index("    Parameters\n") : shared.index("    Examples\n")]
    learner = cls._learner.__name__
    extra = (
        "    See Also\n    --------\n"
        f"    rankmetric.{learner} : The learner tuned (``best_estimator_`` is one).\n"
        "    rankmetric.tuning.TunedMetricLearner : The search, described in full.\n\n"
        "    References\n    ----------\n"
        "    .. [1] K. Jamieson and A. Talwalkar. Non-stochastic Best Arm Identification and\n"
        "       Hyperparameter Optimization. AISTATS 2016 (successive halving).\n\n"
    )
    doc = re.sub(r"\s*Parameters and attributes: see\s+:class:`TunedMetricLearner`\.", "",
                 cls.__doc__)  # fmt: skip
    head, examples = doc.split("    Examples\n", 1)
    cls.__doc__ = f"{head.rstrip()}\n\n{sections}{extra}    Examples\n{examples}"


for _cls in (WARCACV, KernelWARCACV, SSNECV, ITMLCV, KISSMECV, XQDACV, LMNNCV):
    _complete_docstring(_cls)


#: ``rankmetric fit`` method name -> its tuned learner (from the table of estimators).
CV_CLASSES = {e.name: globals()[e.tuned] for e in ESTIMATORS if e.tuned}


def tuned_learner(method: str, estimator, budget: float = 10.0) -> TunedMetricLearner:
    """The tuned learner of ``rankmetric fit METHOD --tune``: ``estimator``'s settings, seeded
    by its ``random_state`` (0 without one).

    Parameters
    ----------
    method : str
        A ``rankmetric fit`` method with a tuned learner (:data:`CV_CLASSES`).
    estimator : estimator
        The learner with the command line's values (the search starts from them).
    budget : float, default=10.0
        Whole fit's time in default fits.

    Returns
    -------
    TunedMetricLearner
        Its settings checked (a bad ``budget`` raises here, before any data is read).

    Examples
    --------
    >>> from rankmetric import KISSME
    >>> from rankmetric.tuning import tuned_learner
    >>> type(tuned_learner("kissme", KISSME())).__name__
    'KISSMECV'
    """
    if method not in CV_CLASSES:
        raise ValueError(f"--tune is available for {sorted(CV_CLASSES)}, not {method!r}.")
    seed = getattr(estimator, "random_state", None)
    seed = seed if isinstance(seed, (int, np.integer)) else 0
    learner = CV_CLASSES[method](estimator, budget=budget, random_state=seed)
    learner._check_settings()
    return learner
