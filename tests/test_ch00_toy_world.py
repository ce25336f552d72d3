"""Chapter 0: the recorded numbers exist, and the prose's claims hold on them."""
import pytest


def test_quick_profile_numbers(quick_book):
    r = quick_book.results("00_toy_world")
    assert 100 <= r["grammar_words"] <= 300 and r["grammar_max_length"] <= 15
    assert 5 <= r["mean_length"] <= 11
    assert r["p_barks_after_plural_subject"] == 0.0          # the truth enforces agreement
    # even the quick model beats the unigram baseline and stays above the Bayes line
    assert r["final_eval_loss"] > r["bayes_loss"]
    assert 0 < r["kl_mlm"] < r["kl_unigram"]
    assert r["kl_ratio"] == pytest.approx(r["kl_unigram"] / r["kl_mlm"])
    assert r["kl_verdict"] == ("at least five times" if r["kl_ratio"] >= 5 else "less than five times")


def test_full_profile_claims(full_results):
    r = full_results("00_toy_world")
    # the acceptance bar of the foundation: the default MLM is >= 5x closer to the truth than a unigram
    assert r["kl_ratio"] >= 5, r["kl_ratio"]
    assert r["kl_verdict"] == "at least five times"
    assert r["n_eval_sentences"] >= 200


def test_chapter_runs_on_a_wordpiece_model(run_chapter, wordpiece_bert):
    run = run_chapter("00_toy_world", model=wordpiece_bert)
    r = run.results("00_toy_world")
    assert "kl_mlm" not in r and r["grammar_words"] > 100
    text = "".join(o.get("text", "") for c in run.notebook("00_toy_world").cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    assert "PLL" in text
