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
