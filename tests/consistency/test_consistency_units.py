"""Chapter 3's sentence-level statistics and bookkeeping: every new function against brute force.

Pairs drawn from one sentence are resampled by sentence (a cluster interval is wider than a pair-level
one when sentences differ); two kinds of pairs are compared within sentences; a headroom fraction whose
denominator's interval contains 0 is undefined (Fieller), and otherwise equals Fieller's quadratic
solved by hand; the span comparison's arms give no gain on a joint; a subset of pairs keeps the sides
its flips altered in the full list.
"""
import math

import numpy as np
import pytest
import torch
from scipy.stats import t as student_t

from mlmbook import consistency as C
from mlmbook import stats
from mlmbook.consistency import regime as R
from mlmbook.consistency.order import pair_flips
from mlmbook.consistency.spans import fits_spans
from tests.fakes import JointOracle, PerturbedOracle, random_joint

V = 4


# ---------------------------------------------------------------- pairs, targets, the corpus
def test_sample_pairs_every_pair_or_a_random_subset():
    rng = np.random.default_rng(0)
    contents = [[0, 1, 2], [0, 2, 3, 4, 5, 6]]                  # 3 pairs; 15 pairs
    pairs = C.corpus.sample_pairs(contents, 5, rng)
    first = pairs[pairs[:, 0] == 0]
    assert first.tolist() == [[0, 0, 1], [0, 0, 2], [0, 1, 2]]     # all of them, in order
    second = pairs[pairs[:, 0] == 1]
    assert len(second) == 5 and (second[:, 1] < second[:, 2]).all()
    assert len({tuple(p) for p in second.tolist()}) == 5
    assert all(i in contents[1] and j in contents[1] for _, i, j in second)


def test_ensemble_targets_take_the_nearest_words_and_stop_at_n():
    class E:                                                       # the fields ensemble_targets reads
        def __init__(self, content):
            self.content = content
    sents = [E([0, 1, 2]), E(list(range(9))), E(list(range(10))), E(list(range(8)))]
    rng = np.random.default_rng(3)
    rows, targets, aux = C.corpus.ensemble_targets(sents, 2, 3, rng)
    assert rows == [1, 2] and len(targets) == 2                   # the 3-word sentence has too few positions
    for t, a, r in zip(targets, aux, rows):
        others = sorted((p for p in sents[r].content if p != t), key=lambda p: (abs(p - t), p))
        assert a == others[:3]
    long = [E(list(range(12))) for _ in range(30)]
    rows, targets, _ = C.corpus.ensemble_targets(long, 10, 3, np.random.default_rng(3), spans=True)
    assert len(rows) == 10 and all(fits_spans(t, long[r].content) for r, t in zip(rows, targets))
    from mlmbook.errors import TreebankError
    with pytest.raises(TreebankError, match="longer sentences"):
        C.corpus.ensemble_targets(sents[:1], 5, 3, np.random.default_rng(0))


def test_the_toy_world_and_a_treebank_do_not_mix():
    """``Source(toy=True)`` means the toy language's own sentences; the toy *model* on a treebank is
    ``Source(toy=False, treebank=...)`` (its fit checked by the build before any work)."""
    from mlmbook.errors import UsageError
    with pytest.raises(UsageError, match="Source.toy must be False"):
        C.corpus.load(None, 10, C.corpus.Source(toy=True, treebank="test"))


# ---------------------------------------------------------------- the sentence as the unit
def test_within_sentence_by_brute_force():
    rng = np.random.default_rng(1)
    units = np.repeat([5, 3, 9, 7], [6, 4, 5, 3])
    values = rng.normal(size=len(units))
    a = rng.random(len(units)) < 0.5
    b = ~a
    b[units == 7] = False                                          # sentence 7 has no pair of kind B
    d, labels, counts = C.dependence.within_sentence(values, a, b, units)
    expected = [(s, values[(units == s) & a].mean() - values[(units == s) & b].mean())
                for s in (5, 3, 9) if ((units == s) & a).any() and ((units == s) & b).any()]
    assert labels.tolist() == [s for s, _ in expected]            # order of first appearance
    np.testing.assert_allclose(d, [x for _, x in expected])
    assert counts.sum() == ((a | b) & np.isin(units, labels)).sum()
    with pytest.raises(ValueError):
        C.dependence.within_sentence(values, a, a, units)


def test_pairs_of_ten_sentences_are_resampled_by_sentence():
    """Twenty identical pairs per sentence: resampling pairs pretends to 200 units, resampling sentences
    sees 10 and gives a wider interval, for the mean (stats.describe with units) and the median."""
    rng = np.random.default_rng(2)
    units = np.repeat(np.arange(10), 20)
    values = np.repeat(rng.normal(size=10), 20)
    by_pair = stats.describe(values)
    by_sentence = stats.describe(values, units=units)
    assert by_sentence.n == 10 and by_pair.n == 200
    assert by_sentence.high - by_sentence.low > 2 * (by_pair.high - by_pair.low)
    med_pairs = stats.bootstrap(lambda x: np.median(x, -1), values, n_boot=2000)
    med_sent = R.cluster_median(values, units)
    assert med_sent.estimate == pytest.approx(np.median(values)) and med_sent.n == 10
    assert med_sent.high - med_sent.low > med_pairs.high - med_pairs.low


# ---------------------------------------------------------------- the headroom fraction (Fieller)
def test_headroom_fraction_is_undefined_when_the_headroom_can_be_zero():
    rng = np.random.default_rng(4)
    single = rng.normal(2.0, 0.5, 100)
    bayes = single - rng.normal(0.0, 0.5, 100)                     # headroom centred on 0
    ens = single - rng.normal(0.05, 0.05, 100)
    iv = R.headroom_fraction(single, ens, bayes)
    assert not iv.defined and "contains 0" in iv.note
    assert not R.headroom_fraction(single, ens, single).defined    # no headroom at all


def test_headroom_fraction_solves_fiellers_quadratic():
    rng = np.random.default_rng(5)
    n = 80
    h = rng.normal(1.0, 0.3, n)                                    # headroom per target
    g = 0.2 * h + rng.normal(0.0, 0.05, n)                        # gain per target
    single = rng.normal(3.0, 0.2, n)
    iv = R.headroom_fraction(single, single - g, single - h, level=0.9)
    assert iv.defined and iv.estimate == pytest.approx(g.sum() / h.sum()) and iv.n == n
    q = student_t.ppf(0.95, n - 1)
    C_ = np.cov(g, h) / n
    for rho in (iv.low, iv.high):                                  # the ends solve |a - ρ b| = q sd(a - ρ b)
        lhs = (g.mean() - rho * h.mean()) ** 2
        rhs = q ** 2 * (C_[0, 0] - 2 * rho * C_[0, 1] + rho ** 2 * C_[1, 1])
        assert lhs == pytest.approx(rhs, rel=1e-6)
    assert iv.low < iv.estimate < iv.high


# ---------------------------------------------------------------- the span comparison
def test_a_joint_gains_nothing_on_any_arm_and_stacked_labels_seeds():
    logp = random_joint(5, V, seed=8)
    ids = [torch.tensor([0, 1, 2, 3, 1]), torch.tensor([3, 2, 1, 0, 2])]
    targets, positions, aux = [2, 2], [list(range(5))] * 2, [[1, 3, 0, 4]] * 2
    gold = np.array([int(r[t]) for r, t in zip(ids, targets)])
    truth_p = [np.exp(JointOracle(logp).logits(r.clone().index_fill_(0, torch.tensor([t]), V)[None],
                                               torch.tensor([[t]]))[0, 0].double().log_softmax(-1).numpy())
               for r, t in zip(ids, targets)]
    joint = JointOracle(logp)
    items = C.Targets(ids, targets, positions, aux, gold, truth_p)
    scores = C.arms(joint, joint, items, candidates=V)
    for arm, _ in C.ARMS:
        np.testing.assert_allclose(scores[arm]["ens"], scores[arm]["single"], atol=1e-9)
    other = C.arms(PerturbedOracle(logp, scale=1.0), joint, items, candidates=V)
    assert np.abs(other["span"]["ens"] - other["span"]["single"]).max() > 1e-6
    values, seeds = C.stacked({0: scores, 4: other}, lambda sc: sc["span"]["single"])
    assert seeds.tolist() == [0, 0, 4, 4]
    np.testing.assert_allclose(values, np.r_[scores["span"]["single"], other["span"]["single"]])


def test_a_subset_of_pairs_keeps_the_sides_its_flips_altered():
    lm = PerturbedOracle(random_joint(4, V, seed=7), scale=1.5)
    ids = [torch.tensor([2, 0, 3, 1]), torch.tensor([1, 3, 0, 2])]
    pairs = np.array([(s, i, j) for s in range(2) for i in range(4) for j in range(i + 1, 4)])
    full = pair_flips(lm, ids, pairs)
    sub = np.array([1, 4, 5, 10])
    part = pair_flips(lm, ids, pairs[sub], index=sub)
    np.testing.assert_allclose(part.gap_fwd, full.gap_fwd[sub])
    np.testing.assert_array_equal(part.alt, full.alt[sub])
    shifted = pair_flips(lm, ids, pairs[sub])                    # without index: other sides for odd shifts
    assert not np.allclose(shifted.gap_fwd, full.gap_fwd[sub])


def test_target_budget_averages_each_targets_pairs():
    seen = []

    def distance(sentences, pairs):
        seen.append(pairs.copy())
        return pairs[:, 2] * 10.0 + pairs[:, 1]                   # any pair-level number
    out = C.target_budget(distance, ["s0", "s1"], [2, 0], [[1, 3], [4]])
    assert seen[0].tolist() == [[0, 2, 1], [0, 2, 3], [1, 0, 4]]
    np.testing.assert_allclose(out, [(12 + 32) / 2, 40])


# ---------------------------------------------------------------- the page's numbers
def test_an_interval_glues_its_text_and_parts_by_one_rounding_rule():
    iv = stats.Interval(-0.0001, -0.0004, 0.0002, 0.95, "test", 10, 0.0001)
    fields = iv.glue_fields()
    assert fields["text"] == "0.000 [0.000, 0.000]" and "-0.000" not in fields["text"]
    assert (fields["estimate"], fields["low"], fields["high"], fields["n"]) == (0.0, 0.0, 0.0002, 10)
    assert iv.glue_fields(digits=4)["low"] == -0.0004              # not zero at the digits it is shown with
    und = stats.undefined("no headroom").glue_fields()
    assert und["text"].startswith("undefined") and und["estimate"] == "undefined"
    assert stats.Interval(0.054, 0.031, 0.079, 0.99, "x", 100, 0.01).glue_fields(percent=True)["text"] \
        == "5.4 % [3.1, 7.9]"
    assert stats.Interval(0.02, 0.01, 0.03).glue_fields(unit="nats")["text"] == "0.020 nats [0.010, 0.030]"


def test_noise_floor_and_fit_by_hand():
    p = [np.array([0.5, 0.5, 0.0]), np.array([0.2, 0.3, 0.5])]
    pe = [np.array([0.4, 0.4, 0.2]), np.array([0.3, 0.3, 0.4])]
    np.testing.assert_allclose(C.noise.exact_floor(p, pe, [0, 2]), [math.log(0.5 / 0.4), math.log(0.5 / 0.4)])
    joint = JointOracle(random_joint(3, V, seed=2))
    rows, targets = [[V, 1, 2], [0, V, 3]], [0, 1]
    q = [np.exp(joint.logits(torch.tensor([r]), torch.tensor([[t]]))[0, 0].double().log_softmax(-1).numpy())
         for r, t in zip(rows, targets)]
    assert C.noise.fit_kl(joint, rows, targets, q) == pytest.approx(0.0, abs=1e-9)
