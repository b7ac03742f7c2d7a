"""Numpydoc text written once and filled into several docstrings at definition time.

A docstring names a shared block by a line that holds only ``%(name)s`` (indented as the block
must be); the decorator made by :func:`doc_filler` replaces that line by the block of its table,
indented the same, so the rendered ``__doc__`` (what ``help``, numpydoc validation, Sphinx autodoc
and the doctests read) is the complete text. Only whole-line placeholders are replaced, so the
``%`` and braces of the rest of a docstring need no escaping; an unknown name raises ``KeyError``
when the module defining the object is imported. Each package keeps its own table (e.g.
``estimators/_docstrings.py``) and makes its ``fill_doc`` from it; :data:`CITATIONS` holds the
papers that several packages cite, for those tables to include.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["CITATIONS", "doc_filler"]

_PLACEHOLDER = re.compile(r"^( *)%\((\w+)\)s$", re.MULTILINE)

_T = TypeVar("_T")

#: The papers several packages cite, each a complete numpydoc References section, by authors.
CITATIONS: dict[str, str] = {
    # WARCA, its WARP loss, its regularisers and its linear map.
    "jose_fleuret": """\
References
----------
.. [1] C. Jose and F. Fleuret. Scalable Metric Learning via Weighted Approximate Rank
   Component Analysis. ECCV 2016.""",
    # SSNE, its similarity loss, its group norm and its sphere embedding.
    "batra_shakhnarovich": """\
References
----------
.. [1] D. Batra and G. Shakhnarovich. Similarity Sensitive Nonlinear Embeddings. Toyota
   Technological Institute at Chicago, workshop extended abstract.""",
    # SPDNet's layers and the Stiefel manifold optimisers.
    "huang_van_gool": """\
References
----------
.. [1] Z. Huang and L. Van Gool. A Riemannian Network for SPD Matrix Learning. AAAI 2017.""",
}


def doc_filler(shared: Mapping[str, str]) -> Callable[[_T], _T]:
    """A decorator that replaces the whole-line ``%(name)s`` placeholders of ``__doc__``.

    Parameters
    ----------
    shared : mapping of str to str
        The blocks, by name.

    Returns
    -------
    callable
        ``fill_doc(obj) -> obj``: rewrites ``obj.__doc__`` in place and returns ``obj``.

    Examples
    --------
    >>> from rankmetric._docstrings import doc_filler
    >>> fill_doc = doc_filler({"seed": "random_state : int\\n    The seed."})
    >>> @fill_doc
    ... def f():
    ...     '''Do it.
    ...
    ...     Parameters
    ...     ----------
    ...     %(seed)s
    ...     '''
    >>> print(f.__doc__.splitlines()[4].strip())
    random_state : int
    """

    def fill_doc(obj: _T) -> _T:
        if obj.__doc__:
            obj.__doc__ = _PLACEHOLDER.sub(
                lambda m: textwrap.indent(shared[m.group(2)], m.group(1)), obj.__doc__
            )
        return obj

    return fill_doc
