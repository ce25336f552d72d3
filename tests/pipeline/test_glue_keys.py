"""Every number the book's prose cites is recorded by its chapter (or declared not measured).

The build already fails a chapter whose executed notebook lacks a cited key; this test
states the contract on the sources themselves, from the quick build's results files.
"""
from pathlib import Path

import jupytext
import pytest

from mlmbook.pipeline.checks import glue_uses, glued_values
from mlmbook.pipeline.record import load_not_measured
from mlmbook.pipeline.split import drop_other_world

BOOK = Path(__file__).parent.parent.parent / "book"
CHAPTERS = sorted(p for p in BOOK.glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("source", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_cited_key_is_recorded(quick_book, source):
    slug = source.stem
    results = quick_book.results(slug)
    declared = load_not_measured(slug, quick_book.build_dir / "results")
    # the quick build runs the toy model: its pages keep the toy world's prose and drop the real-only
    # (the any-model build checks those; the build fails a page citing a key its run did not record)
    cited = {key for key, _ in glue_uses(drop_other_world(jupytext.read(source), "toy"))}
    assert cited, f"{slug} cites no number"
    # an answer's or interval's parts (``q_gain.verdict``, ``gain.text``) are glued, not stored apart:
    # they count when the whole is stored and the executed notebook glued the part
    glued = set(glued_values(quick_book.notebook(slug)))
    parts = {key for key in cited & glued if "." in key and key.rsplit(".", 1)[0] in results}
    missing = sorted(cited - set(results) - set(declared) - parts)
    assert not missing, f"{slug} cites keys its quick build never recorded: {', '.join(missing)}"


def test_an_interval_is_recorded_whole_and_an_unbounded_part_reads_as_words(tmp_path, monkeypatch):
    """``record(key, interval)`` stores the interval; an infinite end is declared, so its slot shows "+∞"."""
    from mlmbook import stats
    from mlmbook.pipeline.record import load_results, record

    monkeypatch.setenv("MLMBOOK_RESULTS", str(tmp_path))
    monkeypatch.setenv("MLMBOOK_CHAPTER", "09_parts")
    record("parts_stay", stats.Interval(4.5, 3.8, float("inf"), n=7))
    assert load_results("09_parts")["parts_stay"]["kind"] == "interval"
    assert load_not_measured("09_parts") == {"parts_stay.high": "+∞"}
