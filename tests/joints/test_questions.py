"""Chapter 2's study layer and bookkeeping: the primary questions, the rows that answer them, the descriptive
tables, the soft-zeros sample and the sentences the chapter reads (mlmbook.joints.study, .experiment, .knob,
.sampling)."""
import math
from pathlib import Path

import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook import plans, stats
from mlmbook.errors import DataFitError, UsageError
from mlmbook.joints.experiment import ROWS
from mlmbook.joints.study import exp_interval
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def grammar():
    return Grammar.load("toy")


# ------------------------------------------------------------------------------------------ questions
def test_the_chapters_questions_are_the_papers_claims_with_the_plans_sds(full_results):
    """The questions chapter 2 declares, as its full reference recorded them: six, in order, with their
    effects of interest and the committed plan's planning SDs (the chapter declares them in a visible cell)."""
    r = full_results("02_joints")
    keys = ["ag_vs_mlm", "ag_vs_mlm_far", "ag_vs_mlm_uppl", "ag_vs_mrf", "hcb_vs_mrf", "knob_block"]
    assert r["study"]["questions"] == keys and r["study"]["size"] <= stats.MAX_PRIMARY
    effect = {k: r[f"q_{k}"]["effect"] for k in keys}
    assert effect["ag_vs_mrf"] == effect["hcb_vs_mrf"] == effect["ag_vs_mlm_uppl"] == pytest.approx(math.log(1.1))
    assert effect["knob_block"] == J.KNOB_EFFECT
    for key in ("ag_vs_mlm", "ag_vs_mlm_far"):      # 10 % of the model's KL, which the basis states
        kl = float(r[f"q_{key}"]["basis"].rsplit(", ", 1)[1])
        assert effect[key] == pytest.approx(J.KL_SHARE * kl, rel=0.01), key
    sds = plans.planning_sds("02_joints")
    assert {k: r[f"q_{k}"]["planning_sd"] for k in keys} == sds and min(sds.values()) > 0


def test_ppl_rows_are_the_difference_of_log_perplexities():
    rng = np.random.default_rng(0)
    per = {"ag.logp_pair": rng.normal(-4, 1, 20), "mrf.logp_pair": rng.normal(-4.5, 1, 20)}
    rows = J.ppl_rows(per, "ag", "mrf")
    want = math.log(stats.ppl(per["ag.logp_pair"])) - math.log(stats.ppl(per["mrf.logp_pair"]))
    assert np.isclose(rows.mean(), want)
    per["mrf.logp_pair"][3] = -np.inf
    with pytest.raises(ValueError, match="infinite"):
        J.ppl_rows(per, "ag", "mrf")
    gap = J.gap_rows({"ag.cond_kl_truth": np.array([0.2, 0.1]), "mlm.cond_kl_truth": np.array([0.1, 0.3])})
    assert np.allclose(gap, [0.1, -0.2])


def test_an_interval_formats_without_negative_zero_and_says_unbounded():
    iv = stats.Interval(-0.0004, -0.02, 0.0102, n=12)
    assert iv.format(3) == "0.000 [-0.020, 0.010]"               # never -0.000
    assert stats.Interval(0.5, -np.inf, np.inf).format(2) == "0.50 [unbounded]"
    assert stats.Interval(0.0, 0.0, 0.369).format(3) == "0 [0, 0.369]"       # an exact zero is 0
    glued = stats.Interval(0.25, 0.1, np.inf, n=4).glue_fields(2)
    assert glued == {"estimate": 0.25, "low": 0.1, "high": "+∞", "n": 4, "text": "0.25 [0.10, ∞]"}
    e = exp_interval(stats.Interval(0.1, 0.0, 0.2, se=0.05))
    assert np.allclose(tuple(e), (math.exp(0.1), 1.0, math.exp(0.2)))
    assert J.cell(stats.Interval(0.104, -np.inf, np.inf)) == "0.104 [unbounded]"


# ------------------------------------------------------------------------------------------ tables
def test_methods_table_describes_sentences_not_pairs():
    rng = np.random.default_rng(1)
    n = 12
    kinds = np.array(["adjacent", "random"] * n)
    sentence = np.repeat(np.arange(n), 2)
    per = {f"{m}.{f}": rng.normal(-3, 0.5, 2 * n) if f.startswith("logp") else rng.gamma(2, 0.1, 2 * n)
           for m in J.METHODS for f in ("logp_pair", "logp_unary", "kl")}
    per["mlm.logp_unary"] = rng.normal(-3, 0.5, 2 * n)
    rows, ivs = J.methods_table(per, kinds, sentence)
    assert len(rows) == len(J.METHODS) + 1 and rows[-1][0] == ROWS["mlm"] and rows[-1][1] is None
    adj = ivs["ag", "p_ppl_adjacent"]
    assert np.isclose(adj.estimate, stats.ppl(per["ag.logp_pair"][kinds == "adjacent"])) and adj.n == n
    assert ivs["ag", "u_ppl"].n == n and np.isclose(ivs["ag", "kl"].estimate, per["ag.kl"].mean())
    assert adj.low < adj.estimate < adj.high


# ------------------------------------------------------------------------------------------ soft zeros
def test_blocked_sample_keeps_only_tables_with_blocks(toy_bert, grammar):
    from mlmbook.models import load_mlm

    lm = load_mlm(toy_bert)
    items, truths, labels = J.blocked_sample(lm, grammar, 3, np.random.default_rng(0), seed=5)
    assert sorted({it["sentence"] for it in items}) == [0, 1, 2]
    for it, P, lab in zip(items, truths, labels):
        assert J.support_blocks(J.PairConditionals.from_joint(P))[0] >= 2
        assert len(lab) == P.shape[0] and np.allclose(P, J.truth_joints(grammar, J.word_pairs([it]))[0])
    exact = J.exact_blocks(truths, labels)
    assert (exact["blocks"] >= 2).all() and (exact["hcb_block"] <= exact["hcb_tv"] + 1e-12).all()
    # HCB from a one-block table misplaces nothing between blocks
    one = np.full((3, 3), 1 / 9)
    assert J.exact_blocks([one], [np.zeros(3, int)])["hcb_block"][0] < 1e-12


# ------------------------------------------------------------------------------------------ sentences
def test_the_toy_model_reads_its_language_and_refuses_a_treebank(toy_bert, grammar):
    from mlmbook.models import load_mlm

    lm = load_mlm(toy_bert)
    sents, corpus = J.experiment_sentences(lm, 5, grammar, J.Source(True), seed=2)
    assert corpus is None and [s.words for s in sents] == [s.words for s in grammar.sample(20, seed=2)]
    with pytest.raises(UsageError, match="cannot use -p treebank"):
        J.experiment_sentences(lm, 5, grammar, J.Source(True, "tests/fixtures/any_model.conllu"))


def test_another_model_reads_a_treebank_through_the_front_door(toy_bert, grammar, capsys):

    from mlmbook.corpus import Window
    from mlmbook.models import load_mlm

    lm = load_mlm(toy_bert)
    bank = Path(__file__).resolve().parents[1] / "fixtures" / "any_model.conllu"
    window = Window(5, 14, drop_punct=True)
    # an untrained model: the fit check refuses it, so it runs only when allowed, and says so
    with pytest.raises(DataFitError, match="no better than chance"):
        J.experiment_sentences(lm, 4, grammar, J.Source(False, bank, window), seed=0)
    source = J.Source(False, bank, window, allow_unknown=True)
    sents, corpus = J.experiment_sentences(lm, 4, grammar, source, seed=0)
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and "no better than chance" in warned[0] and "allow_unknown" in warned[0]
    assert corpus.fit.allowed and not corpus.fit.ok and corpus.fit.admonition() is not None   # the page's box
    assert len(sents) == 16 and corpus.summary().startswith("kept 16 of")
    assert all(5 <= len(s.words) <= 14 and "." not in s.words for s in sents)


def test_item_for_and_marked(toy_bert):
    from mlmbook.models import load_mlm

    lm = load_mlm(toy_bert)
    it = J.item_for(lm, "the dog near the old river barks .".split(), 1, 6)
    assert J.marked(it) == "the [A] near the old river [B] ."
    assert lm.vocab[it["ids"][it["A"]]] == "dog" and lm.vocab[it["ids"][it["B"]]] == "barks"


def test_k_token_pools(grammar):
    items = [dict(words=s.words) for s in grammar.sample(10, seed=0) for _ in range(2)]
    pools = J.k_token_pools(items, grammar, 4, 3, seed=1)
    assert len(pools["three words"]) == 4 and len(pools["whole sentence"]) == 3
    for words, sites in pools["three words"]:
        assert len(set(sites)) == 3 and sites == sorted(sites) and all(words[s] != "." for s in sites)
    assert all(len(w) == 5 and w[-1] == "." and sites == [0, 1, 2, 3] for w, sites in pools["whole sentence"])
