"""Critical depth and basin barriers against brute force over paths; censored escape rates on chains
whose rates are known; the exact law of escape times, and the check of the real sampler against it."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from mlmbook import glauber as G
from mlmbook import stats
from mlmbook.glauber import basins
from tests.fakes import JointOracle, random_joint


def _frame(sizes):
    return G.Frame(torch.zeros(len(sizes), dtype=torch.long), range(len(sizes)), [list(range(m)) for m in sizes])


def _neighbours(frame, E):
    """Single-site moves with their heat-bath heights h(x, y) = E(x) + E(y) - min over the line."""
    nb = {}
    for a in range(len(frame.sites)):
        for fam in frame.families(a):
            low = E[fam].min()
            for x, y in itertools.permutations(fam, 2):
                if np.isfinite(E[x]) and np.isfinite(E[y]):
                    nb.setdefault(int(x), []).append((int(y), E[x] + E[y] - low))
    return nb


def _minimax(nb, s, targets):
    """min over simple paths s -> targets of the max height along the path, by enumerating paths."""
    best = np.inf

    def walk(x, seen, top):
        nonlocal best
        if top >= best:
            return
        if x in targets:
            best = top
            return
        for y, h in nb.get(x, []):
            if y not in seen:
                walk(y, seen | {y}, max(top, h))

    walk(s, {s}, -np.inf)
    return best


@pytest.mark.parametrize("sizes,seed", [((3, 3), 0), ((2, 3, 2), 1), ((3, 2, 2), 2), ((2, 2, 2, 2), 3)])
def test_critical_depth_and_barrier_match_brute_force_over_paths(sizes, seed):
    frame = _frame(sizes)
    rng = np.random.default_rng(seed)
    logp = rng.normal(0, 2, frame.size)
    logp[rng.random(frame.size) < 0.15] = -np.inf                      # a few forbidden states
    logp[0] = 3.0                                                       # keep a finite ground state
    E = -logp
    nb = _neighbours(frame, E)
    ok = np.flatnonzero(np.isfinite(E))
    # depth of x: cheapest climb to any strictly lower state; Γ = the largest depth but the ground state's
    depths = []
    for x in ok:
        lower = {int(y) for y in ok if E[y] < E[x]}
        if lower:
            depths.append(_minimax(nb, int(x), lower) - E[x])
    finite = [d for d in depths if np.isfinite(d)]
    want = max([0.0] + finite)
    assert G.critical_depth(logp, frame) == pytest.approx(want, abs=1e-12)
    s, target = int(ok[np.argmax(E[ok])]), {0}
    want = _minimax(nb, s, target) - E[s]
    assert G.barrier_path(logp, frame, s, target).gamma == pytest.approx(want, abs=1e-12)


def test_hitting_times_of_a_two_state_chain():
    r = 0.03
    P = sp.csr_matrix(np.array([[1 - r, r], [0.5, 0.5]]))
    assert G.hitting_times(P, [1])[0] == pytest.approx(1 / r)


def test_escape_rate_recovers_a_known_rate_with_censoring():
    """A two-state chain leaves state 0 with probability r per step: escape times are geometric
    with mean 1/r. Runs cut at a cap (censoring) must not bias the estimate; ignoring the
    censored runs would (their long waits are the ones dropped)."""
    r, cap, C = 0.01, 120, 4000
    rng = np.random.default_rng(0)
    t = rng.geometric(r, C).astype(float)
    cens = t > cap
    t = np.minimum(t, cap)
    assert cens.mean() > 0.2                                              # censoring really bites
    est = G.escape_rate(t, cens)
    assert isinstance(est, stats.Interval) and est.low < 1 / r < est.high
    assert abs(est.estimate - 1 / r) < 0.1 / r
    assert t[~cens].mean() < 0.6 / r                                      # the naive mean is far off
    none = G.escape_rate([50.0, 50.0], [True, True])                      # nothing escaped: a lower bound
    assert none.lower_bound and np.isfinite(none.estimate) and none.high == np.inf and none.low > 0
    assert "more than" in none.format(1)


def test_growth_exponent_is_undefined_where_a_median_is_censored():
    rng = np.random.default_rng(2)
    x = np.array([4.0, 8.0, 16.0, 32.0])
    times = [x_ * rng.exponential(1.0, 40) * 5 for x_ in x]               # beta = 1 exactly in law
    fit = G.growth_exponent(x, times, [np.zeros(40, bool)] * 4, level=0.95)
    assert fit.defined and fit.low < 1.0 < fit.high and np.isfinite(fit.high)
    cens = [np.zeros(40, bool)] * 3 + [np.ones(40, bool)]                 # the last size never met: no exponent
    iv = G.growth_exponent(x, times, cens, names=["n = 4", "n = 8", "n = 16", "n = 32"])
    assert not iv.defined and "n = 32" in iv.note


@pytest.mark.parametrize("sizes,seed", [((3, 3), 0), ((2, 3, 2), 1), ((2, 2, 2, 2), 3), ((3, 2, 3), 5)])
def test_barrier_path_attains_the_barrier_along_single_site_moves(sizes, seed):
    frame = _frame(sizes)
    rng = np.random.default_rng(seed)
    logp = rng.normal(0, 2, frame.size)
    logp[rng.random(frame.size) < 0.1] = -np.inf
    E = -logp
    ok = np.flatnonzero(np.isfinite(E))
    s, target = int(ok[np.argmax(E[ok])]), {int(ok[np.argmin(E[ok])])}
    path = G.barrier_path(logp, frame, s, target)
    nb = _neighbours(frame, E)
    assert path.gamma == pytest.approx(_minimax(nb, s, target) - E[s], abs=1e-12)
    assert path.states[0] == s and path.states[-1] in target and len(set(path.states)) == len(path.states)
    heights = [dict(nb[x])[y] for x, y in zip(path.states[:-1], path.states[1:])]   # each step is a move
    assert max(heights) - E[s] == pytest.approx(path.gamma, abs=1e-12)               # and it attains Γ
    x, y = path.saddle
    assert dict(nb[x])[y] - E[s] == pytest.approx(path.gamma, abs=1e-12)
    assert {x, y} <= set(path.states)
    assert G.barrier_path(logp, frame, s, {s}).gamma == 0.0


def test_state_kl_and_saddle_move_by_hand():
    frame = _frame((3, 2))
    rng = np.random.default_rng(3)
    logp = rng.normal(0, 1, frame.size)
    scores = [rng.normal(0, 1, (frame.size // m, m)) for m in frame.sizes]   # a model's log-scores per context
    kl = basins.state_kl(frame, logp, scores)
    states = frame.states().numpy()
    for x in range(frame.size):                                              # brute force over the lines
        want = 0.0
        for a in range(2):
            fam = frame.families(a)
            row = int(np.flatnonzero((fam == x).any(axis=1))[0])
            p = np.exp(logp[fam[row]]) / np.exp(logp[fam[row]]).sum()
            q = np.exp(scores[a][row]) / np.exp(scores[a][row]).sum()
            want += (p * np.log(p / q)).sum() / 2
        assert kl[x] == pytest.approx(want, abs=1e-12)
    x = 0
    y = int(np.flatnonzero((states[:, 1] == states[x, 1]) & (states[:, 0] != states[x, 0]))[0])
    move = basins.saddle_move(frame, logp, scores, (x, y))
    fam = frame.families(0)
    row = int(np.flatnonzero((fam == x).any(axis=1))[0])
    ix, iy = list(fam[row]).index(x), list(fam[row]).index(y)
    assert move["truth"] == pytest.approx(logp[y] - logp[x])
    assert move["model"] == pytest.approx(scores[0][row][iy] - scores[0][row][ix])
    p = np.exp(logp[fam[row]]) / np.exp(logp[fam[row]]).sum()
    q = np.exp(scores[0][row]) / np.exp(scores[0][row]).sum()
    assert move["kl"] == pytest.approx((p * np.log(p / q)).sum())


def test_escape_survival_is_the_exact_law_of_the_escape_time():
    """Two-state chain: P(tau > t) = (1 - r)^t; its sum is the mean hitting time; a 3-state chain
    whose target is absorbing survives to t exactly when P^t has not yet moved it there."""
    r = 0.1
    P = sp.csr_matrix(np.array([[1 - r, r], [0.5, 0.5]]))
    np.testing.assert_allclose(G.escape_survival(P, 0, [1], 30), (1 - r) ** np.arange(31), rtol=1e-12)
    assert G.escape_survival(P, 0, [1], 2000).sum() == pytest.approx(G.hitting_times(P, [1])[0], rel=1e-9)
    assert (G.escape_survival(P, 1, [1], 5) == 0).all()
    P3 = sp.csr_matrix(np.array([[0.7, 0.25, 0.05], [0.3, 0.6, 0.1], [0.0, 0.0, 1.0]]))
    surv = G.escape_survival(P3, 0, [2], 40)
    dense = P3.toarray()
    want = [1 - np.linalg.matrix_power(dense, k)[0, 2] for k in range(41)]
    np.testing.assert_allclose(surv, want, rtol=1e-9, atol=1e-12)


def test_sampler_check_accepts_the_sampler_and_rejects_a_wrong_matrix():
    """The real sampler on a frame (per-site candidates, a frozen position) runs the frame's
    kernel: 200 chains per temperature, capped at 40 steps; the interval of the relative
    difference of mean capped escape times covers 0, and excludes it against the kernel of a
    different temperature."""
    lm = JointOracle(random_joint(4, 3, seed=6, spread=1.5))
    frame = G.Frame([0, 0, 0, 2], [0, 1, 2], [[0, 1, 2], [0, 2], [1, 2]])
    tabs = frame.conditional_logits(lm)
    start, target = 0, [frame.size - 1, frame.size - 2]
    few = basins.EscapeCheck([1.0, 0.6], 50, 40, seed=2)
    times, cens = basins.sampler_escapes(lm, frame, start, target, few)
    assert times.shape == cens.shape == (2, 50) and (times[cens] == 40).all() and (times[~cens] <= 40).all()
    check = basins.EscapeCheck([1.0, 0.6], 200, 40, seed=3, level=0.999)
    ok = basins.sampler_check(lm, frame, tabs, start, target, check)
    assert ok["interval"].low < 0 < ok["interval"].high and ok["chains"] == 200
    wrong = [t * 3.0 for t in tabs]                                  # the chain at a third of the temperature
    bad = basins.sampler_check(lm, frame, wrong, start, target, check)
    iv = bad["interval"]
    assert stats.side(iv.low, iv.high) != "indistinguishable" and not iv.low < 0 < iv.high
