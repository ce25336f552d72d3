import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

sys.path.insert(0, str(Path(__file__).parent))
from _fake_oracles import JointOracle, PerturbedOracle, random_joint  # noqa: E402

from mlmbook import consistency as C  # noqa: E402

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
    assert lm.calls == 2  # direct conditional, then every route in one batch
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
