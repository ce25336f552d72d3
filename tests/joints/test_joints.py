"""Tests for mlmbook.joints (chapter 2: joints from an MLM's conditionals)."""
import warnings

import numpy as np
import pytest
import torch

from mlmbook import joints as J
from mlmbook import stats
from mlmbook.joints.metrics import conditional_divergence
from mlmbook.joints.sampling import tree_distance


def random_joint(K, seed, zeros=0.0, full_row=None):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(K * K)).reshape(K, K) + 1e-3
    if zeros:
        P[rng.random((K, K)) < zeros] = 0.0
        if full_row is not None:  # keep the pivot row in the support of every column
            P[full_row] = rng.random(K) + 0.1
    return P / P.sum()


def perturbed(P, seed, eps=0.3):
    """Conditionals of P with independent multiplicative noise: incompatible."""
    rng = np.random.default_rng(seed)
    pc = J.PairConditionals.from_joint(P)
    return J.PairConditionals(pc.log_a_given_b + eps * rng.standard_normal(P.shape),
                              pc.log_b_given_a + eps * rng.standard_normal(P.shape), pc.log_a, pc.log_b)


ALL_METHODS = [J.naive, J.mrf, J.mrf_local, J.hcb, lambda pc: J.ag(pc).joint]


@pytest.mark.parametrize("K,seed", [(3, 0), (6, 1), (12, 2)])
def test_hcb_and_ag_recover_compatible_joint(K, seed):
    P = random_joint(K, seed)
    pc = J.PairConditionals.from_joint(P)
    assert np.abs(J.hcb(pc) - P).max() < 1e-6
    for pivot in range(K):
        assert np.abs(J.hcb(pc, pivot) - P).max() < 1e-6
    assert np.abs(J.hcb(pc.swap(), 1).T - P).max() < 1e-6
    res = J.ag(pc)
    assert res.converged and np.abs(res.joint - P).max() < 1e-6
    assert res.objective[-1] < 1e-9
    assert np.abs(J.mrf_local(pc) - P).max() > 1e-3
    # MRF on log-probabilities is MRF-local; naive is the product of marginals
    assert np.allclose(J.mrf(pc), J.mrf_local(pc))
    assert np.allclose(J.naive(pc), np.outer(P.sum(1), P.sum(0)))


def test_mrf_uses_raw_logits():
    rng = np.random.default_rng(3)
    la, lb = rng.standard_normal((2, 4, 5))
    pc = J.PairConditionals.from_logits(la, lb, np.zeros(4), np.zeros(5))
    expected = np.exp(la + lb) / np.exp(la + lb).sum()
    assert np.allclose(J.mrf(pc), expected)
    assert np.allclose(np.exp(pc.log_a_given_b).sum(0), 1) and np.allclose(np.exp(pc.log_b_given_a).sum(1), 1)
    assert not np.allclose(J.mrf(pc), J.mrf_local(pc))


@pytest.mark.parametrize("seed", range(4))
def test_ag_objective_never_increases_and_joints_sum_to_one(seed):
    P = random_joint(7, seed)
    pc = perturbed(P, seed)
    res = J.ag(pc, tol=1e-10)
    assert res.converged and len(res.objective) >= 2 and res.iterations >= len(res.objective) - 2
    assert np.all(np.diff(res.objective) <= 1e-12)
    assert res.objective[-1] > 0
    # the AG joint beats the other joints on its own objective
    for f in ALL_METHODS:
        joint = f(pc)
        assert joint.shape == P.shape and abs(joint.sum() - 1) < 1e-12 and np.all(joint >= 0)
        assert J.ag_objective(pc, joint) >= res.objective[-1] - 1e-9


def test_compatibility():
    for seed in range(3):
        P = random_joint(8, seed)
        assert J.compatibility(J.PairConditionals.from_joint(P)) < 1e-9
        assert J.compatibility(perturbed(P, seed)) > 1e-3
        assert J.compatibility(perturbed(P, seed, eps=1e-3)) > 0
    P = random_joint(8, 5, zeros=0.3, full_row=0)
    assert J.compatibility(J.PairConditionals.from_joint(P)) < 1e-9


def test_zeros_never_give_nan():
    K = 8
    P = random_joint(K, 4, zeros=0.4, full_row=2)
    P[:, 5] = 0.0  # an impossible value of B: its conditional q(. | b=5) is undefined
    P /= P.sum()
    pc = J.PairConditionals.from_joint(P)
    assert np.all(np.isneginf(pc.log_a_given_b[:, 5]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        joints = {name: f(pc) for name, f in zip(["naive", "mrf", "mrf_local", "hcb", "ag"], ALL_METHODS)}
        for name, joint in joints.items():
            assert not np.isnan(joint).any() and abs(joint.sum() - 1) < 1e-12, name
            for kind in ["kl", "rkl", "jsd"]:
                assert not np.isnan(conditional_divergence(joint, pc, kind))
            assert not np.isnan(J.kl_joint(P, joint))
        assert not np.isnan(J.compatibility(pc))
    # pivot whose row covers every possible b: HCB exact; AG (restricted to the support) exact
    assert np.abs(joints["hcb"] - P).max() < 1e-6
    assert np.abs(joints["ag"] - P).max() < 1e-6
    assert np.all(joints["mrf_local"][P == 0] == 0)
    # a pivot with zeros in its row: HCB drops the b's it cannot reach, still a distribution
    bad = int(np.argmax((P == 0).sum(1)))
    h = J.hcb(pc, bad)
    assert np.all(h[:, P[bad] == 0] == 0) and abs(h.sum() - 1) < 1e-12
    assert J.kl_joint(P, h) == np.inf and conditional_divergence(h, pc, "kl") == np.inf
    assert conditional_divergence(h, pc, "jsd") <= np.log(2)


def test_metrics():
    P = random_joint(5, 7)
    pc = J.PairConditionals.from_joint(P)
    for kind in ["kl", "rkl", "jsd"]:
        assert abs(conditional_divergence(P, pc, kind)) < 1e-12
        assert conditional_divergence(J.naive(pc), pc, kind) > 0
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    assert np.isclose(stats.kl(p, q), np.log(2)) and stats.kl(q, p) == np.inf
    assert 0 < stats.jsd(q, p) <= np.log(2) and np.isclose(stats.jsd(p, p), 0)
    assert J.kl_joint(P, P) == 0 and J.kl_joint(P, J.naive(pc)) > 0


class FakeOracle:
    """Exact conditionals of a known joint over 3-token sentences; vocabulary = words + [MASK]."""

    def __init__(self, P):
        self.P = P
        m = P.shape[0]
        self.vocab = [f"w{i}" for i in range(m)] + ["[MASK]"]
        self.V, self.mask_id, self.calls = m + 1, m, []

    def logits(self, ids, positions, full_softmax=False):
        self.calls.append((tuple(ids.shape), tuple(positions.shape)))
        out = torch.full((*positions.shape, self.V), -np.inf, dtype=torch.float64)
        for r in range(ids.shape[0]):
            idx = tuple(slice(None) if t == self.mask_id else t for t in ids[r].tolist())
            for k, pos in enumerate(positions[r].tolist()):
                sub = self.P[idx]  # axes: the masked positions, in order
                axis = [i for i, t in enumerate(ids[r].tolist()) if t == self.mask_id].index(pos)
                marg = sub.sum(axis=tuple(i for i in range(sub.ndim) if i != axis))
                with np.errstate(divide="ignore"):
                    out[r, k, :-1] = torch.from_numpy(np.log(marg / marg.sum()))
        return out


@pytest.mark.parametrize("zeros", [0.0, 0.3])
def test_pair_conditionals_on_fake_oracle(zeros):
    m = 5
    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(m ** 3)).reshape(m, m, m) + 1e-3
    if zeros:
        P[rng.random(P.shape) < zeros] = 0
        P[:, 1, :][0] = 1.0  # keep the sentence (0, 1, 3) possible
        P[0, 1, 3] = 1.0
    P /= P.sum()
    lm = FakeOracle(P)
    ids = torch.tensor([0, 1, 3])
    pc = J.pair_conditionals(lm, ids, 0, 2)
    # through the query engine: one call for the 2m one-position rows, one for the both-masked row
    assert sorted(lm.calls) == [((1, 3), (1, 2)), ((2 * m, 3), (2 * m, 1))]
    truth = J.PairConditionals.from_joint(P[:, 1, :])
    for name in ["log_a_given_b", "log_b_given_a", "log_a", "log_b"]:
        got, want = getattr(pc, name), getattr(truth, name)
        assert np.array_equal(np.isinf(got), np.isinf(want))
        assert np.allclose(got[np.isfinite(want)], want[np.isfinite(want)], atol=1e-12)
    assert list(pc.cand_a) == list(range(m)) and list(pc.cand_b) == list(range(m))
    assert np.abs(J.ag(pc).joint - P[:, 1, :] / P[:, 1, :].sum()).max() < 1e-5


def test_pair_conditionals_with_candidate_subsets():
    m = 6
    P = np.random.default_rng(12).dirichlet(np.ones(m ** 3)).reshape(m, m, m)
    lm = FakeOracle(P)
    ca, cb = np.array([4, 0, 2]), np.array([1, 5])
    pc = J.pair_conditionals(lm, torch.tensor([4, 3, 1]), 0, 2, candidates=(ca, cb))
    assert sorted(lm.calls) == [((1, 3), (1, 2)), ((len(ca) + len(cb), 3), (len(ca) + len(cb), 1))]
    sub = J.PairConditionals.from_joint(P[:, 3, :][np.ix_(ca, cb)])
    assert np.allclose(pc.log_a_given_b, sub.log_a_given_b, atol=1e-6)
    assert np.allclose(pc.log_b_given_a, sub.log_b_given_a, atol=1e-6)
    assert pc.shape == (3, 2) and J.hcb(pc).shape == (3, 2)


@pytest.mark.parametrize("seed", range(3))
def test_ag_warm_start_reaches_the_same_fixed_point(seed):
    """The default start (the MLM's both-masked marginals) and Arnold & Gokhale's uniform start give
    the same joint, to the stated tolerance in log space, and both keep the objective monotone."""
    P = random_joint(9, seed) ** 2                       # uneven masses: small cells too
    P /= P.sum()
    pc = perturbed(P, seed, eps=0.5)
    warm, cold = J.ag(pc), J.ag(pc, warm=False)
    assert warm.converged and cold.converged
    assert np.abs(np.log(warm.joint) - np.log(cold.joint)).max() < 1e-5
    for res in (warm, cold):
        assert np.all(np.diff(res.objective) <= 1e-12)
    # a both-masked marginal with exact zeros must not freeze those candidates at 0
    zeroed = J.PairConditionals(pc.log_a_given_b, pc.log_b_given_a,
                                np.where(np.arange(9) < 3, -np.inf, pc.log_a), pc.log_b)
    assert np.abs(np.log(J.ag(zeroed).joint) - np.log(cold.joint)).max() < 1e-5


# --------------------------------------------------------------------------- third edition additions

def test_anchor_rescales_conditionals_to_the_mlm_marginals():
    P = random_joint(6, 8)
    pc = J.PairConditionals.from_joint(P)
    assert np.abs(J.anchor(P, pc) - P).max() < 1e-12                # true conditionals, true marginals: exact
    # blocks: any block weights in the joint, the anchored joint has the marginals' weights
    Q = np.zeros((6, 6))
    Q[:3, :3], Q[3:, 3:] = P[:3, :3], P[3:, 3:]
    Q /= Q.sum()
    pcq = J.PairConditionals.from_joint(Q)
    wrong = Q.copy()
    wrong[:3] *= 5
    wrong /= wrong.sum()
    assert np.abs(J.anchor(wrong, pcq) - Q).max() < 1e-12
    # by hand on an incompatible pair: the mean of q(a) p(b|a) and q(b) p(a|b)
    noisy = perturbed(P, 3)
    joint = J.ag(noisy).joint
    qa, qb = np.exp(noisy.log_a), np.exp(noisy.log_b)
    by_hand = 0.5 * (qa[:, None] * joint / joint.sum(1, keepdims=True)
                     + qb[None, :] * joint / joint.sum(0, keepdims=True))
    assert np.abs(J.anchor(joint, noisy) - by_hand).max() < 1e-12
    assert set(J.derive_all(noisy)) == set(J.METHODS)


def test_weighted_compatibility_is_the_weighted_least_squares_fit():
    rng = np.random.default_rng(4)
    P = random_joint(5, 9)
    for pc in (perturbed(P, 1), perturbed(random_joint(5, 10, zeros=0.3, full_row=0), 2)):
        S = np.isfinite(pc.log_a_given_b) & np.isfinite(pc.log_b_given_a)
        i, j = np.nonzero(S)
        r = pc.log_a_given_b[S] - pc.log_b_given_a[S]
        for weighted in (True, False):
            w = np.exp(pc.log_a)[i] * np.exp(pc.log_b)[j] if weighted else np.ones(len(i))
            w = w / w.sum()
            X = np.zeros((len(i), 10))
            X[np.arange(len(i)), i], X[np.arange(len(i)), 5 + j] = 1, 1
            fit = np.linalg.lstsq(X * np.sqrt(w)[:, None], r * np.sqrt(w), rcond=None)[0]
            assert np.isclose(J.compatibility(pc, weighted=weighted), np.sum(w * (r - X @ fit) ** 2), rtol=1e-6)
    assert J.compatibility(J.PairConditionals.from_joint(P)) < 1e-20
    # weighting by probability: noise on rows of negligible mass (most of a real grid) barely counts
    Q = P.copy()
    Q[:2] *= 1e-6
    Q /= Q.sum()
    pc = J.PairConditionals.from_joint(Q)
    noise = np.zeros(Q.shape)
    noise[:2] = rng.standard_normal((2, 5))
    noisy = J.PairConditionals(pc.log_a_given_b + noise, pc.log_b_given_a, pc.log_a, pc.log_b)
    assert J.compatibility(noisy) < 1e-4 * J.compatibility(noisy, weighted=False)


def test_nearest_compatible_is_a_probability_weighted_kl_to_ag():
    P = random_joint(6, 11)
    assert J.nearest_compatible(J.PairConditionals.from_joint(P)) < 1e-12
    pc = perturbed(P, 4)
    joint = J.ag(pc).joint
    D = J.PairConditionals.from_joint(joint)
    qa, qb = np.exp(pc.log_a), np.exp(pc.log_b)
    by_hand = 0.5 * sum(qb[b] * stats.kl(np.exp(pc.log_a_given_b[:, b]), np.exp(D.log_a_given_b[:, b]))
                        for b in range(6))
    by_hand += 0.5 * sum(qa[a] * stats.kl(np.exp(pc.log_b_given_a[a]), np.exp(D.log_b_given_a[a])) for a in range(6))
    assert np.isclose(J.nearest_compatible(pc), by_hand) and np.isclose(J.nearest_compatible(pc, joint), by_hand)
    assert J.nearest_compatible(pc, J.naive(pc)) > by_hand            # AG is the nearest (in its own metric)


def test_ag_tolerance_below_float64_is_raised_to_the_floor():
    pc = perturbed(random_joint(6, 12), 5)
    with pytest.warns(UserWarning, match="below what float64 can reach"):
        res = J.ag(pc, tol=1e-16)
    assert res.converged and res.error_bound <= J.TOL_FLOOR
    with pytest.raises(ValueError, match="positive tolerance"):
        J.ag(pc, tol=0.0)


@pytest.mark.parametrize("heads, i, j, d", [([-1, 0, 0, 1], 0, 1, 1), ([-1, 0, 0, 1], 1, 2, 2),
                                            ([-1, 0, 0, 1], 3, 2, 3), ([1, -1, 1, 2], 0, 3, 3),
                                            ([1, -1, 1, 2], 3, 3, 0)])
def test_tree_distance(heads, i, j, d):
    assert tree_distance(heads, i, j) == d == tree_distance(heads, j, i)


def test_tree_distance_rejects_a_cycle():
    with pytest.raises(ValueError, match="cycle"):
        tree_distance([1, 0, -1], 0, 2)


def test_block_error_counts_only_mass_between_blocks():
    P = np.zeros((4, 4))
    P[:2, :2], P[2:, 2:] = 0.1, 0.15                   # two blocks holding 0.4 and 0.6
    pc = J.PairConditionals.from_joint(P)
    n, labels, _ = J.support_blocks(pc)
    assert n == 2
    inside = P.copy()
    inside[0, 0], inside[0, 1] = 0.15, 0.05            # mass moved inside a block: no block error
    assert J.block_error(P, inside, labels) == 0.0 < J.tv_joint(P, inside)
    wrong = P.copy()
    wrong[:2] *= 2
    wrong /= wrong.sum()                               # block weights 4/7 and 3/7 instead of 0.4 and 0.6
    assert np.isclose(J.block_error(P, wrong, labels), 4 / 7 - 0.4)
    assert J.block_error(P, J.hcb(pc), labels) > 0.35  # HCB sees only its pivot's block


def test_newton_step_block_solve_matches_the_dense_system():
    """AG's Newton step solves the (K_A + K_B)-sized system through a Schur complement and Sherman–
    Morrison; it must give the dense solve's answer (and fall back to it when it cannot)."""
    import sys
    step = sys.modules["mlmbook.joints.ag"]._newton_step
    rng = np.random.default_rng(7)
    for na, nb in ((5, 7), (30, 30)):
        u = rng.dirichlet(np.ones(na * nb)).reshape(na, nb)
        w = rng.random((na, nb))
        R, C = u / u.sum(1, keepdims=True), u / u.sum(0, keepdims=True)
        B, Cw = R * (1 - w), C * w
        da, db = -B.sum(1), -Cw.sum(0)
        g = np.concatenate([(u * w).sum(1), (u * (1 - w)).sum(0)])
        F = rng.standard_normal(na + nb) * 1e-3
        jac = np.zeros((na + nb, na + nb))
        jac[:na, na:], jac[na:, :na] = B, Cw.T
        jac[np.arange(na), np.arange(na)] = da
        jac[np.arange(na, na + nb), np.arange(na, na + nb)] = db
        jac -= g[None, :]
        d = step(B, Cw, da, db, g, F)
        assert np.abs(jac @ d + F).max() < 1e-12 and np.allclose(d, np.linalg.solve(jac, -F), atol=1e-9)
        # a zero on D_a's diagonal takes the dense path: still the answer
        da0 = da.copy()
        da0[0] = 0.0
        jac0 = jac.copy()
        jac0[0, 0] = -g[0]
        d0 = step(B, Cw, da0, db, g, F)
        assert np.abs(jac0 @ d0 + F).max() < 1e-9
