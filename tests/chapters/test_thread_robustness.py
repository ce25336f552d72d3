"""A verdict that a thread count can flip is not a finding.

Toy models always train on one thread (``mlmbook.models.train.TRAIN_THREADS``), so
``MLMBOOK_THREADS=2`` loads the very models the quick build used; only inference runs on two
threads (float sums in another order, differences near 1e-7). The chapters whose verdicts once
flipped with the thread count (1 and 4) are executed again with ``MLMBOOK_THREADS=2`` and every
verdict they record — each primary answer's side and verdict label (``stats.Study``), and any
categorical string — must agree with the quick build's.
"""
import os
import re

import pytest

CHAPTERS = ("01_dependencies", "04_deficiency")


def verdicts(results: dict) -> dict:
    """Key -> an answer's side and verdict (recorded answers) or the categorical value (short strings, bools)."""
    from mlmbook.stats import walk_answers
    out = {k: f"{rec['side']} / {rec['verdict']}" for k, rec in walk_answers(results)}
    out.update({k: v for k, v in results.items() if isinstance(v, bool) or
                (isinstance(v, str) and v and not re.search(r"\d", v) and len(v) < 80)})
    return out


def test_verdicts_reads_records_and_categories():
    rec = {"kind": "answer", "side": "above", "verdict": "ahead"}
    r = {"q_mlm_cpmi": rec, "trend": "rises", "regime_text": "3 rungs", "n": 3, "nested": [rec]}
    assert verdicts(r) == {"q_mlm_cpmi": "above / ahead", "nested[0]": "above / ahead", "trend": "rises"}


@pytest.fixture(scope="module")
def two_threads(tmp_path_factory):
    from mlmbook.pipeline.execute import BuildOptions, build
    from tests.conftest import BookRun, _with_build_dir
    out = tmp_path_factory.mktemp("threads2")
    old = os.environ.get("MLMBOOK_THREADS")
    os.environ["MLMBOOK_THREADS"] = "2"
    try:
        _with_build_dir(out, lambda: build(chapters=list(CHAPTERS), profile="quick",
                                           options=BuildOptions(render_site=False)))
    finally:
        if old is None:
            os.environ.pop("MLMBOOK_THREADS", None)
        else:
            os.environ["MLMBOOK_THREADS"] = old
    return BookRun(out, None)


@pytest.mark.parametrize("slug", CHAPTERS)
def test_verdicts_do_not_depend_on_the_thread_count(quick_book, two_threads, slug):
    one, two = verdicts(quick_book.results(slug)), verdicts(two_threads.results(slug))
    assert one, f"{slug} recorded no verdict"
    flipped = {k: (one[k], two.get(k)) for k in one if two.get(k) != one[k]}
    assert not flipped, f"{slug}: verdicts that flip between 1 and 2 threads (1 thread, 2 threads): {flipped}"
