"""Every number the book's prose cites is recorded by its chapter (or declared not measured).

The build already fails a chapter whose executed notebook lacks a cited key; this test
states the contract on the sources themselves, from the quick build's results files.
"""
from pathlib import Path

import jupytext
import pytest

from mlmbook.pipeline.checks import glue_uses
from mlmbook.pipeline.record import load_not_measured

BOOK = Path(__file__).parent.parent.parent / "book"
CHAPTERS = sorted(p for p in BOOK.glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("source", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_cited_key_is_recorded(quick_book, source):
    slug = source.stem
    results = quick_book.results(slug)
    declared = load_not_measured(slug, quick_book.build_dir / "results")
    cited = {key for key, _ in glue_uses(jupytext.read(source))}
    assert cited, f"{slug} cites no number"
    missing = sorted(cited - set(results) - set(declared))
    assert not missing, f"{slug} cites keys its quick build never recorded: {', '.join(missing)}"
