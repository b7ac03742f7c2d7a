"""The numpydoc blocks that several geometry functions (the parallel distances) share.

The table of the geometry's ``fill_doc``; how a ``%(name)s`` line is filled:
:func:`rankmetric._docstrings.doc_filler`.
"""

from __future__ import annotations

from .._docstrings import doc_filler

__all__ = ["SHARED", "fill_doc"]


def _paired(kind: str, pairwise: str) -> str:
    """Parameters to See Also of a distance between paired ``kind`` matrices."""
    return f"""\
Parameters
----------
A, B : Tensor or ndarray of shape (..., c, c)
    {kind[0].upper() + kind[1:]} matrices; leading dimensions broadcast against each other.

Returns
-------
Tensor of shape (...,)
    Distances, differentiable (zero gradient where the distance is 0).

Raises
------
ValueError
    If ``A`` or ``B`` is not a stack of {kind} matrices, or their sizes differ.

See Also
--------
rankmetric.geometry.{pairwise} : All the distances between two sets.
rankmetric.geometry.airm_distance : The affine-invariant distance."""


def _see_also_pairwise(paired: str) -> str:
    """See Also of the distances between every pair of two sets."""
    return f"""\
See Also
--------
rankmetric.geometry.{paired} : Distances of paired matrices.
rankmetric.geometry.pairwise_distance : Any named metric (pyRiemann's names accepted)."""


def _pairwise(kind: str, paired: str) -> str:
    """Parameters to See Also of the distances between every pair of two sets."""
    return f"""\
Parameters
----------
A : Tensor or ndarray of shape (n_a, c, c)
    {kind[0].upper() + kind[1:]} matrices.
B : Tensor or ndarray of shape (n_b, c, c), optional
    {kind[0].upper() + kind[1:]} matrices; ``A`` when omitted (the diagonal is then exactly 0).

Returns
-------
Tensor of shape (n_a, n_b)
    Distances, differentiable (zero gradient where the distance is 0).

Raises
------
ValueError
    If an input is not a stack of {kind} matrices of shape (n, c, c).

{_see_also_pairwise(paired)}"""


SHARED: dict[str, str] = {
    # log_euclidean_distance and euclidean_distance.
    "paired_spd": _paired("SPD", "pairwise_log_euclidean"),
    "paired_symmetric": _paired("symmetric", "pairwise_euclidean"),
    # pairwise_log_euclidean and pairwise_euclidean.
    "pairwise_spd": _pairwise("SPD", "log_euclidean_distance"),
    "pairwise_symmetric": _pairwise("symmetric", "euclidean_distance"),
    "see_also_pairwise_airm": _see_also_pairwise("airm_distance"),
    # The two SPD matrices of the distance examples, whose distances are all √(1² + 2²).
    "example_pair": """\
Examples
--------
>>> import torch
>>> from rankmetric import geometry
>>> A = torch.eye(2, dtype=torch.float64)
>>> B = torch.diag(torch.tensor([1.0, 2.0], dtype=torch.float64).exp())  # diag(e, e²)""",
}

#: The decorator that fills the placeholders of a docstring from :data:`SHARED`.
fill_doc = doc_filler(SHARED)
