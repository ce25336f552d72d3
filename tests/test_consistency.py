import itertools

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from tests.fakes import JointOracle, PerturbedOracle, random_joint

from mlmbook import consistency as C


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
    delta = C.rectangle_deltas(lm, ids, i, j, a, a2, b, b2)
    assert lm.calls == 1 and delta.shape == (len(ids),)
    assert np.abs(delta).max() < 1e-9


def test_rectangle_zero_with_other_positions_masked():
    lm = JointOracle(random_joint(4, V, seed=5))
    for sentence in ([0, 1, 2, M], [0, 1, M, M]):  # positions 2/3 marginalised as part of the context
        d = C.rectangle_delta(lm, sentence, 0, 1, 0, 3, 1, 2)
        assert abs(d) < 1e-9


def test_rectangle_nonzero_for_perturbed_oracle_and_antisymmetric(joint):
    lm = PerturbedOracle(joint)
    ids, (i, j, a, a2, b, b2) = all_rectangles()
    delta = C.rectangle_deltas(lm, ids, i, j, a, a2, b, b2)
    assert np.median(np.abs(delta)) > 1e-2
    # exchanging the roles of (i; a, a') and (j; b, b') flips the sign; so does swapping a and a'
    np.testing.assert_allclose(C.rectangle_deltas(lm, ids, j, i, b, b2, a, a2), -delta, atol=1e-12)
    np.testing.assert_allclose(C.rectangle_deltas(lm, ids, i, j, a2, a, b, b2), -delta, atol=1e-12)


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
    assert C.rectangle_delta(lm, s, i, j, a, a2, b, b2) == pytest.approx(left - right, abs=1e-12)


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


def test_noise_floor(joint):
    assert C.noise_floor() == C.FLOAT32_NOISE_FLOOR == 1e-4
    floor = C.noise_floor(JointOracle(joint), [1, 2, 3], [(0, 1), (1, 2)])
    assert 0 < floor < 1e-9


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
    res = C.ensemble_versions(lm, sentence, t)
    assert lm.calls == 3  # direct conditionals, then the routes in two passes (target masked; candidates)
    assert res.probs.shape == (4, V) and list(res.aux) == [0, 2, 3]
    exact = np.exp(joint[2, :, 3, 1] - logsumexp(joint[2, :, 3, 1]))
    np.testing.assert_allclose(res.probs, np.broadcast_to(exact, res.probs.shape), atol=1e-9)
    # a candidate set: top-2 of version 0 plus the gold token, all versions renormalised over it
    sub = C.ensemble_versions(lm, sentence, t, aux=[3], candidates=2)
    assert 0 in sub.candidates and len(sub.candidates) in (2, 3)
    np.testing.assert_allclose(sub.probs[1], sub.probs[0], atol=1e-9)
    np.testing.assert_allclose(sub.probs[0], exact[sub.candidates] / exact[sub.candidates].sum(), atol=1e-12)


def test_ensemble_versions_differ_for_perturbed_oracle():
    lm = PerturbedOracle(random_joint(4, V, seed=3), scale=1.0)
    res = C.ensemble_versions(lm, [2, 0, 3, 1], 1)
    np.testing.assert_allclose(res.probs.sum(axis=1), 1.0)
    assert np.abs(res.probs[1:] - res.probs[0]).max() > 1e-3


def test_combine_rules():
    v = np.array([[0.5, 0.5, 0.0], [0.1, 0.1, 0.8]])
    np.testing.assert_allclose(C.combine(v, "mean"), [0.3, 0.3, 0.4])
    np.testing.assert_allclose(C.combine(v, "max"), np.array([0.5, 0.5, 0.8]) / 1.8)
    np.testing.assert_allclose(C.combine(np.stack([v, v]), "max").sum(axis=-1), [1, 1])
    with pytest.raises(ValueError):
        C.combine(v, "median")


def test_disagreement_rate():
    v = np.array([[0.6, 0.4], [0.3, 0.7], [0.6, 0.4]])
    assert C.disagreement_rate(v) == pytest.approx(0.5)            # versions 1, 2 vs version 0
    assert C.disagreement_rate(v, reference=None) == pytest.approx(2 / 3)
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

        def logits(self, ids, positions, keep_special=False):
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
        assert abs(C.rectangle_delta(lm, row, 0, 1, a, a2, b, b2)) < 1e-12
    order = C.order_inconsistency(lm, [row], 0, 1)
    expected = abs(two_mask[0][1] - one_mask[0][1])           # q(x_0 | both) vs q(x_0 | x_1): differ
    assert order.abs_log_ratio[0] == pytest.approx(expected) and expected > 1e-3


# ---------------------------------------------------------------- the regime map's estimators (chapter 3)
def _exact_conditional(logp, row, t):
    """p(x_t | rest) of a small joint, by enumeration."""
    idx = [int(x) for x in row]
    idx[t] = slice(None)
    lp = logp[tuple(idx)]
    return np.exp(lp - logsumexp(lp))


def test_regime_measures_by_brute_force():
    from mlmbook import consistency_regime as R

    logp = random_joint(4, V, seed=5)
    ids = [torch.tensor([0, 1, 2, 3]), torch.tensor([3, 2, 1, 0]), torch.tensor([1, 1, 0, 2])]
    pairs = np.array([(s, i, j) for s in range(3) for i in range(4) for j in range(i + 1, 4)])
    targets, aux = [0, 2, 3], [[1, 2], [1, 3], [2]]
    truth_p = [_exact_conditional(logp, r, t) for r, t in zip(ids, targets)]
    # a coherent model that is the truth: no inconsistency, no headroom, nothing for the ensemble to do
    same = R.rung_measures(JointOracle(logp), ids, pairs, ids, targets, aux, truth_p, candidates=3)
    assert same["abs_delta"].max() < 1e-9 and same["order"].max() < 1e-9
    np.testing.assert_allclose(same["single"], same["bayes"], atol=1e-9)
    np.testing.assert_allclose(same["ens"], same["single"], atol=1e-9)
    # an inconsistent model: every per-target number by hand
    lm = PerturbedOracle(logp, scale=1.0)
    m = R.rung_measures(lm, ids, pairs, ids, targets, aux, truth_p, candidates=3)
    assert (m["abs_delta"] > 1e-6).all()
    for n, (row, t) in enumerate(zip(ids, targets)):
        v = C.ensemble_versions(lm, row, t, aux[n], candidates=3)
        hit = list(v.candidates).index(int(row[t]))
        q = truth_p[n][v.candidates] / truth_p[n][v.candidates].sum()
        assert m["bayes"][n] == pytest.approx(-np.log(q[hit]))
        assert m["hit_bayes"][n] == float(np.argmax(q) == hit)
        assert m["single"][n] == pytest.approx(-np.log(v.probs[0, hit]))
        assert m["ens"][n] == pytest.approx(-np.log(v.probs[:, hit].mean()))
        assert m["alone"][n] == pytest.approx(-np.log(v.probs[1:, hit]).mean())
    s = R.summarise(m)
    frac = (m["single"] - m["ens"]).sum() / (m["single"] - m["bayes"]).sum()
    assert s["loss_frac"][0] == pytest.approx(frac)
    assert s["delta"][0] == pytest.approx(np.median(m["abs_delta"]))
    for est, lo, hi in s.values():
        assert lo <= est + 1e-12 and est <= hi + 1e-12


def test_regime_verdict_and_tracking():
    from mlmbook import consistency_regime as R

    assert R.verdict((0.1, 0.02, 0.2)) == "helps" and R.verdict((-0.1, -0.2, -0.01)) == "hurts"
    assert R.verdict((0.0, 0.0, 0.0)) == "indistinguishable" and R.verdict((0.1, -0.1, 0.3), "a", "b") == \
        "indistinguishable"
    rng = np.random.default_rng(0)
    rungs = []
    for k in range(4):                       # more inconsistency, larger share of the headroom closed
        single = rng.uniform(1, 2, 200)
        rungs.append(dict(order=np.full(50, 0.1 * (k + 1)), single=single, bayes=single - 1.0,
                          ens=single - 0.1 * (k + 1)))
    rho, lo, hi = R.tracking(rungs, n_boot=50)
    assert rho == pytest.approx(1.0) and lo == pytest.approx(1.0)
