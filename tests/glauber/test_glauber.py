import numpy as np
import pytest
import torch
from scipy import stats

from mlmbook import glauber as G  # noqa: E402
from mlmbook.stats import tv  # noqa: E402
from tests.fakes import JointOracle, PerturbedOracle, random_joint  # noqa: E402


def test_exact_matrix_of_coherent_joint_has_it_as_stationary_reversible_law():
    joint = random_joint(3, 3, seed=0)
    lm = JointOracle(joint)
    frame = G.Frame.shared(3, [0, 1, 2])
    P = frame.kernel(frame.conditional_logits(lm), 1.0)
    assert P.shape == (27, 27)
    np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    pi = G.stationary(P)
    np.testing.assert_allclose(pi, np.exp(joint).ravel(), atol=1e-9)  # state order = joint.ravel()
    assert G.is_reversible(P, pi)
    gap = G.spectral_gap(P, pi)
    assert 0 < gap <= 1
    assert G.spectral_gap(P, pi, dense_below=0) == pytest.approx(gap, abs=1e-8)  # ARPACK path


def test_exact_matrix_on_a_vocabulary_subset_and_with_a_frozen_position():
    joint = random_joint(4, 4, seed=1)
    lm = JointOracle(joint)
    V_subset = [0, 2, 3]
    # position 3 frozen at word 1; sites 0..2 range over V_subset
    frame = G.Frame.shared(4, V_subset, template=[0, 0, 0, 1], sites=[0, 1, 2])
    P = frame.kernel(frame.conditional_logits(lm))
    target = np.exp(joint[np.ix_(V_subset, V_subset, V_subset, [1])][..., 0]).ravel()
    pi = G.stationary(P)
    np.testing.assert_allclose(pi, target / target.sum(), atol=1e-9)
    assert G.is_reversible(P, pi)
    states = frame.states()
    assert states.shape == (27, 4) and bool((states[:, 3] == 1).all())
    np.testing.assert_array_equal(frame.index(states), np.arange(27))


def test_exact_matrix_of_incoherent_oracle_and_tempering():
    lm = PerturbedOracle(random_joint(3, 3, seed=2), scale=1.0)
    frame = G.Frame.shared(3, [0, 1, 2])                       # a plain logits function
    P = frame.kernel(frame.conditional_logits(lm.logits, lm.mask_id), 0.5)
    pi = G.stationary(P)
    np.testing.assert_allclose(P.T @ pi, pi, atol=1e-12)
    assert not G.is_reversible(P, pi)
    gap = G.spectral_gap(P, pi)
    assert 0 < gap < 1
    assert G.spectral_gap(P, pi, dense_below=0) == pytest.approx(gap, abs=1e-8)


def test_the_arpack_gap_is_the_same_number_every_run():
    """ARPACK starts from a random vector of its own unless given one: the same chain gave relaxation times
    differing in the eighth digit between builds. With a fixed start every call returns the same bits."""
    for reversible_chain, seed in ((True, 5), (False, 6)):
        joint = random_joint(3, 5, seed=seed)
        lm = JointOracle(joint) if reversible_chain else PerturbedOracle(joint, scale=1.0)
        frame = G.Frame.shared(3, list(range(5)))
        cond = lm if reversible_chain else lm.logits
        P = frame.kernel(frame.conditional_logits(cond, lm.mask_id))
        gaps = {G.spectral_gap(P, dense_below=0) for _ in range(4)}
        assert len(gaps) == 1, gaps


@pytest.mark.parametrize("T, candidates", [(1.0, None), (0.7, [0, 2, 3])])
def test_sampler_matches_exact_law(T, candidates):
    """Chains started at one state; after t steps their law is exactly delta_x0 P^t.

    Test: Pearson chi-square goodness of fit of the N = 4000 independent chains' final states
    against N * (delta P^t) (cells with expected count < 5 pooled), p-value > 1e-3 at a fixed
    seed, and TV(empirical, exact) below sqrt(S / N), which exceeds the expected TV
    (<= 0.5 * sqrt(S / N)) by a factor two.
    """
    Vw = 3 if candidates is None else 4
    lm = JointOracle(random_joint(3, Vw, seed=4))
    V_subset = list(range(Vw)) if candidates is None else candidates
    frame = G.Frame.shared(3, V_subset)
    P = frame.kernel(frame.conditional_logits(lm), T)
    N, t = 4000, 6
    x0 = torch.tensor([V_subset[0]] * 3)
    sampler = G.GlauberSampler(lm, temperature=T, candidates=candidates, seed=11)
    traj = sampler.run(x0.repeat(N, 1), t, record_every=t)
    idx = frame.index(traj[-1])
    assert (idx >= 0).all()
    law = np.zeros(P.shape[0])
    law[frame.index(x0[None])[0]] = 1.0
    for _ in range(t):
        law = P.T @ law
    counts = np.bincount(idx, minlength=len(law))
    expected = N * law
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep]).pvalue > 1e-3
    assert tv(counts / N, law) < np.sqrt(len(law) / N)


def test_same_seed_same_chains_and_frozen_sites():
    lm = PerturbedOracle(random_joint(4, 3, seed=5))
    init = torch.tensor([[0, 1, 2, 1]] * 8)
    runs = [G.GlauberSampler(lm, temperature=0.8, frozen=[3], seed=s).run(init, 40) for s in (7, 7, 8)]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])
    assert runs[0].shape == (41, 8, 4) and bool((runs[0][:, :, 3] == 1).all())


def test_systematic_scan_visits_sites_in_order():
    lm = JointOracle(random_joint(4, 3, seed=6))
    s = G.GlauberSampler(lm, scan="systematic", frozen=[1], seed=0)
    init = torch.zeros(50, 4, dtype=torch.long)
    init[:, [0, 2, 3]] = torch.randint(3, (50, 3), generator=s.generator)
    traj = s.run(init, 9)
    sites = [0, 2, 3]
    for t in range(9):
        changed = (traj[t + 1] != traj[t]).any(dim=0)
        assert set(torch.nonzero(changed).ravel().tolist()) <= {sites[t % 3]}


def test_coupled_chains_meet_and_stay_together():
    lm = PerturbedOracle(random_joint(4, 3, seed=7))
    gen = torch.Generator().manual_seed(3)
    a = torch.randint(3, (64, 4), generator=gen)
    b = torch.randint(3, (64, 4), generator=gen)
    b[0] = a[0]  # one pair starts together
    res = G.GlauberSampler(lm, seed=9, candidates=[0, 1, 2]).coupled_run(
        a, b, max_steps=100, settings=G.CoupleSettings(record_every=1, stop_when_met=False))
    assert res.times[0] == 0 and not res.censored[0]
    assert (~res.censored).mean() > 0.9
    same = (res.traj_a == res.traj_b).all(dim=-1).numpy()  # (R, C)
    for c in np.flatnonzero(~res.censored):
        tau = res.times[c]
        assert same[tau:, c].all() and (tau == 0 or not same[tau - 1, c])
    # shared randomness: each copy is exactly the ordinary chain run from the same seed
    for init, traj in ((a, res.traj_a), (b, res.traj_b)):
        solo = G.GlauberSampler(lm, seed=9, candidates=[0, 1, 2]).run(init, 100)
        assert torch.equal(traj, solo)
    # without recording, stopping once all pairs met
    quick = G.GlauberSampler(lm, seed=9, candidates=[0, 1, 2]).coupled_run(a, b, max_steps=100)
    np.testing.assert_array_equal(quick.times, res.times)
    assert quick.traj_a is None
