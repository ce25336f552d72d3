"""Dependency scores (mlmbook.dependencies: cmi, gibbs, cpmi, pieces) and the top-K grid.

The estimators are checked against what they must equal: the exact grid through the truth
oracle against the inside-outside joints, the Gibbs estimator against the exact grid, CPMI
against a brute-force joint, batched against one-pair-at-a-time. Trees, UUAS, Eisner and the
DMV are tested in tests/dependencies/test_trees.py, the CoNLL-U reader in tests/corpus.
"""
import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from mlmbook import dependencies as dep
from mlmbook.stats import mutual_information, ratio
from mlmbook.toy import Grammar
from tests.fakes import JointOracle, PerturbedOracle, random_joint


@pytest.fixture(scope="module")
def toy():
    return Grammar.load("toy")


class Fake:
    """A fake oracle (tests/fakes.py) behind the full MaskedLM interface.

    Word ``"w3"`` is token 3; ``"w1+w2"`` is a word of two pieces, tokens 1 and 2.
    """

    def __init__(self, base):
        self.base = base
        self.mask_id, self.V, self.vocab = base.mask_id, base.V, base.vocab
        self.special_ids = [base.mask_id]
        self.max_length = base.n

    def logits(self, ids, positions, full_softmax=False):
        return self.base.logits(ids, positions)

    def log_probs(self, ids, positions, full_softmax=False):
        return torch.log_softmax(self.logits(ids, positions), -1)

    def encode_words(self, words):
        ids, pieces = [], []
        for w in words:
            parts = [int(p[1:]) for p in w.split("+")]
            pieces.append(list(range(len(ids), len(ids) + len(parts))))
            ids += parts
        return ids, pieces


# ------------------------------------------------------------------ mutual information


def test_gibbs_limit_of_compatible_conditionals_is_the_joint():
    """Conditionals of one joint: the chain's law is that joint, in both directions, even when
    the joint is block-diagonal (a reducible chain) as long as it starts from the marginal."""
    rng = np.random.default_rng(1)
    for P in [rng.random((5, 4)), np.kron(np.eye(2), rng.random((3, 2)))]:
        P = P / P.sum()
        with np.errstate(divide="ignore"):
            logP = np.log(P)
        I_p, I_q, pi = dep.gibbs_limit(logP, logP, np.log(P.sum(0)))
        assert I_p == pytest.approx(mutual_information(P), abs=1e-10)
        assert I_q == pytest.approx(mutual_information(P), abs=1e-10)
        np.testing.assert_allclose(pi, P, atol=1e-12)


# ------------------------------------------------------------------ CMI from the truth


def test_truth_cmi_zero_for_independent_pair_positive_for_tied_pair(toy):
    """'the old dog barks .': given the rest, the determiner depends only on the number, which
    the verb fixes — CMI exactly 0 with every word; subject and verb are tied (selection)."""
    M = dep.truth_cmi(toy, ["the old dog barks .".split()], [[0, 1, 2, 3]])[0]
    assert np.allclose(M, M.T)
    assert M[0].max() < 1e-12
    assert M[2, 3] > 0.5 and M[1, 2] > 0.1
    # agreement alone ties a plural subject to a present-tense verb
    M = dep.truth_cmi(toy, ["the dogs bark .".split()], [[0, 1, 2]])[0]
    assert M[1, 2] > 0.1


def test_exact_grid_through_the_truth_oracle_equals_truth_cmi(toy):
    """The grid + Gibbs-limit code path, fed exact conditionals, reproduces the mutual
    information of the inside-outside joints (a reducible chain included: number agreement)."""
    from mlmbook.models import TruthOracle
    sentences = ["the old dog barks .".split(), "the dogs bark .".split()]
    keep = [[0, 1, 2, 3], [0, 1, 2]]
    grid = dep.cmi_grid(TruthOracle(toy), sentences, keep)
    truth = dep.truth_cmi(toy, sentences, keep)
    for G, T in zip(grid, truth):
        np.testing.assert_allclose(G, T, atol=1e-9)
    assert max(grid.tv_to_marginal) < 1e-9          # compatible conditionals: no drift


# ------------------------------------------------------------------ the MLM estimators


@pytest.fixture(scope="module")
def perturbed():
    """Incompatible conditionals on 3 positions and 4 words: the chain's joint is non-trivial."""
    return Fake(PerturbedOracle(random_joint(3, 4, seed=2, spread=1.5), scale=0.8, seed=3))


def test_gibbs_estimate_converges_to_the_exact_grid(perturbed):
    sentence = [["w0", "w1", "w2"]]
    exact = dep.cmi_grid(perturbed, sentence)[0]
    assert exact[~np.eye(3, dtype=bool)].min() > 0.01        # something to estimate
    assert not np.allclose(exact, exact.T, atol=1e-3)        # incompatible: directions differ
    est = dep.cmi_gibbs(perturbed, sentence,
                        settings=dep.GibbsSettings(chains=400, steps=120, burn_in=20))[0]
    np.testing.assert_allclose(est, exact, atol=0.02)
    short = dep.cmi_gibbs(perturbed, sentence,
                          settings=dep.GibbsSettings(chains=4, steps=12, burn_in=2))[0]
    assert np.abs(short - exact).max() > np.abs(est - exact).max()   # more samples, closer


def test_gibbs_limit_matches_the_grid_tables(perturbed):
    """cmi_grid's batched rows give the same numbers as gibbs_limit on hand-built tables."""
    lm, ids = perturbed, torch.tensor([0, 1, 2])
    p, q = 0, 2
    rows_a, rows_b = ids.repeat(4, 1), ids.repeat(4, 1)
    rows_a[:, p], rows_a[:, q] = lm.mask_id, torch.arange(4)
    rows_b[:, q], rows_b[:, p] = lm.mask_id, torch.arange(4)
    la = lm.log_probs(rows_a, torch.full((4, 1), p))[:, 0, :4].numpy().T      # [a, b]
    lb = lm.log_probs(rows_b, torch.full((4, 1), q))[:, 0, :4].numpy()        # [a, b]
    both = ids.clone()
    both[p] = both[q] = lm.mask_id
    start = lm.log_probs(both[None], torch.tensor([[q]]))[0, 0, :4].numpy()
    I_p, I_q, _ = dep.gibbs_limit(la, lb, start)
    M = dep.cmi_grid(lm, [["w0", "w1", "w2"]])[0]
    assert M[0, 2] == pytest.approx(I_p, abs=1e-12) and M[2, 0] == pytest.approx(I_q, abs=1e-12)


def test_cpmi_chain_rule_over_pieces_matches_brute_force():
    """Two-piece words through a compatible joint: the chain rule over pieces gives the exact
    log-probability of the whole word, so CPMI is a ratio of brute-force marginals."""
    logp = random_joint(5, 3, seed=4)
    lm = Fake(JointOracle(logp))
    words = ["w0+w1", "w2", "w1+w0"]                      # pieces [0, 1], [2], [3, 4]
    pieces = [[0, 1], [2], [3, 4]]
    x = [0, 1, 2, 1, 0]
    M = dep.cpmi(lm, [words])[0]

    def log_word(a, hidden):
        """log p(pieces of word a = observed | positions outside `hidden` observed)."""
        axes = tuple(sorted(hidden))
        marg = logsumexp(logp, axis=tuple(d for d in axes if d not in pieces[a]), keepdims=True)
        idx = tuple(0 if d in axes and d not in pieces[a] else x[d] for d in range(5))
        free = tuple(slice(None) if d in pieces[a] else (0 if d in axes else x[d]) for d in range(5))
        return marg[idx] - logsumexp(marg[free])

    for a in range(3):
        for b in range(3):
            if a != b:
                expect = log_word(a, set(pieces[a])) - log_word(a, set(pieces[a]) | set(pieces[b]))
                assert M[a, b] == pytest.approx(expect, abs=1e-10)


def test_pieces_to_words_averages_scored_piece_pairs():
    M = np.arange(25, dtype=float).reshape(5, 5)
    pieces = [[0, 1], [2], [3, 4]]
    counts = np.ones((5, 5))
    counts[1, 2] = counts[2, 1] = 0                        # piece pair outside the window
    S = dep.pieces_to_words(M, pieces, counts=counts)
    assert S[0, 1] == M[0, 2]
    assert S[1, 2] == pytest.approx(np.mean(M[2, 3:5]))
    assert S[0, 2] == pytest.approx(np.mean(M[0:2, 3:5]))
    assert np.all(np.diag(S) == 0)
    assert dep.pieces_to_words(M, pieces, keep=[0, 2]).shape == (2, 2)


def test_batched_equals_one_pair_at_a_time(toy_bert, toy):
    """Several sentences in one call give the numbers each pair gets on its own."""
    from mlmbook.models import HFMaskedLM
    lm = HFMaskedLM.from_pretrained(toy_bert)
    sents = ["the old dog barks .".split(), "mary sees the cat .".split()]
    keep = [[0, 1, 2, 3], [0, 1, 2, 3]]
    grid, cp = dep.cmi_grid(lm, sents, keep), dep.cpmi(lm, sents, keep)
    assert grid.rows == grid.pairs * (2 * len(toy.vocab) + 1)
    for k in range(2):
        for a, b in [(0, 1), (1, 3), (0, 3)]:
            one = dep.cmi_grid(lm, [sents[k]], [[keep[k][a], keep[k][b]]], window=None)[0]
            assert one[0, 1] == pytest.approx(grid[k][a, b], abs=1e-5)
            assert one[1, 0] == pytest.approx(grid[k][b, a], abs=1e-5)
            one = dep.cpmi(lm, [sents[k]], [[keep[k][a], keep[k][b]]])[0]
            assert one[0, 1] == pytest.approx(cp[k][a, b], abs=1e-5)
    # the window: pairs farther apart than it get no score
    far = dep.cmi_grid(lm, sents[:1], keep[:1], window=1)
    assert far.pairs == 3 and far[0][0, 2] == far[0][0, 3] == 0


def test_top_k_grid_equals_full_grid_at_k_equals_v(toy_bert):
    from mlmbook.models import HFMaskedLM
    lm = HFMaskedLM.from_pretrained(toy_bert)
    sent, keep = ["the old dog barks .".split()], [[0, 1, 2, 3]]
    full = dep.cmi_grid(lm, sent, keep)
    V = len(dep.pieces.non_special(lm))
    same = dep.cmi_grid(lm, sent, keep, max_candidates=V)
    np.testing.assert_allclose(same[0], full[0], atol=1e-12)
    assert same.rows == full.rows == dep.grid_rows(lm, sent, keep, max_candidates=V)
    assert full.max_left_out == full.max_error_bound == 0
    assert full.left_out == [0.0] * full.pairs and len(full.error_bound) == full.pairs


def test_top_k_grid_reports_left_out_mass_and_bounds_its_error(toy_bert):
    """K < V: 2K + 1 rows per pair, the mass left out per pair, and each pair's CMI within its
    stated bound of the full grid's (on this model the restricted chain stays on its candidates)."""
    from mlmbook.models import HFMaskedLM
    lm = HFMaskedLM.from_pretrained(toy_bert)
    sent, keep = ["the old dog barks .".split()], [[0, 1, 2, 3]]
    full = dep.cmi_grid(lm, sent, keep)
    for K in (5, 20):
        top = dep.cmi_grid(lm, sent, keep, max_candidates=K)
        assert top.mean_candidates == K
        assert top.rows == top.pairs * (2 * K + 1) == dep.grid_rows(lm, sent, keep, max_candidates=K)
        assert len(top.left_out) == len(top.error_bound) == top.pairs
        assert 0 < top.max_left_out < 1 and top.max_error_bound > 0
        word = {p: w for w, ps in enumerate(lm.encode_words(sent[0])[1]) for p in ps}
        for (_, p, q), bound in zip(top.jobs, top.error_bound):
            a, b = word[p], word[q]
            assert abs(top[0][a, b] - full[0][a, b]) <= bound + 1e-9
            assert abs(top[0][b, a] - full[0][b, a]) <= bound + 1e-9


def test_left_out_bound_holds_for_restricted_joints():
    """|I(X;Y) - I(X;Y | Y in C)| <= h(eps) + eps log N on random joints and candidate sets."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        P = rng.dirichlet(np.full(8 * 6, rng.choice([0.05, 0.5, 5.0]))).reshape(8, 6)
        C = np.sort(rng.choice(6, size=rng.integers(1, 6), replace=False))
        eps = 1 - P[:, C].sum()
        gap = abs(mutual_information(P) - mutual_information(P[:, C]))
        assert gap <= dep.left_out_bound(eps, 8) + 1e-12
    assert dep.left_out_bound(0.0, 30000) == 0.0


# ------------------------------------------------------------------ decoding and comparing


def test_decode_breaks_ties_toward_neighbours():
    assert dep.decode(np.zeros((4, 4))) == {(0, 1), (1, 2), (2, 3)}
    assert dep.decode(np.zeros((4, 4)), projective=True) == {(0, 1), (1, 2), (2, 3)}
    M = np.zeros((3, 3))
    M[0, 2] = 0.5                                          # one direction suffices ("max")
    assert (0, 2) in dep.decode(M)


def test_paired_uuas_difference_from_counts():
    """The chapter's paired comparison: stats.ratio with ``minus`` (same resampling for both)."""
    c_a, c_b, g = np.array([3, 2, 4, 1]), np.array([2, 2, 3, 1]), np.array([4, 3, 5, 2])
    diff, lo, hi = ratio(c_a, g, minus=c_b, n_boot=2000, seed=0)
    assert diff == pytest.approx(2 / 14)
    assert 0 <= lo <= diff <= hi                           # a never does worse than b
