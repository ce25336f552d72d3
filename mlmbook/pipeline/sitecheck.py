"""Check the rendered site the way a reader meets it: every page in a real (headless) browser.

:func:`check_site` serves a built site on localhost, opens each page in Debian's Chromium
through Playwright at 1280 x 900 px, with every request to another host refused (the network
unplugged), and reports what a reader would notice:

* broken things: error or traceback outputs, images that do not load, table-of-contents links
  that lead nowhere, console errors raised by the book's own scripts, any request to another host;
* raw markup: markdown tables left as pipes (``|---``), math MathJax did not render;
* figures: an image without a captioned figure around it (and, on a chapter page, without a
  number), a chapter without the static figure of its explorer, **figure text under 10 px** at
  the width the page shows it (below);
* layout: a code block wider than its box (measured, and estimated at the 0.6-em advance of
  common monospace fonts, so the result does not depend on the fonts installed), **a table or
  display equation clipped at its right edge** (neither scrolling in its own box nor inside the
  column), **a chapter whose time card and learning objectives are not on the first screen**;
* text a reader should never see: an absolute path or a cache key; **log-like output** (``took
  1.2 s`` on a chapter page or in any output, a printed dict, a printed verdict line ``… → above``,
  ``# noqa``); **template residue** (``seed(s)``, ``nan``/``inf`` printed
  as numbers, math as plain text such as ``p^(1/T)``, a paragraph almost entirely bold); on a
  chapter page, **an "indistinguishable" not followed in its sentence by its
  detectable effect** ("would have been detected"); **"not drawn for this model" said of a figure
  that is on the page**.

Figure text is measured from what the book records at draw time: every figure reaches the page
through :func:`mlmbook.plotting.figure_png`, which writes the smallest font it drew (points) and
its dpi into the PNG; the check reads them with :func:`mlmbook.plotting.png_record` and takes the
image's pixel width and the width the browser shows it at, so the smallest text on the page is
``font_pt * dpi / 72 * shown / natural`` CSS pixels. An image without that record (drawn outside
the book's style) is assumed to use the book's smallest font, 9 pt, at the dpi its PNG states.
Images in folded solutions are unfolded for the measurement.

It saves a full-page screenshot of every page for a person to look at.

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


def check_site(html: Path, screenshots: Path | None = None, chapters_need_explorer: bool = True,
               pages: list[str] | None = None) -> list:
    """Load every page of the site at ``html`` in headless Chromium; return the problems found.

    Parameters
    ----------
    html : path
        The built site (``_build/html``).
    screenshots : path, optional
        Where to save one PNG per page.
    chapters_need_explorer : bool
        Require each chapter page (``NN_slug.html``) to show an explorer's static figure.
    pages : list of str, optional
        Check only these pages (paths relative to ``html``, e.g. ``"book/00_toy_world.html"``).

    Returns
    -------
    list of str
        One line per problem, naming the page; empty when the site is fine.
    """
    from playwright.sync_api import sync_playwright

    html = Path(html)
    found = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).parts[0].startswith(("_", "."))
                   and p.name not in ("search.html", "genindex.html")
                   and not _is_redirect(p))                 # index.html -> book/intro.html: checked there
    problems = [f"{rel}: no such page" for rel in sorted(set(pages or ()) - set(found))]
    pages = found if pages is None else [rel for rel in found if rel in set(pages)]
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
            problems += [f"{rel}: {p}" for p in _layout_problems(page, rel)]
            problems += [f"{rel}: {p}" for p in _text_problems(page, rel)]
            problems += [f"{rel}: request to another host: {u[:120]}" for u in dict.fromkeys(foreign)]
            own = [t for kind, t, where in console if kind == "error" and (not where or where.startswith(base))
                   and not where.endswith("/favicon.ico")        # the browser's own request, not the book's
                   and "net::ERR_FAILED" not in t]               # a refused foreign request, reported above
            problems += [f"{rel}: console error: {t[:200]}" for t in own]
            if screenshots:
                page.screenshot(path=str(Path(screenshots) / (rel.replace("/", "__")[:-5] + ".png")), full_page=True)
            problems += [f"{rel}: {p}" for p in _figure_text_problems(page, html, base)]   # unfolds solutions
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
_OVERFLOW_JS = """(advance) => [...document.querySelectorAll('main pre')]
  .filter(p => p.offsetParent !== null).filter(p => {
    if (p.scrollWidth > p.clientWidth + 2) return true;
    const cs = getComputedStyle(p);
    if (!cs.whiteSpace.startsWith('pre') || cs.whiteSpace === 'pre-wrap' || cs.whiteSpace === 'pre-line') return false;
    const longest = Math.max(0, ...p.textContent.split('\\n').map(l => l.replace(/\\s+$/, '').length));
    const room = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return longest * advance * parseFloat(cs.fontSize) > room + 1; })
  .map(p => (p.textContent.split('\\n').sort((a, b) => b.length - a.length)[0] || '').slice(0, 60))"""
MONOSPACE_ADVANCE = 0.602   # character width / font size of DejaVu Sans Mono, Menlo, SF Mono, Courier


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
    for line in page.evaluate(_OVERFLOW_JS, MONOSPACE_ADVANCE):
        out.append(f"a code block wider than the page (scrolls sideways): {line!r}...")
    return out


# --------------------------------------------------------------------------- layout a reader meets

FIRST_SCREEN_PX = 900   # the window's height: what a reader sees before scrolling

_CLIPPED_JS = """() => {
  const col = (document.querySelector('article.bd-article') || document.querySelector('main')).getBoundingClientRect();
  const out = [];
  const items = [...document.querySelectorAll('main table')].map(e => ['table', e])
    .concat([...document.querySelectorAll('main mjx-container[display="true"] > mjx-math, main div.math')]
      .map(e => ['display equation', e]));
  for (const [what, el] of items) {
    const r = el.getBoundingClientRect();
    if (!r.width || el.closest('.bd-sidebar-primary, .bd-sidebar-secondary')) continue;
    let a = el.parentElement, clip = null;
    while (a && a !== document.body) {
      const ox = getComputedStyle(a).overflowX;
      if (ox !== 'visible') { clip = a; break; }
      a = a.parentElement;
    }
    const text = (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 50);
    if (clip && ['auto', 'scroll'].includes(getComputedStyle(clip).overflowX)) continue;  // scrolls: reachable
    const edge = clip ? clip.getBoundingClientRect().right : col.right;
    if (r.right > edge + 1) out.push([what, Math.round(r.right - edge), text, !!clip]);
  }
  return out;
}"""
_FIRST_SCREEN_JS = """() => {
  const top = e => e ? e.getBoundingClientRect().top + window.scrollY : null;
  const card = document.querySelector('main .mlmbook-card');
  const obj = [...document.querySelectorAll('main .admonition-title')]
    .find(t => /learning objectives/i.test(t.textContent));
  return [top(card), top(obj)];
}"""


def _layout_problems(page, rel: str) -> list:
    """Tables and equations clipped at the right; a chapter's card and objectives below the fold."""
    out = []
    for what, by, text, clipped in page.evaluate(_CLIPPED_JS):
        where = "clipped at the right edge of its box" if clipped else "running past the column's right edge"
        out.append(f"a {what} {where} by {by} px (make it scroll in its own box, or split it): {text!r}")
    if CHAPTER.match(rel.rsplit("/", 1)[-1]):
        card, objectives = page.evaluate(_FIRST_SCREEN_JS)
        for name, top in (("the chapter's time card (reading and running times)", card),
                          ("the learning objectives", objectives)):
            if top is None:
                out.append(f"{name}: not on the page")
            elif top > FIRST_SCREEN_PX:
                out.append(f"{name}: {top:.0f} px down, not on the first screen ({FIRST_SCREEN_PX} px)")
    return out


# --------------------------------------------------------------------------- text a reader meets

LOG_LINE = re.compile(r"\btook \d+(?:\.\d+)? ?s\b")
VERDICT_LOG = re.compile(r"(?:→|->)\s*(?:above|below|indistinguishable|equivalent|undefined)\b")
PRINTED_DICT = re.compile(r"\{\s*(?:'[^'\n]{1,60}'|\"[^\"\n]{1,60}\"|-?\d+(?:\.\d+)?)\s*:\s*\S")
NOQA = re.compile(r"#\s*noqa\b")
PLURAL_HACK = re.compile(r"\b\w+\(s\)")
NON_NUMBER = re.compile(r"(?<![\w.\\])(?:nan|inf|-inf|NaN|Inf)(?![\w(])")
INDISTINGUISHABLE = re.compile(r"indistinguishable", re.I)
DETECTABLE = re.compile(r"would have (?:been )?detected")   # Verdict.text and Family.statement
TABLE_DETECTABLE = re.compile(r"\s*[;,(]\s*detectable\s+[-+]?\d")
"""A table cell's compact form, under a header that says what "detectable" means: "indistinguishable;
detectable 0.013"."""
NOT_DRAWN = "not drawn for this model"

_PARTS_JS = """() => {
  const text = sel => [...document.querySelectorAll(sel)].filter(e => !e.closest('.bd-sidebar-primary'))
    .map(e => e.innerText);
  const bareText = e => { const c = e.cloneNode(true);      // the words, without code and formulas
    c.querySelectorAll('code, mjx-container, .math, script, style').forEach(x => x.remove());
    return c.textContent.replace(/\\s+/g, ' ').trim(); };
  const prose = [...document.querySelectorAll('main p, main li, main dd, main figcaption, main caption, main tr')]
    .filter(e => !e.closest('pre, .cell_input, .highlight, .cell_output pre, .bd-sidebar-primary, .bd-toc'))
    .filter(e => !e.querySelector('p, li, tr'))
    .map(bareText).filter(t => t);
  const bold = [...document.querySelectorAll('main p')]
    .filter(e => !e.closest('pre, .cell_input, .highlight, .bd-sidebar-primary, .admonition-title'))
    .map(p => { const all = p.innerText.replace(/\\s+/g, ' ').trim();
      let b = 0;                                  // characters drawn bold, however they got bold
      const w = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) {
        const el = w.currentNode.parentElement;
        if (el && !el.closest('mjx-container') && parseInt(getComputedStyle(el).fontWeight) >= 600)
          b += w.currentNode.nodeValue.replace(/\\s+/g, ' ').length; }
      return [all.slice(0, 80), all.length, b]; });
  return {outputs: text('main .cell_output'), inputs: text('main .cell_input'), prose, bold};
}"""
PLAIN_MATH = re.compile(r"\w\^[({]|\w_\{|\\(?:frac|setminus|mid|log|sum)\b")
MOSTLY_BOLD = 0.5
_NOT_DRAWN_JS = """(phrase) => {
  const out = [];
  const drawn = el => el && [...el.querySelectorAll('img')].some(i => i.complete && i.naturalWidth > 0);
  for (const span of document.querySelectorAll('main .mlmbook-undrawn[data-figure]')) {
    const fig = document.getElementById(span.dataset.figure);
    if (fig && drawn(fig.closest('figure, .cell') || fig)) out.push(span.dataset.figure);
  }
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.nodeValue.includes(phrase) || node.parentElement.closest('.mlmbook-undrawn')) continue;
    const section = node.parentElement.closest('section') || document.querySelector('main');
    if (drawn(section)) out.push('(unmarked) ' + node.nodeValue.trim().slice(0, 60));
  }
  return out;
}"""


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(*\"“])", text) if s.strip()]


def _text_problems(page, rel: str) -> list:
    """Log lines, printed dicts, template residue, verdicts without their detectable effect."""
    out = []
    parts = page.evaluate(_PARTS_JS)
    prose, outputs, inputs = parts["prose"], parts["outputs"], parts["inputs"]
    shown = prose + outputs
    chapter = bool(CHAPTER.match(rel.rsplit("/", 1)[-1]))
    timed = shown if chapter else outputs      # a developers' page may say what a benchmark took
    for pattern, what, texts in ((LOG_LINE, "a log line (a timing)", timed),
                                 (PLURAL_HACK, "a template plural", shown),
                                 (NON_NUMBER, "a number printed as nan or inf", shown)):
        found = sorted({m.group(0) for t in texts for m in pattern.finditer(t)})
        if found:
            out.append(f"{what} in the text: {', '.join(found[:3])}")
    for text, length, bold in parts["bold"]:
        if length > 60 and bold > MOSTLY_BOLD * length:
            out.append(f"a paragraph almost entirely bold (bold is for the key number): {text!r}")
    math = sorted({m.group(0) for t in prose for m in PLAIN_MATH.finditer(t)})
    if math:
        out.append(f"math written as plain text (write it as math, $p^{{1/T}}$): {', '.join(math[:3])}")
    logged = sorted({line.strip()[:70] for t in outputs for line in t.splitlines() if VERDICT_LOG.search(line)})
    if logged:
        out.append(f"a printed verdict log line (state it in a sentence): {logged[0]!r}")
    dicts = [t for t in outputs if PRINTED_DICT.search(t)]
    if dicts:
        m = PRINTED_DICT.search(dicts[0])
        out.append(f"a printed dict in an output (write a sentence or a table): "
                   f"{dicts[0][max(0, m.start() - 20):m.start() + 50]!r}")
    noqa = [line.strip() for t in inputs for line in t.splitlines() if NOQA.search(line)]
    if noqa:
        out.append(f"a linter comment (# noqa) in visible code: {noqa[0][:70]!r}")
    if chapter:
        for block in shown:
            for sentence in _sentences(block):
                bare = [m for m in INDISTINGUISHABLE.finditer(sentence)
                        if not TABLE_DETECTABLE.match(sentence, m.end())]
                if bare and not DETECTABLE.search(sentence):
                    out.append(f"'indistinguishable' without its detectable effect ('... would have been "
                               f"detected') in its sentence: {sentence[:140]!r}")
    for figure in page.evaluate(_NOT_DRAWN_JS, NOT_DRAWN):
        out.append(f"the text says a figure is {NOT_DRAWN!r}, but it is drawn on the page: {figure}")
    return out


# --------------------------------------------------------------------------- figure text

_IMAGES_JS = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  return [...document.querySelectorAll('main img')]
    .filter(i => !i.closest('.navbar-brand, .bd-header, .bd-sidebar-primary, a.reference.external'))
    .map(i => [i.currentSrc || i.src, i.getAttribute('src') || '', i.naturalWidth,
               i.getBoundingClientRect().width]);
}"""


def _image_bytes(url: str, html: Path, base: str) -> bytes | None:
    import base64

    if url.startswith("data:"):
        head, _, data = url.partition(",")
        return base64.b64decode(data) if ";base64" in head else None
    if not url.startswith(base):
        return None
    from urllib.parse import unquote

    path = html / unquote(urlparse(url).path).lstrip("/")
    return path.read_bytes() if path.is_file() else None


def _figure_text_problems(page, html: Path, base: str) -> list:
    """Figures whose smallest text a reader meets under MIN_TEXT_PX (see the module docstring)."""
    from ..plotting import MIN_FONT_PT, MIN_TEXT_PX, png_record, rendered_text_px

    images = page.evaluate(_IMAGES_JS)
    page.wait_for_timeout(100)                         # images of unfolded solutions decode
    images = page.evaluate(_IMAGES_JS)
    out = []
    for url, src, natural, shown in images:
        if not natural or not shown:
            continue
        data = _image_bytes(url, Path(html), base)
        record = png_record(data) if data else {}
        if not record.get("dpi"):
            continue                                   # not a PNG that says its resolution (an SVG, a photo)
        font = record.get("min_font_pt")
        assumed = font is None
        if assumed:
            font = MIN_FONT_PT
        if font <= 0:
            continue                                   # a figure without text
        px = rendered_text_px(font, record["dpi"], natural, shown)
        if px < MIN_TEXT_PX - 1e-6:
            why = (f"assumed {MIN_FONT_PT} pt: drawn outside plotting.use_style" if assumed
                   else f"smallest font {font:g} pt")
            out.append(f"figure text {px:.1f} px on the page, under {MIN_TEXT_PX} px ({_name(src)}: {why}, "
                       f"{natural} px wide shown at {shown:.0f} px): keep figures within "
                       f"plotting.column_width() and 2 panels per row, fonts >= {MIN_FONT_PT} pt")
    return out
