"""Chapter 2 (deriving joints from an MLM): the claims its prose makes, checked against its recorded numbers —
the quick build, the committed full reference and a real-vocabulary model. (The package's own functions are
tested in ``tests/joints``.)"""
import math
import re
from pathlib import Path

import jupytext
import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook import stats

SLUG = "02_joints"
SOURCE = Path(__file__).resolve().parents[2] / "book" / f"{SLUG}.md"
TOY_QUESTIONS = ("ag_vs_mlm", "ag_vs_mlm_far", "ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf", "knob_block")
REAL_QUESTIONS = ("ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf")
PAGES = ["Deriving language models from masked language models", "The paper's experiment: six joints on the same pairs",
         "Where the effects live: ladder, soft zeros, more tokens", "Answers, real models and exercises"]


def _kinds(value, found=None):
    """Every ``kind`` in a results dict, nested values included."""
    found = set() if found is None else found
    if isinstance(value, dict):
        if "kind" in value:
            found.add(value["kind"])
        for v in value.values():
            _kinds(v, found)
    elif isinstance(value, list):
        for v in value:
            _kinds(v, found)
    return found


def check_study(r, questions):
    """The Study: the declared questions only, each answered whole, every answer re-derivable, no old verdicts."""
    assert r["study"]["kind"] == "study" and tuple(r["study"]["questions"]) == questions
    assert r["study"]["size"] == len(questions) <= stats.MAX_PRIMARY
    for key in questions:
        a = r[f"q_{key}"]
        assert a["kind"] == "answer" and a["family_size"] == len(questions) and a["unit"] == "sentence"
        assert np.isclose(a["level"] if "level" in a else a["interval_level"], 1 - 0.05 / len(questions))
        assert len(a["values"]) == len(a["units"]) and a["verdict"] in (*stats.VERDICTS, *a_words(a))
    assert stats.audit(r) == {}
    assert "verdict" not in _kinds(r) and "family" not in _kinds(r)


def a_words(a):
    return {"AG's lower", "MLM's lower", "AG lower", "MRF lower", "HCB lower", "AG's closer", "MLM's closer",
            "falls", "rises"}


def check_central_step(r):
    assert r["warmup_by_hand_gap"] < 1e-6                              # 20,000 plain updates land on the solver
    for m in ("hcb", "ag", "ag_anchored"):                             # "give the joint back to rounding error"
        assert r[f"warmup_err_{m}"] < 1e-9
    assert r["warmup_err_mrf_local"] > 1e-3 and r["warmup_compatibility"] < 1e-20   # "MRF-local does not"


def check_truth_section(r):
    assert r["truth_compatibility"] < 1e-12                            # "compatible, as a true distribution's must be"
    assert r["truth_blocks"] >= 2 and np.isclose(sum(r["truth_block_masses"]), 1.0)
    assert r["truth_hcb_kl_infinite"] and 1e-6 < r["truth_ag_tv"] < r["truth_hcb_tv"]
    assert r["truth_hcb_tv"] > 10 * r["truth_hcb_err"]                 # "spread thinly over hundreds of cells"
    assert r["truth_ag_anchored_tv"] < 1e-6                            # anchored AG recovers the truth
    assert r["truth_block_0_nouns"] and r["truth_block_1_nouns"]


def check_experiment(r):
    assert r["ag_is_closest_to_mlm"]                                   # "AG is the smallest by construction"
    kl = {m: r[f"m_{m}_kl"]["estimate"] for m in J.METHODS}
    assert min(kl, key=kl.get) == "ag"
    nearest = r["nearest_compatible"]
    assert 0 < nearest["low"] <= nearest["estimate"] <= nearest["high"]


def check_against_truth(r):
    truth_kl = {m: r[f"t_{m}_kl_truth"]["estimate"] for m in J.METHODS}
    truth_tv = {m: r[f"t_{m}_tv_truth"]["estimate"] for m in J.METHODS}
    assert min(truth_kl, key=truth_kl.get) == "ag" and min(truth_tv, key=truth_tv.get) == "ag"   # "smallest KL and TV"
    gap = r["q_ag_vs_mlm"]
    assert np.isclose(gap["interval_estimate"],
                      r["t_ag_cond_kl_truth"]["estimate"] - r["t_mlm_cond_kl_truth"]["estimate"])
    assert np.isclose(r["incompatibility_pct"], 100 * r["nearest_compatible"]["estimate"]
                      / r["t_mlm_cond_kl_truth"]["estimate"])
    assert r["incompatibility_pct"] < 25                               # "small beside the error AG's projection keeps"
    assert 0 <= r["ag_better_pct"] <= 100


def check_ladder(r):
    rows = r["ladder"]
    main = [k for k in rows if k.endswith("/seed0")]
    assert len(main) == 5 and len(rows) == 7
    for key, point in rows.items():
        # "a few per cent of the rung's own KL or less, on either side of zero"
        assert abs(point["gap"]["estimate"]) < 0.05 * point["kl_to_truth"], key
        # "anchoring on the MLM's own marginals brings it closer on no rung"
        assert point["anchor"]["high"] >= 0, key
        for q, cell in point.items():
            if isinstance(cell, dict):
                assert cell["low"] <= cell["estimate"] <= cell["high"], (key, q)
                assert cell["n"] == r["ladder_n_sentences"], (key, q)
    assert r["ladder_needed_max"] == max(r["ladder_needed"].values())
    assert r["far_name"] + "/seed0" in rows and r["q_ag_vs_mlm_far"]["interval_n"] == r["ladder_n_sentences"]
    # the default model's anchoring (the experiment's sentences) adds error or nothing: never an interval below 0
    assert r["anchor_default"]["high"] >= 0


def check_knob(r):
    settings = r["knob_settings"]
    assert settings[0] == 0.0 and settings[-1] == 0.1
    fall = r["knob_0_truth_hcb_block"] - r["knob_0.1_truth_hcb_block"]
    assert np.isclose(r["knob_truth_fall"], fall) and fall > 0          # "soft zeros lower the truth's block error"
    assert 0 <= r["knob_dissolved"] <= r["knob_n_pairs"]
    q = r["q_knob_block"]
    assert q["interval_n"] == r["knob_n_sentences"]
    assert float(q["interval_low"]) > -fall                  # "an interval that stops short of the truth's fall"
    for e in settings:                                                 # "above the truth's worst at every setting"
        assert r[f"knob_{e:g}_hcb_block_error"]["estimate"] > r["knob_0_truth_hcb_block"]
        assert r[f"knob_{e:g}_fit"] > 0


def check_k_tokens(r):
    for grid in ("three_words", "whole_sentence"):
        for m in ("independent", "chain", "AG-k", "truths_chain"):
            assert r[f"k_{grid}_{m}"]["estimate"] >= 0
        assert r[f"k_{grid}_truths_chain"]["estimate"] > 0            # "part of the chain's error is the grid's"
        d = r[f"k_{grid}_ag_minus_chain"]["estimate"]
        assert np.isclose(d, r[f"k_{grid}_AG-k"]["estimate"] - r[f"k_{grid}_chain"]["estimate"])
    assert r["k3_n"] == r["k_three_words_AG-k"]["n"] and r["k4_n"] == r["k_whole_sentence_AG-k"]["n"]


def check_toy_run(r):
    check_study(r, TOY_QUESTIONS)
    check_central_step(r)
    check_truth_section(r)
    check_experiment(r)
    assert 50 < r["topk_truth_pct"] <= 100


# --------------------------------------------------------------------------- the source
def _cells():
    return jupytext.read(SOURCE).cells


def test_the_page_skeleton():
    cells = _cells()
    titles = [c.source.splitlines()[0][2:] for c in cells if c.cell_type == "markdown" and c.source.startswith("# ")]
    assert titles == PAGES
    text = SOURCE.read_text()
    for heading in ("## The central step", "## Primary questions", "## Answers", "## Key takeaways",
                    "## Run it on a real model", "## Exercises"):
        assert f"\n{heading}\n" in text, heading
    assert text.index("## The central step") < text.index("## Primary questions") < text.index(f"# {PAGES[1]}")
    # the declaration cell is visible and comes before any result
    declare = next(c for c in cells if "study.declaration()" in c.source)
    assert not set(declare.metadata.get("tags", [])) & {"remove-cell", "remove-input", "hide-input"}
    assert cells.index(declare) < min(k for k, c in enumerate(cells) if "study.answer(" in c.source)


def _sizes(profile):
    from mlmbook.pipeline.chapters import Chapter
    from mlmbook.pipeline.plan import chapter_sizes
    return chapter_sizes(Chapter(SOURCE), profile)[0]


def test_the_planned_samples_fit_the_planning_sds(full_results):
    """The extended profile measures what the committed plan's standard deviations ask for (at the family's
    level, at the full model's effects); the full profile does for the questions its budget holds; unit
    counts stay out of the sign-flip test's slow range (13-29 units: seconds per interval)."""
    full, extended = _sizes("full"), _sizes("extended")
    reference = full_results(SLUG)
    planned = {key: reference[f"q_{key}"]["needed_planned"] for key in reference["study"]["questions"]}
    for key in ("ag_vs_mlm", "ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf"):
        assert planned[key] <= extended["SIZES.toy.sentences"], key
    for key in ("ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf"):
        assert planned[key] <= full["SIZES.toy.sentences"], key
    assert planned["ag_vs_mlm_far"] <= full["SIZES.toy.ladder"]
    for profile in ("quick", "full"):
        for key, n in _sizes(profile).items():
            assert n <= 12 or n >= 30 or key.endswith((".k3", ".k4")), (profile, key, n)


def test_claims_are_prose_not_code():
    text = SOURCE.read_text()
    for old in ("display(Markdown(", "stats.Family(", "stats.decide(", "verdict(", "J.paper_agreement",
                "best_against", "if toy_world"):
        assert old not in text, old
    # every heading of the truth's sections is tagged toy-only, and so is every Markdown cell that cites a key
    # recorded only with the truth
    truth_only = re.compile(r"`(truth_|t_|q_ag_vs_mlm(\.|_iv|`)|q_ag_vs_mlm_far|q_knob|knob_|ladder|k_|k3|k4|far_name|"
                            r"ag_better|incompatibility|anchor_default|topk_)")
    for cell in _cells():
        if cell.cell_type == "markdown" and truth_only.search(cell.source):
            assert "toy-only" in cell.metadata.get("tags", []), cell.source[:80]


# --------------------------------------------------------------------------- the chapter
@pytest.mark.slow
def test_chapter_quick(quick_book):
    r = quick_book.results(SLUG)
    sizes = _sizes("quick")
    assert r["profile"] == "quick" and r["n_sentences"] == sizes["SIZES.toy.sentences"]
    check_toy_run(r)


def test_chapter_full_profile_claims(full_results):
    """The prose was written against the last default full-profile build: its claims hold there."""
    r = full_results(SLUG)
    sizes = _sizes("full")
    assert r["profile"] == "full" and r["n_sentences"] == sizes["SIZES.toy.sentences"]
    assert r["ladder_n_sentences"] == sizes["SIZES.toy.ladder"] and r["knob_n_sentences"] == sizes["SIZES.toy.knob"]
    check_toy_run(r)
    check_against_truth(r)
    check_ladder(r)
    check_knob(r)
    check_k_tokens(r)
    # each primary question the budget holds is measured on the sample its plan asks for (Q1's, at the
    # full model's small effect, only the extended profile holds: test_the_planned_samples_fit_...)
    for key in ("ag_vs_mlm_far", "ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf"):
        a = r[f"q_{key}"]
        assert a["needed_planned"] <= a["interval_n"], key
    assert math.isfinite(r["q_ag_vs_mlm"]["effect"]) and r["q_ag_vs_mlm"]["effect"] < 0.02
    # the planning standard deviations are the committed plan's (a pilot's, never this reference's)
    from mlmbook import plans
    assert not plans.check(SLUG, r)


@pytest.mark.slow
def test_chapter_on_a_2000_piece_wordpiece_bert(run_chapter, wordpiece_bert_2k):
    """The real-model path: top-K candidates, the treebank through the front door, the three questions a model
    without a truth can answer, and no truth-only number recorded or cited."""
    from mlmbook.pipeline.checks import glue_uses, glued_values
    from mlmbook.pipeline.split import drop_other_world
    from tests.chapters.conftest import ANY_MODEL_TREEBANK
    run = run_chapter(SLUG, model=wordpiece_bert_2k, treebank=str(ANY_MODEL_TREEBANK), top_k=12,
                      allow_unknown="true")                   # random weights: the fit check refuses them
    r = run.results(SLUG)
    assert r["n_sentences"] > 0 and r["corpus"].startswith("kept ") and ANY_MODEL_TREEBANK.name in r["corpus"]
    check_study(r, REAL_QUESTIONS)
    check_central_step(r)
    truth_only = ("truth_", "t_", "ladder", "knob", "k_", "k3", "k4", "topk", "q_ag_vs_mlm_far", "q_knob",
                  "anchor_default", "incompatibility", "ag_better")
    assert not [k for k in r if k.startswith(truth_only) or k == "q_ag_vs_mlm"]
    nb = drop_other_world(run.notebook(SLUG), "real")     # the page a real model gets
    glued = glued_values(nb)
    for key, _ in glue_uses(nb):
        assert key in glued, f"the prose cites {key!r}, which this run never glued"
    # the run's own pair is drawn, not the toy showcase
    assert "the [A] near the old river" not in r["shown_pair"]


@pytest.mark.slow
def test_allow_unknown_runs_and_shows_the_warning_on_the_page(run_chapter, wordpiece_bert_2k):
    """A model the treebank does not fit runs with ``-p allow_unknown true`` and says so in a visible box
    (an output of a cell the page keeps), not on stderr."""
    bank = Path(__file__).resolve().parents[1] / "fixtures" / "english_web.conllu"
    run = run_chapter(SLUG, model=wordpiece_bert_2k, treebank=str(bank), top_k=12, allow_unknown="true")
    r = run.results(SLUG)
    assert r["n_sentences"] > 0 and "english_web.conllu" in r["corpus"]
    boxes = [out["data"]["text/html"] for cell in run.notebook(SLUG).cells
             if "remove-cell" not in cell.get("metadata", {}).get("tags", [])
             for out in cell.get("outputs", []) if "text/html" in out.get("data", {})]
    assert any('class="admonition warning"' in h and "allow_unknown" in h for h in boxes)
