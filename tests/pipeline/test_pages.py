"""Issue 13, for every chapter: a visible code cell shows one step in about 25 lines, and every
figure cell carries a numbered, captioned figure. (Line width: ``test_code_width.py``.)"""
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
MAX_CELL = 25
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(?:---\n(.*?)\n---\n)?(.*?)\n```", re.S)


def page_problems(src: str, max_cell: int = MAX_CELL) -> list[str]:
    """Visible code cells over ``max_cell`` lines, and figure cells (``plt.show()`` or an
    explorer) without a named, captioned ``mystnb`` figure."""
    problems = []
    for head, body in CELL.findall(src):
        tags = re.findall(r"^:tags: \[(.*)\]$", body, re.M) + re.findall(r"^tags: \[(.*)\]$", head or "", re.M)
        code = [line for line in body.split("\n") if not line.startswith(":")]
        while code and not code[0].strip():
            code.pop(0)
        first = code[0][:50] if code else ""
        hidden = any(t in " ".join(tags) for t in ("remove-input", "remove-cell", "hide-input", "hide-cell"))
        if not hidden and len(code) > max_cell:
            problems.append(f"visible cell of {len(code)} lines: {first}")
        if ("plt.show()" in body or "explore(" in body) and not re.search(r"caption:.*name: fig-", head or "", re.S):
            problems.append(f"figure without a numbered caption: {first}")
    return problems


def test_the_check_can_fail():
    long_cell = "```{code-cell} ipython3\n" + "x = 1\n" * 30 + "```\n"
    figure = "```{code-cell} ipython3\nplt.show()\n```\n"
    assert page_problems(long_cell) == ["visible cell of 30 lines: x = 1"]
    assert page_problems(figure) == ["figure without a numbered caption: plt.show()"]
    hidden = "```{code-cell} ipython3\n:tags: [hide-input]\n" + "x = 1\n" * 30 + "```\n"
    assert page_problems(hidden) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_visible_cells_are_short_and_figures_captioned(chapter):
    problems = page_problems(chapter.read_text(encoding="utf-8"))
    assert not problems, f"{chapter.name}: " + "; ".join(problems)


# --------------------------------------------------------------------------- issue 26: a page that teaches

GLOSSARY = (BOOK / "glossary.md").read_text(encoding="utf-8")
TERMS = {line.strip().lower() for line in GLOSSARY.split("```{glossary}")[1].split("```")[0].splitlines()
         if line.strip() and not line.startswith((" ", ":"))}
MIN_TERM_LINKS = 3
TYPED_TIME = re.compile(r"(?:executes|runs) in (?:about |one to two |a )?(?:\d|minute)|minutes to read", re.I)
FIGSIZE = re.compile(r"figsize=\(\s*(\d+(?:\.\d+)?)\s*,")
SUBPLOTS = re.compile(r"plt\.subplots\(\s*(\d+)\s*,\s*(\d+)")
SMALL_FONT = re.compile(r"fontsize=(\d+(?:\.\d+)?)\b")


def prose_of(src: str) -> str:
    return CELL.sub("", src)


def figure_problems(src: str) -> list[str]:
    """Figure code that breaks the column rule of mlmbook.plotting: a literal width over 6.8 in,
    more than two panels in a row, a font under 9 pt (8 pt for heatmap cell numbers)."""
    from mlmbook.plotting import COLUMN_IN, MAX_PANELS_PER_ROW, MIN_FONT_PT

    problems = []
    for _head, body in CELL.findall(src):
        for m in FIGSIZE.finditer(body):
            if float(m.group(1)) > COLUMN_IN:
                problems.append(f"figsize width {m.group(1)} in > {COLUMN_IN} in (use plotting.figure())")
        for m in SUBPLOTS.finditer(body):
            if int(m.group(2)) > MAX_PANELS_PER_ROW:
                problems.append(f"plt.subplots({m.group(1)}, {m.group(2)}): "
                                f"more than {MAX_PANELS_PER_ROW} panels in a row")
        for m in SMALL_FONT.finditer(body):
            if float(m.group(1)) < MIN_FONT_PT:
                problems.append(f"fontsize={m.group(1)} < {MIN_FONT_PT} pt")
    return problems


def test_the_figure_rule_can_fail():
    cell = ("```{code-cell} ipython3\nfig, ax = plt.subplots(1, 3, figsize=(12, 3))\n"
            "ax.text(0, 0, 'x', fontsize=7)\n```\n")
    assert len(figure_problems(cell)) == 3
    ok = "```{code-cell} ipython3\nfig, ax = plotting.figure(ncols=2)\nax.text(0, 0, 'x', fontsize=9)\n```\n"
    assert figure_problems(ok) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_figures_fit_the_column(chapter):
    problems = figure_problems(chapter.read_text(encoding="utf-8"))
    assert not problems, f"{chapter.name}: " + "; ".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_no_run_time_typed_by_hand(chapter):
    """Each chapter's reading and running times come from the build (mlmbook.pipeline.pages):
    a time typed into the prose goes stale (issue 25: "about 90 s" against a measured 18 s)."""
    typed = TYPED_TIME.findall(prose_of(chapter.read_text(encoding="utf-8")))
    assert not typed, (f"{chapter.name}: a typed time ({typed[0]!r}); "
                       "the chapter card under the title shows the measured one")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_objectives_and_glossary_links(chapter):
    """Learning objectives (shown on the first screen by the build) and links to the glossary."""
    src = chapter.read_text(encoding="utf-8")
    assert re.search(r"\{admonition\}\s*Learning objectives", src), f"{chapter.name}: no learning objectives"
    linked = [m.group(2) or m.group(1) for m in re.finditer(r"\{term\}`([^`<]*?)(?:\s*<([^>]+)>)?`", src)]
    unknown = sorted({t for t in linked if t.strip().lower() not in TERMS})
    assert not unknown, f"{chapter.name}: {{term}} roles naming no glossary term: {unknown}"
    assert len(set(t.lower() for t in linked)) >= MIN_TERM_LINKS, \
        f"{chapter.name}: links {len(set(linked))} glossary term(s); link the first use of at least {MIN_TERM_LINKS}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_no_linter_comments_in_visible_code(chapter):
    from tests.pipeline.test_code_width import code_lines

    noqa = [n for n, line in code_lines(chapter.read_text(encoding="utf-8")) if "# noqa" in line]
    assert not noqa, f"{chapter.name}: '# noqa' on visible code lines {noqa}"


def test_glossary_is_sorted_and_every_term_is_known():
    assert ":sorted:" in GLOSSARY
    assert {"masked language model", "mlm", "mixing time", "uuas", "verdict"} <= TERMS
