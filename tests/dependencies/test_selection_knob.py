"""Chapter 1's knob of the world, ``selection``: exact quantities against brute force, and what it does."""
import numpy as np
import pytest

from mlmbook.stats import mutual_information
from mlmbook.toy import Grammar


@pytest.mark.parametrize("s", [0.0, 0.5])
def test_exact_pair_joints_match_enumeration_under_the_knob(s):
    g = Grammar.load(f"tiny[selection={s:g}]")
    table = {tuple(g.vocab[w] for w in k): p for k, p in g.pcfg.enumerate(g.max_length).items()}
    Z = g.length_probs.sum()
    assert sum(table.values()) == pytest.approx(Z, abs=1e-12)
    words = ["mary", "sees", "the", "dog", "in", "the", "park", "."]
    for (i, j) in [(0, 1), (1, 3), (3, 6)]:
        brute = np.zeros((len(g.vocab), len(g.vocab)))
        for sent, p in table.items():
            if len(sent) == len(words) and all(sent[k] == words[k] for k in range(len(words)) if k not in (i, j)):
                brute[g.word_id[sent[i]], g.word_id[sent[j]]] += p
        np.testing.assert_allclose(g.pair_joint(words, i, j), brute / brute.sum(), atol=1e-12)
    for sent, p in list(table.items())[::499]:
        assert np.exp(g.log_prob(list(sent))) == pytest.approx(p / Z, rel=1e-9)


def _frame_given_class(g):
    """p(frame | subject class), read off the compiled rules VPB_<c>_sg -> V_<frame>_sg (...)."""
    out = {}
    names = g.pcfg.nonterminals
    for a, b, p in g.pcfg.unary:
        lhs, rhs = names[a], names[b]
        if lhs.startswith("VPB_") and lhs.endswith("_sg"):
            out.setdefault(lhs.split("_")[1], {}).setdefault(rhs.split("_")[1], 0.0)
            out[lhs.split("_")[1]][rhs.split("_")[1]] += p
    for r in g.pcfg.binary:
        lhs, left = names[r.lhs], names[r.left]
        if lhs.startswith("VPB_") and lhs.endswith("_sg"):
            out.setdefault(lhs.split("_")[1], {}).setdefault(left.split("_")[1], 0.0)
            out[lhs.split("_")[1]][left.split("_")[1]] += r.prob
    return out


def test_selection_mixes_each_choice_with_a_head_blind_one():
    base, half, none = (_frame_given_class(Grammar.load(f"toy[selection={s}]")) for s in (1, 0.5, 0))
    frames = sorted(base["human"])
    for c in base:
        for f in frames:
            assert half[c][f] == pytest.approx(0.5 * base[c].get(f, 0.0) + 0.5 * none[c][f], abs=1e-12)
    rows = np.array([[none[c][f] for f in frames] for c in sorted(none)])
    assert np.allclose(rows, rows[0])                       # at 0 the frame ignores the subject's class
    assert Grammar.load("toy[selection=1]").fingerprint == Grammar.load("toy").fingerprint


def test_without_selection_a_selected_dependent_tells_nothing_about_its_head():
    """At selection 0 an adjective is drawn whatever its noun's class and an object whatever its verb:
    their exact CMI given the rest is zero; with selection it is positive. (Where a pair of masked
    positions could also be read as another construction, e.g. a noun and an adverb, the CMI stays
    positive at 0: the sentence below leaves no such reading.)"""
    words = "the big horse slowly drops the heavy umbrellas .".split()
    edges = {"amod subject": (1, 2), "amod object": (6, 7), "obj": (4, 7)}
    cmi = {s: {k: mutual_information(Grammar.load(f"toy[selection={s}]").pair_joint(words, *e))
               for k, e in edges.items()} for s in (0, 0.5, 1)}
    assert max(cmi[0].values()) < 1e-12
    assert min(cmi[0.5].values()) > 0.01 and min(cmi[1].values()) > 0.01
