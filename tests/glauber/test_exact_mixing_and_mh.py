"""The exact quantities chapter 5 added, each against brute force on the tiny grammar
(``Grammar.load("tiny")``) or on hand-built chains: worst-start mixing times, frames of growing
length and the truth's component, the MH-corrected kernel and its stationary law, the exact
quality of a law, and the growth exponent of exact times."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from mlmbook import glauber as G
from mlmbook import stats
from mlmbook.glauber.experiments import arrhenius_slopes, law_quality
from mlmbook.toy import Grammar
from tests.fakes import JointOracle, PerturbedOracle, random_joint


@pytest.fixture(scope="module")
def tiny():
    g = Grammar.load("tiny")
    return g, G.length_frames(g, [4, 5, 6], 2, seed=3, pool=800)


def _naive_tmix(P, pi, eps=0.25):
    D, t = np.eye(len(P)), 0
    while 0.5 * np.abs(D - pi).sum(axis=1).max() > eps:
        D, t = D @ P, t + 1
    return t


def test_mixing_time_is_the_first_time_the_worst_start_is_within_eps():
    rng = np.random.default_rng(0)
    for S in (2, 5, 12, 30):
        P = rng.random((S, S)) ** 6
        P /= P.sum(axis=1, keepdims=True)
        pi = G.stationary(sp.csr_matrix(P))
        for eps in (0.25, 0.05):
            assert G.mixing_time(P, eps) == _naive_tmix(P, pi, eps)
    lazy = np.array([[0.999, 0.001], [0.001, 0.999]])                     # slow: about 346 steps
    assert G.mixing_time(lazy) == _naive_tmix(lazy, np.array([0.5, 0.5]))
    assert G.mixing_time(lazy, max_steps=64) == np.inf


def test_length_frames_and_the_truths_component_on_the_tiny_grammar(tiny):
    g, frames = tiny
    for n, fs in frames.items():
        assert len(fs) == 2
        for frame, words in fs:
            assert len(words) == n and frame.size == 2 ** (n - 1)
            cond = g.conditionals(words)
            for i, c in enumerate(frame.candidates):                      # the word, then the truth's favourite rival
                w = [g.vocab[int(v) - 5] for v in c]
                assert w[0] == words[i] and w[1] != words[i]
                rival = cond[i].copy()
                rival[g.word_id[words[i]]] = -1
                assert g.word_id[w[1]] == int(np.argmax(rival))
            logp = G.truth_log_probs(g, frame.states())
            np.testing.assert_allclose(logp[0], g.log_prob(words))
            comp = set(G.support_component(frame, logp).tolist())
            # brute force: breadth-first search over single-site moves between possible states
            ok = np.isfinite(logp)
            seen, todo = {0}, [0]
            states = frame.states().numpy()
            while todo:
                x = todo.pop()
                for y in np.flatnonzero(ok & ((states != states[x]).sum(axis=1) == 1)):
                    if int(y) not in seen:
                        seen.add(int(y))
                        todo.append(int(y))
            assert comp == seen


def test_scaling_curve_of_the_truth_against_dense_eigenvalues_and_powers(tiny):
    g, frames = tiny
    sub = {n: fs[:1] for n, fs in frames.items()}
    out = G.scaling_curve(g, sub, [1.0, 0.5])
    for a, (_n, fs) in enumerate(sub.items()):
        frame = fs[0][0]
        logp = G.truth_log_probs(g, frame.states())
        comp = G.support_component(frame, logp)
        for b, T in enumerate([1.0, 0.5]):
            P = frame.kernel([logp[frame.families(s)] for s in range(len(frame.sites))], T)[comp][:, comp].toarray()
            pT = np.exp(logp[comp] / T)
            pT /= pT.sum()
            np.testing.assert_allclose(pT @ P, pT, atol=1e-12)                  # p^(1/T) is stationary
            ev = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
            assert out["trel_truth"][b, a, 0] == pytest.approx(1 / (1 - ev[1]), rel=1e-8)
            assert out["tmix_truth"][b, a, 0] == _naive_tmix(P, pT)


def test_mh_kernel_has_the_energys_gibbs_law_and_the_truths_is_p_T(tiny):
    # an incoherent oracle: proposals from its conditionals, any energy: stationary law e^(-E/T)/Z, reversible
    lm = PerturbedOracle(random_joint(3, 3, seed=4), scale=0.8)
    frame = G.Frame.shared(3, [0, 1, 2])
    tabs = frame.conditional_logits(lm)
    energy = np.random.default_rng(5).normal(size=frame.size)
    for T in (1.0, 0.4):
        M = G.mh_kernel(frame, tabs, energy, T)
        np.testing.assert_allclose(np.asarray(M.sum(axis=1)).ravel(), 1.0, atol=1e-12)
        target = np.exp(-energy / T) / np.exp(-energy / T).sum()
        pi = G.stationary(M)
        np.testing.assert_allclose(pi, target, atol=1e-10)
        assert G.is_reversible(M, pi)
        # brute force, one entry: x -> y differing at site 0
        x, y = 0, 9                                                      # (0, 0, 0) -> (1, 0, 0)
        q = np.exp(tabs[0][0] / T) / np.exp(tabs[0][0] / T).sum()
        acc = min(1.0, np.exp(-(energy[y] - energy[x]) / T) * q[0] / q[1])
        assert M[x, y] == pytest.approx(q[1] * acc / 3, rel=1e-12)
    # the tiny grammar's truth with E = -log p: the MH chain samples p^(1/T) on the support
    g, frames = tiny
    frame = frames[5][0][0]
    logp = G.truth_log_probs(g, frame.states())
    tabs = [logp[frame.families(a)] for a in range(len(frame.sites))]
    keep = G.support_component(frame, logp)
    for T in (1.0, 0.5):
        M = G.mh_kernel(frame, tabs, -logp, T)[keep][:, keep]
        pT = np.exp(logp[keep] / T) / np.exp(logp[keep] / T).sum()
        np.testing.assert_allclose(G.stationary(M), pT, atol=1e-10)


def test_pll_energy_is_the_sum_of_log_conditionals():
    joint = random_joint(3, 3, seed=7)
    lm = JointOracle(joint)
    frame = G.Frame([0, 0, 0], [0, 1, 2], [[0, 1], [0, 1, 2], [1, 2]])
    E = G.pll_energy(frame, frame.conditional_logits(lm))
    for k, x in enumerate(frame.states().tolist()):
        want = 0.0
        for i in range(3):
            line = [list(x) for _ in range(3)]
            for v in range(3):
                line[v][i] = v
            scores = np.array([joint[tuple(s)] for s in line])
            want += joint[tuple(x)] - np.log(np.exp(scores).sum())       # log p(x_i | x_-i), full vocabulary
        assert E[k] == pytest.approx(-want, rel=1e-10)


def test_law_quality_by_brute_force_and_local_arrhenius_slopes():
    logp = np.array([-1.0, -np.inf, -2.0, -0.5])
    pi = np.array([0.1, 0.4, 0.2, 0.3])
    q = law_quality(pi, logp)
    assert q["grammatical"] == pytest.approx(0.6)
    assert q["logp"] == pytest.approx((0.1 * -1 + 0.2 * -2 + 0.3 * -0.5) / 0.6)
    assert q["effective"] == pytest.approx(np.exp(-sum(p * np.log(p) for p in pi)))
    assert law_quality(np.array([1.0, 0, 0, 0]), logp)["effective"] == pytest.approx(1.0)
    T = np.array([0.1, 0.2, 0.5])
    trel = 3.0 * np.exp(2.0 / T)
    np.testing.assert_allclose(arrhenius_slopes(T, trel), [2.0, 2.0])


def test_exact_growth_recovers_an_exponent_and_its_spread_over_sentences():
    x = G.coupon_times([4, 5, 6, 7, 8])
    np.testing.assert_allclose(x[0], 3 * (1 + 1 / 2 + 1 / 3))
    exact = np.array([[2.0 * v ** 1.3] * 3 for v in x])                  # every sentence alike: no spread
    iv = G.exact_growth(x, exact, level=0.95)
    assert iv.estimate == pytest.approx(1.3) and iv.width == pytest.approx(0, abs=1e-9)
    noisy = exact * np.random.default_rng(0).lognormal(0, 0.2, exact.shape)
    iv = G.exact_growth(x, noisy, level=0.95)
    assert iv.low < iv.estimate < iv.high and iv.width > 0 and iv.n == 3
    assert stats.decide(iv, reference=1.0, margin=0.25, tolerance=0.25).side in ("above", "indistinguishable")
    for rows in itertools.permutations(range(3)):                        # the sentences' order does not matter
        assert G.exact_growth(x, noisy[:, rows], level=0.95).estimate == pytest.approx(iv.estimate)
