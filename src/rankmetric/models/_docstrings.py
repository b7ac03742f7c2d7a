"""The numpydoc blocks that several models (SPD layers, optimisers, maps) share.

The table of the models' ``fill_doc``; how a ``%(name)s`` line is filled:
:func:`rankmetric._docstrings.doc_filler`.
"""

from __future__ import annotations

from .._docstrings import CITATIONS, doc_filler

__all__ = ["SHARED", "fill_doc"]


def _layer_io(size_in: str, size_out: str, kind: str, output: str) -> str:
    """Parameters and Returns of an SPD layer's ``forward(X)`` on a batch of B matrices."""
    return f"""\
Parameters
----------
X : tensor of shape (B, {size_in}, {size_in})
    {kind} matrices.

Returns
-------
tensor of shape (B, {size_out}, {size_out})
    {output}"""


SHARED: dict[str, str] = {
    **CITATIONS,
    # The forward methods of BiMap, ReEig and LogEig.
    "bimap_io": _layer_io("in_features", "out_features", "SPD", "``Wᵀ X W``, exactly symmetric."),
    "reeig_io": _layer_io("c", "c", "Symmetric", "SPD matrices, exactly symmetric."),
    "logeig_io": _layer_io("c", "c", "SPD", "Symmetric matrices."),
    # The SPD matrices the examples of the SPD layers and optimisers run on.
    "spd_example_batch": """\
Examples
--------
>>> import torch
>>> from rankmetric import models
>>> from rankmetric.datasets import make_spd_clusters
>>> X = torch.as_tensor(make_spd_clusters(6, n_channels=4, n_classes=2, random_state=0)[0])""",
}

#: The decorator that fills the placeholders of a docstring from :data:`SHARED`.
fill_doc = doc_filler(SHARED)
