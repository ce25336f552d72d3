"""What inconsistency follows, the regime map's estimators, and chapter 3's noise knob.

Exactness first: the truth's CMI of a pair and the noisy language's probabilities are checked
against brute-force enumeration of the tiny grammar; the AG distance is 0 for a joint; the
per-target scores against hand computation; 0/0 is undefined, never 0.
"""
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from mlmbook import consistency as C
from mlmbook import stats
from mlmbook.consistency import regime as R
from mlmbook.consistency.tracking import spearman
from tests.fakes import JointOracle, PerturbedOracle, random_joint

V = 4


@pytest.fixture(scope="module")
def tiny():
    from mlmbook.toy import Grammar
    g = Grammar.load("tiny")
    return g, g.pcfg.enumerate(g.max_length)


def _brute_pair_joint(enum, words_ids, i, j, Vw):
    P = np.zeros((Vw, Vw))
    for x, p in enum.items():
        if len(x) == len(words_ids) and all(x[k] == words_ids[k] for k in range(len(x)) if k not in (i, j)):
            P[x[i], x[j]] += p
    return P / P.sum()


# ---------------------------------------------------------------- what the chapter combines
def test_truth_cmi_of_pairs_by_enumeration(tiny):
    """The chapter reads each pair's dependence off chapter 1's truth_cmi: check it by enumeration."""
    from mlmbook.dependencies import truth_cmi
    g, enum = tiny
    sents = [s for s in g.sample(30, seed=4) if len(s) >= 5][:2]
    values = []
    for s in sents:
        M = truth_cmi(g, [s.words], window=None)[0]
        for i, j in ((0, 1), (1, 2), (1, 3)):
            P = _brute_pair_joint(enum, [g.word_id[w] for w in s.words], i, j, len(g.vocab))
            assert M[i, j] == pytest.approx(stats.mutual_information(P), abs=1e-10)
            values.append(M[i, j])
    assert max(values) > 1e-3                               # some of these pairs depend on each other


def test_ag_distance_zero_for_a_joint_positive_otherwise():
    """The incompatibility budget: chapter 2's AG objective at its minimum, per conditional."""
    from mlmbook import joints
    joint = random_joint(4, V, seed=6)

    def d_ag(lm, row, i, j):
        q = [(row, i, j)]
        pc = joints.pair_conditionals_batch(lm, q, joints.topk_candidates(lm, q, k=3, gold=False))[0]
        return joints.ag(pc).objective[-1] / sum(pc.shape)
    for row, i, j in (([0, 1, 2, 3], 0, 1), ([3, 2, 1, 0], 1, 3)):
        assert abs(d_ag(JointOracle(joint), row, i, j)) < 1e-7
        assert d_ag(PerturbedOracle(joint, scale=1.0), row, i, j) > 1e-4


def test_spearman_and_budget_tracking():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(x, x ** 3) == pytest.approx(1.0) and spearman(x, -x) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    budget = np.column_stack([rng.uniform(0, 1, 50) + k for k in range(5)])      # 5 models, 50 targets
    gain = 0.1 * budget + rng.normal(0, 0.01, budget.shape)
    iv = C.budget_tracking(budget, gain)
    assert iv.estimate == pytest.approx(1.0) and iv.low > 0.5 and iv.level == stats.LEVEL
    with pytest.raises(ValueError):
        C.budget_tracking(budget[:, :2], gain[:, :2])


# ---------------------------------------------------------------- the regime map's estimators
def _exact_conditional(logp, row, t):
    idx = [int(x) for x in row]
    idx[t] = slice(None)
    lp = logp[tuple(idx)]
    return np.concatenate([np.exp(lp - logsumexp(lp)), [0.0]])     # + the mask id's 0


def test_regime_measures_by_brute_force():
    logp = random_joint(4, V, seed=5)
    ids = [torch.tensor([0, 1, 2, 3]), torch.tensor([3, 2, 1, 0]), torch.tensor([1, 1, 0, 2])]
    pairs = np.array([(s, i, j) for s in range(3) for i in range(4) for j in range(i + 1, 4)])
    targets, aux = [0, 2, 3], [[1, 2], [1, 3], [2]]
    truth_p = [_exact_conditional(logp, r, t) for r, t in zip(ids, targets)]
    paper = np.array([(0, 0, 2), (1, 1, 3)])
    # a model that is the truth: no inconsistency, no headroom, nothing for the ensemble to do
    material = R.RungMaterial(ids, pairs, ids, targets, aux, truth_p, candidates=3)
    same = R.rung_measures(JointOracle(logp), replace(material, paper_ids=ids, paper_pairs=paper))
    assert same["abs_delta"].max() < 1e-9 and same["order"].max() < 1e-9 and same["paper"].max() < 1e-9
    assert same["flip"].sum() == 0
    np.testing.assert_allclose(same["single"], same["bayes"], atol=1e-9)
    np.testing.assert_allclose(same["ens"], same["single"], atol=1e-9)
    pts = R.rung_intervals(same)
    assert not pts["acc_frac"].defined                      # no accuracy headroom: 0/0 is undefined
    # an inconsistent model: every per-target number by hand (leak-free, whole vocabulary)
    lm = PerturbedOracle(logp, scale=1.0)
    m = R.rung_measures(lm, material)
    assert (m["abs_delta"] > 1e-6).all()
    for n, (row, t) in enumerate(zip(ids, targets)):
        v = C.harsh(C.ensemble_versions_many(lm, [row], [t], [aux[n]], candidates=3)[0])
        g = int(row[t])
        if g in v.candidates:
            hit = list(v.candidates).index(g)
            assert m["single"][n] == pytest.approx(-np.log(v.mass * v.probs[0, hit]))
            assert m["ens"][n] == pytest.approx(-np.log(v.mass * v.probs[:, hit].mean()))
            assert m["alone"][n] == pytest.approx(-np.log(v.mass * v.probs[1:, hit]).mean())
        else:
            assert m["single"][n] == m["ens"][n] == pytest.approx(-np.log(v.outside))
        assert m["bayes"][n] == pytest.approx(-np.log(truth_p[n][g]))
        assert m["hit_bayes"][n] == float(np.argmax(truth_p[n]) == g)
    s = R.rung_intervals(m, level=0.9)
    frac = (m["single"] - m["ens"]).sum() / (m["single"] - m["bayes"]).sum()
    assert s["loss_frac"].level == 0.9
    if s["loss_frac"].defined:                              # Fieller: a number only with headroom clearly above 0
        assert s["loss_frac"].estimate == pytest.approx(frac)
    else:                                                   # three targets: the headroom's interval holds 0
        assert "contains 0" in s["loss_frac"].note
    big = {k: np.tile(v, 40) for k, v in m.items()}
    assert R.headroom_fraction(big["single"], big["ens"], big["bayes"], level=0.9).estimate == pytest.approx(frac)
    assert s["delta"].estimate == pytest.approx(np.median(m["abs_delta"]))
    assert s["flips"].estimate == pytest.approx(m["flip"].mean())
    for iv in s.values():
        assert not iv.defined or iv.low <= iv.estimate <= iv.high


def test_zero_headroom_is_undefined_not_zero():
    m = dict(single=np.ones(5), ens=np.ones(5), bayes=np.ones(5), alone=np.ones(5),
             hit_single=np.ones(5), hit_ens=np.ones(5), hit_bayes=np.ones(5))
    pts = {"loss_frac": R.headroom_fraction(m["single"], m["ens"], m["bayes"]),
           "acc_frac": R.headroom_fraction(-m["hit_single"], -m["hit_ens"], -m["hit_bayes"])}
    assert not pts["loss_frac"].defined and not pts["acc_frac"].defined
    assert pts["acc_frac"].format().startswith("undefined")


# ---------------------------------------------------------------- the noise knob (chapter 3's grammar knob)
@pytest.mark.parametrize("eta", [0.2, 0.5])
def test_word_noise_knob_by_enumeration(tiny, eta):
    """toy[word_noise=η] is the language with each word replaced by a uniform word with probability η."""
    from mlmbook.toy import Grammar
    g, enum = tiny
    noisy = Grammar.load(f"tiny[word_noise={eta}]")
    W = len(g.vocab)
    total = sum(enum.values())

    def brute(x):
        s = 0.0
        for y, p in enum.items():
            if len(y) == len(x):
                s += p * np.prod([(1 - eta) * (a == b) + eta / W for a, b in zip(x, y)])
        return math.log(s / total)

    sents = [s.words for s in g.sample(5, seed=1)]
    scrambled = list(sents[0])
    scrambled[0], scrambled[-1] = scrambled[-1], scrambled[0]          # not a sentence of the clean language
    for words in sents[:3] + [scrambled]:
        x = [g.word_id[w] for w in words]
        assert noisy.log_prob(words) == pytest.approx(brute(x), abs=1e-9)
    assert g.log_prob(scrambled) == -math.inf and math.isfinite(noisy.log_prob(scrambled))
    # the exact conditional at one position, by enumeration over its word
    words, i = sents[1], 1
    x = [g.word_id[w] for w in words]
    scores = np.array([brute(x[:i] + [v] + x[i + 1:]) for v in range(W)])
    np.testing.assert_allclose(noisy.conditionals(words)[i], np.exp(scores - logsumexp(scores)), atol=1e-9)


def test_word_noise_is_neutral_at_zero():
    from mlmbook.toy import Grammar
    assert Grammar.load("toy[word_noise=0]").name == "toy"
    assert Grammar.load("toy[word_noise=0.1]").fingerprint != Grammar.load("toy").fingerprint


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_span_models_and_their_twins_differ_only_in_the_masking(profile):
    """Chapter 3 compares each span model with a token-masked twin of the same width, steps, rate and seed,
    for three seeds or more (the five its questions need in the full profile); the twins are models the book
    trains anyway (the ladder's rung and chapter 4's pair), and the noise knob's η = 0 model is the ladder's
    middle rung (shared in the cache, no extra training)."""
    from dataclasses import replace

    from mlmbook.models import ladder
    from mlmbook.pipeline import zoo
    assert len(zoo.CH3_SEEDS[profile]) >= 3 and min(len(zoo.CH3_SEEDS[p]) for p in ("full", "extended")) >= 5
    chapter4 = set(zoo.chapter4(profile))
    for seed in zoo.CH3_SEEDS[profile]:
        span, twin = zoo.find(3, profile, f"span s{seed}"), zoo.find(3, profile, f"twin s{seed}")
        assert span.config.span == 3.0 and twin.config.span == 0.0
        assert replace(span.config, span=0.0, checkpoints=()) == replace(twin.config, checkpoints=())
        assert (span.grammar, span.seed, span.kind) == (twin.grammar, twin.seed, twin.kind) == ("toy", seed, "mlm")
        assert twin.config.hidden == zoo.CH3_SPAN[profile] and twin in chapter4      # trained anyway
    rung = next(r for r in ladder.rungs(profile) if r.hidden == zoo.CH3_SPAN[profile])
    assert zoo.find(3, profile, "twin s0").config == rung.config
    middle = ladder.rungs(profile)[len(ladder.LADDERS[profile]["sizes"]) - 1]
    noise = [zoo.find(3, profile, f"noise {eta:g}") for eta in zoo.CH3_NOISE]
    assert noise[0].config == middle.config and noise[0].config.noise == 0.0
    assert len({j.config.hidden for j in noise}) == 1
