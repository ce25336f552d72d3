"""Check the rendered site the way a reader meets it: every page in a real (headless) browser.

:func:`check_site` serves a built site on localhost, opens each page in Debian's Chromium
through Playwright, with every request to another host refused (the network unplugged), and
reports what a reader would notice: error or traceback outputs, images that do not load,
table-of-contents links that lead nowhere, a chapter without the static figure of its
explorer, console errors raised by the book's own scripts, markdown tables left as raw pipes
(``|---``), math that MathJax did not render (TeX delimiters left in the text, or a page with
math and no rendered formula), an image without a captioned figure around it (and, on a
chapter page, without a number), an absolute path or a cache key in the text, a code block
wider than its column, and any request to a host other than the site itself. It saves a
full-page screenshot of every page for a person to look at.

Command line: ``python -m mlmbook check-site [_build/html]``.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

from ..errors import BrowserMissing

__all__ = ["find_chromium", "check_site", "BrowserMissing"]

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CHAPTER = re.compile(r"^\d\d_")


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise BrowserMissing("no Chromium found: install it (Debian: apt-get install chromium) to run the browser check")


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on an ephemeral localhost port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _is_redirect(page: Path) -> bool:
    """A page that only forwards to another (jupyter-book writes ``index.html`` this way)."""
    text = page.read_text(encoding="utf-8", errors="replace")
    return len(text) < 600 and 'http-equiv="Refresh"' in text


def check_site(html: Path, screenshots: Path | None = None, chapters_need_explorer: bool = True) -> list:
    """Load every page of the site at ``html`` in headless Chromium; return the problems found.

    Parameters
    ----------
    html : path
        The built site (``_build/html``).
    screenshots : path, optional
        Where to save one PNG per page.
    chapters_need_explorer : bool
        Require each chapter page (``NN_slug.html``) to show an explorer's static figure.

    Returns
    -------
    list of str
        One line per problem, naming the page; empty when the site is fine.
    """
    from playwright.sync_api import sync_playwright

    html = Path(html)
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).parts[0].startswith(("_", "."))
                   and p.name not in ("search.html", "genindex.html")
                   and not _is_redirect(p))                 # index.html -> book/intro.html: checked there
    problems = []
    if screenshots:
        Path(screenshots).mkdir(parents=True, exist_ok=True)
    with serve(html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        foreign: list = []

        def offline(route):  # the network is unplugged: only the site itself answers
            url = route.request.url
            if url.startswith(base) or url.startswith(("data:", "blob:", "about:")):
                route.continue_()
            else:
                foreign.append(url)
                route.abort()
        page.route("**/*", offline)
        console: list = []
        page.on("console", lambda m: console.append((m.type, m.text, (m.location or {}).get("url", ""))))
        page.on("pageerror", lambda e: console.append(("error", str(e), base)))
        for rel in pages:
            console.clear()
            foreign.clear()
            url = urljoin(base, rel)
            response = page.goto(url, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{rel}: HTTP {response.status if response else 'no response'}")
                continue
            page.wait_for_timeout(150)
            _wait_for_math(page)
            problems += [f"{rel}: {p}" for p in _page_problems(page, rel, base, chapters_need_explorer)]
            problems += [f"{rel}: {p}" for p in _reader_problems(page, rel)]
            problems += [f"{rel}: request to another host: {u[:120]}" for u in dict.fromkeys(foreign)]
            own = [t for kind, t, where in console if kind == "error" and (not where or where.startswith(base))
                   and not where.endswith("/favicon.ico")        # the browser's own request, not the book's
                   and "net::ERR_FAILED" not in t]               # a refused foreign request, reported above
            problems += [f"{rel}: console error: {t[:200]}" for t in own]
            if screenshots:
                page.screenshot(path=str(Path(screenshots) / (rel.replace("/", "__")[:-5] + ".png")), full_page=True)
        browser.close()
    return problems


def _page_problems(page, rel: str, base: str, need_explorer: bool) -> list:
    out = []
    images = page.eval_on_selector_all(
        "main img", "els => els.map(e => [e.getAttribute('src'), e.complete, e.naturalWidth, e.naturalHeight])")
    for src, complete, w, h in images:
        if not complete or not w or not h:
            out.append(f"image {src} did not load")
    errors = page.eval_on_selector_all(
        ".cell_output .output.error, .cell_output .output.traceback, .cell_output .output.stderr",
        "els => els.map(e => e.innerText.slice(0, 120))")
    out += [f"error output: {t!r}" for t in errors]
    traces = page.eval_on_selector_all(".cell_output", "els => els.filter(e => e.innerText.includes('Traceback (most recent call last)')).length")
    if traces:
        out.append(f"{traces} output(s) contain a traceback")
    links = page.eval_on_selector_all("nav.bd-docs-nav a.reference, .bd-toc a.reference",
                                      "els => els.map(e => e.href)")
    for href in links:
        target = urlparse(href)
        if href.startswith(base) and target.path.endswith(".html"):
            status = page.request.get(href.split("#")[0]).status
            if status != 200:
                out.append(f"TOC link {target.path} -> HTTP {status}")
    name = rel.rsplit("/", 1)[-1]
    if need_explorer and CHAPTER.match(name):
        notes = page.eval_on_selector_all(
            ".mlmbook-explorer-note",
            "els => els.map(e => { const cell = e.closest('.cell_output') || e.parentElement;"
            " const imgs = cell ? [...cell.querySelectorAll('img')] : [];"
            " return imgs.some(i => i.complete && i.naturalWidth > 0); })")
        if not notes:
            out.append("no explorer figure (the static figure an explorer leaves at its default setting)")
        elif not all(notes):
            out.append("an explorer's static figure is missing")
    return out


# --------------------------------------------------------------------------- what a reader sees

# an absolute path of a machine (not ~/..., not /path/to/... examples) or a cache key (name-16 hex)
ABSOLUTE_PATH = re.compile(r"(?<![\w.~])(?:/(?:home|root|tmp|work|Users|usr|var|opt|mnt|private|srv)/\S+"
                           r"|[A-Z]:\\\S+|\S*site-packages\S*)")
CACHE_KEY = re.compile(r"\b[a-z][a-z0-9_.]*-[0-9a-f]{12,}\b")
RAW_TABLE = re.compile(r"\|\s*:?-{3,}")
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\begin\{")

_TEXT_JS = """(skip) => {
  const main = document.querySelector('main') || document.body;
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {acceptNode: n =>
    n.parentElement && n.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const parts = [];
  while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
  return parts.join(' ');
}"""
_FIGURES_JS = """() => [...document.querySelectorAll('main img')]
  .filter(i => !i.closest('.sidebar-primary-items__start, .navbar-brand, .bd-header, .bd-header-article,'
                          + ' .dropdown-menu, a.reference.external'))
  .map(i => { const f = i.closest('figure');
    const cap = f ? f.querySelector('figcaption') : null;
    return [i.getAttribute('src') || '', !!(cap && cap.textContent.trim()),
            !!(cap && cap.querySelector('.caption-number'))]; })"""
_OVERFLOW_JS = """() => [...document.querySelectorAll('main pre')]
  .filter(p => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 2)
  .map(p => (p.textContent.split('\\n').sort((a, b) => b.length - a.length)[0] || '').slice(0, 60))"""


def _wait_for_math(page, timeout_ms: int = 10000) -> None:
    """Wait until MathJax (if the page loaded it) has typeset the page."""
    try:
        page.evaluate("(t) => (window.MathJax && MathJax.startup && MathJax.startup.promise)"
                      " ? Promise.race([MathJax.startup.promise.then(() => true),"
                      " new Promise(r => setTimeout(() => r(false), t))]) : false", timeout_ms)
    except Exception:  # noqa: BLE001 - a page whose MathJax throws is reported by the math check
        pass


def _name(src: str) -> str:
    return "an inline (data:) image" if src.startswith("data:") else src.rsplit("/", 1)[-1]


def _reader_problems(page, rel: str) -> list:
    """What a reader would see as broken on the page: raw markup, leaks, unusable layout."""
    out = []
    prose = page.evaluate(_TEXT_JS, "pre, code, script, style, mjx-container, .highlight, .MathJax")
    if RAW_TABLE.search(prose):
        m = RAW_TABLE.search(prose)
        out.append(f"a markdown table shown as raw pipes: {prose[max(0, m.start() - 40):m.end() + 20]!r}")
    tex = RAW_TEX.search(prose)
    if tex:
        out.append(f"unrendered math (TeX in the text): {prose[max(0, tex.start() - 30):tex.end() + 30]!r}")
    n_math = page.eval_on_selector_all("main .math, main span.math, main div.math", "els => els.length")
    n_rendered = page.eval_on_selector_all("main mjx-container", "els => els.length")
    if n_math and not n_rendered:
        out.append(f"unrendered math: {n_math} formula(s) and no rendered one (is MathJax served by the site?)")
    chapter = bool(CHAPTER.match(rel.rsplit("/", 1)[-1]))
    for src, captioned, numbered in page.evaluate(_FIGURES_JS):
        if not captioned:
            out.append(f"a figure without a caption: {_name(src)}")
        elif chapter and not numbered:
            out.append(f"a figure without a number: {_name(src)}")
    text = page.evaluate(_TEXT_JS, "script, style")
    for pattern, what in ((ABSOLUTE_PATH, "an absolute path"), (CACHE_KEY, "a cache key")):
        found = sorted(set(pattern.findall(text)))
        if found:
            out.append(f"{what} in the page text: {', '.join(found[:3])}")
    for line in page.evaluate(_OVERFLOW_JS):
        out.append(f"a code block wider than the page (scrolls sideways): {line!r}...")
    return out
