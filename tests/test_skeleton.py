"""The same skeleton in every chapter (issue 36), and hidden code cut by half.

Every chapter 0–5 is 2–4 pages (level-1 headings of its Markdown cells; the site cuts it there,
:mod:`mlmbook.pipeline.split`, and lists the later pages under it in the table of contents), and
carries the fixed level-2 headings of the skeleton, in this order: on its first page
``## The central step`` and ``## Primary questions``; on its last page ``## Answers``,
``## Key takeaways``, ``## Run it on a real model`` and ``## Exercises``, under the last page's
title ``# Answers, real models and exercises``.

Chapter 0 has no paper and so no Study: it declares no primary questions and has no answers
table (its comparisons are exact or descriptive). It therefore has neither ``## Primary
questions`` nor ``## Answers``, its last page is ``# Takeaways, real models and exercises``, and
it records no study and no answer. Every other chapter must have both.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9][0-9]_*.md"))
NO_STUDY = {"00_toy_world"}
"""Chapters without a paper, hence without primary questions (see the module docstring)."""

FIRST_PAGE = ["The central step", "Primary questions"]
LAST_PAGE = ["Answers", "Key takeaways", "Run it on a real model", "Exercises"]
LAST_TITLE = "Answers, real models and exercises"
LAST_TITLE_NO_STUDY = "Takeaways, real models and exercises"
MIN_PAGES, MAX_PAGES = 2, 4

HIDDEN_BASELINE = {"00_toy_world": 66, "01_dependencies": 401, "02_joints": 1320, "03_consistency": 709,
                   "04_deficiency": 572, "05_glauber": 666,
                   "06_diffusion": 200}
"""Hidden code lines per chapter at the start of issue 36's work (/work/notes/baseline_cells.txt, counted
by /work/notes/count_cells.py at commit fa32d7e: non-blank lines of code cells tagged remove-input,
remove-cell, hide-input or hide-cell). Issue 36 asks for at most half."""
HIDDEN_TAGS = {"remove-input", "remove-cell", "hide-input", "hide-cell"}


def headings(slug: str) -> list[tuple[int, int, str]]:
    """``(page, level, text)`` of every heading of the chapter's Markdown cells (code fences skipped);
    pages count from 1 at the title."""
    nb = jupytext.read(BOOK / f"{slug}.md")
    out, page = [], 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fence = None
        for line in cell.source.splitlines():
            m = re.match(r"^\s*(`{3,}|~{3,}|:{3,})", line)
            if m:
                fence = None if fence and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    else (fence or m.group(1))
                continue
            h = re.match(r"^(#{1,6}) (.+?)\s*$", line)
            if h and fence is None:
                level = len(h.group(1))
                page += level == 1
                out.append((page, level, h.group(2)))
    return out


def hidden_lines(slug: str) -> int:
    nb = jupytext.read(BOOK / f"{slug}.md")
    return sum(sum(1 for line in c.source.splitlines() if line.strip()) for c in nb.cells
               if c.cell_type == "code" and HIDDEN_TAGS & set(c.metadata.get("tags", [])))


def test_every_chapter_is_here():
    assert [c[:2] for c in CHAPTERS] == ["00", "01", "02", "03", "04", "05", "06"], CHAPTERS


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_pages_and_fixed_headings(slug):
    found = headings(slug)
    pages = max(p for p, _, _ in found)
    assert MIN_PAGES <= pages <= MAX_PAGES, f"{slug}: {pages} pages (level-1 headings); the skeleton has 2-4"
    study = slug not in NO_STUDY
    first = [t for t in FIRST_PAGE if study or t != "Primary questions"]
    last = [t for t in LAST_PAGE if study or t != "Answers"]
    fixed = [(p, t) for p, level, t in found if level == 2 and t in FIRST_PAGE + LAST_PAGE]
    assert [t for _, t in fixed] == first + last, f"{slug}: the fixed headings, in order: {fixed}"
    assert all(p == 1 for p, t in fixed if t in first), f"{slug}: {first} belong on the first page: {fixed}"
    assert all(p == pages for p, t in fixed if t in last), f"{slug}: {last} belong on the last page: {fixed}"
    title = [t for p, level, t in found if level == 1 and p == pages][0]
    assert title == (LAST_TITLE if study else LAST_TITLE_NO_STUDY), f"{slug}: last page titled {title!r}"


def test_a_chapter_without_a_study_declares_no_question():
    for slug in NO_STUDY:
        source = (BOOK / f"{slug}.md").read_text(encoding="utf-8")
        assert "Study(" not in source and "Question(" not in source and "study.table" not in source
        reference = ROOT / "results" / "full" / f"{slug}.json"
        if reference.is_file():
            kinds = {v.get("kind") for v in json.loads(reference.read_text()).values() if isinstance(v, dict)}
            assert not kinds & {"study", "answer", "verdict", "family"}, kinds


@pytest.mark.parametrize("slug", CHAPTERS)
def test_the_table_of_contents_lists_each_page_under_its_chapter(slug):
    """What the site stages: the chapter's later pages as its sections, in order (site._with_pages)."""
    from mlmbook.pipeline.site import _with_pages
    from mlmbook.pipeline.split import split_pages

    names = [name for name, _ in split_pages(jupytext.read(BOOK / f"{slug}.md"), slug)]
    toc = _with_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()), "book", {slug: names[1:]})
    entries = [c for part in toc["parts"] for c in part.get("chapters", []) if c.get("file") == f"book/{slug}"]
    assert len(entries) == 1, f"{slug} is not in _toc.yml once"
    sections = [s["file"] for s in entries[0].get("sections", [])]
    assert sections == [f"book/{slug}-{k}" for k in range(2, len(names) + 1)]
    assert MIN_PAGES <= len(names) <= MAX_PAGES


@pytest.mark.parametrize("slug", CHAPTERS)
def test_the_graded_exercises_are_in_reach(slug):
    """Issue 36 item 5: the chapter's ``## Exercises`` says how to grade (one line) and links the
    student edition and launch links on the teachers' page (``(exercises-chN)=``, generated there
    by :func:`mlmbook.pipeline.pages.exercise_table`)."""
    from mlmbook.pipeline.pages import GRADE_COMMAND, exercises_anchor

    source = (BOOK / f"{slug}.md").read_text(encoding="utf-8")
    section = source.split("\n## Exercises", 1)[-1]
    flat = " ".join(section.split())
    assert f"`{GRADE_COMMAND} {slug}.ipynb`" in flat, f"{slug}: say how to grade the notebook"
    assert re.search(r"\{ref\}`[^`<]*<" + exercises_anchor(slug) + ">`", flat), \
        f"{slug}: link the student edition ({{ref}}`student edition and launch links <{exercises_anchor(slug)}>`)"


@pytest.mark.parametrize("slug", CHAPTERS)
def test_hidden_code_is_at_most_half_the_baseline(slug):
    n = hidden_lines(slug)
    assert 2 * n <= HIDDEN_BASELINE[slug], (f"{slug}: {n} hidden code lines, more than half of the "
                                            f"{HIDDEN_BASELINE[slug]} of the baseline: write the prose in "
                                            f"Markdown, move bookkeeping into the package")


def test_the_heading_reader_skips_code_and_counts_pages():
    import tempfile

    text = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n---\n\n"
            "# A\n\n## The central step\n\n```python\n# not a heading\n```\n\n# B\n\n## Exercises\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "99_x.md"
        path.write_text(text)
        global BOOK
        old, BOOK = BOOK, Path(tmp)
        try:
            assert headings("99_x") == [(1, 1, "A"), (1, 2, "The central step"), (2, 1, "B"), (2, 2, "Exercises")]
        finally:
            BOOK = old
