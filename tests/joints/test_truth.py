"""Chapter 2's new exact quantities against brute force on the tiny grammar: the k-site joint, the
`smoothing` knob (soft zeros), and what it does to the blocks of the toy language."""
import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook.toy import Grammar
from mlmbook.toy.vocab import N_SPECIAL


def brute_site_joint(grammar, table, words, sites):
    """p(x_sites | rest) over the full vocabulary grid, by summing the enumerated sentences."""
    n, V = len(words), len(grammar.vocab)
    out = np.zeros((V,) * len(sites))
    for s, p in table.items():
        if len(s) == n and all(s[k] == words[k] for k in range(n) if k not in sites):
            out[tuple(grammar.word_id[s[i]] for i in sites)] += p
    return out / out.sum()


@pytest.fixture(scope="module", params=[0.0, 0.2], ids=["plain", "smoothed"])
def tiny(request):
    g = Grammar.load("tiny", knobs={"smoothing": request.param})
    table = {tuple(g.vocab[w] for w in k): p for k, p in g.pcfg.enumerate(5).items()}
    return g, table


@pytest.mark.parametrize("words, sites", [("mary sees the dog .", (1, 3)), ("mary sees the dog .", (0, 1, 3)),
                                          ("the boy sleeps .", (0, 1, 2)), ("mary sees the dog .", (3, 0, 2))])
def test_site_joint_matches_enumeration(tiny, words, sites):
    g, table = tiny
    words = words.split()
    V = len(g.vocab)
    everything = [np.arange(V) + N_SPECIAL] * len(sites)
    brute = brute_site_joint(g, table, words, sites)
    np.testing.assert_allclose(J.site_joint(g, words, sites, everything), brute, atol=1e-12)
    # a candidate grid (with a special token, which gets nothing) is the restriction, renormalised
    rng = np.random.default_rng(len(sites))
    cands = [np.append(rng.choice(V, 6, replace=False) + N_SPECIAL, 1) for _ in sites]
    cands[0][0] = g.word_id[words[sites[0]]] + N_SPECIAL        # keep some mass on the grid
    cands[1][0] = g.word_id[words[sites[1]]] + N_SPECIAL
    if len(sites) == 3:
        cands[2][0] = g.word_id[words[sites[2]]] + N_SPECIAL
    sub = brute[np.ix_(*[np.clip(c - N_SPECIAL, 0, V - 1) for c in cands])].copy()
    for axis in range(len(sites)):                               # the special token's row/column
        index = [slice(None)] * len(sites)
        index[axis] = -1
        sub[tuple(index)] = 0.0
    got = J.site_joint(g, words, sites, cands)
    np.testing.assert_allclose(got, sub / sub.sum(), atol=1e-12)
    if len(sites) == 2:                                          # the pair path agrees
        np.testing.assert_allclose(J.site_joint(g, words, sites, everything), g.pair_joint(words, *sites),
                                   atol=1e-12)


def test_smoothed_pair_joints_match_enumeration():
    g = Grammar.load("tiny", knobs={"smoothing": 0.2})
    table = {tuple(g.vocab[w] for w in k): p for k, p in g.pcfg.enumerate(5).items()}
    words = "mary sees the dog .".split()
    for i, j in [(0, 1), (1, 3), (2, 3)]:
        np.testing.assert_allclose(g.pair_joint(words, i, j), brute_site_joint(g, table, words, (i, j)), atol=1e-12)


def test_smoothing_knob_keeps_trees_and_parts_of_speech():
    plain, soft = Grammar.load("tiny"), Grammar.load("tiny[smoothing=0.2]")
    assert Grammar.load("tiny[smoothing=0]").fingerprint == plain.fingerprint         # neutral: the same world
    assert soft.fingerprint != plain.fingerprint and soft.name == "tiny[smoothing=0.2]"
    E0, E1 = plain.pcfg.emissions, soft.pcfg.emissions
    assert np.allclose(E1.sum(-1)[:, plain.pcfg.preterminals], 1.0)
    for a in plain.pcfg.preterminals:
        pos = plain.pcfg.nonterminals[a].split("_")[0]
        same = [b for b in plain.pcfg.preterminals if plain.pcfg.nonterminals[b].split("_")[0] == pos]
        words = E0[:, same, :].sum(axis=(0, 1)) > 0
        assert np.all(E1[:, a, ~words] == 0)                                         # never another POS
        assert np.all(E1[:, a, words] >= 0.2 / words.sum() - 1e-15)                 # every word of its POS
        np.testing.assert_allclose(E1[:, a], 0.8 * E0[:, a] + 0.2 * words / words.sum())
    # the same binary rules, so the same trees and part-of-speech sequences
    assert [(r.lhs, r.left, r.right, r.head) for r in plain.pcfg.binary] == \
           [(r.lhs, r.left, r.right, r.head) for r in soft.pcfg.binary]


def test_smoothing_dissolves_the_blocks_of_the_showcase_pair():
    """At ε = 0 the truth's own conditionals leave two blocks (HCB and AG miss the joint); at any
    ε > 0 the support is one block and both recover it; anchoring recovers it at ε = 0 too."""
    words = "the dog near the old river barks .".split()
    for eps in (0.0, 1e-3, 0.1):
        g = Grammar.load("toy", knobs={"smoothing": eps})
        P = g.pair_joint(words, 1, 6)
        pc = J.PairConditionals.from_joint(P)
        n_blocks = J.support_blocks(pc)[0]
        ag = J.ag(pc).joint
        assert J.tv_joint(P, J.anchor(ag, pc)) < 1e-9
        if eps == 0:
            assert n_blocks == 2 and J.tv_joint(P, J.hcb(pc)) > 0.1 and J.tv_joint(P, ag) > 1e-3
        else:
            assert n_blocks == 1 and J.tv_joint(P, J.hcb(pc)) < 1e-9 and J.tv_joint(P, ag) < 1e-9


def test_truth_chain_is_the_joint_on_the_full_grid_and_truncates_on_a_smaller_one(tiny):
    g, table = tiny
    words, sites = "mary sees the dog .".split(), (0, 1, 3)
    V = len(g.vocab)
    brute = brute_site_joint(g, table, words, sites)
    np.testing.assert_allclose(J.site_chain(g, words, sites, [np.arange(V) + N_SPECIAL] * 3), brute, atol=1e-12)
    cands = [np.array([g.word_id[w] for w in ws]) + N_SPECIAL
             for ws in (("mary", "boy", "dog"), ("sees", "slept"), ("dog", "park", "boys"))]
    chain = J.site_chain(g, words, sites, cands)
    first = brute.sum(axis=(1, 2))[cands[0] - N_SPECIAL]               # later sites over every word
    np.testing.assert_allclose(chain.sum(axis=(1, 2)), first / first.sum(), atol=1e-12)
    last = brute[np.ix_(*[c - N_SPECIAL for c in cands])]                # the last factor: the grid's own
    defined = (chain.sum(axis=2) > 0) & (last.sum(axis=2) > 0)
    np.testing.assert_allclose((chain / chain.sum(axis=2, keepdims=True).clip(1e-300))[defined],
                               (last / last.sum(axis=2, keepdims=True).clip(1e-300))[defined], atol=1e-12)
