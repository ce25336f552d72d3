"""The exact quantities chapter 5 added, each against brute force on the tiny grammar
(``Grammar.load("tiny")``) or on hand-built chains: worst-start mixing times, frames of growing
length and the truth's component, the MH-corrected kernel and its stationary law, the exact
quality of a law, and the rows of the chapter's questions (least-squares slopes, leave-one-out errors)."""

import numpy as np
import pytest
import scipy.sparse as sp

import mlmbook.plans
from mlmbook import glauber as G
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


def test_mixing_time_in_blocks_and_by_squaring_agree_with_the_naive_walk(monkeypatch):
    from mlmbook.glauber import scaling
    rng = np.random.default_rng(1)
    P = rng.random((40, 40)) ** 8
    P /= P.sum(axis=1, keepdims=True)
    pi = G.stationary(sp.csr_matrix(P))
    want = _naive_tmix(P, pi, 0.1)
    assert G.mixing_time(P, 0.1, block=7) == want                         # starts walked 7 at a time
    lazy = np.array([[0.999, 0.001], [0.001, 0.999]])
    monkeypatch.setattr(scaling, "STEP_LIMIT", 16)                         # slow chains: squaring takes over
    assert G.mixing_time(lazy) == _naive_tmix(lazy, np.array([0.5, 0.5]))
    assert G.mixing_time(P, 0.1) == want


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
    assert out["length"].tolist() == sorted(sub) and out["tmix_truth"].shape == (2, len(sub))
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
            assert out["trel_truth"][b, a] == pytest.approx(1 / (1 - ev[1]), rel=1e-8)
            assert out["tmix_truth"][b, a] == _naive_tmix(P, pT)
    quick = G.scaling_curve(g, sub, [1.0, 0.5], relaxation=False)
    assert np.isnan(quick["trel_truth"]).all() and np.array_equal(quick["tmix_truth"], out["tmix_truth"])


def test_length_frames_take_a_count_per_length_and_nest(tiny):
    g, _ = tiny
    few = G.length_frames(g, [4, 5], {4: 1, 5: 2}, seed=3, pool=800)
    more = G.length_frames(g, [4, 5], 2, seed=3, pool=800)
    assert [len(few[4]), len(few[5])] == [1, 2]
    assert few[4][0][1] == more[4][0][1]                                   # the same first sentence
    with pytest.raises(ValueError, match="raise pool"):
        G.length_frames(g, [4], 10_000, seed=3, pool=50)
    assert G.exact_scaling(None, None, {4: 1}, [1.0]) is None               # no truth, no frames


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


def test_slope_rows_are_least_squares_and_shape_rows_leave_one_out_by_brute_force():
    from mlmbook.glauber import study as S
    rng = np.random.default_rng(0)
    n = np.repeat([4, 5, 6, 7, 8], 3)
    m = n - 1
    t = 2.0 * m ** 1.3 * rng.lognormal(0, 0.1, len(n))
    d, g = S.slope_rows(np.log(m), np.log(t))
    assert d.sum() / g.sum() == pytest.approx(np.polyfit(np.log(m), np.log(t), 1)[0], rel=1e-12)
    coupon = S.coupon(m)
    assert S.mlogm_exponent(n) == pytest.approx(np.polyfit(np.log(m), np.log(coupon), 1)[0], rel=1e-12)
    values, weights = S.shape_rows(n, t)
    for k in range(len(n)):                                                  # each unit left out, by hand
        keep = np.arange(len(n)) != k
        c = np.mean(np.log(t[keep]) - np.log(coupon[keep]))
        e_coupon = (np.log(t[k]) - np.log(coupon[k]) - c) ** 2
        b1, b0 = np.polyfit(np.log(m[keep]), np.log(t[keep]), 1)
        e_power = (np.log(t[k]) - b0 - b1 * np.log(m[k])) ** 2
        assert weights[k] == pytest.approx(e_coupon) and values[k] == pytest.approx(e_power - e_coupon)
    exact_power = S.shape_rows(n, 3.0 * m ** 1.4)                            # a pure power law: it predicts
    assert exact_power[0].sum() / exact_power[1].sum() == pytest.approx(-1.0, abs=1e-9)   # with no error
    exact_coupon = S.shape_rows(n, 3.0 * coupon)
    assert np.allclose(exact_coupon[1], 0) and (exact_coupon[0] > 0).all()


def test_the_chapters_questions_and_plan():
    from mlmbook.glauber import plan as plans
    from mlmbook.glauber import study as S
    full = plans.plan("full")
    assert max(full.scaling) >= 11 and min(full.scaling.values()) >= 8            # issue 34: n >= 11, 8 per length
    assert plans.plan("extended").scaling_units > full.scaling_units
    with pytest.raises(ValueError, match="no plan"):
        plans.plan("huge")
    design = [n for n, k in full.scaling.items() for _ in range(k)]
    assert 1.3 < S.mlogm_exponent(design) < 1.5             # beta_star, the growth questions' reference
    sds = mlmbook.plans.planning_sds("05_glauber")          # the chapter declares four questions
    assert set(sds) == {"rectangles", "growth_hot", "shape_hot", "growth_t1"} and min(sds.values()) > 0
