"""What a reader meets first, built from what the build measured (mlmbook.pipeline.pages), and the
figure record the browser check reads (mlmbook.plotting)."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from mlmbook.pipeline import pages

ROOT = Path(__file__).resolve().parents[2]


def _timings(root: Path, quick: dict, full: dict | None = None) -> Path:
    folder = root / "results" / "timings"
    folder.mkdir(parents=True)
    (folder / "quick-cached.json").write_text(json.dumps({"chapters": quick, "total_seconds": 50, "cpus": 2}))
    if full is not None:
        (folder / "full-cached.json").write_text(json.dumps({"chapters": full, "total_seconds": 300, "cpus": 2}))
    return root


def test_times_come_from_the_recorded_timings(tmp_path):
    root = _timings(tmp_path, {"00_toy_world": 14.3, "training": 99.0}, {"00_toy_world": 126.7})
    times = pages.measured_times(root)
    assert times == {"00_toy_world": {"quick": 14.3, "full": 126.7}}         # 'training' is not a chapter
    assert [pages.format_seconds(s) for s in (0.2, 14.3, 126.7, 120, 1260)] == \
        ["1 s", "14 s", "2 min 7 s", "2 min", "21 min"]
    assert pages.measured_times(tmp_path / "nowhere") == {}


def test_the_committed_timings_give_every_chapter_a_time():
    times = pages.measured_times(ROOT)
    chapters = sorted(p.stem for p in (ROOT / "book").glob("[0-9][0-9]_*.md"))
    assert set(chapters) <= set(times), "a chapter has no measured time in results/timings/"


def _chapter(opening: str, words: int = 300) -> nbformat.NotebookNode:
    prose = " ".join(["word"] * words)
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(opening),
        nbformat.v4.new_code_cell("profile = 'full'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_markdown_cell(prose),
        nbformat.v4.new_code_cell("x = 1\n" * 30)])


OPENING = """# The toy world

A long motivating paragraph comes first in the source.

```{admonition} Learning objectives
:class: tip

1. learn
```

```{admonition} Key takeaways
:class: tip

- something
```
"""


def test_card_and_objectives_go_right_under_the_title():
    nb = _chapter(OPENING)
    assert pages.prepare_chapter(nb, {"quick": 14.3, "full": 126.7})
    text = nb.cells[0].source
    title, card = text.index("# The toy world"), text.index("mlmbook-card")
    objectives = text.index("Learning objectives")
    assert title < card < objectives < text.index("A long motivating paragraph") < text.index("Key takeaways")
    assert "runs in 14 s (quick profile), 2 min 7 s (full profile) on 2 CPU cores" in text
    assert text.count("Learning objectives") == 1


def test_reading_time_counts_prose_and_code_and_rounds_up_to_five_minutes():
    nb = _chapter("# T", words=1500)                                   # 10 min of prose + 1 min of code
    assert pages.reading_minutes(nb) == 15
    assert pages.reading_minutes(_chapter("# T", words=10)) == 5


def test_a_chapter_without_a_measured_time_says_so():
    card = pages.chapter_card(_chapter("# T"), None)
    assert "not measured yet" in card and "runs in" not in card


def test_two_profiles_timed_alike_show_one_time_and_different_ones_both():
    alike = pages.chapter_card(_chapter("# T"), {"quick": 14.8, "full": 13.5})      # the same work, noise apart
    assert "at either profile" in alike and "quick profile" not in alike and "15 s" in alike
    apart = pages.chapter_card(_chapter("# T"), {"quick": 20.2, "full": 108.2})
    assert "(quick profile)" in apart and "(full profile)" in apart


def test_the_exercise_table_takes_levels_from_the_registry_and_the_titles():
    text = """
```{exercise} Warm-up: KL with exact zeros
:label: ch0-kl

Write it.
```

```{exercise} Stretch: more
:label: ex-open

(Coding.) Do more.
```

```{exercise}
:label: ex-paper

Prove it.
```
"""
    found = {e["label"]: (e["level"], e["kind"]) for e in pages.find_exercises(text)}
    assert found == {"ch0-kl": ("warm-up", "graded"), "ex-open": ("stretch", "coding"),
                     "ex-paper": (None, "pen and paper")}
    table = pages.exercise_table([("00_toy_world", "The toy world", text)],
                                 {"url": "https://github.com/o/r", "branch": "notebooks"})
    assert "(exercises-ch0)=\n### 0 The toy world" in table
    assert "| {numref}`ch0-kl` | warm-up | code, graded by the truth |" in table
    assert "| {numref}`ex-paper` | — | pen and paper |" in table
    assert "`python -m mlmbook.exercises check 00_toy_world.ipynb`" in table
    assert "[Colab](https://colab.research.google.com/github/o/r/blob/notebooks/student/00_toy_world.ipynb)" in table
    assert "[Binder](https://mybinder.org/v2/gh/o/r/notebooks?labpath=student/00_toy_world.ipynb)" in table
    assert "student edition" not in pages.exercise_table([("00_toy_world", "The toy world", text)])


def test_the_timings_table_of_the_performance_page():
    text = pages.timings_table(ROOT)
    assert "00_toy_world" in text and "whole book" in text and "Measured on" in text


def test_bibliography_labels_are_author_year_like_the_citations():
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    pages.register_bibliography_style()
    style = find_plugin("pybtex.style.formatting", "mlmbook")()
    entries = parse_file(str(ROOT / "book" / "references.bib")).entries
    labels = {e.label for e in style.format_entries(entries.values())}
    assert "Devlin et al., 2019" in labels and "Torroba Hennigen and Kim, 2023" in labels
    assert "de Marneffe et al., 2021" in labels and "Sana et al., 2026" in labels
    assert len(labels) == len(entries), "labels must be unique"


# --------------------------------------------------------------------------- the figure record

@pytest.fixture()
def style():
    import matplotlib

    matplotlib.use("Agg")
    from mlmbook import plotting

    plotting.use_style()
    return plotting


def test_a_figure_records_its_smallest_font_and_resolution(style):
    import matplotlib.pyplot as plt

    from mlmbook.plotting.record import png_record, rendered_text_px

    fig, (a, b) = style.figure(ncols=2)
    a.plot([0, 1], [0, 1], label="a line")
    a.legend()
    b.text(0.5, 0.5, "", fontsize=4)                 # empty: never drawn, never counted
    b.text(0.5, 0.5, "note", fontsize=8)
    data, width = style.figure_png(fig)
    plt.close(fig)
    record = png_record(data)
    assert record["min_font_pt"] == 8 and record["dpi"] == style.PNG_DPI
    assert 600 < width <= 700 and record["width"] == pytest.approx(2 * width, abs=2)
    shown = min(width, style.COLUMN_PX)
    assert rendered_text_px(8, record["dpi"], record["width"], shown) >= style.MIN_TEXT_PX


def test_a_wide_figure_shrinks_its_text_below_the_floor(style):
    import matplotlib.pyplot as plt

    from mlmbook.plotting.record import png_record, rendered_text_px

    fig, ax = plt.subplots(figsize=(13, 3))
    ax.plot([0, 1])
    data, width = style.figure_png(fig)
    plt.close(fig)
    record = png_record(data)
    px = rendered_text_px(record["min_font_pt"], record["dpi"], record["width"], style.COLUMN_PX)
    assert record["min_font_pt"] == style.MIN_FONT_PT and px < style.MIN_TEXT_PX


def test_more_than_two_panels_in_a_row_is_refused(style):
    with pytest.raises(ValueError, match="at most 2 per row"):
        style.figure(ncols=3)


def test_a_later_pages_launched_notebook_points_to_its_exercises():
    """The launch button of a later page opens the whole chapter (its code needs what comes before): the
    notebook's first Markdown cell links to the page's "Exercises" heading."""
    from mlmbook.pipeline.launch import _page_heading, _pointing

    page = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Answers, real models and exercises"),
                                           nbformat.v4.new_markdown_cell("text\n\n## Exercises\n\nWrite it.")])
    assert _page_heading(page) == "Exercises"
    whole = _chapter("# T")
    pointed = _pointing(whole, _page_heading(page))
    first = next(c for c in pointed.cells if c.cell_type == "markdown")
    assert "](#Exercises)" in first.source and len(pointed.cells) == len(whole.cells) + 1
    assert _pointing(whole, None) is whole


def test_graded_exercises_carry_one_mark():
    """One style of the graded mark: "(graded)" at the end of a registered exercise's title, and nowhere
    else (no "Graded by the truth." or "Graded." opening its text, no mark on an ungraded exercise)."""
    import re

    from mlmbook.exercises import registry

    graded = registry()
    found = []
    for source in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        for m in pages._EXERCISE.finditer(source.read_text(encoding="utf-8")):
            label = re.search(r"^:label:\s*(\S+)", m.group("body"), re.M)
            marked = m.group("title").rstrip().endswith("(graded)")
            text = re.sub(r"^:\w+:.*\n", "", m.group("body"), flags=re.M).strip()
            if marked != bool(label and label.group(1) in graded) or re.match(r"graded\b", text, re.I):
                found.append(f"{source.name}: {m.group('title').strip()}")
    assert not found, "exercises whose graded mark is missing, misplaced or doubled:\n" + "\n".join(found)
