"""Deprecated keyword names of the torch modules' constructors (kept working, with a warning).

The one deprecation helper of the package, :func:`rankmetric._validation.renamed_keywords`
(removal in the package's one removal version), re-exported here for the modules' imports.
"""

from __future__ import annotations

from .._validation import renamed_keywords

__all__ = ["renamed_keywords"]
