"""What a reader reads on a page, checked in the browser (part of :mod:`.sitecheck`).

:func:`text_problems` gathers a page's prose, outputs and code inputs through the browser (the text a
reader sees: code and formulas left out of the prose) and fails on log lines and printed dicts, a
``# noqa`` in visible code, template residue — ``seed(s)``, ``nan``/``inf`` printed as numbers, zero
in exponent notation ``0.0e+00``, a negative zero ``-0.000``, ``1 verdicts`` / ``at most 1 verdict``,
a doubled word, math as plain text (``p^(1/T)``, ``p_T``, ``m H_m``, ``n log n``), a paragraph almost
entirely bold —, on a chapter page an "indistinguishable" without its detectable effect in its
sentence, and "not drawn for this model" said of a figure the page draws.
"""
from __future__ import annotations

import re

__all__ = ["text_problems"]

CHAPTER = re.compile(r"^\d\d_")


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
               "piece", "case", "test", "point", "figure", "table", "exercise", "minute", "second", "nat",
               "bit", "time", "tree", "head", "candidate", "draw", "width", "setting")
ONE_PLURAL = re.compile(r"(?<![\w.,−-])1 (?:" + "|".join(COUNT_NOUNS) + r")s\b")     # 1 verdicts
AT_MOST_DIGIT = re.compile(r"\bat (?:most|least) 1 [a-z]+")                          # at most 1 verdict
DOUBLED_WORD = re.compile(r"\b([A-Za-z]{2,})\s+\1\b", re.I)                          # the the
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
                                 (DOUBLED_WORD, "a doubled word", parts["running"])):
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
