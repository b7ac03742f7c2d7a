"""Numpydoc text that several estimators share, written once and filled in at class definition.

A class docstring names a shared block by a line that holds only ``%(name)s`` (indented as the
block must be); ``fill_doc`` replaces that line by the block of :data:`SHARED`
(:func:`rankmetric._docstrings.doc_filler`), so the rendered ``__doc__`` is the complete text.
"""

from __future__ import annotations

from .._docstrings import CITATIONS, doc_filler

__all__ = ["SHARED", "fill_doc"]

_HELD_OUT_CHECK = """\
held_out_check : {"auto", True, False}, default="auto"
    After the fit, the same settings are fitted again on part of the classes (with pairs: of the
    groups the similar pairs join) and the learned distance is compared with the reference on
    the classes held out (``held_out_check_``): with few classes up to three such fits, one at a
    time until the comparison is decisive either way, its noise counted over the held-out
    classes. Below it (beyond that noise, or within it: "not better"), the fit issues an
    :class:`~rankmetric.training.UntrainedModelWarning`. ``"auto"`` skips it with fewer than 6
    groups (``held_out_check_`` says so), True then also warns, False switches it off. The model
    returned does not depend on it. ``docs/reliability.md``, "Never worse than Euclidean without
    saying so"."""

_FALLBACK = """\
fallback : {None, "reference"}, default=None
    ``"reference"``: when the check finds the learned distance below (or not better), return
    the reference instead: """

_STACKED_PAIRS = """\
pairs : ndarray of shape (n_pairs, 2, n_features), (n_pairs, 2 · n_features) or (n_pairs, 2)
    Stacked pairs, flattened pairs, or row indices into ``points`` (see the class)."""

_SPD_MATRICES = """\
X : array-like of shape (n_matrices, c, c)
    SPD matrices."""

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
    # The Parameters section of PairClassifier's prediction methods (``pairs`` alone).
    "stacked_pairs_parameters": "Parameters\n----------\n" + _STACKED_PAIRS,
    # The arguments of ``fit(X, y)`` from SPD matrices and class labels (MDM, SPDNetEmbedding).
    "labelled_spd": _SPD_MATRICES
    + """
y : array-like of shape (n_matrices,)
    Class labels.""",
    # The Parameters section of the prediction methods on SPD matrices (``X`` alone).
    "spd_matrices_parameters": "Parameters\n----------\n" + _SPD_MATRICES,
    # Parameters and Returns of MDM's methods that give one column per class.
    "spd_class_columns": "Parameters\n----------\n"
    + _SPD_MATRICES
    + """

Returns
-------
ndarray of shape (n_matrices, n_classes)
    Columns in the order of ``classes_``.""",
    # The paper of WARCA (KernelWARCA cites its kernelised form, eq. 8–10, in its own words).
    "warca_reference": CITATIONS["jose_fleuret"],
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

#: Replace the whole-line ``%(name)s`` placeholders of a docstring by :data:`SHARED`
#: (:func:`rankmetric._docstrings.doc_filler`); used as a class or function decorator.
fill_doc = doc_filler(SHARED)
