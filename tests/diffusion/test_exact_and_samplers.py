"""Chapter 6's exact pieces against brute force: the subset DP against every order, the truth's NELBO
against its NLL, and each sampler's exact probabilities against enumeration and simulation."""
import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from mlmbook import diffusion as D
from tests.fakes import JointOracle, PerturbedOracle, random_joint


def _order_log_prob(lm, x, order):
    """log prod_t q(x_order[t] | x_order[<t]), one query per step (no subset table)."""
    shown, total = set(), 0.0
    for i in order:
        row = np.array([[v if d in shown else lm.mask_id for d, v in enumerate(x)]])
        total += float(lm.logits(row, [[i]])[0, 0].double().log_softmax(-1)[x[i]])
        shown.add(i)
    return total


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_the_subset_dp_is_the_mixture_over_all_orders(n):
    lm = PerturbedOracle(random_joint(n, 2, seed=n), scale=0.7, seed=n)   # conditionals of no joint
    x = list(np.random.default_rng(n).integers(0, 2, n))
    L = D.reveal_table(lm, [x])[0]
    per_order = np.array([_order_log_prob(lm, x, o) for o in itertools.permutations(range(n))])
    assert D.mixture(L) == pytest.approx(logsumexp(per_order) - math.log(len(per_order)), abs=1e-10)
    assert D.nelbo(L) == pytest.approx(-per_order.mean(), abs=1e-10)
    assert D.left_to_right(L) == pytest.approx(per_order[0], abs=1e-12)
    assert D.nelbo(L) > -D.mixture(L) + 1e-6                       # Jensen, strict: the orders disagree


def test_the_k_step_sampler_and_its_nelbo_against_every_ordered_partition():
    n, k = 5, 2
    lm = PerturbedOracle(random_joint(n, 2, seed=3), scale=0.7, seed=4)
    x = [1, 0, 1, 1, 0]
    L = D.reveal_table(lm, [x])[0]
    paths = []
    for order in itertools.permutations(range(n)):                  # blocks of the order, k at a time
        shown, total = set(), 0.0
        for t in range(0, n, k):
            block = order[t:t + k]
            row = np.array([[v if d in shown else lm.mask_id for d, v in enumerate(x)]])
            lp = lm.logits(row, [list(block)])[0].double().log_softmax(-1)
            total += sum(float(lp[c, x[i]]) for c, i in enumerate(block))
            shown |= set(block)
        paths.append(total)
    paths = np.array(paths)
    assert D.mixture(L, k=2) == pytest.approx(logsumexp(paths) - math.log(len(paths)), abs=1e-10)
    assert D.nelbo(L, k=2) == pytest.approx(-paths.mean(), abs=1e-10)


def test_the_truths_nelbo_is_its_nll_and_every_order_agrees():
    from mlmbook.models.truth import TruthOracle
    from mlmbook.toy import Grammar
    g = Grammar.load("tiny")
    truth = TruthOracle(g)
    sentences = [s.words for s in g.sample(40, seed=3) if len(s.words) <= 6][:5]
    assert len(sentences) >= 3
    tables = D.reveal_table(truth, [truth.encode_words(w)[0] for w in sentences])
    for words, L in zip(sentences, tables):
        nll = -D.truth_log_prob(g, words)
        assert D.nelbo(L) == pytest.approx(nll, abs=1e-9)
        assert -D.mixture(L) == pytest.approx(nll, abs=1e-9)
        assert -D.left_to_right(L) == pytest.approx(nll, abs=1e-9)
        assert -D.confident_log_prob(truth, [truth.encode_words(words)[0]])[0] == pytest.approx(nll, abs=1e-9)


def _all_sentences(n, Vw):
    return [list(x) for x in itertools.product(range(Vw), repeat=n)]


@pytest.mark.parametrize("order,k", [("random", 1), ("random", 2), ("l2r", 1), ("confident", 1)])
def test_each_samplers_exact_law_sums_to_one_and_matches_simulation(order, k):
    n, Vw = 3, 3
    lm = PerturbedOracle(random_joint(n, Vw, seed=11), scale=0.8, seed=12)
    support = _all_sentences(n, Vw)
    if order == "confident":
        logp = D.confident_log_prob(lm, support)
    else:
        tables = D.reveal_table(lm, support)
        logp = np.array([D.left_to_right(L) if order == "l2r" else D.mixture(L, k=k) for L in tables])
    P = np.exp(logp)
    assert P.sum() == pytest.approx(1.0, abs=1e-10)
    draws = D.simulate(lm, n, 100_000, order=order, k=k, seed=5)
    index = (draws * Vw ** np.arange(n)[::-1]).sum(axis=1)          # base-Vw number = the row of support
    counts = np.bincount(index, minlength=len(support))
    assert chisquare(counts, 100_000 * P).pvalue > 1e-3


def test_parallel_reveals_are_exact_only_without_dependence():
    n, Vw = 4, 2
    rng = np.random.default_rng(0)
    independent = np.log(rng.dirichlet(np.ones(Vw), size=n))        # a product of marginals
    logp = sum(np.expand_dims(independent[i], tuple(d for d in range(n) if d != i)) for i in range(n))
    for joint, exact in ((logp, True), (random_joint(n, Vw, seed=2, spread=2.0), False)):
        lm = JointOracle(joint)
        x = [0, 1, 1, 0]
        L = D.reveal_table(lm, [x])[0]
        gap = abs(D.mixture(L, k=2) - joint[tuple(x)])
        assert (gap < 1e-12) == exact, gap


def test_monte_carlo_nelbo_is_unbiased_and_the_inputs_are_checked():
    lm = PerturbedOracle(random_joint(4, 2, seed=8), scale=0.7, seed=9)
    x = [0, 1, 1, 0]
    mc = D.nelbo_mc(lm, [x], orders=4000, seed=1)[0]
    exact = D.nelbo(D.reveal_table(lm, [x])[0])
    assert abs(mc.mean() - exact) < 4 * mc.std() / math.sqrt(len(mc))
    mc2 = D.nelbo_mc(lm, [x], orders=4000, k=2, seed=1)[0]
    assert abs(mc2.mean() - D.nelbo(D.reveal_table(lm, [x])[0], k=2)) < 4 * mc2.std() / math.sqrt(len(mc2))
    with pytest.raises(ValueError, match="reveal order"):
        D.simulate(lm, 4, 2, order="backwards")
    with pytest.raises(ValueError, match="shorter sentences"):
        D.reveal_table(lm, [[0] * (D.MAX_TOKENS + 1)])
    assert D.distinct_share([[1, 2], [1, 2], [2, 1]]) == pytest.approx(2 / 3)
