"""Sphinx configuration of the rankmetric documentation (``make docs``).

Why Sphinx: the docstrings are numpydoc (as in scikit-learn, pyRiemann and the rest of the
scientific Python stack), which numpydoc renders as written; autosummary generates one page per
public name; and myst-parser renders the Markdown guides unchanged. The site uses the PyData
theme (as scikit-learn and pyRiemann do: site-wide search, light and dark modes, an in-page
table of contents), sphinx-copybutton (a copy button on every code block) and sphinx-gallery,
which runs every script of ``examples/`` at build time and shows its printed output and figures.

The API reference (``api/``) is written here, at build time, from the ``__all__`` of every
public module, grouped as the user guide is (``API_GROUPS``), so a new public name appears
without editing any page; a public module that no group names is listed under "Other modules".
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE / "tools"))
# The gallery's examples run at build time in this process: one thread each, as in the tests
# (set before torch is imported, which sizes its thread pool once).
os.environ.setdefault("OMP_NUM_THREADS", "1")

from docutils import nodes  # noqa: E402
from pygments.lexers.special import TextLexer  # noqa: E402
from sphinx import addnodes  # noqa: E402
from sphinx.highlighting import lexers  # noqa: E402

import rankmetric  # noqa: E402

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
    "sphinx-mathjax-offline",  # MathJax 3 shipped with the site: maths render offline
    "numpydoc",
    "myst_parser",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "sphinx_codeautolink",  # names in code blocks link to their API page
    "guide_figures",  # docs/tools/guide_figures.py: the guide's figures, drawn at build time
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# api.rst, examples.rst and generated/ are what earlier versions of this file wrote.
exclude_patterns = ["_build", "tools", "api.rst", "examples.rst", "generated"]

autosummary_generate = True
# The in-page table of contents of an API page lists "fit()", not "XQDA.fit()" (the class
# name repeated on every line was clipped at the right edge at 1280-1920 px).
toc_object_entries_show_parents = "hide"
# Each class page ends with "Read more" (its method or guide page) and "Examples using it"
# (sphinx-gallery's back-references): docs/_templates/autosummary/class.rst.
autosummary_context = {
    "guide_pages": {
        "WARCA": ("warca", "WARCA: the method, its defaults and where the paper is silent"),
        "KernelWARCA": ("warca", "kernel WARCA, exact and Nyström"),
        "SSNE": ("ssne", "SSNE: the method and its defaults"),
        "RPLEmbedding": ("rpl", "RPL: the Riemannian-potato loss on SPD networks"),
        "SPDNetEmbedding": ("rpl", "SPD networks and their losses"),
        "LMNN": ("baselines", "the baselines"),
        "MultiMetricLMNN": ("baselines", "the baselines"),
        "ITML": ("baselines", "the baselines"),
        "KISSME": ("pairs", "learning from pairs"),
        "XQDA": ("user_guide/reid", "person re-identification"),
        "PairClassifier": ("user_guide/verification", "verification from pairs"),
        "Covariances": ("user_guide/eeg", "EEG/BCI: from raw trials to a metric"),
        "TangentSpace": ("user_guide/eeg", "EEG/BCI: from raw trials to a metric"),
        "DomainRecentering": ("user_guide/eeg", "EEG/BCI: cross-session re-centring"),
        "WARPLoss": ("losses", "the losses"),
        "RiemannianPotatoLoss": ("rpl", "the Riemannian-potato loss"),
        "SimilarityRegressionLoss": ("ssne", "SSNE's loss"),
        "ClassBalancedBatchSampler": ("user_guide/deep_metric_learning", "your own loop"),
    }
}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections carry the types
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
myst_heading_anchors = 3
# MathJax renders the maths in the reader's browser from a copy shipped with the site
# (_static/mathjax, by the sphinx-mathjax-offline extension of the docs extra): no CDN, so the
# formulas render offline too (a laptop on a plane, a cluster without internet), and
# docs/tools/check_site.py fails on any page that loads a script from the network.
myst_enable_extensions = ["dollarmath", "colon_fence"]

# sphinx-codeautolink: every name of a Python code block (guide, landing and method pages, the
# gallery, the docstrings' examples) that resolves to a documented object links to its API
# page: `WARCA(...)`, `model.fit`, `reid_scores(...)`. The blocks of one page are read as one
# script, so a name imported in the first block links in the later ones too. The public names
# are documented where ``__all__`` exports them (``rankmetric.estimators.WARCA``) but defined
# in private modules (``rankmetric.estimators.warca.WARCA``): ``_alias_definition_sites``
# below makes the definition site resolve to the documented page.
codeautolink_concat_default = True
# `rankmetric.distributed.GatheredLoss(...)` links in a block that never imports rankmetric.
codeautolink_global_preface = "import rankmetric"
# A docstring example with a `# doctest: +SKIP` flag: Sphinx trims the flag from the page, so
# sphinx-codeautolink cannot match the block to its HTML and leaves it unlinked, with a warning.
# The blocks of the landing, guide and method pages are checked by docs/tools/check_site.py
# (every API name they import must link), so that warning is not needed to catch a miss.
suppress_warnings = ["codeautolink.match_block"]
codeautolink_search_css_classes = ["highlight"]

# Search: a page that defines a term the way readers type it ranks first for it. Sphinx's search
# scores an index entry that the query covers by 100 x (query length / entry length), above any
# API object whose name merely contains the word ("mAP" against ``exp_map``, ``BiMap``).
SEARCH_KEYWORDS = {
    "evaluation": (
        "mAP",
        "mean average precision",
        "mAP@R",
        "CMC",
        "Recall@K",
        "rank-1",
        "ROC AUC",
    ),
}

# Copy only the code of a block, not the prompts (">>> ", "$ ") nor the printed output.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

# sphinx-gallery: every script of examples/ is run (not only plot_*.py); figures that a script
# leaves open are captured (matplotlib scraper), printed output is shown under each code block.
# A failing example fails the build. Scripts whose inputs did not change are not rerun.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    # Back-references: every API page lists the gallery examples that use it (minigallery).
    "doc_module": ("rankmetric",),
    "backreferences_dir": "generated/backreferences",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",
    "ignore_pattern": r"(__init__|conftest)\.py$",
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    # No execution-times page: it loads jQuery and DataTables from a CDN (the site is offline).
    "write_computation_times": False,
    "min_reported_time": 1,
    "capture_repr": (),
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"rankmetric {release}"
html_theme_options = {
    "navbar_align": "left",
    # Four section links, then "More": six long names wrapped the navbar (search on a second
    # row) at 1280 px.
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": []}
html_context = {"default_mode": "light"}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# The API reference, grouped as the user guide is: (page, title, introduction, modules).
API_GROUPS = [
    (
        "estimators",
        "Learn a metric",
        "The scikit-learn estimators (each a transformer with ``fit``, ``transform``, "
        "``get_metric``, ``pair_distances``, ``save``/``load``), the kernels of KernelWARCA, "
        "and model files.",
        ["estimators", "kernels", "io"],
    ),
    (
        "evaluation",
        "Evaluate: retrieval, re-identification, verification",
        "Ranking metrics (CMC, Recall@K, mAP@R), k-NN classification, clustering scores and "
        "the papers' cross-validation protocols.",
        ["evaluate"],
    ),
    (
        "signals",
        "Signals and SPD matrices (EEG/BCI)",
        "From raw multichannel trials and images to SPD covariance matrices, and the "
        "Riemannian geometry of those matrices.",
        ["preprocessing", "geometry"],
    ),
    (
        "deep",
        "Deep metric learning in your own loop",
        "PyTorch losses, modules (linear maps, sphere embeddings, SPD networks, Stiefel "
        "optimisers), the training loop and the label index used to draw batches.",
        ["losses", "models", "training", "model_selection", "sampling"],
    ),
    (
        "scaling",
        "Scaling: search, serving and distributed training",
        "Exact chunked k-NN search (torch or faiss), the served index of a learned metric "
        "(exact or approximate search, export, Dask shards) and the helpers for training on "
        "several processes.",
        ["neighbors", "index", "distributed"],
    ),
    (
        "data",
        "Data sets",
        "Bundled, fetched and generated data sets, and readers of common file formats.",
        ["datasets"],
    ),
    (
        "bench",
        "Reproducing the papers' tables",
        "The benchmark grid behind ``rankmetric bench`` and the public helpers the scripts in "
        "``benchmarks/`` share (result tables, the re-identification protocol).",
        ["bench"],
    ),
]


def public_modules() -> list[str]:
    """Top-level modules of ``rankmetric`` with a non-empty ``__all__``."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(rankmetric.__path__)
        if not info.name.startswith("_")
        and getattr(importlib.import_module(f"rankmetric.{info.name}"), "__all__", None)
    )


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _module_section(name: str) -> list[str]:
    module = importlib.import_module(f"rankmetric.{name}")
    title = f"``rankmetric.{name}``"
    summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
    lines = [title, "-" * len(title), "", summary, "", f".. currentmodule:: rankmetric.{name}", ""]
    lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
    lines += [f"   {member}" for member in module.__all__]
    return [*lines, ""]


def write_api_pages(folder: Path) -> None:
    """``api/index.rst`` and one page per group of ``API_GROUPS``, from each ``__all__``."""
    modules = public_modules()
    groups = [(p, t, i, [m for m in ms if m in modules]) for p, t, i, ms in API_GROUPS]
    named = {m for *_, ms in groups for m in ms}
    others = [m for m in modules if m not in named]
    if others:
        groups.append(("other", "Other modules", "Public modules not yet grouped.", others))
    index = [
        "API reference",
        "=============",
        "",
        "Every public name of rankmetric, generated from each module's ``__all__`` and grouped",
        "as the :doc:`user guide <../user_guide/index>` is. The estimators are also importable",
        "from the top level (``from rankmetric import WARCA``).",
        "",
        ".. toctree::",
        "   :maxdepth: 2",
        "",
        *[f"   {page}" for page, *_ in groups],
        "",
    ]
    _write_if_changed(folder / "index.rst", "\n".join(index))
    for page, title, intro, members in groups:
        lines = [title, "=" * len(title), "", intro, ""]
        for name in members:
            lines += _module_section(name)
        _write_if_changed(folder / f"{page}.rst", "\n".join(lines))


write_api_pages(HERE / "api")


def _defined_in(obj) -> str:
    return getattr(getattr(obj, "__func__", obj), "__module__", None) or ""


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Hide scikit-learn's generated ``set_*_request`` methods (metadata routing) and the hook
    machinery that ``StiefelSGD`` inherits from ``torch.optim.Optimizer`` (its docstrings are
    not reStructuredText); ``step``/``zero_grad`` and the scikit-learn methods stay."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    if _defined_in(obj).startswith("torch.optim") and name not in ("step", "zero_grad"):
        return True
    return None


_SKLEARN_REF = re.compile(r":ref:`([^`<]+?)\s*(<[^`>]+>)?`")


def _plain_inherited_references(app, what, name, obj, options, lines) -> None:
    """Inherited scikit-learn docstrings cite labels of scikit-learn's own site: keep the text.

    ``set_output``, ``get_metadata_routing`` and ``score`` come from scikit-learn's mixins with
    ``:ref:`` roles to its user guide, which this site does not have (and cannot fetch offline).
    """
    if _defined_in(obj).startswith("sklearn."):
        lines[:] = [_SKLEARN_REF.sub(lambda m: m.group(1).strip(), line) for line in lines]


def api_targets() -> dict[str, str]:
    """Every way the prose names a public object → the object's documented full name.

    ``WARCA``, ``estimators.WARCA`` and ``rankmetric.estimators.WARCA`` all name the page
    ``api/generated/rankmetric.estimators.WARCA``; a name exported by several modules points at
    the first module of ``API_GROUPS``' order (where its page is).
    """
    order = [m for *_, modules in API_GROUPS for m in modules]
    modules = sorted(public_modules(), key=lambda m: order.index(m) if m in order else len(order))
    targets: dict[str, str] = {}
    for name in modules:
        for member in importlib.import_module(f"rankmetric.{name}").__all__:
            full = f"rankmetric.{name}.{member}"
            for alias in (member, f"{name}.{member}", full, f"rankmetric.{member}"):
                targets.setdefault(alias, full)
    return targets


_CODE_NAME = re.compile(r"^([A-Za-z_][\w.]*)(\(.*\))?$")


def _link_code_to_the_api(app, doctree) -> None:
    """Inline code in the Markdown pages that names a public object links to its API page.

    ``WARCA``, ``losses.WARPLoss``, ``reid_scores(...)``: the prose of the landing page,
    the user guide and the method pages is written in Markdown, where inline code is not a
    cross-reference; this turns each such literal into one (unless it already sits in a link).
    """
    if not str(app.env.doc2path(app.env.docname)).endswith(".md"):
        return
    targets = app.env.rankmetric_api_targets
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, (nodes.reference, addnodes.pending_xref)):
            continue
        match = _CODE_NAME.match(literal.astext().strip())
        target = targets.get(match.group(1)) if match else None
        if target is None:
            continue
        xref = addnodes.pending_xref(
            "", refdomain="py", reftype="obj", reftarget=target, refexplicit=True,
            refwarn=False, refdoc=app.env.docname,
        )  # fmt: skip
        literal.replace_self(xref)
        xref += literal


def _remember_api_targets(app, env, docnames) -> None:
    env.rankmetric_api_targets = api_targets()


def _definition_site(obj) -> str | None:
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else None


def _alias_definition_sites(app, env) -> None:
    """Let the definition site of each public object name its documented page.

    ``from rankmetric import WARCA; WARCA(...).fit(X, y)``: sphinx-codeautolink follows the
    import to the class and its method, and names them by where they are defined
    (``rankmetric.estimators.warca.WARCA.fit``); the API pages document them where
    ``__all__`` exports them (``rankmetric.estimators.WARCA.fit``). Each definition site (and,
    for a class, each of its documented members under it) becomes an alias of the documented
    entry, marked ``aliased`` as autodoc's ``:canonical:`` names are, so that cross-references
    never become ambiguous. Runs before sphinx-codeautolink reads the inventory, and
    ``_drop_definition_sites`` removes them after it, so that the search index and
    ``objects.inv`` list each object once, under its documented name.
    """
    objects = env.domains["py"].objects
    added = env.rankmetric_definition_aliases = []
    documented = {name: entry for name, entry in objects.items() if not entry.aliased}
    for full in set(api_targets().values()):
        if full not in documented:
            continue
        module, _, member = full.rpartition(".")
        obj = getattr(importlib.import_module(module), member, None)
        site = _definition_site(obj)
        if site is None or site == full:
            continue
        for name, entry in documented.items():
            if name == full or name.startswith(full + "."):
                alias = site + name[len(full) :]
                if alias not in objects:
                    objects[alias] = entry._replace(aliased=True)
                    added.append(alias)


def _drop_definition_sites(app, env) -> None:
    objects = env.domains["py"].objects
    for alias in getattr(env, "rankmetric_definition_aliases", ()):
        objects.pop(alias, None)
    env.rankmetric_definition_aliases = []


def _codeautolink_skips(app, doctree) -> None:
    """The gallery's pages are left to sphinx-gallery, which links their names to the API
    itself (sphinx-codeautolink would add a second link and warn that it cannot match them)."""
    from sphinx_codeautolink.extension.directive import SkipMarker

    if app.env.docname.startswith(sphinx_gallery_conf["gallery_dirs"] + "/"):
        doctree.insert(0, SkipMarker("file"))


def _search_keywords(app, doctree) -> None:
    """Index entries of ``SEARCH_KEYWORDS`` at the top of their page (see there)."""
    keywords = SEARCH_KEYWORDS.get(app.env.docname)
    section = next(iter(doctree.findall(nodes.section)), None)
    if not keywords or section is None:
        return
    target_id = section["ids"][0]
    entries = [("single", word, target_id, "main", None) for word in keywords]
    section.insert(1, addnodes.index(entries=entries, inline=False))


def _reread_keyword_pages(app, env, added, changed, removed) -> list[str]:
    """The pages of ``SEARCH_KEYWORDS`` are read again on every build: an incremental build
    that does not rewrite a page keeps its search terms but not its index entries."""
    return [name for name in SEARCH_KEYWORDS if name in env.found_docs]


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
    app.connect("autodoc-process-docstring", _plain_inherited_references)
    app.connect("env-before-read-docs", _remember_api_targets)
    app.connect("doctree-read", _link_code_to_the_api)
    app.connect("doctree-read", _search_keywords)
    app.connect("env-get-outdated", _reread_keyword_pages)
    # Before sphinx-codeautolink reads the code blocks (its doctree-read priority is 490).
    app.connect("doctree-read", _codeautolink_skips, priority=480)
    # Before sphinx-codeautolink's own env-updated handler (default priority 500).
    app.connect("env-updated", _alias_definition_sites, priority=400)
    app.connect("env-updated", _drop_definition_sites, priority=600)
