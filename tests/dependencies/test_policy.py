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
        grid = dep.cmi_grid(truth, corpus.words, corpus.keep)
        most = max(dep.grid_rows(truth, [w], [kp]) for w, kp in zip(corpus.words, corpus.keep))
        exact = dep.cmi_scores(truth, corpus.words, corpus.keep,
                               budget_rows=most * len(corpus.words))          # each sentence's fits
        small = dep.cmi_scores(truth, corpus.words, corpus.keep, budget_rows=exact.rows // 6)
    assert exact.estimator == "exact grid" and exact.bound == 0.0
    for a, b in zip(exact.scores, grid):
        np.testing.assert_array_equal(a, b)
    assert small.estimator == "top-K grid" and small.candidates < exact.candidates and small.rows < exact.rows
    assert small.bound == pytest.approx(small.scores.max_error_bound)


def test_a_top_k_grid_on_the_truth_emits_no_runtime_warning(truth):
    """Given some value of one position, none of the other's top-K candidates may be possible under the truth:
    that conditional has no mass on the candidates, which once made NaNs (40 RuntimeWarnings through the API)."""
    sc = dep.sample.Scored.of(Grammar.load("toy").sample(8, seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid = dep.cmi_grid(truth, sc.words, sc.keep, max_candidates=30)
    assert all(np.isfinite(M).all() for M in grid)


def test_the_default_budget_is_chapter_ones_full_profile_per_sentence():
    from mlmbook.dependencies.policy import BUDGET_ROWS, SENTENCE_ROWS
    from mlmbook.pipeline import cost
    from mlmbook.pipeline.chapters import Layout, find_chapters
    chapter = next(c for c in find_chapters(Layout.find(None)) if c.number == 1)
    full = cost.chapter_constants(chapter)["SIZES"]["full"]
    assert SENTENCE_ROWS == full["grid_rows"] // full["main"] and BUDGET_ROWS == SENTENCE_ROWS


def test_a_sentences_candidates_do_not_depend_on_its_batch_mates(truth):
    sc = dep.sample.Scored.of([s for s in Grammar.load("toy").sample(80, seed=2) if 4 <= len(s) <= 7][:3])
    alone = dep.cmi_scores(truth, sc.words[:1], sc.keep[:1], budget_rows=600)
    for mates in ([1], [2], [1, 2]):
        together = dep.cmi_scores(truth, [sc.words[0]] + [sc.words[m] for m in mates],
                                  [sc.keep[0]] + [sc.keep[m] for m in mates], budget_rows=600 * (1 + len(mates)))
        assert together.per_sentence[0] == alone.per_sentence[0] is not None
        np.testing.assert_allclose(together.scores[0], alone.scores[0], atol=1e-12)
        np.testing.assert_allclose(together.bounds[0], alone.bounds[0], atol=1e-12)


def _brute_force_undetermined(S, B):
    """Whether some corner of the box S +- B (each pair at its low or high end) changes the tree."""
    import itertools
    n = len(S)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    base = dep.decode(S)
    for signs in itertools.product((-1, 1), repeat=len(pairs)):
        T = S.copy()
        for (a, b), s in zip(pairs, signs):
            T[a, b] = T[b, a] = S[a, b] + s * B[a, b]
        if dep.decode(T) != base:
            return True
    return False


def test_undetermined_trees_are_those_the_bounds_cannot_decide():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        S = rng.uniform(0, 1, (4, 4))
        S = np.triu(S, 1) + np.triu(S, 1).T
        B = rng.uniform(0, 0.15, (4, 4))
        B = np.triu(B, 1) + np.triu(B, 1).T
        expected = _brute_force_undetermined(S, B)
        assert dep.undetermined([S], [B]) == [expected]
        seen.add(expected)
    assert seen == {True, False}                                 # both cases met
    assert dep.undetermined([S], [np.zeros_like(B)]) == [False]  # exact scores decide their tree


def test_the_api_cmi_trees_are_chapter_ones(truth):
    """The same model and sentences: the API's CMI trees are the trees chapter 1 reads off dep.cmi_scores with
    its budget (its quick profile: 7,500 passes on 20 sentences), and it says which the bounds cannot decide."""
    import mlmbook
    sc = dep.sample.Scored.of([s for s in Grammar.load("toy").sample(200, seed=5) if 4 <= len(s) <= 7][:4])
    budget = 7_500 / 20 * len(sc)
    chapter = dep.cmi_scores(truth, sc.words, sc.keep, budget_rows=budget)
    api = mlmbook.dependency_trees(truth, sc.sentences, method="cmi",
                                   options=mlmbook.Options(budget_rows=budget / len(sc)))
    assert chapter.estimator == api.estimator == "top-K grid"
    assert api.trees == [dep.decode(M) for M in chapter.scores]
    assert list(api.undetermined) == dep.undetermined(chapter.scores, chapter.bounds)
    assert chapter.summary()["undetermined"] == sum(api.undetermined)      # what the chapter's page states


def test_top_candidates_are_a_stable_sorts_prefix():
    """The candidates come from a partition, not a sort of the whole vocabulary: the same ids in the same
    order as a stable sort's first ``cap``, ties (the truth's equal probabilities) in index order."""
    from mlmbook.dependencies.cmi import top_stable
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 40))
        values = rng.integers(-3, 3, n).astype(float) if rng.random() < 0.5 else rng.standard_normal(n)
        values[rng.random(n) < 0.2] = -np.inf
        cap = int(rng.integers(0, n + 3))
        np.testing.assert_array_equal(top_stable(values, cap), np.argsort(-values, kind="stable")[:cap])
