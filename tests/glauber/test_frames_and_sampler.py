"""Frames, exact kernels, the sampler and couplings, and the truth's view of chain states: unit tests
moved from the chapter's test file (they test package functions, on the fake oracles of
``tests.fakes`` and the toy grammar)."""
import math

import numpy as np
import pytest
import torch
from scipy import stats

from mlmbook import glauber as G
from mlmbook.stats import tv
from tests.fakes import JointOracle, PerturbedOracle, random_joint

# ---------------------------------------------------------------- frames and exact kernels

def test_frame_with_per_site_candidates_has_the_restricted_joint_as_reversible_law():
    joint = random_joint(4, 4, seed=3)
    lm = JointOracle(joint)
    cands = [[0, 2], [1, 2, 3], [3, 0]]                 # per-site sets, in no particular order
    frame = G.Frame([0, 0, 0, 1], [0, 1, 2], cands)
    assert frame.size == 12 and frame.sizes == (2, 3, 2)
    states = frame.states()
    np.testing.assert_array_equal(frame.index(states), np.arange(12))
    assert bool((states[:, 3] == 1).all())
    tabs = frame.conditional_logits(lm)
    assert [t.shape for t in tabs] == [(6, 2), (4, 3), (6, 2)]
    target = np.exp(np.array([joint[tuple(s)] for s in states.tolist()]))
    target /= target.sum()
    for T in (1.0, 0.5):
        P = frame.kernel(tabs, T)
        np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-12)
        pi = G.stationary(P)
        pT = target ** (1 / T) / (target ** (1 / T)).sum()     # tempered Gibbs samples p^(1/T)
        np.testing.assert_allclose(pi, pT, atol=1e-9)
        assert G.is_reversible(P, pi)


def test_frame_index_follows_the_candidate_order():
    frame = G.Frame.shared(3, [2, 0, 1])
    assert frame.index(torch.tensor([[1, 1, 1], [2, 0, 2]])).tolist() == [26, 3]


def test_kernel_of_an_exact_oracle_with_forbidden_states():
    """Zeros of the joint: contexts where every candidate is forbidden get a uniform row (transient
    states), and the stationary law is still the joint restricted to the frame."""
    logp = random_joint(3, 3, seed=5)
    logp[0, 0, :] = -np.inf                                  # x0 = x1 = 0 is impossible
    lm = JointOracle(logp)
    frame = G.Frame.shared(3, [0, 1, 2])
    with np.errstate(invalid="ignore", divide="ignore"):
        P = frame.kernel(frame.conditional_logits(lm), 1.0)
    np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    pi = G.stationary(P)
    p = np.exp(logp).ravel()
    np.testing.assert_allclose(pi, p / p.sum(), atol=1e-9)


def test_critical_depth_of_hand_built_landscapes():
    # a path of three states with energies (0, h, d): lines are the pairs {1,2} and {2,3}
    h, d = 2.0, 0.5
    E = np.array([0.0, h, d])

    class Path:                                             # duck-typed frame: families = lines
        sites = [0, 1]

        @staticmethod
        def families(a):
            return np.array([[0, 1]]) if a == 0 else np.array([[1, 2]])

    assert G.critical_depth(-E, Path) == pytest.approx(h - d)
    # a single well has depth 0; a forbidden state (p = 0) blocks the path
    assert G.critical_depth(-np.array([0.0, 1.0, 2.0]), Path) == pytest.approx(0.0)
    assert G.critical_depth(-np.array([0.0, np.inf, 0.5]), Path) == 0.0


def test_low_temperature_relaxation_follows_the_critical_depth():
    """Arrhenius: log t_rel grows like Γ / T as T -> 0. Two wells on a 3 x 3 frame, at energies
    about 0 and 1, joined through states at about 3: Γ is about 2."""
    E = np.array([[0, 3, 3], [3, 3, 3], [3, 3, 1.0]]) + np.random.default_rng(0).uniform(0, 0.2, (3, 3))
    logp = -E - np.log(np.exp(-E).sum())
    frame = G.Frame.shared(2, [0, 1, 2])
    tabs = frame.conditional_logits(JointOracle(logp))
    gamma = G.critical_depth(logp.ravel(), frame)
    # by hand: from the well at (2, 2) the cheapest way down crosses (2, 0) or (0, 2); the height of a
    # move is E(x) + E(y) - min over its line, which is E(2,0) (or E(0,2)) on both legs of the path
    by_hand = min(max(E[2, 2] + E[2, 0] - E[2].min(), E[2, 0] + E[0, 0] - E[:, 0].min()),
                  max(E[2, 2] + E[0, 2] - E[:, 2].min(), E[0, 2] + E[0, 0] - E[0].min())) - E[2, 2]
    assert gamma == pytest.approx(by_hand)
    Ts = [0.25, 0.2]
    logt = [math.log(1 / G.spectral_gap(frame.kernel(tabs, T))) for T in Ts]
    slope = (logt[0] - logt[1]) / (1 / Ts[0] - 1 / Ts[1])
    assert slope == pytest.approx(gamma, rel=0.1)


# ---------------------------------------------------------------- sampler and couplings

def test_per_site_candidates_sampler_matches_the_exact_law():
    """N = 4000 chains, 5 steps from one state, against delta P^5 on the frame.

    Pearson chi-square goodness of fit (cells with expected count < 5 pooled), p > 1e-3 at a
    fixed seed; and TV(empirical, exact) below sqrt(S / N).
    """
    lm = PerturbedOracle(random_joint(3, 4, seed=9), scale=0.7)
    cands = {0: [0, 1, 3], 1: [2, 3], 2: [0, 1, 2, 3]}
    frame = G.Frame([0, 2, 0], [0, 1, 2], [cands[i] for i in range(3)])
    T = 0.8
    P = frame.kernel(frame.conditional_logits(lm), T)
    N, t = 4000, 5
    x0 = torch.tensor([0, 2, 0])
    traj = G.GlauberSampler(lm, temperature=T, candidates=cands, seed=12).run(x0.repeat(N, 1), t, record_every=t)
    idx = frame.index(traj[-1])
    assert (idx >= 0).all()
    law = np.zeros(frame.size)
    law[frame.index(x0[None])[0]] = 1.0
    for _ in range(t):
        law = P.T @ law
    counts = np.bincount(idx, minlength=frame.size)
    expected = N * law
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep]).pvalue > 1e-3
    assert tv(counts / N, law) < np.sqrt(frame.size / N)


def test_per_chain_temperatures_equal_separate_runs_of_one_temperature():
    lm = PerturbedOracle(random_joint(4, 3, seed=10))
    init = torch.tensor([[0, 1, 2, 0]] * 6)
    mixed = G.GlauberSampler(lm, temperature=[0.5] * 3 + [2.0] * 3, seed=4).run(init, 30)
    # same randomness stream: a batch of six at one temperature gives the matching rows
    cold = G.GlauberSampler(lm, temperature=0.5, seed=4).run(init, 30)
    hot = G.GlauberSampler(lm, temperature=2.0, seed=4).run(init, 30)
    assert torch.equal(mixed[:, :3], cold[:, :3]) and torch.equal(mixed[:, 3:], hot[:, 3:])
    with pytest.raises(ValueError):
        G.GlauberSampler(lm, temperature=[1.0, 1.0]).run(init, 1)


@pytest.mark.parametrize("coupling", ["cdf", "maximal"])
def test_coupled_chains_meet_stay_together_and_copy_a_is_the_plain_chain(coupling):
    lm = PerturbedOracle(random_joint(4, 3, seed=11))
    gen = torch.Generator().manual_seed(5)
    a, b = torch.randint(3, (48, 4), generator=gen), torch.randint(3, (48, 4), generator=gen)
    res = G.GlauberSampler(lm, temperature=0.9, seed=6).coupled_run(
        a, b, max_steps=150, coupling=coupling,
        settings=G.CoupleSettings(record_every=1, stop_when_met=False))
    assert (~res.censored).mean() > 0.9
    same = (res.traj_a == res.traj_b).all(dim=-1).numpy()
    for c in np.flatnonzero(~res.censored):
        assert same[res.times[c]:, c].all()
    solo = G.GlauberSampler(lm, temperature=0.9, seed=6).run(a, 150)
    assert torch.equal(res.traj_a, solo)
    frozen = G.GlauberSampler(lm, temperature=0.9, seed=6).coupled_run(
        a, b, max_steps=150, coupling=coupling, settings=G.CoupleSettings(freeze_met=True))
    np.testing.assert_array_equal(frozen.times, res.times)


def test_maximal_coupling_keeps_copy_b_a_glauber_chain_and_meets_sooner():
    """Copy b of a maximal coupling has the exact law of the chain (chi-square, N = 4000, p > 1e-3),
    and pairs meet at least as often as under the grand (CDF) coupling."""
    lm = PerturbedOracle(random_joint(3, 3, seed=12), scale=0.5)
    frame = G.Frame.shared(3, [0, 1, 2])
    P = frame.kernel(frame.conditional_logits(lm), 1.0)
    N, t = 4000, 4
    a0, b0 = torch.tensor([0, 0, 0]), torch.tensor([2, 2, 1])
    res = G.GlauberSampler(lm, seed=13).coupled_run(a0.repeat(N, 1), b0.repeat(N, 1), max_steps=t,
                                                     coupling="maximal",
                                                     settings=G.CoupleSettings(stop_when_met=False))
    law = np.zeros(frame.size)
    law[frame.index(b0[None])[0]] = 1.0
    for _ in range(t):
        law = P.T @ law
    counts = np.bincount(frame.index(res.final_b), minlength=frame.size)
    expected = N * law
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > 1e-3
    cdf = G.GlauberSampler(lm, seed=13).coupled_run(a0.repeat(N, 1), b0.repeat(N, 1), max_steps=12)
    mx = G.GlauberSampler(lm, seed=13).coupled_run(a0.repeat(N, 1), b0.repeat(N, 1), max_steps=12,
                                                    coupling="maximal")
    assert (~mx.censored).mean() >= (~cdf.censored).mean() - 0.02


def test_influence_is_zero_for_independent_sites_and_positive_otherwise():
    marg = np.log(np.random.default_rng(0).dirichlet(np.ones(3), size=4))
    indep = marg[0][:, None, None, None] + marg[1][None, :, None, None] + marg[2][None, None, :, None] \
        + marg[3][None, None, None, :]
    ids = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 1]])
    a = G.influence(JointOracle(indep), ids, [0.5, 1.0], substitutes="random")
    np.testing.assert_allclose(a, 0.0, atol=1e-12)
    b = G.influence(PerturbedOracle(random_joint(4, 3, seed=2)), ids, [0.5, 1.0, 50.0])
    assert (b > 0).all() and (b[:, -1] < b[:, 0]).all()        # hotter: less influence


def test_hysteresis_labels():
    score = np.array([[5.0], [1.0], [-1.0], [np.nan], [-4.0], [0.0]])
    lab = G.hysteresis_labels(score, -3, 3)
    assert lab[:, 0].tolist() == [1, 1, 1, 1, 0, 0]


# ---------------------------------------------------------------- the truth's view

def test_truth_log_probs_topic_posterior_and_rectangles_of_the_truth():
    from mlmbook.consistency import top2_rectangles
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar

    g = Grammar.load("toy", topic=True)
    truth = load_mlm("truth_topic")
    sents = [s for s in g.sample(60, seed=1) if len(s) == 7][:4]
    ids = torch.tensor([truth.encode_words(s.words)[0] for s in sents])
    lp = G.truth_log_probs(g, ids)
    np.testing.assert_allclose(lp, [g.log_prob(s.words) for s in sents], rtol=1e-10)
    bad = ids.clone()
    bad[0, 0] = truth.mask_id
    assert G.truth_log_probs(g, bad)[0] == -np.inf
    post = G.topic_posterior(g, ids)
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    lam = G.topic_log_odds(g, ids)
    decisive = np.abs(post[:, 0] - 0.5) > 0.4
    assert ((lam > 0) == (post[:, 0] > 0.5))[decisive].all()
    # acceptance: the rectangle test is 0 for the truth (where its four cells are possible)
    pairs = [(s, i, j) for s in range(len(ids)) for i, j in ((0, 1), (1, 3), (2, 5))]
    with np.errstate(invalid="ignore"):
        d = top2_rectangles(truth, ids, pairs).delta
    assert np.isfinite(d).any() and np.abs(d[np.isfinite(d)]).max() < 1e-9
