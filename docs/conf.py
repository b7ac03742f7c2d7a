"""Sphinx configuration of the rankmetric documentation (``make docs``).

Why Sphinx: the docstrings are numpydoc (as in scikit-learn, pyRiemann and the rest of the
scientific Python stack), which numpydoc renders as written; autosummary generates one page per
public name; and myst-parser renders the existing Markdown guides unchanged. mkdocstrings would
also read numpydoc, but every peer library a rankmetric user knows documents itself with Sphinx,
and cross-references between them (intersphinx) follow the same conventions.

The API reference (``api.rst``) is written here, at build time, from the ``__all__`` of every
public module, so a new public name appears without editing any page.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import rankmetric  # noqa: E402
from pygments.lexers.special import TextLexer  # noqa: E402
from sphinx.highlighting import lexers  # noqa: E402

# docs/architecture.md keeps its layer contract in a ```layers block (read by tests/test_layers.py).
lexers["layers"] = TextLexer()

project = "rankmetric"
author = "The rankmetric developers"
copyright = "2026, the rankmetric developers"
version = release = rankmetric.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build"]

autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc "Parameters" sections carry the types
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

html_theme = "alabaster"
html_title = f"rankmetric {release}"

# Modules shown first in the API reference, in this order; any other public module follows.
API_ORDER = [
    "estimators",
    "preprocessing",
    "losses",
    "models",
    "geometry",
    "evaluate",
    "neighbors",
    "datasets",
    "io",
    "training",
    "sampling",
    "kernels",
    "distributed",
]


def public_modules() -> list[str]:
    """Top-level modules of ``rankmetric`` with a non-empty ``__all__``, in API_ORDER."""
    names = [
        info.name
        for info in pkgutil.iter_modules(rankmetric.__path__)
        if not info.name.startswith("_")
        and getattr(importlib.import_module(f"rankmetric.{info.name}"), "__all__", None)
    ]
    known = [n for n in API_ORDER if n in names]
    return known + sorted(set(names) - set(known))


def write_api_page(path: Path) -> None:
    """``api.rst``: one section per public module, one autosummary row per name of ``__all__``."""
    lines = [
        "API reference",
        "=============",
        "",
        "Every public name of rankmetric, generated from each module's ``__all__``. The",
        "estimators are also importable from the top level (``from rankmetric import WARCA``).",
        "",
    ]
    for name in public_modules():
        module = importlib.import_module(f"rankmetric.{name}")
        title = f"``rankmetric.{name}``"
        summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
        lines += [title, "-" * len(title), "", summary, "", f".. currentmodule:: rankmetric.{name}", ""]
        lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        lines += [f"   {member}" for member in module.__all__]
        lines.append("")
    text = "\n".join(lines)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_examples_page(path: Path) -> None:
    """``examples.rst``: each script of ``examples/`` with its docstring as the caption."""
    lines = [
        "Examples",
        "========",
        "",
        "Short scripts, each a few seconds on a laptop CPU; the test suite runs every one",
        "(``tests/test_examples.py``), so they stay in step with the library. Run one with",
        "``python examples/<name>.py``.",
        "",
    ]
    for script in sorted((HERE.parent / "examples").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text())) or script.stem
        title, _, body = doc.partition("\n")
        lines += [title, "-" * len(title), "", body.strip(), "", f"``examples/{script.name}``:", ""]
        lines += [f".. literalinclude:: ../examples/{script.name}", "   :language: python", ""]
    text = "\n".join(lines)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


write_api_page(HERE / "api.rst")
write_examples_page(HERE / "examples.rst")


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Hide scikit-learn's generated ``set_*_request`` methods (metadata routing)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
