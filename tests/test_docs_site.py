"""The built documentation site: no broken internal link, no blank page, no missing figure.

Needs the site built by ``make docs`` (``docs/_build/html``); the browser part needs Chromium
(Debian's ``chromium``). Each part is skipped, saying why, when its input is absent, so the
suite runs on a machine without them; ``make docs`` runs the same site check itself and CI
builds the site. The checker's own logic is tested on a small fake site, always.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# RANKMETRIC_DOCS_SITE: a site built elsewhere (sphinx ... docs OUTDIR).
SITE = Path(os.environ.get("RANKMETRIC_DOCS_SITE", ROOT / "docs" / "_build" / "html"))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check_site = _load("check_site")
screenshots = _load("screenshots")
guide_figures = _load("guide_figures")
TEXT = "<p>" + "words " * 40 + "</p>"


def _page(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{TEXT}{body}</body></html>")


def test_check_site_passes_a_sound_site(tmp_path):
    _page(tmp_path / "index.html", '<a href="guide/a.html#s">a</a> <a href="https://x.org">x</a>')
    _page(tmp_path / "guide" / "a.html", '<h2 id="s">S</h2><a href="../index.html">up</a>')
    assert check_site.check_site(tmp_path) == []


def test_check_site_finds_broken_links_anchors_images_and_blank_pages(tmp_path):
    _page(tmp_path / "index.html", '<a href="missing.html">m</a> <a href="a.html#nowhere">a</a>')
    _page(tmp_path / "a.html", '<img src="_images/gone.png">')
    (tmp_path / "blank.html").write_text("<html><body><p>nothing</p></body></html>")
    problems = "\n".join(check_site.check_site(tmp_path))
    assert "broken link 'missing.html'" in problems
    assert "broken anchor 'a.html#nowhere'" in problems
    assert "_images/gone.png" in problems
    assert "blank.html: blank page" in problems


def test_check_site_finds_a_gallery_page_without_its_figure(tmp_path):
    examples = tmp_path / "examples"
    examples.mkdir()
    script = '"""T\n=\n"""\nimport matplotlib.pyplot as plt\nplt.show()\n'
    (examples / "plots.py").write_text(script)
    _page(tmp_path / "site" / "index.html", "")
    _page(tmp_path / "site" / "auto_examples" / "plots.html", "no figure here")
    problems = check_site.check_site(tmp_path / "site", examples)
    assert problems == ["auto_examples/plots.html: the example's figure is missing"]


def test_check_site_finds_network_scripts_and_raw_tex_outside_the_maths(tmp_path):
    body = (
        '<script src="https://cdn.example.org/mathjax/tex-chtml.js"></script>'
        '<span class="math notranslate">\\(a + b\\)</span>'  # rendered by MathJax: fine
        "<td>the norm \\(\\lVert L(a - b) \\rVert\\)</td>"  # a summary table's raw TeX
    )
    _page(tmp_path / "index.html", body)
    problems = check_site.check_site(tmp_path)
    assert len(problems) == 2
    assert "loads a script from the network" in problems[0]
    assert "raw TeX outside the maths" in problems[1] and "lVert" in problems[1]


def test_markdown_table_check_finds_a_pipe_that_splits_a_cell(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text(
        "| a | b |\n|---|---|\n| `\\|x\\|` | y |\n\n```\n| not | a | table\n```\n"
    )
    (docs / "bad.md").write_text("text\n\n| a | b |\n|---|---|\n| `|x|` | y |\n")
    problems = check_site.check_markdown_tables(docs)
    assert problems == [
        "docs/bad.md:5: table row has 4 cells, its header 2 (write a | inside a cell as \\|)"
    ]


def test_api_link_check_finds_a_class_named_without_a_link(tmp_path):
    site = tmp_path / "site"
    _page(site / "api" / "generated" / "rankmetric.estimators.WARCA.html", "")
    _page(site / "api" / "generated" / "rankmetric.estimators.KISSME.html", "")
    _page(site / "api" / "generated" / "rankmetric.datasets.Dataset.html", "")
    body = (
        '<a href="api/generated/rankmetric.estimators.WARCA.html"><code>WARCA</code></a> '
        "<code>WARCA(n_components=2)</code> <code>estimators.KISSME</code> "
        "<code>torch.utils.data.Dataset</code>"  # not ours: no link needed
    )
    _page(site / "index.html", body)
    _page(site / "user_guide" / "reid.html", "<code>KISSME()</code>")
    assert check_site.check_api_links(site) == [
        "index.html: names KISSME but never links its API page",
        "user_guide/reid.html: names KISSME but never links its API page",
    ]


def _code_block(html: str) -> str:
    block = f'<div class="highlight"><pre>{html}</pre></div>'
    return f'<div class="highlight-python notranslate">{block}</div>'


def test_code_block_check_finds_api_names_without_their_link(tmp_path):
    site = tmp_path / "site"
    for name in ("estimators.WARCA", "evaluate.reid_scores", "datasets.Dataset", "training.train"):
        _page(site / "api" / "generated" / f"rankmetric.{name}.html", "")
    linked = '<a class="sphinx-codeautolink-a" href="x.html"><span class="n">WARCA</span></a>'
    body = _code_block(
        '<span class="kn">from</span> <span class="nn">rankmetric.evaluate</span> '
        '<span class="kn">import</span> <span class="n">reid_scores</span>\n'  # imported: counts
        f'{linked}<span class="p">(</span><span class="p">)</span>\n'
        '<span class="n">reid_scores</span><span class="p">(</span>'  # not linked: counted
        '<span class="n">evaluate</span><span class="o">.</span><span class="n">reid_scores</span>'
        '<span class="c1"># WARCA in a comment</span>'  # a comment: never linked, not counted
        '<span class="s2">"reid_scores"</span>'  # a string: not counted
        '<span class="n">torch</span><span class="o">.</span><span class="n">Dataset</span>\n'
        # a variable named as an API function, never imported from rankmetric: not counted
        '<span class="n">train</span> <span class="o">=</span> <span class="mi">1</span>'
    )
    _page(site / "index.html", body)
    _page(site / "user_guide" / "reid.html", _code_block(linked))
    _page(site / "other.html", _code_block('<span class="n">WARCA</span>'))  # not a code page
    assert check_site.check_code_block_links(site) == [
        "index.html: 3 use(s) of reid_scores in code blocks without a link to its API page"
    ]


def _search_index(path: Path, index: dict) -> None:
    import json

    path.mkdir(parents=True, exist_ok=True)
    (path / "searchindex.js").write_text(f"Search.setIndex({json.dumps(index)})")


def test_search_scores_follow_sphinx_searchtools(tmp_path):
    """Title words, text words, object names and index entries scored as searchtools.js does:
    an object named exactly as the query outranks a page with the word in its title, and an
    index entry the query covers outranks both."""
    index = {
        "docnames": ["evaluation", "api/generated/rankmetric.geometry.exp_map", "guide"],
        "filenames": ["evaluation.md", "exp_map.rst", "guide.md"],
        "titles": ["Evaluation: CMC, mAP", "exp_map", "Guide"],
        "alltitles": {"Evaluation: CMC, mAP": [[0, None]]},
        "indexentries": {},
        "objects": {"rankmetric.geometry": [[1, 0, 1, "-", "exp_map"]]},
        "objnames": {"0": ["py", "function", "Python function"]},
        "terms": {"map": [0, 1, 2], "cmc": 0},
        "titleterms": {"map": 0, "cmc": 0, "exp_map": 1},
    }
    _search_index(tmp_path, index)
    scores = check_site.search_scores(tmp_path, "mAP")
    # evaluation: title word 15; exp_map: object 6 + 5 = 11, its text 5; guide: text 5.
    assert scores == {"evaluation": 15, "api/generated/rankmetric.geometry.exp_map": 11, "guide": 5}
    index["objects"]["rankmetric.geometry"].append([1, 0, 1, "-", "map"])  # exact name: 11 + 5
    _search_index(tmp_path, index)
    expected = {"mAP": "evaluation"}
    assert check_site.check_search(tmp_path, expected)  # 16 >= 15: not first
    index["indexentries"] = {"map": [[0, "evaluation", True]]}  # an index entry: 100
    _search_index(tmp_path, index)
    assert check_site.search_scores(tmp_path, "mAP")["evaluation"] == 100
    assert check_site.check_search(tmp_path, expected) == []


def test_docs_markdown_tables_are_sound():
    assert check_site.check_markdown_tables(ROOT / "docs") == []


def test_blank_detects_a_flat_screenshot(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    import numpy as np

    flat, drawn = np.ones((50, 80, 3)), np.ones((50, 80, 3))
    drawn[10:40, 10:70] = 0.0
    plt.imsave(tmp_path / "flat.png", flat)
    plt.imsave(tmp_path / "drawn.png", drawn)
    assert screenshots.blank(tmp_path / "flat.png")
    assert not screenshots.blank(tmp_path / "drawn.png")


#: ``.ci/run`` sets RANKMETRIC_REQUIRE_SITE=1 after ``make docs``: there a missing site fails
#: instead of skipping, so CI never reports the site tests as run when they were not.
_SITE_REQUIRED = os.environ.get("RANKMETRIC_REQUIRE_SITE") == "1"
needs_site = pytest.mark.skipif(
    not _SITE_REQUIRED and not (SITE / "index.html").is_file(),
    reason="the site is not built (run make docs)",
)


@needs_site
def test_built_site_has_no_broken_link_blank_page_or_missing_figure():
    problems = check_site.check_site(SITE, ROOT / "examples")
    assert not problems, "\n".join(problems)


@needs_site
@pytest.mark.skipif(screenshots.chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_pages_render_in_a_browser(tmp_path):
    problems = screenshots.screenshot_site(SITE, tmp_path)
    assert not problems, "\n".join(problems)
    assert len(list(tmp_path.glob("*.png"))) == len(screenshots.PAGES) * len(screenshots.WIDTHS)


@needs_site
def test_landing_and_guide_pages_link_every_class_they_name():
    problems = check_site.check_api_links(SITE)
    assert not problems, "\n".join(problems)


@needs_site
def test_code_blocks_of_the_landing_guide_and_method_pages_link_the_api():
    problems = check_site.check_code_block_links(SITE)
    assert not problems, "\n".join(problems)


@needs_site
def test_search_ranks_the_evaluation_page_first_for_map():
    """The site's search index, scored as Sphinx's searchtools.js scores it."""
    assert check_site.check_search(SITE) == []
    scores = check_site.search_scores(SITE, "mAP")
    assert max(scores, key=scores.get) == "evaluation"
    assert scores["evaluation"] > max(s for d, s in scores.items() if d != "evaluation")


@needs_site
@pytest.mark.skipif(screenshots.chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_search_in_a_browser_lists_the_evaluation_page_first():
    results = screenshots.search_results(SITE, "mAP")
    assert results and results[0] == "evaluation.html", results[:5]


@needs_site
@pytest.mark.skipif(screenshots.chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_code_blocks_scroll_inside_the_text_column_at_1280_and_1920_px():
    problems = screenshots.code_width_problems(SITE, screenshots.CODE_PAGES)
    assert not problems, "\n".join(problems)
    blocks = screenshots.code_widths(SITE, "user_guide/reid.html", 1280)
    assert blocks and all(b["past_column"] <= 1 for b in blocks)
    # The guide's longest lines do not fit 1280 px: they scroll inside their block.
    assert any(b["scroll"] > b["client"] for b in blocks)
    assert {b["overflow_x"] for b in blocks} == {"auto"}


def test_guide_figures_are_drawn_by_the_pages_own_code(tmp_path):
    """docs/tools/guide_figures.py: a page's figure comes from running its python blocks."""
    guide = tmp_path / "user_guide"
    guide.mkdir()
    page = guide / "demo.md"
    page.write_text(
        "# Demo\n\n```python\nimport matplotlib.pyplot as plt\n\nplt.plot([0, 1], [1, 0])\n```\n\n"
        '```python\nplt.savefig("line.png")\n```\n\n![A line](_figures/demo/line.png)\n'
    )
    assert guide_figures.figures_of(page) == ["line.png"]
    (drawn,) = guide_figures.draw_figures(page, guide / "_figures" / "demo")
    assert drawn == guide / "_figures" / "demo" / "line.png" and drawn.stat().st_size > 1000
    page.write_text(page.read_text().replace('plt.savefig("line.png")', "pass"))
    with pytest.raises(RuntimeError, match="never saved"):
        guide_figures.draw_figures(page, guide / "_figures" / "demo")


def test_every_guide_page_shows_a_figure():
    pages = sorted((ROOT / "docs" / "user_guide").glob("*.md"))
    without = [p.name for p in pages if p.name != "index.md" and not guide_figures.figures_of(p)]
    assert not without, f"guide pages without a figure: {without}"
