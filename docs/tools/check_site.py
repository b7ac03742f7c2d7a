"""Check the built documentation site: internal links, anchors, images, blank pages, figures.

Run by ``make docs`` after the Sphinx build, and by ``tests/test_docs_site.py``::

    python docs/tools/check_site.py docs/_build/html

Every ``.html`` page of the site is parsed (standard library only). A problem is reported when

* an internal link (``href`` of ``<a>``/``<link>``, ``src`` of ``<img>``/``<script>``) points to
  a file that is not in the site, or to an ``#anchor`` that the target page does not define;
* an image is missing or empty;
* a page has (almost) no text: a blank page;
* an example of ``examples/`` that draws a figure (``plt.show()``) has no figure on its gallery
  page;
* a page loads a script from the network (a CDN): the site must work offline, maths included;
* a page shows raw TeX (``\\(``, ``\\[``) outside the maths elements that MathJax renders;
* the landing page or a user-guide page names an API class in code and never links its page;
* a Markdown table of ``docs/`` has a row whose cell count differs from its header's (a ``|``
  inside a code span must be written ``\\|``, or it splits the cell).

External links (``http:``, ``https:``, ``mailto:``, ...) are not followed: the site must not
depend on the network to be checked. Exit status 1 and one line per problem when any is found.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "_modules"}
MIN_TEXT = 80  # characters of visible text below which a page counts as blank
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}  # fmt: skip


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self.text: list[str] = []
        self.remote_scripts: list[str] = []
        self.raw_tex: list[str] = []
        self._hidden = 0
        self._open: list[tuple[str, bool]] = []  # (tag, is a maths element) of open elements

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag in ("script", "style"):
            self._hidden += 1
        if tag not in _VOID:
            self._open.append((tag, "math" in (a.get("class") or "").split() or tag == "math"))
        if tag == "script" and a.get("src") and not _internal(a["src"]):
            self.remote_scripts.append(a["src"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "link" and a.get("href") and a.get("rel") in ("stylesheet", "next", "prev"):
            self.links.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.links.append(a["src"])
        elif tag == "img" and a.get("src"):
            self.images.append(a["src"])

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                break

    def handle_data(self, data):
        if self._hidden:
            return
        self.text.append(data)
        if ("\\(" in data or "\\[" in data) and not any(math for _, math in self._open):
            self.raw_tex.append(" ".join(data.split())[:80])


class _CodeNames(HTMLParser):
    """The text of every ``<code>`` element, and whether it sits inside a link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.code: list[tuple[str, bool]] = []
        self._links = 0
        self._in_code: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._links += 1
        elif tag == "code":
            self._in_code = []

    def handle_endtag(self, tag):
        if tag == "a" and self._links:
            self._links -= 1
        elif tag == "code" and self._in_code is not None:
            self.code.append(("".join(self._in_code).strip(), self._links > 0))
            self._in_code = None

    def handle_data(self, data):
        if self._in_code is not None:
            self._in_code.append(data)


#: The pages whose prose must link every API class it names (the landing page, the guide).
PROSE_PAGES = ("index.html", "user_guide/*.html")


def check_api_links(site: Path) -> list[str]:
    """Classes that a prose page names in code but never links to their API page.

    The API's classes are read from the site itself (``api/generated/rankmetric.*.html`` pages
    whose name starts with a capital: classes, by the naming convention).
    """
    site = Path(site)
    pages = [p.stem.split(".") for p in (site / "api" / "generated").glob("rankmetric.*.html")]
    classes = {parts[-1] for parts in pages if parts[-1][:1].isupper()}
    modules = {"rankmetric", *(parts[1] for parts in pages if len(parts) > 2)}
    problems = []
    for pattern in PROSE_PAGES:
        for path in sorted(site.glob(pattern)):
            parser = _CodeNames()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            named, linked = set(), set()
            for text, in_link in parser.code:
                dotted = text.split("(")[0].split(".")
                name = dotted[-1]
                if name in classes and (len(dotted) == 1 or dotted[0] in modules):
                    (linked if in_link else named).add(name)
            for name in sorted(named - linked):
                problems.append(
                    f"{path.relative_to(site)}: names {name} but never links its API page"
                )
    return problems


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _internal(url: str) -> bool:
    parts = urlsplit(url)
    return not (parts.scheme or parts.netloc or url.startswith(("javascript:", "data:")))


def check_site(site: Path, examples: Path | None = None) -> list[str]:
    """Every problem found in the built site ``site`` (empty when the site is sound)."""
    site = Path(site)
    if not (site / "index.html").is_file():
        return [f"{site}: no index.html (build the site first: make docs)"]
    pages = {
        p: _parse(p)
        for p in sorted(site.rglob("*.html"))
        if not SKIP_DIRS & set(p.relative_to(site).parts)
    }
    problems = []
    for path, page in pages.items():
        name = path.relative_to(site)
        for url in page.links + page.images:
            if not _internal(url) or url.startswith("#") and not url[1:]:
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if parts.path.endswith("/") or target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{name}: broken link {url!r} (no {target})")
            elif url in page.images and target.stat().st_size == 0:
                problems.append(f"{name}: empty image {url!r}")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{name}: broken anchor {url!r}")
        problems += [
            f"{name}: loads a script from the network: {url}" for url in page.remote_scripts
        ]
        problems += [f"{name}: raw TeX outside the maths: {text!r}" for text in page.raw_tex]
        if len(" ".join("".join(page.text).split())) < MIN_TEXT:
            problems.append(f"{name}: blank page (less than {MIN_TEXT} characters of text)")
    for script in sorted(Path(examples).glob("*.py")) if examples else []:
        if "plt.show()" not in script.read_text():
            continue
        gallery_page = site / "auto_examples" / f"{script.stem}.html"
        if gallery_page not in pages:
            problems.append(f"{script.name}: no gallery page {gallery_page.relative_to(site)}")
        elif not any(f"sphx_glr_{script.stem}_" in src for src in pages[gallery_page].images):
            problems.append(f"{gallery_page.relative_to(site)}: the example's figure is missing")
    return problems


def _cells(row: str) -> int:
    """The number of cells of a Markdown table row (``\\|`` is a pipe inside a cell)."""
    body = row.strip().replace("\\|", "")
    return len(body.strip("|").split("|"))


def check_markdown_tables(docs: Path) -> list[str]:
    """Table rows of the Markdown pages under ``docs`` whose cell count differs from the header's.

    A ``|`` inside a code span splits a GitHub-flavoured Markdown table cell unless written
    ``\\|``: the row then gets one cell more and the table renders broken.
    """
    problems = []
    for path in sorted(Path(docs).rglob("*.md")):
        if "_build" in path.parts:
            continue
        header, fenced = None, False
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced or not line.lstrip().startswith("|"):
                header = None
                continue
            if header is None:
                header = _cells(line)
            elif _cells(line) != header:
                problems.append(
                    f"{path.relative_to(docs.parent)}:{number}: table row has {_cells(line)} "
                    f"cells, its header {header} (write a | inside a cell as \\|)"
                )
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1]) if len(argv) > 1 else Path("docs/_build/html")
    root = Path(__file__).resolve().parents[2]
    examples = root / "examples"
    problems = check_markdown_tables(root / "docs") + check_site(site, examples)
    problems += check_api_links(site) if (site / "index.html").is_file() else []
    for problem in problems:
        print(problem)
    n_pages = sum(1 for p in site.rglob("*.html") if not SKIP_DIRS & set(p.relative_to(site).parts))
    print(f"check_site: {n_pages} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
