"""Chapter code fits the page: no code line of a chapter longer than ``MAX_LINE`` characters.

The site shows code at 12 px in a box 660 px wide: 90 characters at the 0.6-em advance of the
common monospace fonts. Longer lines scroll sideways (they are never wrapped mid-line, which
loses their indentation), and ``check-site`` fails on a code block wider than its box. So chapter
code keeps lines within 88 characters (black's default). This test names every offending line,
chapter and line number, so authors can wrap them (``jupytext --pipe "black -l 88" book/NN_x.md``
rewraps most of them; long strings need a hand).
"""
from pathlib import Path

import pytest

MAX_LINE = 88
BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))


HIDDEN = ("remove-cell", "remove-input")


def code_lines(text: str):
    """(line number, line) of every line a reader sees inside a ``{code-cell}`` of a MyST notebook.

    Cells tagged ``remove-cell`` or ``remove-input`` never show their code, so they do not
    count; ``hide-input`` cells fold out on the page, so they do.
    """
    inside, cell = False, []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not inside and stripped.startswith("```{code-cell}"):
            inside, cell = True, []
            continue
        if inside and stripped.startswith("```") and stripped.strip("`") == "":
            inside = False
            head = " ".join(text for _, text in cell[:12]
                            if text.strip().startswith((":tags:", "tags:", "---")) or "tags" in text)
            if cell and cell[0][1].strip() == "---":      # a YAML header (figure caption, tags): not code
                end = next((k for k in range(1, len(cell)) if cell[k][1].strip() == "---"), 0)
                head += " " + " ".join(text for _, text in cell[:end + 1])
                cell = cell[end + 1:]
            if not any(tag in head for tag in HIDDEN):
                yield from ((n, text) for n, text in cell
                            if not text.strip().startswith((":tags:", "tags:", "---", ":mystnb:")))
            continue
        if inside:
            cell.append((number, line))


def test_code_lines_are_found():
    text = "x\n```{code-cell} ipython3\n:tags: [hide-input]\nlong = 1\n```\nprose " + "y" * 200
    assert [n for n, _ in code_lines(text)] == [4]
    figure = "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: " + "c" * 120 + "\n---\nplt.show()\n```\n"
    assert [line for _, line in code_lines(figure)] == ["plt.show()"]
    hidden = "```{code-cell} ipython3\n:tags: [remove-cell]\nx = 1\n```\n"
    assert list(code_lines(hidden)) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_chapter_code_lines_fit_the_page(chapter):
    long = [f"{chapter.name}:{n}: {len(line)} chars" for n, line in
            code_lines(chapter.read_text(encoding="utf-8")) if len(line) > MAX_LINE]
    assert not long, f"{len(long)} code line(s) over {MAX_LINE} characters:\n" + "\n".join(long)
