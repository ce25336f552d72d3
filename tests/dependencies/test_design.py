"""Chapter 1's sample design: a nested length-stratified order, and a sample that knows its world."""
import numpy as np
import pytest

from mlmbook.dependencies import design, sample
from mlmbook.toy import Grammar


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_prefix_of_the_order_is_a_proportional_stratified_sample(seed):
    rng = np.random.default_rng(seed)
    labels = rng.choice([3, 4, 5, 7, 10], size=97, p=[0.4, 0.25, 0.2, 0.1, 0.05])
    order = design.nested_order(labels)
    assert sorted(order) == list(range(len(labels)))                       # a permutation
    share = {s: np.mean(labels == s) for s in set(labels)}
    for k in range(1, len(labels) + 1):
        taken = labels[order[:k]]
        for s, pi in share.items():
            assert abs((taken == s).sum() - k * pi) < 1 + 1e-9, (k, s)
    for s in share:                                                        # within a stratum, the given order
        mine = [i for i in order if labels[i] == s]
        assert mine == sorted(mine)


def test_nested_order_of_nothing_is_empty():
    assert design.nested_order([]) == []


def test_stratified_takes_a_prefix_with_the_pool_s_length_shares():
    pool = Grammar.load("toy").sample(400, seed=5)
    every = sample.Scored.of(pool)
    head = design.stratified(pool, 40)
    assert len(head) == 40 and set(map(tuple, head.words)) <= set(map(tuple, every.words))
    for n in set(every.n_words.tolist()):
        assert abs((head.n_words == n).sum() - 40 * np.mean(every.n_words == n)) < 1 + 1e-9
    assert [s.words for s in design.stratified(pool, 10).sentences] == [s.words for s in head.sentences[:10]]


def test_a_sample_off_the_toy_world_reads_no_toy_models():
    sc = sample.Scored.of(Grammar.load("toy").sample(8, seed=1))
    on = design.Sample(sc, sc.head(6), sc.head(3), "the toy language", True, True, None)
    off = design.Sample(sc, sc.head(6), sc.head(3), "x.conllu", False, False, None)
    assert on.world([0.0, 1.0]) == [0.0, 1.0] and on.world({"a": 1}) == {"a": 1}
    assert off.world([0.0, 1.0]) == [] and off.world({"a": 1}) == {} and off.world((1,)) == ()
    assert len(on.truth_sentences) == 6 and len(off.truth_sentences) == 0
    assert on.counts() == {"n_main": 6, "n_models": 3, "n_cpmi": 8, "mean_words": float(sc.head(6).n_words.mean())}
