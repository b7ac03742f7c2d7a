"""Screenshots of the built site in headless Chromium, and a check that no page is blank.

    python docs/tools/screenshots.py docs/_build/html OUTDIR

Opens the landing page, a user-guide page, a gallery page and two API pages in Chromium
(Debian's ``chromium`` package: ``apt-get install chromium``), writes one PNG per page to
``OUTDIR``, and fails (exit status 1) when a screenshot is blank (one flat colour) or the page's
rendered DOM lacks what it must show (text, the gallery's figure, rendered maths on the API
page: MathJax is shipped with the site, so it renders offline).
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
    problems = screenshot_site(site, out)
    for problem in problems:
        print(problem)
    print(f"screenshots in {out}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
