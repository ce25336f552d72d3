"""Chapter 1's candidate policy, one function for the chapter and the API: the exact grid where the budget holds
it, else a top-K grid with its bound; and no RuntimeWarning from the grid when the model is the exact truth."""
import warnings

import numpy as np
import pytest

from mlmbook import dependencies as dep
from mlmbook.dependencies.pieces import non_special
from mlmbook.dependencies.policy import MIN_CANDIDATES
from mlmbook.models import load_mlm
from mlmbook.toy import Grammar


@pytest.fixture(scope="module")
def truth():
    return load_mlm("truth")


@pytest.fixture(scope="module")
def corpus():
    short = [s for s in Grammar.load("toy").sample(60, seed=4) if len(s) <= 5]
    return dep.sample.Scored.of(short[:3])


def test_the_budget_decides_between_the_exact_grid_and_a_top_k_grid(truth, corpus):
    full = dep.grid_rows(truth, corpus.words, corpus.keep)
    assert dep.cmi_candidates(truth, corpus.words, corpus.keep, budget_rows=full) is None
    k = dep.cmi_candidates(truth, corpus.words, corpus.keep, budget_rows=full // 4)
    assert MIN_CANDIDATES <= k < len(non_special(truth))
    assert dep.grid_rows(truth, corpus.words, corpus.keep, max_candidates=k) <= full // 4
    assert dep.cmi_candidates(truth, corpus.words, corpus.keep, budget_rows=1) == MIN_CANDIDATES
    # chapter 1's other use of the budget: how many leading sentences the exact grid affords
    per = [dep.grid_rows(truth, [w], [kp]) for w, kp in zip(corpus.words, corpus.keep)]
    assert dep.exact_prefix(truth, corpus.words, corpus.keep, budget_rows=per[0] + per[1]) == 2
    assert dep.exact_prefix(truth, corpus.words, corpus.keep, budget_rows=per[0] - 1) == 0


def test_cmi_scores_are_the_exact_grid_within_the_budget_and_say_so(truth, corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                  # the truth's zeros warn nowhere
        exact = dep.cmi_scores(truth, corpus.words, corpus.keep)
        grid = dep.cmi_grid(truth, corpus.words, corpus.keep)
        small = dep.cmi_scores(truth, corpus.words, corpus.keep, budget_rows=exact.rows // 6)
    assert exact.estimator == "exact grid" and exact.bound == 0.0 and exact.exact
    for a, b in zip(exact.scores, grid):
        np.testing.assert_array_equal(a, b)
    assert "exact CMI grid" in exact.describe()
    assert small.estimator == "top-K grid" and small.candidates < exact.candidates and small.rows < exact.rows
    assert small.bound == pytest.approx(small.scores.max_error_bound) and f"top-{small.candidates}" in small.describe()


def test_a_top_k_grid_on_the_truth_emits_no_runtime_warning(truth):
    """Given some value of one position, none of the other's top-K candidates may be possible under the truth:
    that conditional has no mass on the candidates, which once made NaNs (40 RuntimeWarnings through the API)."""
    sc = dep.sample.Scored.of(Grammar.load("toy").sample(8, seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid = dep.cmi_grid(truth, sc.words, sc.keep, max_candidates=30)
    assert all(np.isfinite(M).all() for M in grid)
