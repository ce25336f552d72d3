"""Every number quoted from a paper carries its source next to it: a citation, and where in the
paper it comes from (a table, figure, section, or the abstract).

Chapters glue quoted figures under keys that start with ``paper_``; the paragraph (or table
row) that shows one must also hold a ``{cite...}`` and a location word.
"""
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
LOCATION = re.compile(r"\b(table|tab\.|figure|fig\.|section|§|abstract|appendix|experiment)", re.I)


def unsourced(text: str) -> list[str]:
    """Paragraphs or table rows that show a ``paper_*`` glue key without a citation and a location."""
    bad = []
    for block in re.split(r"\n\s*\n", text):
        units = block.splitlines() if block.lstrip().startswith("|") else [block]
        for unit in units:
            if re.search(r"\{glue(:\w+)?\}`paper_", unit) and not (re.search(r"\{cite(:\w+)?\}", unit)
                                                                  and LOCATION.search(unit)):
                bad.append(unit.strip()[:120])
    return bad


def test_the_check_can_fail():
    assert unsourced("They report {glue:text}`paper_x:.1f` accuracy.")
    assert not unsourced("They report {glue:text}`paper_x:.1f` ({cite}`a2020`, Table 2).")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_quoted_paper_numbers_carry_their_source(chapter):
    bad = unsourced(chapter.read_text(encoding="utf-8"))
    assert not bad, f"{chapter.name}: paper figures without a citation and location: {bad}"
