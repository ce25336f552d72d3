"""Guard: every figure that compares methods with intervals says how many sentences (pairs, targets)
and, where seeds enter, how many seeds it rests on.

The rule, so that it is robust to how a figure is drawn:

* a figure *compares with intervals* when its cell draws intervals (``errorbar``, ``yerr=``,
  ``xerr=``, ``fill_between``) or its caption speaks of intervals, standard deviations,
  whiskers or a regime map;
* it *states its sample size* when its caption has a count next to a unit — a number, a number
  word or a ``{glue:text}`` value, then at most three words, then ``sentences``, ``pairs`` or
  ``targets`` — or cites a recorded ``*_sizes`` sentence, or when a title/label f-string of its
  cell puts a computed value before such a unit (the count is then drawn on the figure);
* where the caption or the cell mentions seeds, the number of seeds is stated the same way
  (``three training seeds``, ``seeds 1 and 2``, ``{glue:text}`n_seeds` seeds``, or an f-string).
"""
import re
from pathlib import Path

import jupytext
import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(BOOK.glob("0[0-4]_*.md"))

COUNT = r"(?:\d[\d,]*|\{glue:text\}`[^`]+`|one|two|three|four|five|six|seven|eight|nine|ten|twelve)"
SAMPLE = r"(?:sentences|pairs|targets)"
INTERVAL_CODE = re.compile(r"errorbar\(|\byerr=|\bxerr=|fill_between\(")
INTERVAL_CAPTION = re.compile(r"interval|standard deviation|whisker|regime map", re.IGNORECASE)


def _stated(unit: str, caption: str, code: str) -> bool:
    in_caption = re.search(rf"{COUNT}(?:\s+[\w-]+){{0,3}}\s+{unit}\b", caption) or (
        unit == "seeds" and re.search(r"\bseeds?\s+\d", caption))
    drawn = re.search(rf"""f(["'])[^"'\n]*\{{[^}}]+\}}[^"'\n]*\b{unit}\b""", code) or (
        unit == "seeds" and re.search(r"""f(["'])[^"'\n]*\bseeds\b[^"'\n]*\{""", code))
    return bool(in_caption or drawn)


def problems(figures) -> list[str]:
    """The comparison figures among ``(name, caption, code)`` that do not state their sizes."""
    bad = []
    for name, caption, code in figures:
        caption = " ".join(caption.split())
        if not (INTERVAL_CODE.search(code) or INTERVAL_CAPTION.search(caption)):
            continue
        if not (_stated(SAMPLE, caption, code) or re.search(r"\{glue:text\}`\w+_sizes`", caption)):
            bad.append(f"{name}: no number of sentences/pairs/targets")
        if re.search(r"\bseeds\b", caption + code) and not _stated("seeds", caption, code):
            bad.append(f"{name}: seeds without their number")
    return bad


def figures(chapter: Path) -> list[tuple[str, str, str]]:
    out = []
    for cell in jupytext.read(chapter).cells:
        fig = cell.metadata.get("mystnb", {}).get("figure")
        if cell.cell_type == "code" and fig:
            out.append((fig.get("name", "?"), str(fig.get("caption", "")), cell.source))
    return out


def test_the_check_can_fail():
    code = 'ax.errorbar(x, y, xerr=e)\nax.set_title("UUAS")'
    assert problems([("f", "UUAS of every parser with 95 % bootstrap intervals.", code)])
    no_seeds = [("f", "Bars are 95 % intervals over seeds, on 40 sentences.", "")]
    assert problems(no_seeds) == ["f: seeds without their number"]
    assert not problems([("f", "UUAS, 95 % intervals over {glue:text}`n_corpus` sentences.", code)])
    assert not problems([("f", "UUAS with intervals.", code + '\nax.set_title(f"{n} sentences")')])
    assert not problems([("f", "A histogram.", "ax.hist(x)")])       # compares nothing with intervals


def test_the_rule_finds_the_comparison_figures():
    found = {c.stem: sum(INTERVAL_CODE.search(code) is not None or INTERVAL_CAPTION.search(cap) is not None
                         for _, cap, code in figures(c)) for c in CHAPTERS}
    assert all(found[stem] >= 1 for stem in found if stem[:2] in {"01", "02", "03", "04"}), found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_comparison_figures_state_their_sample_sizes(chapter):
    bad = problems(figures(chapter))
    assert not bad, f"{chapter.name}: {bad}"
