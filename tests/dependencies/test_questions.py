"""Chapter 1's study: six questions in one family, and the rows of a corpus-UUAS difference."""

import numpy as np
import pytest

from mlmbook.dependencies import questions
from mlmbook.stats import MAX_PRIMARY, Question, Study, paired


def test_six_questions_one_family_each_with_its_planned_sample(full_results):
    """Chapter 1's declaration as its full reference recorded it."""
    r = full_results("01_dependencies")
    keys = r["study"]["questions"]
    assert len(keys) == 6 <= MAX_PRIMARY and r["study"]["level"] == pytest.approx(1 - 0.05 / 6)
    assert {r[f"q_{k}"]["sample"] for k in keys} == {"SIZES.main", "SIZES.models", "SIZES.corpus"}
    for key in keys:
        a = r[f"q_{key}"]
        assert a["effect"] == 0.05 and a["unit"] == "sentence" and a["needed_planned"] > 0, key


def test_uuas_rows_give_the_corpus_uuas_difference_and_refuse_other_sentences():
    a = (np.array([3, 2, 4]), np.array([4, 3, 5]))
    b = (np.array([1, 2, 2, 9]), np.array([4, 3, 5, 9]))
    v, w = questions.uuas_rows(a, b)
    assert v.tolist() == [2, 0, 2] and w.tolist() == [4, 3, 5]
    d, g = paired.by_unit(v, w)
    assert d.sum() / g.sum() == pytest.approx(a[0].sum() / 12 - b[0][:3].sum() / 12)
    with pytest.raises(ValueError, match="same sentences"):
        questions.uuas_rows(a, (np.array([1, 1, 1]), np.array([4, 3, 6])))


def test_an_answer_is_recorded_whole_and_glued_without_negative_zeros():
    study = Study("chapter 1", [Question("mlm_adjacent", "MLM minus chain", 0.05, "5 points", unit="sentence")])
    v, w = questions.uuas_rows((np.full(12, 3.0), np.full(12, 4.0)), (np.full(12, 2.0), np.full(12, 4.0)))
    a = study.answer("mlm_adjacent", v, w)
    assert a.to_record()["kind"] == "answer" and a.to_record()["values"] == v.tolist()
    fields = a.glue_fields()
    assert fields["verdict"] == a.verdict and fields["estimate"] == pytest.approx(0.25)
    assert fields["text"] == a.interval.format() and fields["n"] == a.n
    from mlmbook.stats import Interval, unsigned_zero
    assert unsigned_zero(-0.0004) == 0.0 and unsigned_zero(-0.0006) == -0.0006 and unsigned_zero(0.0004) == 0.0004
    parts = Interval(0.1, float("-inf"), 0.3).glue_fields()
    assert (parts["low"], parts["high"]) == ("−∞", 0.3)
