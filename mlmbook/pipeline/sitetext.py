"""What a reader reads on a page, checked in the browser (part of :mod:`.sitecheck`):
:func:`text_problems` fails a page's prose, outputs and visible code on log lines, printed dicts,
``# noqa``, template residue (the patterns below), an "indistinguishable" without its detectable
effect, and "not drawn for this model" said of a drawn figure; :func:`figure_text_problems`
measures the text inside its figures.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["text_problems", "figure_text_problems", "image_name", "PHONE_MIN_TEXT_PX", "ZOOM_MARK"]

# the smallest figure text on a phone, unless a tap opens the figure at full size
PHONE_MIN_TEXT_PX = 9
ZOOM_MARK = "mlmbook-zoomable"   # an image a tap opens at full size (mlmbook.js)

CHAPTER = re.compile(r"^\d\d_")
LOG_LINE = re.compile(r"\btook \d+(?:\.\d+)? ?s\b")
VERDICT_LOG = re.compile(r"(?:→|->)\s*(?:above|below|indistinguishable|equivalent|undefined)\b")
PRINTED_DICT = re.compile(r"\{\s*(?:'[^'\n]{1,60}'|\"[^\"\n]{1,60}\"|-?\d+(?:\.\d+)?)\s*:\s*\S")
NOQA = re.compile(r"#\s*noqa\b")
PLURAL_HACK = re.compile(r"\b\w+\(s\)")
NON_NUMBER = re.compile(r"(?<![\w.\\])(?:nan|inf|-inf|NaN|Inf)(?![\w(])")
INDISTINGUISHABLE = re.compile(r"indistinguishable", re.I)
DETECTABLE = re.compile(r"would have (?:been )?detected")   # Verdict.text and Family.statement
# a table cell's form, under a header that says what it means: "indistinguishable; detectable 0.013"
TABLE_DETECTABLE = re.compile(r"\s*[;,(]\s*detectable\s+[-+]?\d")
NOT_DRAWN = "not drawn for this model"

_PARTS_JS = """() => {
  const text = sel => [...document.querySelectorAll(sel)].filter(e => !e.closest('.bd-sidebar-primary'))
    .map(e => e.innerText);
  const bareText = e => { const c = e.cloneNode(true);      // the words, without code and formulas
    c.querySelectorAll('code, mjx-container, .math, script, style').forEach(x => x.remove());
    c.querySelectorAll('td, th').forEach(x => x.append(' '));       // a row's cells read apart, not run together
    return c.textContent.replace(/\\s+/g, ' ').trim(); };
  const prose = [...document.querySelectorAll('main p, main li, main dd, main figcaption, main caption, main tr')]
    .filter(e => !e.closest('pre, .cell_input, .highlight, .cell_output pre, .bd-sidebar-primary, .bd-toc'))
    .filter(e => !e.querySelector('p, li, tr'))
    .map(bareText).filter(t => t);
  const bold = [...document.querySelectorAll('main p')]
    .filter(e => !e.closest('pre, .cell_input, .highlight, .bd-sidebar-primary, .admonition-title, .prev-next-area'))
    .map(p => { const all = p.innerText.replace(/\\s+/g, ' ').trim();
      let b = 0;                                  // characters drawn bold, however they got bold
      const w = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) {
        const el = w.currentNode.parentElement;
        if (el && !el.closest('mjx-container') && parseInt(getComputedStyle(el).fontWeight) >= 600)
          b += w.currentNode.nodeValue.replace(/\\s+/g, ' ').length; }
      return [all.slice(0, 80), all.length, b]; });
  const running = [...document.querySelectorAll('main p, main li, main dd, main figcaption, main caption')]
    .filter(e => !e.closest('pre, .cell_input, .highlight, .cell_output pre, .bd-sidebar-primary, .bd-toc, table'))
    .filter(e => !e.querySelector('p, li'))
    .map(bareText).filter(t => t);
  return {outputs: text('main .cell_output'), inputs: text('main .cell_input'), prose, running, bold};
}"""
PLAIN_MATH = re.compile(r"\w\^[({]|\w_\{|\\(?:frac|setminus|mid|log|sum)\b"
                        r"|(?<![\w.-])[A-Za-z]_[A-Za-z0-9](?!\w)"         # p_T, H_m, x_i
                        r"|(?<![\w.-])[a-z] log [a-z](?!\w)")              # n log n
ZERO_EXPONENT = re.compile(r"(?<![\w.])[-+−]?0(?:\.0+)?[eE][-+−]?0+(?!\d)")     # 0.0e+00
NEGATIVE_ZERO = re.compile(r"(?<![\w.])[-−]0(?:\.0+)?(?!\d)(?!\.\d)")             # -0.000
COUNT_NOUNS = ("verdict", "question", "answer", "sentence", "seed", "model", "unit", "pair", "edge", "word",
               "position", "step", "sweep", "target", "rung", "run", "chain", "sample", "layer", "token",
               "piece", "case", "test", "point", "figure", "table", "exercise", "minute", "second",
               "nat", "bit", "time", "tree", "head", "candidate", "draw", "width", "setting")
ONE_PLURAL = re.compile(r"(?<![\w.,−-])1 (?:" + "|".join(COUNT_NOUNS) + r")s\b")     # 1 verdicts
AT_MOST_DIGIT = re.compile(r"\bat (?:most|least) 1 [a-z]+")  # at most 1 verdict
DOUBLED_WORD = re.compile(r"\b([A-Za-z]{2,})\s+\1\b", re.I)                          # the the
# 0.00753365, not a DOI's /1218955.1219016
UNROUNDED = re.compile(r"(?<![\w.,/])[-+−]?\d+\.\d{6,}(?![\d])")
ZERO_PERCENT = re.compile(r"(?<![\w.,−-])0(?:\.0+)? ?%")  # only 0% of
ALL_OF_ALL = re.compile(r"(?<![\w.,])(\d[\d,]*) of the \1\b")  # 3 of the 3
ZERO_INTERVAL = re.compile(r"(?<![\w.])[-+−]?0\.0+ \[[-+−]?0\.0+,")  # 0.000 [0.000,
MOSTLY_BOLD = 0.5
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"“])")
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


def text_problems(page, rel: str) -> list:
    """Log lines, printed dicts, template residue, verdicts without their detectable effect."""
    out = []
    parts = page.evaluate(_PARTS_JS)
    prose, outputs, inputs = parts["prose"], parts["outputs"], parts["inputs"]
    shown = prose + outputs
    chapter = bool(CHAPTER.match(rel.rsplit("/", 1)[-1]))
    timed = shown if chapter else outputs      # a developers' page may say what a benchmark took
    for pattern, what, texts in ((LOG_LINE, "a log line (a timing)", timed),
                                 (PLURAL_HACK, "a template plural", shown),
                                 (NON_NUMBER, "a number printed as nan or inf", shown),
                                 (ZERO_EXPONENT, "zero in exponent notation (write 0)", shown),
                                 (NEGATIVE_ZERO, "a negative zero (write 0.000)", shown),
                                 (ONE_PLURAL, "a count of one with a plural noun", shown),
                                 (AT_MOST_DIGIT, "a template count (write 'at most one ...')", shown),
                                 (DOUBLED_WORD, "a doubled word", parts["running"]),
                                 (UNROUNDED, "an unrounded number (round it to the digits it has)", shown),
                                 (ZERO_PERCENT, "a share of 0% (say 'none', or give the count)", shown),
                                 (ALL_OF_ALL, "a count 'N of the N' (say 'all N', or 'N of N')", shown),
                                 (ZERO_INTERVAL, "an estimate and interval rounded to zero (show the digits "
                                                 "that differ, or the bound)", shown)):
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
            for sentence in filter(str.strip, _SENTENCE.split(block)):
                bare = [m for m in INDISTINGUISHABLE.finditer(sentence)
                        if not TABLE_DETECTABLE.match(sentence, m.end())]
                if bare and not DETECTABLE.search(sentence):
                    out.append(f"'indistinguishable' without its detectable effect ('... would have been "
                               f"detected') in its sentence: {sentence[:140]!r}")
    for figure in page.evaluate(_NOT_DRAWN_JS, NOT_DRAWN):
        out.append(f"the text says a figure is {NOT_DRAWN!r}, but it is drawn on the page: {figure}")
    return out


def image_name(src: str) -> str:
    """How a problem report names an image: its file name, or "an inline (data:) image"."""
    return "an inline (data:) image" if src.startswith("data:") else src.rsplit("/", 1)[-1]


_IMAGES_JS = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  return [...document.querySelectorAll('main img')]
    .filter(i => !i.closest('.navbar-brand, .bd-header, .bd-sidebar-primary, a.reference.external'))
    .map((i, k) => { i.dataset.mlmbookImage = k;
      return [i.currentSrc || i.src, i.getAttribute('src') || '', i.naturalWidth,
              i.getBoundingClientRect().width, k]; });
}"""
_ZOOM_JS = """async ([k, mark]) => {
  const img = document.querySelector(`main img.${mark}[data-mlmbook-image="${k}"]`);
  if (!img) return 0;
  img.click();
  const over = document.querySelector('.mlmbook-zoom-overlay');
  const big = over && over.querySelector('img');
  if (!big) return 0;
  try { await big.decode(); } catch (e) { return 0; }
  const width = big.getBoundingClientRect().width;
  over.click();
  return document.querySelector('.mlmbook-zoom-overlay') ? -1 : width;   // -1: the view does not close
}"""


def figure_text_problems(page, html: Path, base: str, phone: bool = False) -> list:
    """Figures whose smallest text a reader meets under MIN_TEXT_PX (see :mod:`.sitecheck`), or with
    ``phone`` under :data:`PHONE_MIN_TEXT_PX` unless a tap enlarges it (no legend, label checks)."""
    from ..plotting import MIN_FONT_PT, MIN_TEXT_PX
    from ..plotting.record import png_record, rendered_text_px

    least = PHONE_MIN_TEXT_PX if phone else MIN_TEXT_PX
    zoomed: dict = {}

    def enlarged(k, natural, font, dpi) -> bool:
        if k not in zoomed:
            zoomed[k] = page.evaluate(_ZOOM_JS, [k, ZOOM_MARK])
        return zoomed[k] > 0 and rendered_text_px(font, dpi, natural, zoomed[k]) >= MIN_TEXT_PX - 1e-6

    images = page.evaluate(_IMAGES_JS)
    page.wait_for_timeout(100)                         # images of unfolded solutions decode
    images = page.evaluate(_IMAGES_JS)
    out = []
    for url, src, natural, shown, k in images:
        if not natural or not shown:
            continue
        if url.startswith("data:"):
            head, _, data = url.partition(",")
            data = base64.b64decode(data) if ";base64" in head else None
        else:                                          # an image of the site itself, or none
            path = Path(html) / unquote(urlparse(url).path).lstrip("/")
            data = path.read_bytes() if url.startswith(base) and path.is_file() else None
        record = png_record(data) if data else {}
        if not record.get("dpi"):
            continue  # not a PNG that says its resolution (an SVG, a photo)
        assumed = record.get("min_font_pt") is None
        font = MIN_FONT_PT if assumed else record["min_font_pt"]
        if font <= 0:
            continue                                   # a figure without text
        px = rendered_text_px(font, record["dpi"], natural, shown)
        if px < least - 1e-6 and not (phone and enlarged(k, natural, font, record["dpi"])):
            why = (f"assumed {MIN_FONT_PT} pt: drawn outside plotting.use_style" if assumed
                   else f"smallest font {font:g} pt")
            fix = (f"let a tap open it at full size (mlmbook.js gives figures the class {ZOOM_MARK})" if phone
                   else f"keep figures within plotting.column_width() and 2 panels per row, fonts >= "
                        f"{MIN_FONT_PT} pt")
            out.append(f"figure text {px:.1f} px on the page, under {least} px ({image_name(src)}: {why}, "
                       f"{natural} px wide shown at {shown:.0f} px): {fix}")
        tick = record.get("min_tick_pt")
        if tick is not None and tick > 0:
            tick_px = rendered_text_px(tick, record["dpi"], natural, shown)
            if tick_px < least - 1e-6 and not (phone and enlarged(k, natural, tick, record["dpi"])):
                out.append(f"tick text {tick_px:.1f} px on the page, under {least} px ({image_name(src)}: its "
                           f"smallest tick glyph is {tick:g} pt, a mathtext exponent or subscript): label log "
                           f"axes in plain numbers (plotting.use_style does), no $...$ in tick labels")
        if not phone and record.get("labels_over_data", 0) > 0:
            out.append(f"point labels over {record['labels_over_data']} data point(s), error bar(s) or other "
                       f"label(s) ({image_name(src)}): place them with plotting.place_labels(ax, points, names)")
        if not phone and record.get("legend_over_data", 0) > 0:
            out.append(f"a legend over {record['legend_over_data']} plotted data point(s) ({image_name(src)}): place "
                       f"it with plotting.place_legend(ax)")
    return out
