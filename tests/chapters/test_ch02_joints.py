"""Chapter 2 (deriving joints from an MLM): the claims its prose makes, checked against its recorded
numbers, and the chapter on a real-vocabulary model. (The package's own functions are tested in
``tests/joints``.)"""
import re
from pathlib import Path

import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook import stats

SLUG = "02_joints"
SOURCE = Path(__file__).resolve().parents[2] / "book" / f"{SLUG}.md"
KINDS = ("adjacent", "random")
RIVALS = ("naive", "mrf", "mrf_local", "hcb")


class Recorded:
    """A recorded verdict read back (what ``paper_agreement`` and ``best_against`` need)."""

    def __init__(self, rec):
        self.rec, self.side, self.phrase = rec, rec["side"], rec["phrase"]
        self.detectable = float(rec["detectable"])
        self.estimate, self.low, self.high = (float(rec[k]) for k in ("estimate", "low", "high"))


def verdicts(r):
    return dict(stats.walk_verdicts(r))


def check_verdicts(r, least=20):
    """Every recorded verdict is sound by the rule, in the chapter's one family, and there are no more
    of them than the family allows (and at least ``least``: the toy world's run states ~35, a model
    without a truth the 10 perplexity comparisons)."""
    family = r["decision_family"]
    assert family["name"] == "chapter 2" and family["kind"] == "family"
    found = verdicts(r)
    assert least <= len(found) <= family["size"], len(found)
    for key, rec in found.items():
        assert stats.check_record(rec) == [], (key, stats.check_record(rec))
        assert rec["family"] == "chapter 2" and rec["family_size"] == family["size"], key
        assert np.isclose(rec["level"], family["level"]), key


def check_claims(r):
    """Every claim the chapter's prose makes, checked against its recorded numbers."""
    check_verdicts(r)
    # the central step: plain AG updates by hand land on the package's solver; exact recovery
    assert r["warmup_by_hand_gap"] < 1e-6
    assert r["warmup_err_hcb"] < 1e-9 and r["warmup_err_ag"] < 1e-6 and r["warmup_err_ag_anchored"] < 1e-6
    assert r["warmup_err_mrf_local"] > 1e-3 and r["warmup_compatibility"] < 1e-20 and r["warmup_noisy_nearest"] > 1e-3
    # the truth's conditionals: compatible; blocks; HCB much worse than AG; anchoring exact
    assert r["truth_is_compatible"] and r["truth_compatibility"] < 1e-12
    assert r["truth_blocks"] >= 2 and np.isclose(sum(r["truth_block_masses"]), 1.0)
    assert r["truth_hcb_kl_infinite"] and 1e-6 < r["truth_ag_tv"] < r["truth_hcb_tv"] / 2
    assert r["truth_hcb_tv"] > 10 * r["truth_hcb_err"]                     # "spread thinly over hundreds of cells"
    assert r["truth_ag_anchored_tv"] < 1e-6
    # AG's solver: 40 plain updates are far from the fixed point
    assert r["ag40_max_log_err"] > 1e-2 and r["ag40_objective_gap"] > 0 and r["ag_show_iterations"] < 2_000
    # AG is the closest joint to the MLM's conditionals, "by construction", on both kinds
    assert r["ag_is_closest_to_mlm"] and all(r[f"{kind}_best_kl"] == "ag" for kind in KINDS)
    # the paper's headline: agreement only from verdicts, never from the order of point estimates
    v = verdicts(r)
    for kind in KINDS:
        read = {m: Recorded(v[f"{kind}_ag_vs_{m}_p_ppl"]) for m in RIVALS}
        assert r[f"{kind}_agrees_with_paper"] == J.paper_agreement(read)
    # incompatibility: nearly compatible, in nats, as a share of the MLM's distance from the truth
    nearest = r["nearest_compatible"]
    assert 0 < nearest["low"] <= nearest["estimate"] <= nearest["high"]
    mlm_error = r["pooled_mlm_cond_kl_truth"]["estimate"]
    assert np.isclose(r["incompatibility_share"], nearest["estimate"] / mlm_error)
    # against the truth: the caption's words follow the verdicts (never "not always" when AG wins everywhere)
    read = {J.METHODS[m]: Recorded(v[f"pooled_ag_vs_{m}_kl_truth"]) for m in RIVALS}
    assert r["methods_caption"] == J.best_against("AG", read, "closer to the truth (KL, all pairs)", unit="nats") + "."
    if all(x.side == "below" for x in read.values()):
        assert "every other joint" in r["methods_caption"] and "not" not in r["methods_caption"]
    gap = Recorded(v["pooled_ag_vs_mlm_truth"])
    assert np.isclose(gap.estimate, r["pooled_ag_cond_kl_truth"]["estimate"] - mlm_error, atol=1e-12)
    assert gap.phrase in r["takeaway_ag_vs_mlm"] and 0 <= r["ag_better_fraction"] <= 1
    # distances: shares, and the verdicts the prose reads
    assert 0 < r["tree_adjacent_share"] < 1 and 0 < r["linear_adjacent_tree_adjacent"] <= 1
    assert {"distance_tree_gain", "distance_linear_gain"} <= set(v)
    for name in ("tree", "linear"):
        assert v[f"distance_{name}_gain"]["phrase"] in r["takeaway_distance"]


def _where(names):
    return "on no rung" if not names else "on " + J.listing(names)


def check_ladder(r):
    """The regime map's words, recomputed from every rung's recorded verdicts."""
    v = verdicts(r)
    main, seeds = r["ladder_main"], r["ladder_seeds"]
    assert len(main) >= 5 and len(seeds) == 3 and seeds[0] in main
    assert r["ladder_n_pairs"] == 2 * r["ladder_n_sentences"]
    gaps = {k: Recorded(v[f"ladder_gap_verdicts.{k}"]) for k in main}
    anchors = {k: Recorded(v[f"ladder_anchor_verdicts.{k}"]) for k in main}
    name = {k: k.split("/")[0] for k in main}
    assert r["ladder_ag_beats_where"] == _where([name[k] for k in main if gaps[k].side == "below"])
    assert r["ladder_mlm_beats_where"] == _where([name[k] for k in main if gaps[k].side == "above"])
    assert r["ladder_anchor_helps_where"] == _where([name[k] for k in main if anchors[k].side == "below"])
    assert r["ladder_anchor_hurts_where"] == _where([name[k] for k in main if anchors[k].side == "above"])
    assert v[f"ladder_gap_verdicts.{seeds[0]}"]["seeds"] == 3               # the smallest size: over its seeds
    # the sizing sentence: detectable effects and the sample a resolved gap would need
    assert np.isclose(r["ladder_gap_target"], max(abs(g.estimate) for g in gaps.values()))
    assert np.isclose(r["ladder_detectable_max"], max(g.detectable for g in gaps.values()))
    assert np.isclose(r["ladder_detectable_min"], min(g.detectable for g in gaps.values()))
    detectable = {name[k]: g.detectable for k, g in gaps.items()}
    assert r["ladder_detectable_min_rung"] == min(detectable, key=detectable.get)    # "(on h128)"
    assert r["ladder_detectable_max_rung"] == max(detectable, key=detectable.get)
    need = r["ladder_n_sentences"] * (r["ladder_detectable_max"] / r["ladder_gap_target"]) ** 2
    assert r["ladder_sentences_needed"] == int(np.ceil(need))
    rows = r["ladder"]
    for key, point in rows.items():
        for q, cell in point.items():
            if isinstance(cell, dict):
                assert cell["low"] <= cell["estimate"] <= cell["high"], (key, q)
    low = max(main, key=lambda k: rows[k]["kl_to_truth"])
    high = min(main, key=lambda k: rows[k]["kl_to_truth"])
    assert r["ladder_low_name"] == name[low] and r["ladder_high_name"] == name[high]
    compat = {k: rows[k]["nearest_compatible"]["estimate"] for k in main}
    assert r["ladder_least_compatible"] == name[max(main, key=compat.get)]
    assert r["ladder_most_compatible"] == name[min(main, key=compat.get)]


def check_knob(r):
    """Soft zeros: the truth's exact answer and the models' verdicts, as the prose states them."""
    v = verdicts(r)
    settings = r["knob_settings"]
    assert settings[0] == 0.0 and len(settings) >= 2
    top = f"{settings[-1]:g}"
    # the exact block counts the prose quotes
    assert 0 <= r["knob_dissolved"] <= r["knob_blocked_at_0"] == r["knob_multiblock_pairs"] <= r["ladder_n_pairs"]
    assert 0 <= r["knob_new_blocks"] <= r["ladder_n_pairs"] - r["knob_blocked_at_0"]
    assert np.isclose(r["knob_0_multiblock_share"], r["knob_blocked_at_0"] / r["ladder_n_pairs"])
    assert r[f"knob_{top}_truth_hcb_tv"] >= 0
    for e in settings:
        assert 0 <= r[f"knob_{e:g}_multiblock_share"] <= 1 and r[f"knob_{e:g}_fit"] > 0
    h, a = Recorded(v["knob_hcb_tv_change"]), Recorded(v["knob_ag_tv_change"])
    assert h.phrase in r["takeaway_knob"] and a.phrase in r["takeaway_knob"]
    assert np.isclose(r["knob_model_to_truth_ratio"], r["knob_0_ag_tv_truth"]["estimate"] / r["knob_0_truth_hcb_tv"])
    for e in settings[1:]:
        assert f"knob_{e:g}_gap" in v


def check_k_sites(r):
    v = verdicts(r)
    for key in ("k_three_words_ag_vs_independent", "k_three_words_ag_vs_chain", "k_whole_sentence_ag_vs_chain"):
        assert key in v and v[key]["phrase"] in r["takeaway_k"]
    for grid in ("three_words", "whole_sentence"):
        for m in ("independent", "chain", "AG-k", "truths_chain"):
            assert r[f"k_{grid}_{m}_kl"] >= 0


# --------------------------------------------------------------------------- the prose's wording

def test_the_page_source_keeps_the_corrected_wording():
    text = SOURCE.read_text()
    # the second edition's wrong sentences, each retired
    assert "far from compatible" not in text                       # unweighted log-space score: now nats
    assert "not always to the truth" not in text and "but not always" not in text
    assert "not_measured" not in text and "not measured" not in text
    # one decision rule: no hand-written interval rules or transition names
    for old in ("side_of_zero", "J.verdict(", "hi < 0", "lo > 0", "n_boot=n_boot", "ratio_bootstrap"):
        assert old not in text, old
    assert text.count("stats.Family(") == 1
    # notation: derived joints are q_m, never p_AG; the rest of a sentence is x_{\setminus ...}
    for old in ("p_{AG}", "p_{\\mathrm{AG}}", "x_{-ij}", "x_{-i}"):
        assert old not in text, old
    # the paper's numbers are not quoted without their table
    assert not re.search(r"paper reports [^.]*\d", text) or "Table" in text


# --------------------------------------------------------------------------- the chapter

@pytest.mark.slow
def test_chapter_quick(quick_book):
    r = quick_book.results(SLUG)
    assert r, "chapter 2 recorded nothing"
    assert r["profile"] == "quick" and r["n_pairs"] == 12 and r["n_sentences"] == 12
    check_claims(r)
    check_ladder(r)
    check_knob(r)
    check_k_sites(r)


def test_chapter_full_profile_claims(full_results):
    """The prose was written against the last default full-profile build: its claims hold there."""
    r = full_results(SLUG)
    assert r["profile"] == "full" and r["n_pairs"] >= 60 and r["ladder_n_sentences"] >= 20
    check_claims(r)
    check_ladder(r)
    check_knob(r)
    check_k_sites(r)


@pytest.mark.slow
def test_chapter_on_a_2000_piece_wordpiece_bert(run_chapter, wordpiece_bert_2k):
    """The real-model path: top-K candidates chosen automatically, the shipped treebank through
    ``load_sentences`` and the unknown-piece guard, one sentence for each section that needs the
    truth — never a placeholder inside a sentence."""
    from mlmbook.pipeline.checks import glue_uses, glued_values
    from tests.chapters.conftest import ANY_MODEL_TREEBANK
    run = run_chapter(SLUG, model=wordpiece_bert_2k, treebank=str(ANY_MODEL_TREEBANK), top_k=12)
    r = run.results(SLUG)
    assert r["n_pairs"] > 0 and not run.not_measured(SLUG)
    assert ANY_MODEL_TREEBANK.name in r["corpus"] and r["corpus"].startswith("kept ")
    check_verdicts(r, least=10)
    truth_only = ("truth_", "ladder", "knob", "k_", "pooled_", "distance_")
    sizes = ("ladder_n_pairs", "ladder_n_sentences")         # glued in the figure captions
    assert not any(k.startswith(truth_only) and k not in sizes for k in r)
    nb = run.notebook(SLUG)
    glued = glued_values(nb)
    bad = re.compile(r"\b(nan|n/a|not measured)\b", re.I)
    for key, _ in glue_uses(nb):
        assert key in glued, f"the prose cites {key!r}, which this run never glued"
        assert not bad.search(str(glued[key])), (key, glued[key])
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/markdown", "") or out.get("text", "")
            assert not bad.search(str(text)), text
    for kind in KINDS:
        assert r[f"{kind}_agrees_with_paper"] in ("agrees with the paper", "contradicts the paper",
                                                  "neither confirms nor contradicts the paper")
