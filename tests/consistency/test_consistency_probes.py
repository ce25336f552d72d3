"""The consistency probes (chapters 3 and 5): exact where they must be, batched like the one-item paths.

The rectangle test and the order inconsistency vanish (to 1e-9) for the truth oracle and for any
joint and not for a perturbed one; every ensemble version equals the direct conditional under a
joint; the batched and chunked paths give the same numbers as the one-item paths; the
combination rules on hand cases.
"""
import itertools
import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from mlmbook import consistency as C
from mlmbook.consistency.ensemble import Versions, combine
from mlmbook.consistency.order import chain_rule_grids
from tests.fakes import JointOracle, PerturbedOracle, random_joint

V = 4
M = V  # mask id of the fake oracles


@pytest.fixture
def joint():
    return random_joint(3, V, seed=0)


def all_rectangles(n_pos=3, sentence=(1, 2, 3)):
    rows = []
    for i, j in itertools.permutations(range(n_pos), 2):
        for a, a2, b, b2 in [(0, 1, 2, 3), (3, 1, 0, 2), (2, 0, 1, 3)]:
            rows.append((i, j, a, a2, b, b2))
    r = np.array(rows).T
    return [list(sentence)] * r.shape[1], r


def test_rectangle_zero_for_coherent_joint_in_one_call(joint):
    lm = JointOracle(joint)
    ids, (i, j, a, a2, b, b2) = all_rectangles()
    delta = C.rectangle_deltas(lm, ids, i, j, (a, a2, b, b2))
    assert lm.calls == 1 and delta.shape == (len(ids),)
    assert np.abs(delta).max() < 1e-9


def test_rectangle_zero_with_other_positions_masked():
    lm = JointOracle(random_joint(4, V, seed=5))
    for sentence in ([0, 1, 2, M], [0, 1, M, M]):  # positions 2/3 marginalised as part of the context
        d = C.rectangle_delta(lm, sentence, 0, 1, (0, 3, 1, 2))
        assert abs(d) < 1e-9


def test_rectangle_nonzero_for_perturbed_oracle_and_antisymmetric(joint):
    lm = PerturbedOracle(joint)
    ids, (i, j, a, a2, b, b2) = all_rectangles()
    delta = C.rectangle_deltas(lm, ids, i, j, (a, a2, b, b2))
    assert np.median(np.abs(delta)) > 1e-2
    # exchanging the roles of (i; a, a') and (j; b, b') flips the sign; so does swapping a and a'
    np.testing.assert_allclose(C.rectangle_deltas(lm, ids, j, i, (b, b2, a, a2)), -delta, atol=1e-12)
    np.testing.assert_allclose(C.rectangle_deltas(lm, ids, i, j, (a2, a, b, b2)), -delta, atol=1e-12)


def test_rectangle_matches_direct_formula(joint):
    lm = PerturbedOracle(joint)
    s, i, j, a, a2, b, b2 = [1, 2, 3], 0, 2, 1, 3, 0, 2

    def lq(pos, **fixed):
        row = list(s)
        row[pos] = M
        for p, v in fixed.items():
            row[int(p[1:])] = v
        return torch.log_softmax(lm.logits(torch.tensor([row]), torch.tensor([[pos]]))[0, 0], -1).numpy()

    left = (lq(i, p2=b)[a] + lq(i, p2=b2)[a2] - lq(i, p2=b)[a2] - lq(i, p2=b2)[a])
    right = (lq(j, p0=a)[b] + lq(j, p0=a2)[b2] - lq(j, p0=a)[b2] - lq(j, p0=a2)[b])
    assert C.rectangle_delta(lm, s, i, j, (a, a2, b, b2)) == pytest.approx(left - right, abs=1e-12)


def test_top2_rectangles(joint):
    lm = JointOracle(joint)
    pairs = [(0, 1), (0, 2), (1, 2), (2, 0)]
    res = C.top2_rectangles(lm, [1, 2, 3], pairs)
    assert lm.calls == 2 and np.abs(res.delta).max() < 1e-9
    # pair (0, 1): {a, a'} = top-2 of p(x_0 | x_2 = 3), x_1 masked and marginalised
    p0 = logsumexp(joint[:, :, 3], axis=1)  # x_2 = 3 observed, x_1 marginalised
    assert [res.a[0], res.a2[0]] == list(np.argsort(-p0)[:2])
    # several sentences: (s, i, j) triples
    res2 = C.top2_rectangles(PerturbedOracle(joint), [[1, 2, 3], [0, 0, 1]], [(0, 0, 1), (1, 1, 2)])
    assert res2.delta.shape == (2,) and np.all(np.abs(res2.delta) > 1e-6)


def test_order_inconsistency(joint):
    lm = JointOracle(joint)
    sents = np.array([[0, 1, 2], [3, 3, 0], [2, 0, 1]])
    ids = np.repeat(sents, 3, axis=0)
    i, j = np.tile([0, 0, 1], 3), np.tile([1, 2, 2], 3)
    res = C.order_inconsistency(lm, ids, i, j)
    assert lm.calls == 1
    assert np.abs(res.rel).max() < 1e-9 and np.abs(res.abs_log_ratio).max() < 1e-9
    # and both orders give the exact pair probability p(x_0, x_1 | x_2) for the first row
    pair = joint[:, :, 2] - logsumexp(joint[:, :, 2])
    assert res.log_fwd[0] == pytest.approx(pair[0, 1], abs=1e-12)

    bad = C.order_inconsistency(PerturbedOracle(joint), ids, i, j)
    assert np.all(bad.abs_log_ratio > 1e-6)
    pf, pb = np.exp(bad.log_fwd), np.exp(bad.log_bwd)
    np.testing.assert_allclose(bad.rel, np.abs(pf - pb) / ((pf + pb) / 2), rtol=1e-10)


def test_ensemble_versions_equal_direct_conditional_for_coherent_joint():
    joint = random_joint(4, V, seed=3)
    lm = JointOracle(joint)
    sentence, t = [2, 0, 3, 1], 1
    res = C.ensemble_versions_many(lm, [sentence], [t])[0]
    assert lm.calls == 3  # direct conditionals, then the routes in two passes (target masked; candidates)
    assert res.probs.shape == (4, V) and res.routes == ((0,), (2,), (3,))
    exact = np.exp(joint[2, :, 3, 1] - logsumexp(joint[2, :, 3, 1]))
    np.testing.assert_allclose(res.probs, np.broadcast_to(exact, res.probs.shape), atol=1e-9)
    # a candidate set: top-2 of version 0 plus the gold token, all versions renormalised over it
    sub = C.ensemble_versions_many(lm, [sentence], [t], [[3]], candidates=2)[0]
    assert 0 in sub.candidates and len(sub.candidates) in (2, 3)
    np.testing.assert_allclose(sub.probs[1], sub.probs[0], atol=1e-9)
    np.testing.assert_allclose(sub.probs[0], exact[sub.candidates] / exact[sub.candidates].sum(), atol=1e-12)


def test_ensemble_versions_differ_for_perturbed_oracle():
    lm = PerturbedOracle(random_joint(4, V, seed=3), scale=1.0)
    res = C.ensemble_versions_many(lm, [[2, 0, 3, 1]], [1])[0]
    np.testing.assert_allclose(res.probs.sum(axis=1), 1.0)
    assert np.abs(res.probs[1:] - res.probs[0]).max() > 1e-3


def test_combine_rules():
    v = np.array([[0.5, 0.5, 0.0], [0.1, 0.1, 0.8]])
    np.testing.assert_allclose(combine(v, "mean"), [0.3, 0.3, 0.4])
    np.testing.assert_allclose(combine(v, "max"), np.array([0.5, 0.5, 0.8]) / 1.8)
    np.testing.assert_allclose(combine(np.stack([v, v]), "max").sum(axis=-1), [1, 1])
    with pytest.raises(ValueError):
        combine(v, "median")


def test_disagreement_rate():
    v = np.array([[0.6, 0.4], [0.3, 0.7], [0.6, 0.4]])
    assert C.disagreement_rate(v) == pytest.approx(0.5)            # versions 1, 2 vs version 0
    tie = np.array([[0.5, 0.5], [0.5 - 1e-12, 0.5 + 1e-12]])       # float noise on an exact tie
    assert C.disagreement_rate(tie) == 0.0
    assert C.disagreement_rate([v, np.array([[1.0, 0.0], [1.0, 0.0]])]) == pytest.approx(0.25)


def test_independent_pair_passes_rectangle_but_not_order_test():
    """Issue 16: under independence the rectangle test passes trivially, the order test need not.

    A model whose conditionals at i ignore x_j (and vice versa) but whose two-mask prediction at i
    differs from its one-mask prediction: every Δ is 0, the order inconsistency is not.
    """
    rng = np.random.default_rng(3)
    one_mask = {0: np.log(rng.dirichlet(np.ones(V))), 1: np.log(rng.dirichlet(np.ones(V)))}
    two_mask = {0: np.log(rng.dirichlet(np.ones(V))), 1: one_mask[1]}

    class Independent:
        mask_id, V = M, V + 1

        def logits(self, ids, positions, full_softmax=False):
            ids, positions = torch.as_tensor(ids), torch.as_tensor(positions)
            out = torch.full(tuple(positions.shape) + (self.V,), -np.inf, dtype=torch.float64)
            for b in range(len(ids)):
                both = bool((ids[b, :2] == M).all())
                for c, q in enumerate(positions[b].tolist()):
                    out[b, c, :V] = torch.from_numpy((two_mask if both else one_mask)[q])
            return out

    lm = Independent()
    row = [1, 2, 3]
    for a, a2, b, b2 in [(0, 1, 2, 3), (3, 1, 0, 2)]:
        assert abs(C.rectangle_delta(lm, row, 0, 1, (a, a2, b, b2))) < 1e-12
    order = C.order_inconsistency(lm, [row], 0, 1)
    expected = abs(two_mask[0][1] - one_mask[0][1])           # q(x_0 | both) vs q(x_0 | x_1): differ
    assert order.abs_log_ratio[0] == pytest.approx(expected) and expected > 1e-3


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def truth_case():
    """The toy language's exact oracle and three sentences encoded with its ids."""
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    truth = load_mlm("truth")
    sents = [s for s in Grammar.load("toy").sample(40, seed=5) if 6 <= len(s) <= 9][:3]
    ids = [torch.tensor(truth.encode_words(s.words)[0]) for s in sents]
    pairs = np.array([(k, i, j) for k, s in enumerate(sents) for i in range(len(s) - 1)
                      for j in range(i + 1, len(s) - 1)])
    return truth, ids, pairs


def fake_pairs(n=4):
    sents = [[0, 1, 2, 3], [3, 3, 0, 1], [2, 0, 1, 1]]
    pairs = np.array([(s, i, j) for s in range(len(sents)) for i in range(n) for j in range(i + 1, n)])
    return [torch.tensor(s) for s in sents], pairs


# ---------------------------------------------------------------- the probes are exact for coherent oracles
def test_truth_oracle_passes_both_tests(truth_case):
    truth, ids, pairs = truth_case
    with np.errstate(invalid="ignore"):
        res = C.probe_pairs(truth, ids, pairs)
    finite = np.isfinite(res.rect.delta)          # a rectangle with a forbidden cell has no finite Δ
    assert finite.mean() > 0.5
    assert np.abs(res.rect.delta[finite]).max() < 1e-9
    assert np.isfinite(res.order.abs_log_ratio).all()   # observed pairs are always possible
    assert res.order.abs_log_ratio.max() < 1e-9 and res.order.rel.max() < 1e-9


def test_coherent_joint_passes_perturbed_fails():
    ids, pairs = fake_pairs()
    joint = random_joint(4, V, seed=2)
    good = C.probe_pairs(JointOracle(joint), ids, pairs)
    assert np.abs(good.rect.delta).max() < 1e-9 and good.order.abs_log_ratio.max() < 1e-9
    bad = C.probe_pairs(PerturbedOracle(joint), ids, pairs)
    assert np.all(np.abs(bad.rect.delta) > 1e-6) and np.all(bad.order.abs_log_ratio > 1e-6)


def test_probe_pairs_matches_the_single_functions_and_chunking(monkeypatch):
    ids, pairs = fake_pairs()
    lm = PerturbedOracle(random_joint(4, V, seed=2))
    whole = C.probe_pairs(lm, ids, pairs)
    rect = C.top2_rectangles(lm, ids, pairs)
    order = C.order_inconsistency(lm, [ids[s] for s in pairs[:, 0]], pairs[:, 1], pairs[:, 2])
    np.testing.assert_allclose(whole.rect.delta, rect.delta, atol=1e-12)
    np.testing.assert_allclose(whole.order.abs_log_ratio, order.abs_log_ratio, atol=1e-12)
    lm.calls = 0
    monkeypatch.setenv("MLMBOOK_QUERY_BUDGET", "20")                # the engine's budget: a few rows per call
    chunked = C.probe_pairs(lm, ids, pairs)
    assert lm.calls > 6
    for a, b in zip(chunked.rect + chunked.order, whole.rect + whole.order):
        np.testing.assert_allclose(a, b, atol=1e-12)
    # given rectangles: re-testing the model's own top-2 rectangles gives the same Δ
    again = C.probe_pairs(lm, ids, pairs, same_as=whole)
    np.testing.assert_allclose(again.rect.delta, whole.rect.delta, atol=1e-12)
    assert C.probe_pairs(lm, ids, np.zeros((0, 3))).rect.delta.shape == (0,)


def test_identical_queries_are_sent_once():
    class Counting(JointOracle):
        rows = 0

        def logits(self, ids, positions, full_softmax=False):
            self.rows += len(ids)
            return super().logits(ids, positions)

    lm = Counting(random_joint(4, V, seed=1))
    row = torch.tensor([0, 1, 2, 3])
    res = C.order_inconsistency(lm, [row] * 3, [0, 1, 2], [3, 3, 3])   # three pairs share x_3
    # 3 rows per pair, but "only x_3 masked, query x_3" is one query for all three pairs
    assert lm.calls == 1 and lm.rows == 3 + 1 + 3
    assert res.abs_log_ratio.max() < 1e-9


def test_chain_rule_grids():
    joint = random_joint(4, V, seed=4)
    row = torch.tensor([1, 0, 2, 3])
    i, j, a_ids, b_ids = 0, 2, [0, 1, 3], [1, 2]
    fwd, bwd = chain_rule_grids(JointOracle(joint), row, i, j, a_ids, b_ids)
    pair = joint[:, 0, :, 3]                                   # x_1 = 0, x_3 = 3 observed
    pair = pair - logsumexp(pair)
    np.testing.assert_allclose(fwd, pair[np.ix_(a_ids, b_ids)], atol=1e-12)
    np.testing.assert_allclose(bwd, fwd, atol=1e-12)
    # for an inconsistent model: one cell is the order test, a 2x2 block is the rectangle test
    lm = PerturbedOracle(joint)
    fwd, bwd = chain_rule_grids(lm, row, i, j, [1, 3], [2, 0])
    o = C.order_inconsistency(lm, [row], i, j)                 # observed pair (x_0, x_2) = (1, 2)
    assert fwd[0, 0] == pytest.approx(o.log_fwd[0], abs=1e-12) and bwd[0, 0] == pytest.approx(o.log_bwd[0], abs=1e-12)

    def mixed(g):
        return g[0, 0] + g[1, 1] - g[1, 0] - g[0, 1]
    delta = C.rectangle_delta(lm, row, i, j, (1, 3, 2, 0))
    assert mixed(bwd) - mixed(fwd) == pytest.approx(delta, abs=1e-12)


# ---------------------------------------------------------------- the ensemble
def test_ensemble_versions_equal_direct_for_the_truth(truth_case):
    truth, ids, _ = truth_case
    versions = C.ensemble_versions_many(truth, ids, [1, 2, 3], [[0, 2], [1, 4], [0, 5]], candidates=6)
    for v in versions:
        assert v.probs.shape[0] == 3
        assert v.candidates.min() >= 5                          # never a special token (-inf logit)
        np.testing.assert_allclose(v.probs, np.broadcast_to(v.probs[0], v.probs.shape), atol=1e-9)


def test_ensemble_versions_many_equals_one_at_a_time_and_chunked(monkeypatch):
    lm = PerturbedOracle(random_joint(4, V, seed=3), scale=1.0)
    ids = [torch.tensor([2, 0, 3, 1]), torch.tensor([1, 1, 0, 2]), torch.tensor([3, 2, 2, 0])]
    targets, aux = [1, 0, 3], [[0, 2, 3], [2], [0, 1]]
    for cands in (None, 2, np.array([0, 1, 2])):
        many = C.ensemble_versions_many(lm, ids, targets, aux, candidates=cands)
        with monkeypatch.context() as mp:
            mp.setenv("MLMBOOK_QUERY_BUDGET", "10")                 # two rows per model call
            chunked = C.ensemble_versions_many(lm, ids, targets, aux, candidates=cands)
        for k, (v, w) in enumerate(zip(many, chunked)):
            one = C.ensemble_versions_many(lm, [ids[k]], [targets[k]], [aux[k]], candidates=cands)[0]
            np.testing.assert_array_equal(v.candidates, one.candidates)
            np.testing.assert_allclose(v.probs, one.probs, atol=1e-12)
            np.testing.assert_allclose(w.probs, one.probs, atol=1e-12)
    coherent = C.ensemble_versions_many(JointOracle(lm.logp), ids, targets, aux)
    for v in coherent:
        np.testing.assert_allclose(v.probs, np.broadcast_to(v.probs[0], v.probs.shape), atol=1e-9)


def test_ensemble_curve_on_hand_cases():
    v = Versions(np.array([7, 9]), np.array([[0.6, 0.4], [0.1, 0.9]]), np.array([3]))
    short = Versions(np.array([7, 9]), np.array([[0.2, 0.8]]), np.array([], dtype=int))
    mean = C.ensemble_curve([v, short], [9, 9], "mean")
    np.testing.assert_allclose(mean.correct, [[0, 1], [1, np.nan]])
    np.testing.assert_allclose(mean.log_loss, [[-math.log(0.4), -math.log(0.65)], [-math.log(0.8), np.nan]])
    mx = C.ensemble_curve([v], [9], "max")                     # max-pool: [0.6, 0.9] / 1.5
    np.testing.assert_allclose(mx.log_loss, [[-math.log(0.4), -math.log(0.6)]])
    assert mx.correct.tolist() == [[0.0, 1.0]]
    out = C.ensemble_curve([v], [5], "mean")                   # gold not a candidate
    assert out.correct[0, :2].tolist() == [0.0, 0.0] and np.isinf(out.log_loss[0, :2]).all()
    with pytest.raises(ValueError):
        C.ensemble_curve([v], [9], "median")


