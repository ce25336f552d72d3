"""Chapter code fits the page: no code line of a chapter longer than ``MAX_LINE`` characters.

Long lines run past the code column of the site (the browser check fails on a code block
that scrolls sideways). This test names every offending line, chapter and line number, so
authors can wrap them.
"""
from pathlib import Path

import pytest

MAX_LINE = 100
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
            head = " ".join(l for _, l in cell[:12] if l.strip().startswith((":tags:", "tags:", "---")) or "tags" in l)
            if not any(tag in head for tag in HIDDEN):
                yield from ((n, l) for n, l in cell
                            if not l.strip().startswith((":tags:", "tags:", "---", ":mystnb:")))
            continue
        if inside:
            cell.append((number, line))


def test_code_lines_are_found():
    text = "x\n```{code-cell} ipython3\n:tags: [hide-input]\nlong = 1\n```\nprose " + "y" * 200
    assert [n for n, _ in code_lines(text)] == [4]
    hidden = "```{code-cell} ipython3\n:tags: [remove-cell]\nx = 1\n```\n"
    assert list(code_lines(hidden)) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_chapter_code_lines_fit_the_page(chapter):
    long = [f"{chapter.name}:{n}: {len(line)} chars" for n, line in
            code_lines(chapter.read_text(encoding="utf-8")) if len(line) > MAX_LINE]
    assert not long, f"{len(long)} code line(s) over {MAX_LINE} characters:\n" + "\n".join(long)
