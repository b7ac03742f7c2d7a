"""The numpydoc blocks that several losses (batch losses, miners, regularisers) share.

The table of the losses' ``fill_doc``; how a ``%(name)s`` line is filled:
:func:`rankmetric._docstrings.doc_filler`.
"""

from __future__ import annotations

from .._docstrings import CITATIONS, doc_filler

__all__ = ["SHARED", "fill_doc"]

SHARED: dict[str, str] = {
    **CITATIONS,
    # The first line of the Notes item list of every BatchMetricLoss (its call convention).
    "call_convention": """\
How a call ``loss(embeddings, labels, indices_tuple=None, ref_emb=None, ref_labels=None)``
(:meth:`BatchMetricLoss.forward`) reads its arguments and what it returns:""",
    # The argument of to_pairs and to_triplets.
    "indices_tuple": """\
indices_tuple : tuple of Tensor
    Pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)``, as miners return them.""",
    # The batch the examples of the batch losses and miners run on: 4 classes of 2 samples.
    "example_batch": """\
Examples
--------
>>> import torch
>>> from rankmetric import losses
>>> _ = torch.manual_seed(0)
>>> x = torch.randn(8, 3, requires_grad=True)
>>> y = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])""",
}

#: The decorator that fills the placeholders of a docstring from :data:`SHARED`.
fill_doc = doc_filler(SHARED)
