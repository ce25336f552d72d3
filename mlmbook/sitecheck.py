"""Check the rendered site the way a reader meets it: every page in a real (headless) browser.

:func:`check_site` serves a built site on localhost, opens each page in Debian's Chromium
through Playwright, and reports what a reader would notice: error or traceback outputs,
images that do not load, table-of-contents links that lead nowhere, a chapter without the
static figure of its explorer, and console errors raised by the book's own scripts.  It
saves a full-page screenshot of every page for a person to look at.

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

__all__ = ["find_chromium", "check_site", "BrowserMissing"]

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CHAPTER = re.compile(r"^\d\d_")


class BrowserMissing(RuntimeError):
    """No Chromium to drive; the message says how to install one."""


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
                   and p.name not in ("search.html", "genindex.html"))
    problems = []
    if screenshots:
        Path(screenshots).mkdir(parents=True, exist_ok=True)
    with serve(html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        console: list = []
        page.on("console", lambda m: console.append((m.type, m.text, (m.location or {}).get("url", ""))))
        page.on("pageerror", lambda e: console.append(("error", str(e), base)))
        for rel in pages:
            console.clear()
            url = urljoin(base, rel)
            response = page.goto(url, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{rel}: HTTP {response.status if response else 'no response'}")
                continue
            page.wait_for_timeout(150)
            problems += [f"{rel}: {p}" for p in _page_problems(page, rel, base, chapters_need_explorer)]
            own = [t for kind, t, where in console if kind == "error" and (not where or where.startswith(base))
                   and not where.endswith("/favicon.ico")]       # the browser's own request, not the book's
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
