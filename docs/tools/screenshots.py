"""Screenshots of the built site in headless Chromium, and a check that no page is blank.

    python docs/tools/screenshots.py docs/_build/html OUTDIR

Opens the landing page, a user-guide page, a gallery page and two API pages in Chromium
(Debian's ``chromium`` package: ``apt-get install chromium``), writes one PNG per page to
``OUTDIR``, and fails (exit status 1) when a screenshot is blank (one flat colour) or the page's
rendered DOM lacks what it must show (text, the gallery's figure, rendered maths on the API
page: MathJax is shipped with the site, so it renders offline); when a code block of the
landing, guide, method or API pages is cut off at 1280 or 1920 px (wider than the text column,
or a long line that neither scrolls nor wraps: ``code_widths`` measures each block in the
rendered page); or when the site's own search does not list the evaluation page first for
"mAP".
Used by ``tests/test_docs_site.py``; a manual step otherwise (CI does not install Chromium).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# (page, what its rendered DOM must contain)
PAGES = [
    ("index.html", "Quick start"),
    ("user_guide/reid.html", "Not supported yet"),
    ("warca.html", "Memory"),
    ("auto_examples/reid_cmc_curves.html", "sphx_glr_reid_cmc_curves_001.png"),
    ("api/estimators.html", "XQDA"),
    ("api/generated/rankmetric.estimators.XQDA.html", "Notes"),
]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
]


def chromium() -> str | None:
    """Path of the Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


#: Window widths of the screenshots (px): a laptop and a desktop screen.
WIDTHS = (1280, 1920)


def _run(
    browser: str, args: list[str], timeout: float = 120, width: int = WIDTHS[0]
) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [browser, *FLAGS, f"--window-size={width},1600", f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def blank(png: Path) -> bool:
    """True when the screenshot is (nearly) one flat colour."""
    import matplotlib.image

    image = matplotlib.image.imread(str(png))[..., :3]
    background = image.reshape(-1, 3)[0]
    differs = (abs(image - background).sum(axis=-1) > 0.1).mean()
    return differs < 0.01


def screenshot_site(site: Path, out: Path, pages=PAGES, widths=WIDTHS) -> list[str]:
    """Screenshot every page of ``pages`` at each width into ``out``; every problem found."""
    browser = chromium()
    if browser is None:
        return ["no Chromium found (apt-get install chromium)"]
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    for page, must_contain in pages:
        url = (Path(site) / page).resolve().as_uri()
        stem = page.replace("/", "__").removesuffix(".html")
        for width in widths:
            png = out / f"{stem}@{width}.png"
            _run(browser, [f"--screenshot={png}", url], width=width)
            if not png.is_file():
                problems.append(f"{page}: no screenshot at {width} px")
            elif blank(png):
                problems.append(f"{page}: the screenshot at {width} px is blank")
        dom = _run(browser, ["--dump-dom", url]).stdout
        if must_contain not in dom:
            problems.append(f"{page}: the rendered page lacks {must_contain!r}")
        if 'class="math' in dom and "mjx-container" not in dom:
            problems.append(f"{page}: MathJax did not render the maths")
    return problems


_MEASURE = """<script>
window.addEventListener("load", () => {
  const column = document.querySelector(".bd-article").getBoundingClientRect();
  const rows = [...document.querySelectorAll(".bd-article div.highlight pre")].map((pre) => {
    const box = pre.getBoundingClientRect();
    const style = getComputedStyle(pre);
    return [pre.scrollWidth, pre.clientWidth, Math.round(box.right - column.right),
            style.overflowX, style.whiteSpace].join(" ");
  });
  const out = document.createElement("pre");
  out.id = "code-width-report";
  out.textContent = rows.join("\\n");
  document.body.appendChild(out);
  const toc = document.querySelector(".bd-sidebar-secondary");
  const tocOut = document.createElement("pre");
  tocOut.id = "toc-width-report";
  tocOut.textContent = toc ? `${toc.scrollWidth} ${toc.clientWidth}` : "0 0";
  document.body.appendChild(tocOut);
});
</script>"""


def _measure(site: Path, page: str, width: int) -> str:
    """The DOM of ``page`` rendered at ``width`` px with the ``_MEASURE`` reports appended."""
    source = Path(site) / page
    probe = source.with_name(f".measure-{source.name}")
    probe.write_text(source.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"))
    try:
        return _run(chromium(), ["--dump-dom", probe.resolve().as_uri()], width=width).stdout
    finally:
        probe.unlink()


def toc_overflow(site: Path, page: str, width: int) -> int:
    """How many px the in-page table of contents of ``page`` is wider than its column at
    ``width`` px (0: every entry fits or wraps)."""
    import re

    found = re.search(
        r'<pre id="toc-width-report"[^>]*>(\d+) (\d+)</pre>', _measure(site, page, width)
    )
    return max(0, int(found.group(1)) - int(found.group(2))) if found else 0


def code_widths(site: Path, page: str, width: int) -> list[dict]:
    """Every code block of ``page`` rendered at ``width`` px: how wide its longest line is
    (``scroll``), how wide the block is (``client``), how far its right edge passes the text
    column's (``past_column``, px; ≤ 0 inside), and its CSS ``overflow-x`` / ``white-space``.

    A block with ``scroll > client`` has a line longer than the block: it must scroll
    (``overflow-x: auto``/``scroll``) or wrap, never be cut (``hidden``/``visible``).
    """
    browser = chromium()
    if browser is None:
        return []
    dom = _measure(site, page, width)
    import re

    found = re.search(r'<pre id="code-width-report"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    report = found.group(1) if found else ""
    keys = ("scroll", "client", "past_column", "overflow_x", "white_space")
    rows = [line.split() for line in report.strip().splitlines() if line.strip()]
    return [
        dict(zip(keys, [int(r[0]), int(r[1]), int(r[2]), r[3], r[4]], strict=True))
        for r in rows
        if len(r) == 5
    ]


def code_width_problems(site: Path, pages, widths=WIDTHS) -> list[str]:
    """Code blocks cut off (wider than the text column, or a long line that neither scrolls
    nor wraps) and tables of contents wider than their column."""
    problems = []
    for page in pages:
        for width in widths:
            if (past := toc_overflow(site, page, width)) > 0:
                problems.append(f"{page} at {width} px: the table of contents is {past} px cut")
            for i, block in enumerate(code_widths(site, page, width)):
                cut = block["scroll"] > block["client"] and block["overflow_x"] not in (
                    "auto",
                    "scroll",
                )
                wraps = block["white_space"] in ("pre-wrap", "break-spaces", "normal")
                if block["past_column"] > 1 or (cut and not wraps):
                    problems.append(f"{page} at {width} px: code block {i} is cut off: {block}")
    return problems


#: Pages whose code blocks are measured: the landing page, a guide page, method pages, an API
#: page.
CODE_PAGES = [
    "index.html",
    "user_guide/reid.html",
    "user_guide/serving.html",
    "warca.html",
    "losses.html",
    "api/generated/rankmetric.estimators.XQDA.html",
]


def search_results(site: Path, query: str) -> list[str]:
    """The pages the site's own search lists for ``query``, best first (Chromium runs
    Sphinx's ``searchtools.js`` on ``search.html?q=...``): each result's link, without its
    ``?highlight=`` part."""
    import re
    from urllib.parse import quote

    browser = chromium()
    if browser is None:
        return []
    url = (Path(site) / "search.html").resolve().as_uri() + "?q=" + quote(query)
    dom = _run(browser, ["--dump-dom", url]).stdout
    listing = dom.split('id="search-results"', 1)[-1]
    links = re.findall(r'<li[^>]*>\s*<a href="([^"]+)"', listing)
    return [link.split("?")[0].split("#")[0] for link in links]


def main(argv: list[str]) -> int:
    site = Path(argv[1]) if len(argv) > 1 else Path("docs/_build/html")
    out = Path(argv[2]) if len(argv) > 2 else Path("docs/_build/screenshots")
    problems = screenshot_site(site, out) + code_width_problems(site, CODE_PAGES)
    results = search_results(site, "mAP")
    if results[:1] != ["evaluation.html"]:
        problems.append(f"search 'mAP' lists {results[:3]} first, not evaluation.html")
    for problem in problems:
        print(problem)
    print(f"screenshots in {out}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
