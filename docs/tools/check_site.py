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
  inside a code span must be written ``\\|``, or it splits the cell);
* a Python code block of the landing page, the guide or a method page names a public class or
  function of the API that does not link to its API page (sphinx-codeautolink's links);
* the site's search does not rank a term's defining page first (``SEARCH_EXPECTATIONS``: "mAP"
  finds the evaluation page before ``exp_map`` and ``BiMap``), scored as Sphinx's
  ``searchtools.js`` scores a query.

External links (``http:``, ``https:``, ``mailto:``, ...) are not followed: the site must not
depend on the network to be checked. Exit status 1 and one line per problem when any is found.
"""

from __future__ import annotations

import json
import re
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


#: The pages whose Python code blocks must link every API name they use: the landing page, the
#: user guide and the method pages.
CODE_PAGES = (
    "index.html",
    "user_guide/*.html",
    *(f"{page}.html" for page in ("warca", "ssne", "rpl", "geometry", "baselines", "tuning",
                                  "pairs", "losses")),
)  # fmt: skip
# Blocks marked as Python (```python); unmarked blocks (highlight-default) hold printed output.
_CODE_LANGUAGES = ("highlight-python", "highlight-pycon", "highlight-py", "highlight-python3")
_IMPORTED = re.compile(
    r"^[ \t]*(?:>>> )?from[ \t]+rankmetric[\w.]*[ \t]+import[ \t]+(?:\(([\w\s,]+)\)|([\w \t,]+))",
    re.M,
)
_CHAIN = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)")


class _CodeBlocks(HTMLParser):
    """Each Python code block's text, with whether each character sits in a link and whether it
    is code (not a comment or a string, which sphinx-codeautolink never links)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, list[bool], list[bool]]] = []
        self._depth = 0  # open elements inside the current block (0: not in a block)
        self._links = 0
        self._literal: list[bool] = []  # one per open span: a comment or string token
        self._text: list[str] = []
        self._linked: list[bool] = []
        self._code: list[bool] = []

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self._depth:
            if tag not in _VOID:
                self._depth += 1
            if tag == "a":
                self._links += 1
            elif tag == "span":
                self._literal.append(any(c[:1] in ("c", "s") for c in classes))
        elif tag == "div" and any(c in _CODE_LANGUAGES for c in classes):
            self._depth, self._text, self._linked, self._code = 1, [], [], []

    def handle_endtag(self, tag):
        if not self._depth:
            return
        self._depth -= 1
        if tag == "a" and self._links:
            self._links -= 1
        elif tag == "span" and self._literal:
            self._literal.pop()
        if not self._depth:
            self.blocks.append(("".join(self._text), self._linked, self._code))

    def handle_data(self, data):
        if self._depth:
            self._text.append(data)
            self._linked += [self._links > 0] * len(data)
            self._code += [not any(self._literal)] * len(data)


def api_names(site: Path) -> tuple[set[str], set[str]]:
    """The public names of the API (classes and functions: the generated pages) and modules."""
    pages = [
        p.stem.split(".") for p in (Path(site) / "api" / "generated").glob("rankmetric.*.html")
    ]
    names = {parts[-1] for parts in pages if len(parts) > 2}
    modules = {"rankmetric", *(parts[1] for parts in pages if len(parts) > 2)}
    return names, modules


def check_code_block_links(site: Path) -> list[str]:
    """API names in the Python code blocks of ``CODE_PAGES`` that do not link to their page.

    A name counts when it is a public class or function of the API (by the generated pages),
    outside comments and strings, either after a rankmetric module (``evaluate.reid_scores``)
    or standing alone where the page imports it from rankmetric (``from rankmetric import
    WARCA`` ... ``WARCA(...)``); ``torch.utils.data.Dataset``, ``model.fit`` and a local
    variable that happens to share a function's name (``train = ...``) do not count.
    """
    site = Path(site)
    names, modules = api_names(site)
    problems = []
    for pattern in CODE_PAGES:
        for path in sorted(site.glob(pattern)):
            parser = _CodeBlocks()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            missing: dict[str, int] = {}
            imported = {
                name.strip()
                for text, _, _ in parser.blocks
                for groups in _IMPORTED.findall(text)
                for name in "".join(groups).replace("\n", ",").split(",")
            }
            for text, linked, code in parser.blocks:
                for match in _CHAIN.finditer(text):
                    parts = match.group(1).split(".")
                    start = match.end() - len(parts[-1])
                    if parts[-1] not in names or not code[start]:
                        continue
                    if len(parts) > 1 and parts[0] not in modules:
                        continue
                    if len(parts) == 1 and parts[0] not in imported:
                        continue
                    if not all(linked[start : match.end()]):
                        missing[parts[-1]] = missing.get(parts[-1], 0) + 1
            problems += [
                f"{path.relative_to(site)}: {count} use(s) of {name} in code blocks without a "
                "link to its API page"
                for name, count in sorted(missing.items())
            ]
    return problems


#: Queries of the site's search and the page that must come first for each.
SEARCH_EXPECTATIONS = {"mAP": "evaluation", "mean average precision": "evaluation"}
# searchtools.js's Scorer (Sphinx 9): object, title and term scores.
_OBJ_NAME, _OBJ_PARTIAL, _OBJ_PRIO = 11, 6, {0: 15, 1: 5, 2: -5}
_TITLE, _PARTIAL_TITLE, _TERM, _PARTIAL_TERM = 15, 7, 5, 2


def search_scores(site: Path, query: str) -> dict[str, int]:
    """Each page's best score for ``query`` in the site's search, as ``searchtools.js`` scores.

    Reads ``searchindex.js`` and applies the rules of Sphinx's ``Search._performSearch``:
    section titles the query covers at least half of, index entries (``100 × len(query) /
    len(entry)``), object names (full or last-part match plus the object's priority; with
    several words, the others must be in the name, kind or page title) and the stemmed words
    of the text and titles (every word required; partial matches only for a word absent from
    the index). Pages are keyed by docname.
    """
    text = (Path(site) / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    query = query.lower().strip()
    best: dict[str, int] = {}
    for file, score in [
        *_title_and_index_scores(index, query),
        *_object_scores(index, query),
        *_term_scores(index, query),
    ]:
        name = index["docnames"][file]
        best[name] = max(best.get(name, score), score)
    return best


def _title_and_index_scores(index: dict, query: str) -> list[tuple[int, int]]:
    found = []
    for title, places in index["alltitles"].items():
        if query in title.lower().strip() and len(query) >= len(title) / 2:
            score = round(_TITLE * len(query) / len(title))
            found += [(f, score + (index["titles"][f] == title)) for f, _ in places]
    for entry, places in index["indexentries"].items():
        if query in entry and len(query) >= len(entry) / 2:
            found += [(f, round(100 * len(query) / len(entry))) for f, _, main in places if main]
    return found


def _object_scores(index: dict, query: str) -> list[tuple[int, int]]:
    words, found = [w for w in re.split(r"[^\w]+", query) if w], []
    for prefix, matches in index["objects"].items():
        for match in matches:
            full = (f"{prefix}.{match[4]}" if prefix else match[4]).lower()
            last = full.split(".")[-1]
            kind, page = index["objnames"][str(match[1])][2], index["titles"][match[0]]
            haystack = f"{prefix} {match[4]} {kind} {page}".lower()
            for word in words:
                if word not in full or any(w not in haystack for w in words if w != word):
                    continue
                score = _OBJ_NAME if word in (full, last) else _OBJ_PARTIAL if word in last else 0
                found.append((match[0], score + _OBJ_PRIO.get(match[2], 0)))
    return found


def _term_scores(index: dict, query: str) -> list[tuple[int, int]]:
    import snowballstemmer

    stemmer = snowballstemmer.stemmer("porter")
    terms, title_terms = index["terms"], index["titleterms"]
    per_word: list[dict[int, int]] = []
    for word in [stemmer.stemWord(w) for w in re.split(r"[^\w]+", query) if w and not w.isdigit()]:
        records = [(terms.get(word), _TERM), (title_terms.get(word), _TITLE)]
        for table, score in ((terms, _PARTIAL_TERM), (title_terms, _PARTIAL_TITLE)):
            if len(word) > 2 and word not in table:
                records += [(files, score) for term, files in table.items() if word in term]
        scores: dict[int, int] = {}
        for files, score in records:
            for file in [files] if isinstance(files, int) else files or []:
                scores[file] = score  # the last record wins, as in searchtools.js
        per_word.append(scores)
    common = set.intersection(*(set(s) for s in per_word)) if per_word else set()
    return [(file, max(s[file] for s in per_word)) for file in common]


def check_search(site: Path, expectations=None) -> list[str]:
    """Queries whose expected page does not score strictly above every other page."""
    problems = []
    for query, page in (expectations or SEARCH_EXPECTATIONS).items():
        scores = search_scores(site, query)
        mine = scores.get(page)
        rivals = sorted(((s, d) for d, s in scores.items() if d != page), reverse=True)[:3]
        if mine is None or rivals and rivals[0][0] >= mine:
            problems.append(
                f"search {query!r}: {page} scores {mine}, not above {rivals} (searchtools.js)"
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
    if (site / "index.html").is_file():
        problems += check_api_links(site) + check_code_block_links(site) + check_search(site)
    for problem in problems:
        print(problem)
    n_pages = sum(1 for p in site.rglob("*.html") if not SKIP_DIRS & set(p.relative_to(site).parts))
    print(f"check_site: {n_pages} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
