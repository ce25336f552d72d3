"""Chapter 4's downstream measurement (issue 40, item 3): the agreement examples with their verbs, a probe on
frozen features that is exact and repeatable, and the stacks that share their sampled sentences."""
import numpy as np
import pytest
import torch

from mlmbook import deficiency as D
from mlmbook import downstream, stats
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def grammar():
    return Grammar.load("toy")


def test_agreement_examples_name_the_verb_that_decides_them(grammar):
    plain = downstream.agreement_task(grammar, 30, seed=5)
    sents, labels, verbs = downstream.agreement_task(grammar, 30, seed=5, verbs=True)
    assert sents == plain[0] and (labels == plain[1]).all() and len(verbs) == 30
    forms = downstream._verb_forms(grammar)
    for words, label, v in zip(sents, labels, verbs):
        other = words[:v] + [forms[words[v]]] + words[v + 1:]        # switch the verb back (or wrongly)
        assert (grammar.log_prob(words) == -np.inf) == bool(label)
        assert (grammar.log_prob(other) == -np.inf) != bool(label)


class _Reader:
    """A stand-in encoder whose verb vector says whether the sentence is grammatical (first coordinate),
    plus noise: a probe on it must be right every time, and the same twice."""

    def __init__(self, grammar, signal: float):
        self.grammar, self.signal, self.vocab = grammar, signal, list(grammar.vocab)

    def encode_words(self, words):
        return [self.vocab.index(w) for w in words], [[i] for i in range(len(words))]

    def hidden_states(self, ids):
        ids = torch.as_tensor(ids)
        out = torch.randn(*ids.shape, 4, generator=torch.Generator().manual_seed(int(ids.sum())))
        for r, row in enumerate(ids.tolist()):
            ok = self.grammar.log_prob([self.vocab[i] for i in row]) > -np.inf
            out[r, :, 0] += self.signal * (1.0 if ok else -1.0)
        return (out, out * 2)


def test_the_probe_reads_what_the_features_hold_and_repeats_exactly(grammar):
    train = downstream.agreement_task(grammar, 60, seed=6, verbs=True)
    tests = [downstream.agreement_task(grammar, 30, seed=7, verbs=True)]
    sharp = downstream.probe_agreement(_Reader(grammar, 10.0), train, tests)
    assert sharp[0].all()
    blind = [downstream.probe_agreement(_Reader(grammar, 0.0), train, tests)[0] for _ in range(2)]
    assert (blind[0] == blind[1]).all() and blind[0].mean() < 0.9     # no signal: no better than luck
    assert downstream.verb_features(_Reader(grammar, 1.0), tests[0][0], tests[0][2]).shape == (30, 8)


def test_the_agreement_gap_pairs_each_seeds_encoders():
    hits = {(n, s): {"attractor": np.array([1, 0, 1, 1], bool), "ordinary": np.ones(4, bool)}
            for n in ("MLM", "MAE-LM") for s in (0, 1)}
    hits["MAE-LM", 1]["attractor"] = np.ones(4, bool)
    agree = D.Agreement(hits, {k: v for k, v in hits.items() if k[1] == 0}, 10, 10, 4, 1)
    gaps = agree.gap("attractor")
    assert set(gaps) == {0, 1} and gaps[0].tolist() == [0, 0, 0, 0] and gaps[1].tolist() == [0, 1, 0, 0]
    rec = agree.records()
    assert rec["ft_n_seeds"] == 1 and rec["ft_n_models"] == 2 and rec["probe_attractor_maelm"] == "0.750, 1.000"
    assert len(agree.rows()) == 4 and agree.rows()[-1][-1] == ""          # seed 1 was not fine-tuned


def test_widths_text_says_when_a_width_rests_on_one_model():
    iv = stats.Interval(0.01, -0.02, 0.04)
    rows = [D.WidthRow(32, {0: 0.01, 1: 0.02}, {}, iv), D.WidthRow(128, {0: 0.03}, {}, iv)]
    text = D.widths_text(rows)
    assert text.startswith("at width 32 ") and text.count("conditional on that model") == 1
    assert D.widths_text(rows, per_seed_only=True) == "0.010, 0.020 at width 32; 0.030 at width 128"


def test_stacks_keep_jobs_that_read_the_same_sentences_together():
    from dataclasses import replace

    from mlmbook.models.train import TrainConfig
    from mlmbook.pipeline import prepare
    base = TrainConfig(hidden=64, layers=2, heads=2, intermediate=64, steps=10, batch=8)
    jobs = [prepare.Job("toy", None, replace(base, mask_rate=r), s) for r in (0.15, 0.3) for s in range(4)]
    stacks = prepare.split(jobs, workers=2)
    assert sorted(len(u) for u in stacks) == [4, 4]
    assert sum(len({prepare._stream(j) for j in u}) for u in stacks) == 4          # each seed's stream once
    assert {x for u in stacks for x in u} == set(jobs)


def test_the_full_profile_trains_the_pair_at_more_seeds_than_its_controls():
    from mlmbook.models import ladder
    from mlmbook.pipeline import zoo
    arms = zoo.ch4_arm_seeds("full")
    jobs = {j.name for j in zoo.chapter4("full")}
    assert zoo.CH4_SEEDS["full"] >= max(arms.values()) >= 3
    assert {f"default maelm s{s}" for s in range(zoo.CH4_SEEDS["full"])} <= jobs
    assert f"fit mlm s{arms['fit']}" not in jobs and f"fit mlm s{arms['fit'] - 1}" in jobs
    assert zoo.ch4_arm_seeds("quick") == {a: zoo.CH4_SEEDS["quick"] for a in arms}
    assert not ladder.MAELM_TOP["full"] and max(r.hidden for r in ladder.rungs("full", "maelm")) == 64
    budget = zoo.ch4_budget("full")
    assert budget["full_pair_seeds"] == zoo.CH4_SEEDS["full"] and budget["full_pair_seed_cost"] > 0
