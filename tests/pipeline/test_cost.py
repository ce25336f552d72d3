"""The cost model of a real-model build (mlmbook.pipeline.cost): rows it counts are the rows sent."""
import re
from pathlib import Path

import pytest

from mlmbook import queries
from mlmbook.dependencies import cpmi
from mlmbook.dependencies.pieces import encode_all
from mlmbook.models import load_mlm
from mlmbook.pipeline import cost
from mlmbook.pipeline.chapters import Layout, find_chapters, plan_parameters
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def lm(wordpiece_bert):
    return load_mlm(wordpiece_bert)


@pytest.fixture(scope="module")
def chapters():
    return {c.number: c for c in find_chapters(Layout.find(None))}


def _counting(monkeypatch, lm):
    """Count the rows handed to the query engine and the rows that reach the model."""
    seen = {"requested": 0, "model": 0}
    engine, logits = queries.iter_log_probs, lm.logits

    def engine_spy(lm_, rows, positions, **kw):
        seen["requested"] += len(rows)
        return engine(lm_, rows, positions, **kw)

    def logits_spy(ids, positions, **kw):
        seen["model"] += len(ids)
        return logits(ids, positions, **kw)

    monkeypatch.setattr(queries, "iter_log_probs", engine_spy)
    monkeypatch.setattr(lm, "logits", logits_spy)
    return seen


def test_cpmi_rows_counted_are_rows_sent(lm, monkeypatch):
    sentences = [s.words for s in Grammar.load("toy").sample(40, seed=3)]
    sentences = list(dict.fromkeys(map(tuple, sentences)))[:5]          # distinct: nothing de-duplicated
    sentences += [("the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", ".")]
    keep = [[i for i, w in enumerate(s) if w != "."] for s in sentences]
    predicted = sum(cost.cpmi_rows(lm, e) for e in encode_all(lm, [list(s) for s in sentences], keep))
    seen = _counting(monkeypatch, lm)
    cpmi(lm, [list(s) for s in sentences], keep)
    assert predicted > 0
    assert seen["requested"] == predicted
    assert seen["model"] == predicted          # distinct sentences: every row reaches the model


def test_chapter_constants_follow_the_chapter(chapters):
    c1 = cost.chapter_constants(chapters[1])
    assert c1["SIZES"]["full"]["corpus"] > c1["SIZES"]["quick"]["corpus"] > 0
    c3 = cost.chapter_constants(chapters[3])
    assert {"MAX_PAIRS", "N_AUX", "N_CANDIDATES"} <= set(c3)       # read through mlmbook.record(...)


@pytest.mark.parametrize("number", [1, 2, 3, 4])
def test_every_modelled_chapter_counts_rows(lm, chapters, number):
    quick = cost.rows_for(chapters[number], lm, {"profile": "quick"})
    full = cost.rows_for(chapters[number], lm, {"profile": "full"})
    assert 0 < quick.rows <= full.rows
    assert quick.tokens > quick.rows * cost.SPECIALS


def test_chapter_0_sends_nothing_and_5_says_it_is_not_modelled(lm, chapters):
    assert cost.rows_for(chapters[0], lm, {"profile": "quick"}).rows == 0
    assert "not modelled" in cost.paragraph("05_glauber", "m", cost.rows_for(chapters[5], lm, {}), 1.0)


def _seconds(text):
    return float(re.search(r"\(([\d.]+) s\)", text).group(1))


def test_the_estimate_adds_the_chapters_measured_overhead(tmp_path):
    """The estimate used to count model time only (5-50x off for small models): the measured time
    outside the model now joins it."""
    import json
    (tmp_path / "results" / "timings").mkdir(parents=True)
    (tmp_path / cost.OVERHEAD_FILE).write_text(json.dumps({"seconds": {"quick": {"01_dependencies": 12.5}}}))
    assert cost.overhead_seconds("01_dependencies", "quick", tmp_path) == 12.5
    assert cost.overhead_seconds("01_dependencies", "full", tmp_path) is None
    text = cost.paragraph("01_dependencies", "m", cost.Work().add("CPMI", 1000, 8), 1000.0, overhead=12.5)
    assert "about 12 s" in text and re.search(r"\(22\.5 s in all\)", text)


def test_estimate_scales_linearly_with_rows():
    one = cost.Work().add("CPMI", 1000, 10)
    two = cost.Work().add("CPMI", 2000, 10)
    three = cost.Work().add("CPMI", 1000, 10).add("Gibbs CMI", 2000, 10)
    seconds = [_seconds(cost.paragraph("01_dependencies", "m", w, 100.0)) for w in (one, two, three)]
    assert seconds[1] == pytest.approx(2 * seconds[0])
    assert seconds[2] == pytest.approx(3 * seconds[0])
    assert "estimate" in cost.paragraph("01_dependencies", "m", one, 100.0)


def test_throughput_is_measured(lm):
    assert cost.tokens_per_second(lm, rows=2, length=4, repeats=1) > 0


def test_report_for_a_plan_and_none_for_the_toy_model(wordpiece_bert, chapters):
    plans = plan_parameters([chapters[1]], [("model", wordpiece_bert)], "quick")
    text = cost.report(plans)
    assert len(text) == 1 and text[0].startswith("01_dependencies with ") and "tokens/s" in text[0]
    assert cost.report(plan_parameters([chapters[1]], [], "quick")) == []


def test_the_cost_command_prints_without_building(wordpiece_bert, capsys, tmp_path, monkeypatch):
    from mlmbook.__main__ import main
    monkeypatch.setenv("MLMBOOK_BUILD", str(tmp_path / "build"))
    assert main(["cost", "2", "--profile", "quick", "-p", "model", wordpiece_bert]) == 0
    out = capsys.readouterr().out
    assert out.startswith("02_joints with ") and "estimate" in out
    assert not (tmp_path / "build").exists()


def test_the_overhead_grows_with_the_vocabulary_where_a_slope_was_measured(tmp_path):
    """Work outside the model scales with the pieces each query's distribution spans: o + s (V - V0)."""
    import json
    (tmp_path / "results" / "timings").mkdir(parents=True)
    (tmp_path / cost.OVERHEAD_FILE).write_text(json.dumps({
        "seconds": {"quick": {"01_dependencies": 10.0, "05_glauber": 20.0}},
        "per_piece": {"quick": {"01_dependencies": 1e-4}}}))
    v = cost.CALIBRATION_PIECES + 100_000
    assert cost.overhead_seconds("01_dependencies", "quick", tmp_path, pieces=v) == pytest.approx(20.0)
    assert cost.overhead_seconds("01_dependencies", "quick", tmp_path) == 10.0          # no vocabulary given
    assert cost.overhead_seconds("05_glauber", "quick", tmp_path, pieces=v) == 20.0      # no slope measured
    # a chapter whose queries are not counted one by one: its measured time is the whole estimate
    text = cost.paragraph("05_glauber", "m", None, 1.0, overhead=20.0)
    assert "not counted one by one" in text and "(20.0 s in all)" in text


def test_the_memory_estimate_grows_with_the_vocabulary_and_the_weights(tmp_path):
    """a + b (V - V0) + 2 x 4 bytes a weight, from the measured line; None where nothing was measured."""
    import json
    (tmp_path / "results" / "timings").mkdir(parents=True)
    (tmp_path / cost.OVERHEAD_FILE).write_text(json.dumps({"peak_gib": {"quick": {"03_consistency": [1.0, 1e-5]}}}))
    v = cost.CALIBRATION_PIECES + 100_000
    assert cost.peak_gib("03_consistency", "full", v, 0, tmp_path) == pytest.approx(2.0)     # quick's line stands in
    assert cost.peak_gib("03_consistency", "quick", v, 2 ** 27, tmp_path) == pytest.approx(3.0)   # + 1 GiB of weights
    assert cost.peak_gib("01_dependencies", "quick", v, 0, tmp_path) is None


def test_a_build_that_cannot_fit_the_machines_memory_is_refused_before_work(wordpiece_bert, capsys, tmp_path,
                                                                            monkeypatch):
    from mlmbook.__main__ import main
    monkeypatch.setenv("MLMBOOK_BUILD", str(tmp_path / "build"))
    assert cost.peak_gib("02_joints", "quick", 1000, 0) is not None          # measured by make bench
    monkeypatch.setenv("MLMBOOK_MEMORY_GIB", "0.01")
    treebank = str(Path(__file__).parent.parent / "fixtures" / "any_model.conllu")   # not UD: runs anywhere
    assert main(["build", "2", "--profile", "quick", "--no-render", "-p", "model", wordpiece_bert,
                 "-p", "treebank", treebank, "-p", "allow_unknown", "true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    line = next(x for x in err if x.startswith("mlmbook: error:"))
    assert re.search(r"02_joints with .+ needs about [\d.]+ GiB of memory .* more than the 0\.0 GiB here; run it "
                     r"where there is more", line), line
    assert not (tmp_path / "build" / "results" / "02_joints.json").exists()
    monkeypatch.setenv("MLMBOOK_MEMORY_GIB", "lots")
    assert main(["cost", "2", "--profile", "quick", "-p", "model", wordpiece_bert]) == 2
    assert "MLMBOOK_MEMORY_GIB='lots' is not a number" in capsys.readouterr().err
    monkeypatch.setenv("MLMBOOK_MEMORY_GIB", "24")
    assert main(["cost", "2", "--profile", "quick", "-p", "model", wordpiece_bert]) == 0
    assert re.search(r"Peak memory: about [\d.]+ GiB of the 24 GiB here\.", capsys.readouterr().out)
