"""The positive control's world (a Markov random field on the gold tree) against brute force."""
import numpy as np
import pytest

from mlmbook.corpus import remove_punct
from mlmbook.dependencies import decode, truth_cmi
from mlmbook.stats import mutual_information
from mlmbook.toy import Grammar
from mlmbook.toy.treemrf import TEMPLATES, TreeMRF, is_treemrf, load_world


@pytest.fixture(scope="module")
def tiny():
    g = TreeMRF.load("treemrf_tiny")
    return g, g.enumerate()


@pytest.fixture(scope="module")
def world():
    return TreeMRF.load("treemrf")


def _brute_conditional(g, table, words, i, masked=()):
    hidden = set(masked) | {i}
    out = np.zeros(len(g.vocab))
    for s, p in table.items():
        if len(s) == len(words) and all(s[k] == words[k] for k in range(len(words)) if k not in hidden):
            out[g.word_id[s[i]]] += p
    return out / out.sum()


def test_enumeration_is_normalised_and_log_prob_matches(tiny):
    g, table = tiny
    assert sum(table.values()) == pytest.approx(1.0, abs=1e-12)
    assert len(table) > 500
    for s, p in list(table.items())[::11]:
        assert np.exp(g.log_prob(list(s))) == pytest.approx(p, rel=1e-9)
    assert g.log_prob(["dog", "the", "sleeps", "."]) == float("-inf")        # a noun in the determiner slot
    assert g.log_prob(["the", "dog", "sleeps", "."] * 3) == float("-inf")      # no template of that length


def test_conditionals_match_enumeration(tiny):
    g, table = tiny
    rng = np.random.default_rng(0)
    sentences = list(table)
    for idx in rng.choice(len(sentences), 15, replace=False):
        words = list(sentences[idx])
        cond = g.conditionals(words)
        for i in range(len(words)):
            np.testing.assert_allclose(cond[i], _brute_conditional(g, table, words, i), atol=1e-12)
        masked = [k for k in range(len(words)) if k % 2 == 0]             # other positions summed over
        cond = g.conditionals(words, masked=masked)
        for i in range(len(words)):
            np.testing.assert_allclose(cond[i], _brute_conditional(g, table, words, i, masked), atol=1e-12)


def test_pair_joints_match_enumeration(tiny):
    g, table = tiny
    for words in [list(s) for s in table if len(s) == 6][::97] + [["the", "dog", "sleeps", "."]]:
        for (i, j), joint in g.pair_joints(words):
            brute = np.zeros((len(g.vocab), len(g.vocab)))
            for s, p in table.items():
                if len(s) == len(words) and all(s[k] == words[k] for k in range(len(words)) if k not in (i, j)):
                    brute[g.word_id[s[i]], g.word_id[s[j]]] += p
            np.testing.assert_allclose(joint, brute / brute.sum(), atol=1e-12)


def test_sampling_matches_the_exact_distribution(tiny):
    g, table = tiny
    n = 40_000
    counts = {}
    for s in g.sample(n, seed=3):
        counts[tuple(s.words)] = counts.get(tuple(s.words), 0) + 1
    assert set(counts) <= set(table)
    top = sorted(table, key=table.get, reverse=True)[:20]
    for s in top:                                   # within 5 standard errors
        p = table[s]
        assert abs(counts.get(s, 0) / n - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-4
    assert g.sample(5, seed=1)[0].words == g.sample(5, seed=1)[0].words     # same seed, same sentences


def test_off_tree_cmi_is_exactly_zero_and_tree_edges_positive_on_every_sentence(tiny):
    """The Markov property, by brute force: on every sentence of the tiny world the exact CMI of a
    pair is positive on the gold tree's edges and zero elsewhere, so the spanning tree is the tree."""
    g, table = tiny
    for s in table:
        n = len(s)
        heads = [h for _, h, _ in TEMPLATES[n]]
        edges = {(min(d, h), max(d, h)) for d, h in enumerate(heads) if h >= 0}
        keep = [k for k in range(n) if s[k] != "."]
        M = np.zeros((n, n))
        for (i, j), joint in g.pair_joints(list(s)):
            M[i, j] = M[j, i] = mutual_information(joint)
        for i in keep:
            for j in keep:
                if i < j:
                    assert (M[i, j] > 1e-4) if (i, j) in edges else (M[i, j] < 1e-12), (s, i, j, M[i, j])


def test_truth_cmi_tree_equals_the_gold_tree_on_every_sampled_sentence(world):
    """The positive control: truth-CMI + maximum spanning tree recovers the gold tree, every time."""
    sentences = world.sample(300, seed=11)
    assert {len(s) for s in sentences} == set(TEMPLATES)
    keep = [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in sentences]
    mats = truth_cmi(world, [s.words for s in sentences], keep, window=None)
    for s, M in zip(sentences, mats):
        gold = remove_punct(s).edges()
        assert decode(M) == gold, " ".join(s.words)
        off = [M[a, b] for a in range(len(M)) for b in range(a + 1, len(M)) if (a, b) not in gold]
        assert max(off, default=0.0) < 1e-12
        assert min(M[a, b] for a, b in gold) > 1e-3


def test_strength_zero_makes_words_independent(world):
    flat = TreeMRF.load("treemrf[strength=0]")
    s = flat.sample(3, seed=0)[2]
    M = truth_cmi(flat, [s.words], window=None)[0]
    assert np.abs(M).max() < 1e-12
    assert flat.name == "treemrf[strength=0]" and world.name == "treemrf"
    assert len({flat.fingerprint, world.fingerprint, TreeMRF.load("treemrf[strength=1]").fingerprint}) == 2


def test_the_grammar_interface(world):
    toy = Grammar.load("toy")
    assert world.vocab == toy.vocab and world.word_id == toy.word_id          # the same tokenizer path
    assert isinstance(world, Grammar) and world.max_length == max(TEMPLATES)
    s = world.sample(1, seed=5)[0]
    assert len(s.deprels) == len(s.upos) == len(s.heads) == len(s.words)
    assert np.allclose(world.conditionals(s.words).sum(1), 1.0)
    u = world.unigram(2000)
    assert u.shape == (len(world.vocab),) and u.sum() == pytest.approx(1.0)
    assert world.encode(s.words).tolist() == [world.word_id[w] for w in s.words]
    assert is_treemrf("treemrf[strength=0.5]") and not is_treemrf("toy")
    assert load_world("toy").name == "toy" and load_world("treemrf").name == "treemrf"
    with pytest.raises(ValueError, match="no sentences of 2 tokens"):
        world.conditionals(["dogs", "."])
    with pytest.raises(ValueError, match="one knob"):
        TreeMRF.load("treemrf[selection=0.5]")


def test_training_batches_read_the_world(world):
    from mlmbook.models.corrupt import batches
    from mlmbook.models.train import TrainConfig
    cfg = TrainConfig(hidden=16, layers=1, heads=1, intermediate=32, steps=2, batch=8, mask_only=("nsubj",))
    ids, attn, ok = next(batches(world, cfg, seed=0, eligible=True))
    assert ids.shape == attn.shape == ok.shape and ok.any()
