"""Chapter 0: every claim of its prose, asserted on the recorded numbers (quick build and the committed
full reference), its descriptive form (no Study: chapter 0 has no paper), and its split into a
toy-only page and pages every model shows."""
from pathlib import Path

import jupytext
import pytest

from mlmbook.toy import Grammar
from tests.numbers import assert_glued_difference, sentence_citing

SLUG = "00_toy_world"
SOURCE_PATH = Path(__file__).resolve().parents[2] / "book" / f"{SLUG}.md"
SOURCE = SOURCE_PATH.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the claims, on any run

def _check_truth(r):
    """Page 1 and the first two takeaways: exact, whatever the model."""
    assert 100 <= r["grammar_words"] <= 300 and r["grammar_max_length"] <= 15
    assert 5 <= r["mean_length"] <= 11
    # the central step: brute force over the vocabulary and one inside-outside pass agree exactly
    assert r["central_largest_difference"] < 1e-12
    assert r["central_brute_bark"] == pytest.approx(r["central_package_bark"], abs=1e-12)
    assert 0 < r["central_package_bark"] < 1
    # agreement is exact: barks after a plural subject has probability 0
    assert r["p_barks_after_plural_subject"] == 0.0
    # the two readings of the PP sentence sum to the whole, split as the grammar file says
    noun, verb = r["pp_noun_reading"], r["pp_verb_reading"]
    assert 0 < noun < verb < 1 and r["pp_readings_sum"] == pytest.approx(1, abs=1e-9)
    spec = Grammar.load("toy").spec
    pn, pv = spec["p_pp_on_noun"], spec["p_pp_on_verb"]
    share = {k: v["place"] / sum(v.values()) for k, v in spec["pp_kind"].items()}
    assert noun / verb == pytest.approx((pn * share["noun"] * (1 - pv)) / (pv * share["verb"] * (1 - pn)), rel=1e-9)
    assert pv > pn and share["verb"] > share["noun"]          # "a verb takes a PP more often, more often a place"
    assert r["pp_intransitive_noun_reading"] == 0.0


def _check_model(r):
    """Page 2 and the last two takeaways: the default MLM against the truth."""
    assert 0 < r["kl_mlm"] < r["kl_unigram"]
    assert r["kl_ratio"] == pytest.approx(r["kl_unigram"] / r["kl_mlm"])
    assert r["curve_gap"] == pytest.approx(r["final_eval_loss"] - r["bayes_loss"]) and r["curve_gap"] > 0
    # "its conditionals are worst at the words tagged <worst_pos>"
    by_pos = r["kl_by_pos"]
    assert r["worst_pos"] == max(by_pos, key=by_pos.get)
    # the loss gap and the KL: the difference the sentence quotes is the difference of the numbers it
    # quotes (same sentences, same positions), and its interval is "around the zero" it says to expect
    assert_glued_difference(SOURCE, r, "gap_minus_kl.estimate", "loss_gap_same", "kl_mlm")
    iv = r["gap_minus_kl"]
    assert iv["kind"] == "interval" and iv["n"] == r["n_eval_sentences"] and iv["level"] == 0.95
    assert iv["low"] < 0 < iv["high"]
    # agreement as the model learned it: a softmax never says 0
    assert r["p_barks_after_plural_subject"] == 0.0 < r["q_barks_after_plural"]
    assert 0 < r["q_bark_after_plural"] < 1 and 0 < r["verb_mass_ruled_out"] < 1
    assert r["bark_over_barks"] == pytest.approx(r["q_bark_after_plural"] / r["q_barks_after_plural"])
    assert r["n_verb_positions"] >= r["n_eval_sentences"]      # every sentence has a verb


def _check_descriptive(r):
    """No Study (chapter 0 has no paper): no answer, study, verdict or family record."""
    kinds = {v.get("kind") for v in r.values() if isinstance(v, dict)}
    assert not kinds & {"answer", "study", "verdict", "family"}, kinds


def test_quick_profile_claims(quick_book):
    r = quick_book.results(SLUG)
    _check_truth(r)
    _check_model(r)
    _check_descriptive(r)


def test_full_profile_claims(full_results):
    r = full_results(SLUG)
    _check_truth(r)
    _check_model(r)
    _check_descriptive(r)
    # the foundation's bar: the default MLM is at least 5x closer to the truth than a unigram
    assert r["kl_ratio"] >= 5, r["kl_ratio"]
    assert r["n_eval_sentences"] >= 200


def test_agreement_exercise(quick_book):
    r = quick_book.results(SLUG)
    assert r["ex0_barks_default"] == 0.0 and r["ex0_barks_past"] == 0.0
    assert 0 < r["ex0_tv_past"] < r["ex0_tv_default"] / 2            # "drops" — by more than half


# --------------------------------------------------------------------------- the page: prose, not code

def test_the_claims_are_prose_with_glued_numbers():
    """The sentences the tests above check are in the Markdown, citing the numbers they state."""
    assert "in expectation" in SOURCE and "two estimates" in SOURCE and "(eq-ch0-loss-gap)" in SOURCE
    for old in ("by exactly its mean KL", "is exactly the mean KL", "gap_summary", "kl_summary",
                "agreement_answer", "Markdown(", "not_measured"):
        assert old not in SOURCE, f"back in the source: {old!r}"
    assert "around the" in sentence_citing(SOURCE, "gap_minus_kl.low", "gap_minus_kl.high")
    assert "times farther" in sentence_citing(SOURCE, "kl_mlm", "kl_unigram", "kl_ratio")


def _cells():
    return jupytext.read(SOURCE_PATH).cells


def _pages():
    pages, k = [], 0
    for cell in _cells():
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            k += 1
        pages.append((k, cell))
    return pages


def test_the_model_page_is_toy_only_and_the_others_are_for_every_model():
    pages = _pages()
    second = [c for k, c in pages if k == 2]
    assert second and all("toy-only" in c.metadata.get("tags", []) for c in second)
    first = [c for k, c in pages if k == 1]
    assert not any({"toy-only", "real-only"} & set(c.metadata.get("tags", [])) for c in first)
    last = [c for k, c in pages if k == 3]
    assert any("real-only" in c.metadata.get("tags", []) for c in last)   # the real model's own table
    visible_code = [c.source for _, c in pages if c.cell_type == "code"
                    and not {"remove-cell", "remove-input"} & set(c.metadata.get("tags", []))]
    assert not any('if model' in s or "model ==" in s or "model !=" in s for s in visible_code)


def test_prose_every_model_shows_cites_no_toy_only_number(quick_book):
    """A key glued only by toy-only cells is cited only by toy-only prose: a real-model page never
    shows a toy number (nor, once the build skips toy-only cells, a missing one)."""
    from mlmbook.pipeline.checks import glue_uses

    nb = quick_book.notebook(SLUG)
    toy = lambda c: "toy-only" in c.metadata.get("tags", [])          # noqa: E731
    glued_by = {}
    for c in nb.cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            if "scrapbook" in o.get("metadata", {}):
                glued_by.setdefault(o["metadata"]["scrapbook"]["name"], set()).add(toy(c))
    toy_only = {k for k, where in glued_by.items() if where == {True}}
    assert {"kl_mlm", "kl_ratio", "gap_minus_kl.estimate", "worst_pos"} <= toy_only
    shared = nb.copy()
    shared.cells = [c for c in nb.cells if not toy(c)]
    cited = {key for key, _ in glue_uses(shared)}
    assert not cited & toy_only, cited & toy_only


# --------------------------------------------------------------------------- a real model

def test_chapter_runs_on_a_wordpiece_model(run_chapter, wordpiece_bert):
    run = run_chapter(SLUG, model=wordpiece_bert)
    r = run.results(SLUG)
    _check_truth(r)                                        # page 1 is the same on every model
    nb = run.notebook(SLUG)
    from mlmbook.pipeline.split import drop_other_world
    page = drop_other_world(nb)
    text = "".join(str(o.get("data", {}).get("text/html", "")) + str(o.get("text", ""))
                   for c in page.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "PLL, " in text and "PLL, default MLM" not in text     # its own table, not the toy model's
    prose = " ".join(c.source for c in page.cells if c.cell_type == "markdown")
    assert "default MLM against the truth" not in prose and "times closer than a unigram" not in prose
    skipped = [c for c in nb.cells if c.cell_type == "code" and "toy-only" in c.metadata.get("tags", [])]
    if skipped and all(c.source.startswith("# (toy-only") for c in skipped):   # the build runs no toy-only cell
        assert "kl_mlm" not in r
