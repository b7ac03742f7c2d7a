"""Numpydoc text that several estimators share, written once and filled in at class definition.

A class docstring names a shared block by a line that holds only ``%(name)s`` (indented as the
block must be); :func:`fill_doc` replaces that line by the block of :data:`SHARED`, indented the
same, so the rendered ``__doc__`` (what ``help``, numpydoc validation, Sphinx autodoc and the
doctests read) is the complete text. Only whole-line placeholders are replaced, so the ``%`` and
braces of the rest of a docstring need no escaping; an unknown name raises ``KeyError`` when the
module defining the class is imported.
"""

from __future__ import annotations

import re
import textwrap
from typing import TypeVar

__all__ = ["SHARED", "fill_doc"]

_HELD_OUT_CHECK = """\
held_out_check : {"auto", True, False}, default="auto"
    After the fit, the same settings are fitted again on part of the classes (with pairs: of the
    groups the similar pairs join) and the learned distance is compared with the reference on
    the classes held out (``held_out_check_``); below it beyond noise, the fit issues an
    :class:`~rankmetric.training.UntrainedModelWarning`. ``"auto"`` skips it with fewer than 6
    groups (``held_out_check_`` says so), True then also warns, False switches it off. The model
    returned does not depend on it. ``docs/reliability.md``, "Never worse than Euclidean without
    saying so"."""

_FALLBACK = """\
fallback : {None, "reference"}, default=None
    ``"reference"``: when the check finds the learned distance below, return the
    reference instead: """

SHARED: dict[str, str] = {
    # The check's parameter with the fallback that replaces the map by the identity.
    "held_out_check": _HELD_OUT_CHECK
    + "\n"
    + _FALLBACK
    + "``components_`` becomes the identity (the Euclidean distance).",
    # The check's parameter alone (the estimator states its own ``fallback``).
    "held_out_check_only": _HELD_OUT_CHECK,
    "held_out_check_attribute": """\
held_out_check_ : dict or None
    The held-out check, as in :class:`rankmetric.WARCA`.""",
    # The arguments of ``fit(X, y)`` from class labels.
    "labelled_samples": """\
X : array-like of shape (n_samples, n_features)
    Training samples.
y : array-like of shape (n_samples,)
    Class labels.""",
    # The arguments of ``fit_pairs`` (the convention of ``docs/pairs.md``).
    "pair_constraints": """\
X : array-like of shape (n_samples, n_features), or (n_pairs, 2, n_features)
    The points (then ``pairs`` holds row indices), or the stacked pairs themselves
    (then the second argument is ``y``).
pairs : array-like of shape (n_pairs, 2), int
    Row indices into ``X``.
y : array-like of shape (n_pairs,)
    ``+1`` similar, ``−1`` dissimilar.""",
    # The ``pairs`` argument of PairClassifier's prediction methods.
    "stacked_pairs": """\
pairs : ndarray of shape (n_pairs, 2, n_features), (n_pairs, 2 · n_features) or (n_pairs, 2)
    Stacked pairs, flattened pairs, or row indices into ``points`` (see the class).""",
    # The early-stopping patience's former name (every iteratively trained estimator).
    "patience": """\
patience : int or None
    Deprecated alias of ``n_iter_no_change`` (removed in 0.3).""",
    "checkpoint": """\
checkpoint_dir : str or path-like, optional
    Folder where ``checkpoint.pt`` is written every ``checkpoint_every`` steps; a fit that
    finds one there resumes from it, so a killed fit ends with the parameters of an
    uninterrupted one (same seed, CPU). The file is removed when the fit completes.
checkpoint_every : int, default=100
    Steps between two checkpoints.""",
}

_PLACEHOLDER = re.compile(r"^( *)%\((\w+)\)s$", re.MULTILINE)

_T = TypeVar("_T")


def fill_doc(obj: _T) -> _T:
    """Replace the whole-line ``%(name)s`` placeholders of ``obj.__doc__`` by :data:`SHARED`.

    Parameters
    ----------
    obj : class or function
        Its ``__doc__`` is rewritten in place.

    Returns
    -------
    class or function
        ``obj``, so that this works as a decorator.

    Examples
    --------
    >>> from rankmetric.estimators._docstrings import fill_doc
    >>> @fill_doc
    ... class Learner:
    ...     '''A learner.
    ...
    ...     Attributes
    ...     ----------
    ...     %(held_out_check_attribute)s
    ...     '''
    >>> print(Learner.__doc__.splitlines()[4].strip())
    held_out_check_ : dict or None
    """
    if obj.__doc__:
        obj.__doc__ = _PLACEHOLDER.sub(
            lambda m: textwrap.indent(SHARED[m.group(2)], m.group(1)), obj.__doc__
        )
    return obj
