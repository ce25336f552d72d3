"""The candidate grid on the truth: exact and truncated CMI from the same exact joints, and the shared allocation."""
import itertools

import numpy as np
import pytest

from mlmbook import dependencies as dep
from mlmbook.dependencies import truncation
from mlmbook.dependencies.cmi import _share
from mlmbook.stats import mutual_information
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def tiny():
    g = Grammar.load("tiny")
    sents = [s for s in g.sample(40, seed=3) if 3 <= len(s) <= 6][:5]
    return g, [s.words for s in sents]


def test_with_every_value_a_candidate_the_grid_is_the_exact_cmi(tiny):
    g, words = tiny
    check = truncation.truth_with_truncation(g, words, k=len(g.vocab))
    exact = dep.truth_cmi(g, words)
    for E, T, X in zip(check.exact, check.truncated, exact):
        np.testing.assert_allclose(E, X, atol=1e-12)
        np.testing.assert_allclose(T, X, atol=1e-9)
    assert check.max_bound == 0 and check.same_trees() == len(words)


def test_truncated_cmi_stays_within_its_bound(tiny):
    g, words = tiny
    check = truncation.truth_with_truncation(g, words, k=2)
    assert check.max_difference > 1e-6                       # two candidates do change some pair
    assert (check.differences <= check.bounds + 1e-9).all()
    diff, gold = check.uuas_difference([{(0, 1)} for _ in words])
    assert diff.shape == gold.shape == (len(words),) and np.abs(diff).max() <= 1


def test_truncated_pair_of_independent_words_is_zero_and_of_a_diagonal_joint_is_its_entropy():
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(4))
    I_i, I_j, left = truncation.truncated_pair(np.outer(a, b), 3, 2)
    assert abs(I_i) < 1e-12 and abs(I_j) < 1e-12 and 0 < left < 1
    P = np.diag(a)
    I_i, I_j, left = truncation.truncated_pair(P, 5, 5)
    assert I_i == pytest.approx(mutual_information(P)) and left == 0


def _left(ranked, sizes):
    return [1 - np.exp(lp[:n]).sum() for (_, lp), n in zip(ranked, sizes)]


def test_the_shared_allocation_minimises_the_largest_mass_left_out():
    """Brute force over every allocation of the total: none leaves less mass out at its worst position."""
    rng = np.random.default_rng(4)
    ranked = []
    for v in (6, 5, 6):
        p = np.sort(rng.dirichlet(np.full(v, 0.5)))[::-1]
        ranked.append((np.arange(v), np.log(p)))
    for total in (3, 5, 8, 11):
        sizes = _share(ranked, total)
        assert sum(sizes) == total and min(sizes) >= 1
        best = min(max(_left(ranked, alloc)) for alloc in itertools.product(*(range(1, len(r[0]) + 1) for r in ranked))
                   if sum(alloc) == total)
        assert max(_left(ranked, sizes)) == pytest.approx(best)


def test_the_grid_shares_k_candidates_per_position_within_each_sentence():
    from mlmbook.models import load_mlm
    lm = load_mlm("truth")
    sc = dep.sample.Scored.of([s for s in Grammar.load("toy").sample(30, seed=2) if len(s) <= 6][:2])
    shared = dep.cmi_grid(lm, sc.words, sc.keep, max_candidates=6)
    fixed = dep.cmi_grid(lm, sc.words, sc.keep, max_candidates=6,
                         settings=dep.GridSettings(allocate="position"))
    budget = dep.grid_rows(lm, sc.words, sc.keep, max_candidates=6)     # 2K + 1 rows per pair at most
    assert shared.rows <= budget and fixed.rows <= budget
    assert shared.max_left_out <= fixed.max_left_out + 1e-12
    with pytest.raises(ValueError, match="allocate"):
        dep.cmi_grid(lm, sc.words, sc.keep, max_candidates=6,
                     settings=dep.GridSettings(allocate="word"))
