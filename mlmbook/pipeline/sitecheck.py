"""Check the rendered site the way a reader meets it: every page in a real (headless) browser.

:func:`check_site` (``python -m mlmbook check-site``) serves a built site on localhost, opens each
page in Chromium (Playwright) at :data:`WINDOW_PX` x :data:`SCREEN_PX` px (one *screen*) with other
hosts refused, then at :data:`PHONE_PX` px, and reports what a reader would notice (the list:
``book/for_developers.md``, "What the site guarantees"; text checks: :mod:`.sitetext`).

Figure text, from the PNG's record (:mod:`mlmbook.plotting.record`; without one, 9 pt), is
``font_pt * dpi / 72 * shown / natural`` CSS px on the page, ticks included: at least 10 px (9 px at
a phone's width unless a tap enlarges the figure); no data under legends or point labels.
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
from .sitetext import CHAPTER, figure_text_problems, image_name, text_problems

__all__ = ["find_chromium", "check_site", "one_browser"]

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WINDOW_PX = 1280        # the window's width
SCREEN_PX = 720         # the window's height: one screen, what a reader sees before scrolling
MAX_SCREENS = 12        # the longest a chapter page may be, in screens (a sitting)
# a box that scrolls sideways and says so (mlmbook.tables, mlmbook.css/js)
SCROLL_MARK = "mlmbook-scroll"
PHONE_PX = 390          # a phone's width: every page is measured again at it
PHONE_SCREEN_PX = 844   # a phone's height


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
    serve_forever = functools.partial(server.serve_forever, poll_interval=0.05)  # a quick shutdown
    thread = threading.Thread(target=serve_forever, daemon=True)
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


def enforced(problems: list[str]) -> list[str]:
    """The problems that fail the check: all of them (none is advice only)."""
    return list(problems)


_SHARED: dict = {}


@contextlib.contextmanager
def one_browser():
    """Headless Chromium for a block: every :func:`check_site` inside it opens its pages there
    instead of starting a browser of its own (the tests check many small sites in a row)."""
    if "browser" in _SHARED:                      # inside another block: its browser
        yield _SHARED["browser"]
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_FLAGS)
        _SHARED["browser"] = browser
        try:
            yield browser
        finally:
            del _SHARED["browser"]
            browser.close()


def check_site(html: Path, screenshots: Path | None = None, chapters_need_explorer: bool = True,
               pages: list[str] | None = None) -> list:
    """Load every page of the built site at ``html`` in headless Chromium; return the problems
    found, one line each naming the page. ``screenshots``: a folder for one PNG per page;
    ``chapters_need_explorer``: each chapter shows an explorer's static figure; ``pages``: only
    these (relative to ``html``)."""
    html = Path(html)
    found = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).parts[0].startswith(("_", "."))
                   and p.name not in ("search.html", "genindex.html")
                   and not _is_redirect(p))  # index.html -> book/intro.html: checked there
    problems = [f"{rel}: no such page" for rel in sorted(set(pages or ()) - set(found))]
    pages = found if pages is None else [rel for rel in found if rel in set(pages)]
    if screenshots:
        Path(screenshots).mkdir(parents=True, exist_ok=True)
    with serve(html) as base, contextlib.ExitStack() as own:
        browser = own.enter_context(one_browser())
        page = browser.new_page(viewport={"width": WINDOW_PX, "height": SCREEN_PX})
        own.callback(page.close)
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
        explorers: dict = {}  # chapter -> an explorer's figure on one of its pages
        for rel in pages:
            console.clear()
            foreign.clear()
            response = page.goto(urljoin(base, rel), wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{rel}: HTTP {response.status if response else 'no response'}")
                continue
            page.wait_for_timeout(150)
            _wait_for_math(page)
            seen = _page_problems(page, rel, base, chapters_need_explorer, explorers)
            seen += _reader_problems(page, rel)
            seen += text_problems(page, rel)
            problems += [f"{rel}: {p}" for p in seen]
            problems += [f"{rel}: request to another host: {u[:120]}" for u in dict.fromkeys(foreign)]
            own = [t for kind, t, where in console if kind == "error" and (not where or where.startswith(base))
                   # the browser's own request, not the book's
                   and not where.endswith("/favicon.ico")
                   and "net::ERR_FAILED" not in t]  # a refused foreign request, reported above
            problems += [f"{rel}: console error: {t[:200]}" for t in own]
            if screenshots:
                page.screenshot(path=str(Path(screenshots) / (rel.replace("/", "__")[:-5] + ".png")), full_page=True)
            # unfolds solutions
            problems += [f"{rel}: {p}" for p in figure_text_problems(page, html, base)]
            page.set_viewport_size({"width": PHONE_PX, "height": PHONE_SCREEN_PX})
            page.wait_for_timeout(150)
            problems += [f"{rel}: at {PHONE_PX} px: {p}" for p in _phone_problems(page, html, base)]
            page.set_viewport_size({"width": WINDOW_PX, "height": SCREEN_PX})
    problems += [f"{chapter}: no explorer figure on any of the chapter's pages (the static figure an "
                 f"explorer leaves at its default setting)" for chapter, seen in sorted(explorers.items()) if not seen]
    return problems


def _page_problems(page, rel: str, base: str, need_explorer: bool, explorers: dict) -> list:
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
    traces = page.eval_on_selector_all(
        ".cell_output", "els => els.filter(e => e.innerText.includes('Traceback (most recent call last)')).length")
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
    if need_explorer and CHAPTER.match(rel.rsplit("/", 1)[-1]):
        notes = page.eval_on_selector_all(
            ".mlmbook-explorer-note",
            "els => els.map(e => { const cell = e.closest('.cell_output') || e.parentElement;"
            " const imgs = cell ? [...cell.querySelectorAll('img')] : [];"
            " return imgs.some(i => i.complete && i.naturalWidth > 0); })")
        if notes and not all(notes):
            out.append("an explorer's static figure is missing")
        chapter = re.sub(r"-\d+\.html$", ".html", rel)     # book/01_x-2.html: book/01_x.html
        explorers[chapter] = explorers.get(chapter, False) or bool(notes)
    return out


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
_OVERFLOW_JS = """(advance) => [...document.querySelectorAll('main pre')]
  .filter(p => p.offsetParent !== null).filter(p => {
    if (p.scrollWidth > p.clientWidth + 2) return true;
    const cs = getComputedStyle(p);
    if (!cs.whiteSpace.startsWith('pre') || cs.whiteSpace === 'pre-wrap' || cs.whiteSpace === 'pre-line') return false;
    const longest = Math.max(0, ...p.textContent.split('\\n').map(l => l.replace(/\\s+$/, '').length));
    const room = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return longest * advance * parseFloat(cs.fontSize) > room + 1; })
  .map(p => (p.textContent.split('\\n').sort((a, b) => b.length - a.length)[0] || '').slice(0, 60))"""
# character width / font size of DejaVu Sans Mono, Menlo, SF Mono, Courier
MONOSPACE_ADVANCE = 0.602


def _wait_for_math(page, timeout_ms: int = 10000) -> None:
    """Wait until MathJax (if the page loaded it) has typeset the page."""
    with contextlib.suppress(Exception):  # a page whose MathJax throws: the math check reports it
        page.evaluate("(t) => (window.MathJax && MathJax.startup && MathJax.startup.promise)"
                      " ? Promise.race([MathJax.startup.promise.then(() => true),"
                      " new Promise(r => setTimeout(() => r(false), t))]) : false", timeout_ms)


def _reader_problems(page, rel: str) -> list:
    """What a reader would see as broken on the page: raw markup, leaks, unusable layout (tables
    and equations clipped at the right, a chapter's card and objectives below the fold)."""
    out = []
    prose = page.evaluate(_TEXT_JS, "pre, code, script, style, mjx-container, .highlight, .MathJax")
    m = RAW_TABLE.search(prose)
    if m:
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
            out.append(f"a figure without a caption: {image_name(src)}")
        elif chapter and not numbered:
            out.append(f"a figure without a number: {image_name(src)}")
    text = page.evaluate(_TEXT_JS, "script, style")
    for pattern, what in ((ABSOLUTE_PATH, "an absolute path"), (CACHE_KEY, "a cache key")):
        found = sorted(set(pattern.findall(text)))
        if found:
            out.append(f"{what} in the page text: {', '.join(found[:3])}")
    for line in page.evaluate(_OVERFLOW_JS, MONOSPACE_ADVANCE):
        out.append(f"a code block wider than the page (scrolls sideways): {line!r}...")
    out += _clipped(page, phone=False)
    if chapter:
        height = page.evaluate(_LENGTH_JS)
        if height > MAX_SCREENS * SCREEN_PX:
            out.append(f"a chapter page {height / SCREEN_PX:.1f} screens long, over {MAX_SCREENS} "
                       f"({height:.0f} px at {WINDOW_PX} x {SCREEN_PX} px): cut it into pages at a level-1 "
                       f"heading, or tighten it")
    if re.match(r"^\d\d_[^-]+\.html$", rel.rsplit("/", 1)[-1]):  # a chapter's first page
        card, objectives = page.evaluate(_FIRST_SCREEN_JS)
        for name, top in (("the chapter's time card (reading and running times)", card),
                          ("the learning objectives", objectives)):
            if top is None:
                out.append(f"{name}: not on the page")
            elif top > SCREEN_PX:
                out.append(f"{name}: {top:.0f} px down, not on the first screen ({SCREEN_PX} px)")
    return out


_CLIPPED_JS = """([mark, phone]) => {
  const col = (document.querySelector('article.bd-article') || document.querySelector('main')).getBoundingClientRect();
  const out = [];
  const items = [...document.querySelectorAll('main table')].map(e => ['table', e])
    .concat([...document.querySelectorAll('main mjx-container[display="true"] > mjx-math, main div.math')]
      .map(e => ['display equation', e]));
  for (const [what, el] of items) {
    const r = el.getBoundingClientRect();
    if (!r.width || el.closest('.bd-sidebar-primary, .bd-sidebar-secondary')) continue;
    if (what === 'display equation' && el.matches('div.math') && el.querySelector('mjx-container')) continue;
    let a = el.parentElement, clip = null;
    while (a && a !== document.body) {
      const ox = getComputedStyle(a).overflowX;
      if (ox !== 'visible') { clip = a; break; }
      a = a.parentElement;
    }
    const text = (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 50);
    const scrolls = clip && ['auto', 'scroll'].includes(getComputedStyle(clip).overflowX);
    const edge = clip ? clip.getBoundingClientRect() : col;
    const room = Math.min(col.right, edge.right) - Math.max(col.left, edge.left);
    const wide = r.width > room + 1 || (!scrolls && r.right > edge.right + 1);
    if (!wide) continue;
    const by = Math.round(r.width - room);
    if (what === 'display equation' && !phone) { out.push([what, 'wide', by, text]); continue; }
    if (!scrolls) { out.push([what, clip ? 'clipped' : 'past', Math.round(r.right - edge.right), text]); continue; }
    const box = el.closest('.' + mark);
    const hint = box ? getComputedStyle(box, '::before').content : 'none';
    if (!box || !hint || hint === 'none' || hint === 'normal' || hint === '""') out.push([what, 'unmarked', by, text]);
  }
  return out;
}"""
_LENGTH_JS = """() => {
  const a = document.querySelector('article.bd-article') || document.querySelector('main');
  return a ? a.getBoundingClientRect().height : document.documentElement.scrollHeight;
}"""
_FIRST_SCREEN_JS = """() => {
  const top = e => e ? e.getBoundingClientRect().top + window.scrollY : null;
  const card = document.querySelector('main .mlmbook-card');
  const obj = [...document.querySelectorAll('main .admonition-title')]
    .find(t => /learning objectives/i.test(t.textContent));
  return [top(card), top(obj)];
}"""


def _clipped(page, phone: bool) -> list:
    """Tables and display equations wider than the column, clipped, or past its edge (a wide
    display equation fails even where it scrolls, except at a phone's width)."""
    out = []
    for what, how, by, text in page.evaluate(_CLIPPED_JS, [SCROLL_MARK, phone]):
        if how == "wide":
            out.append(f"a {what} wider than the column by {by} px (break it over lines, e.g. with aligned, "
                       f"or shorten it): {text!r}")
        elif how == "unmarked":
            out.append(f"a {what} wider than the column by {by} px scrolls sideways without saying so (show it "
                       f"with mlmbook.tables.table, or in a box of class {SCROLL_MARK}; or split it): {text!r}")
        else:
            where = ("clipped at the right edge of its box" if how == "clipped"
                     else "running past the column's right edge")
            out.append(f"a {what} {where} by {by} px (make it scroll in a box marked as scrolling, or split it): "
                       f"{text!r}")
    return out


_PAST_EDGE_JS = """() => {
  const main = document.querySelector('main');
  const edge = document.documentElement.clientWidth;
  const boxed = el => { for (let a = el.parentElement; a && a !== main; a = a.parentElement)
    if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
  const past = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.right > edge + 1; };
  const out = [];
  for (const el of (main ? main.querySelectorAll('*') : [])) {
    const parent = el.parentElement;
    if (el.closest('.bd-sidebar-primary, .bd-sidebar-secondary, .mlmbook-zoom-overlay')) continue;  // drawers
    if (getComputedStyle(el).visibility === 'hidden') continue;
    if (!past(el) || boxed(el) || el.closest('table, mjx-container[display="true"]')) continue;
    if (parent && parent !== main && past(parent) && !boxed(parent)) continue;      // its parent is reported
    out.push([el.tagName.toLowerCase(), Math.round(el.getBoundingClientRect().right - edge),
              (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 50)]);
  }
  return [out, document.documentElement.scrollWidth - edge];
}"""


def _phone_problems(page, html: Path, base: str) -> list:
    """What a reader meets at :data:`PHONE_PX` (see the module docstring)."""
    out = _clipped(page, phone=True)
    elements, extra = page.evaluate(_PAST_EDGE_JS)
    for tag, by, text in elements:
        out.append(f"a {tag} past the right edge of the screen by {by} px, where nothing scrolls to it "
                   f"(let it wrap, or put it in a box of class {SCROLL_MARK}): {text!r}")
    if extra > 1 and not elements:
        out.append(f"the page is {extra} px wider than the screen (something outside the article runs past "
                   f"the right edge)")
    return out + figure_text_problems(page, html, base, phone=True)
