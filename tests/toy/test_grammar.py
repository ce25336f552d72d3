"""Exact quantities of the toy language against brute-force enumeration of a tiny grammar."""

import numpy as np
import pytest

from mlmbook.toy import Grammar


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "topic"])
def tiny(request):
    g = Grammar.load("tiny", topic=request.param)
    table = {tuple(g.vocab[w] for w in k): p for k, p in g.pcfg.enumerate(g.max_length).items()}
    return g, table


def brute_conditional(table, words, i, masked=()):
    """p(x_i = . | positions not in masked and != i), by summing the enumerated table."""
    n = len(words)
    hidden = set(masked) | {i}
    out = {}
    for s, p in table.items():
        if len(s) == n and all(s[k] == words[k] for k in range(n) if k not in hidden):
            out[s[i]] = out.get(s[i], 0.0) + p
    return out


@pytest.mark.slow                  # enumerates every sentence of the tiny grammars
def test_enumeration_is_normalised(tiny):
    g, table = tiny
    total = sum(table.values())
    assert abs(total - g.length_probs.sum()) < 1e-9
    # renormalised over lengths <= max_length, the language sums to one
    assert abs(sum(np.exp(g.log_prob(list(s))) for s in table) - 1.0) < 1e-6
    assert len(table) > 200          # big enough to be interesting


def test_inside_matches_enumeration(tiny):
    g, table = tiny
    Z = g.length_probs.sum()
    for s, p in list(table.items())[::7]:
        assert np.exp(g.log_prob(list(s))) == pytest.approx(p / Z, rel=1e-9)
    assert g.log_prob(["dog", "the", "."]) == float("-inf")


def test_length_distribution(tiny):
    g, table = tiny
    for n in range(1, g.max_length + 1):
        assert sum(p for s, p in table.items() if len(s) == n) == pytest.approx(g.length_probs[n], abs=1e-12)


def test_conditionals_match_enumeration(tiny):
    g, table = tiny
    rng = np.random.default_rng(0)
    sentences = [s for s in table if len(s) >= 4]
    for idx in rng.choice(len(sentences), 12, replace=False):
        words = list(sentences[idx])
        cond = g.conditionals(words)
        for i in range(len(words)):
            brute = brute_conditional(table, words, i)
            z = sum(brute.values())
            expect = np.zeros(len(g.vocab))
            for w, p in brute.items():
                expect[g.word_id[w]] = p / z
            np.testing.assert_allclose(cond[i], expect, atol=1e-12)
            assert abs(cond[i].sum() - 1) < 1e-9


def test_masked_conditionals_marginalise(tiny):
    g, table = tiny
    words = ["the", "small", "dog", "sees", "the", "park", "."]
    assert tuple(words) in table
    masked = [1, 4]
    cond = g.conditionals(words, masked=masked)
    for i in range(len(words)):
        brute = brute_conditional(table, words, i, masked)
        z = sum(brute.values())
        for w, p in brute.items():
            assert cond[i, g.word_id[w]] == pytest.approx(p / z, abs=1e-12)


def test_pair_joints_match_enumeration(tiny):
    g, table = tiny
    words = ["mary", "sees", "the", "dog", "in", "the", "park", "."]
    assert tuple(words) in table
    n = len(words)
    joints = dict(g.pair_joints(words))
    assert len(joints) == n * (n - 1) // 2
    for (i, j) in [(0, 1), (1, 3), (3, 6), (2, 5), (0, 7)]:
        brute = np.zeros((len(g.vocab), len(g.vocab)))
        for s, p in table.items():
            if len(s) == n and all(s[k] == words[k] for k in range(n) if k not in (i, j)):
                brute[g.word_id[s[i]], g.word_id[s[j]]] += p
        brute /= brute.sum()
        np.testing.assert_allclose(joints[(i, j)], brute, atol=1e-12)
        np.testing.assert_allclose(g.pair_joint(words, i, j), brute, atol=1e-12)
        assert abs(joints[(i, j)].sum() - 1) < 1e-9


def test_sampling_matches_exact_distribution(tiny):
    """Ancestral sampling agrees with the inside algorithm: the 30 most probable sentences'
    sample frequencies lie within 4.5 binomial standard deviations of their exact probabilities,
    and the length distribution passes a chi-square test (fixed seed)."""
    from scipy.stats import chisquare
    g, table = tiny
    n = 20000
    sample = g.sample(n, seed=3)
    counts = {}
    for s in sample:
        counts[tuple(s.words)] = counts.get(tuple(s.words), 0) + 1
    Z = g.length_probs.sum()
    for s, p in sorted(table.items(), key=lambda kv: -kv[1])[:30]:
        p = p / Z
        assert abs(counts.get(s, 0) - n * p) < 4.5 * np.sqrt(n * p * (1 - p)) + 1
    lengths = np.bincount([len(s) for s in sample], minlength=g.max_length + 1)[1:]
    expect = g.length_probs[1:] / Z * n
    keep = expect > 5
    assert chisquare(lengths[keep], expect[keep] * lengths[keep].sum() / expect[keep].sum()).pvalue > 1e-3
    assert g.sample(50, seed=7)[10].words == g.sample(50, seed=7)[10].words


def test_gold_trees_are_ud_style():
    g = Grammar.load("toy")
    for s in g.sample(500, seed=0):
        assert len(s) <= g.max_length
        roots = [i for i, h in enumerate(s.heads) if h == -1]
        assert len(roots) == 1 and s.upos[roots[0]] == "VERB"
        assert s.words[-1] == "." and s.heads[-1] == roots[0] and s.deprels[-1] == "punct"
        for _i, h in enumerate(s.heads):     # acyclic: every word reaches the root
            seen = set()
            while h != -1:
                assert h not in seen
                seen.add(h)
                h = s.heads[h]
        for _i, (u, h) in enumerate(zip(s.upos, s.heads)):
            if u in ("DET", "ADJ", "ADP"):
                assert s.upos[h] in ("NOUN", "PROPN")
        assert len(s.edges()) == len(s) - 1


def test_toy_language_shape():
    g = Grammar.load("toy")
    assert 100 <= len(g.vocab) <= 300
    assert len(g.pcfg.nonterminals) < 200
    lengths = [len(s) for s in g.sample(3000, seed=1)]
    assert 6 <= np.mean(lengths) <= 10 and max(lengths) <= 15
    # subject-verb agreement across a prepositional phrase
    c = g.conditionals(["the", "dogs", "near", "the", "river", "bark", "."], masked=[5])
    assert c[5, g.word_id["bark"]] > 0 and c[5, g.word_id["barks"]] == 0
    # the topic variant reweights the lexical fields, exactly normalised
    gt = Grammar.load("toy", topic=True)
    assert gt.fingerprint != g.fingerprint
    p_farm = gt.conditionals(["the", "farmer", "sees", "the", "cow", "."])
    p_town = gt.conditionals(["the", "teacher", "sees", "the", "cow", "."])
    assert p_farm[4].sum() == pytest.approx(1) and p_farm[4, gt.word_id["cow"]] > 3 * p_town[4, gt.word_id["cow"]]


def test_unknown_grammar_and_word():
    with pytest.raises(FileNotFoundError, match="use one of"):
        Grammar.load("nope")
    with pytest.raises(ValueError, match="not in the"):
        Grammar.load("tiny").log_prob(["the", "unicorn", "."])
