"""Preference flips, the paper's pair sample, masking routes and span routes, leak-free scoring.

Every new quantity is checked against a brute-force computation: the flips' preferences from
one-query-at-a-time log-probabilities, a route's version from the chain rule written out, and
the truth oracle (and any joint) passing every probe exactly.
"""
import math

import numpy as np
import pytest
import torch

from mlmbook import consistency as C
from mlmbook.consistency.order import pair_flips, preference_flips
from mlmbook.consistency.spans import fits_spans
from tests.fakes import JointOracle, PerturbedOracle, random_joint

V = 4
M = V


def logq(lm, row, at, **fixed):
    """Brute force: log q(x_at = · | row with `at` masked and position p set to fixed['p<k>'])."""
    r = list(row)
    r[at] = M
    for p, v in fixed.items():
        r[int(p[1:])] = v
    return torch.log_softmax(lm.logits(torch.tensor([r]), torch.tensor([[at]]))[0, 0], -1).numpy()


# ---------------------------------------------------------------- preference flips
def test_flips_by_brute_force():
    lm = PerturbedOracle(random_joint(4, V, seed=7), scale=1.5)
    row, i, j = [2, 0, 3, 1], 0, 2
    a, b = row[i], row[j]
    single = logq(lm, row, i)                                   # q(x_i | x_j observed)
    alt = int(np.argmax(np.where(np.arange(V) == a, -np.inf, single[:V])))
    both = logq(lm, row, i, p2=M)                               # q(x_i | both masked)
    g0 = (both[a] + logq(lm, row, j, p0=a)[b]) - (both[alt] + logq(lm, row, j, p0=alt)[b])
    g1 = single[a] - single[alt]
    f = preference_flips(lm, [row], i, j)
    assert int(f.alt[0]) == alt
    assert f.gap_fwd[0] == pytest.approx(g0, abs=1e-12) and f.gap_bwd[0] == pytest.approx(g1, abs=1e-12)
    assert bool(f.flip[0]) == (g0 * g1 < 0 and min(abs(g0), abs(g1)) > C.FLOAT32_NOISE_FLOOR)


def test_a_joint_never_flips_and_an_inconsistent_model_does():
    rows = [[a, b, c, d] for a in range(V) for b in range(V) for c in (0, 2) for d in (1, 3)]
    pairs = np.array([(s, i, j) for s in range(len(rows)) for i, j in ((0, 1), (1, 3), (0, 2))])
    joint = random_joint(4, V, seed=2)
    good = pair_flips(JointOracle(joint), rows, pairs)
    np.testing.assert_allclose(good.gap_fwd, good.gap_bwd, atol=1e-9)
    assert not good.flip.any()
    bad = pair_flips(PerturbedOracle(joint, scale=2.0), rows, pairs)
    assert bad.flip.any() and not bad.flip.all()
    # the same bigrams for another model: pass the alternatives
    again = pair_flips(JointOracle(joint), rows, pairs, alternatives=bad.alt)
    assert not again.flip.any() and (again.alt == bad.alt).all()


def test_pair_flips_alternate_the_altered_position():
    lm = PerturbedOracle(random_joint(4, V, seed=3))
    rows = [[0, 1, 2, 3]]
    pairs = np.array([(0, 0, 2), (0, 0, 2)])
    f = pair_flips(lm, rows, pairs)
    first = preference_flips(lm, rows, 0, 2)                  # even row: x_0 altered, x_2 shared
    second = preference_flips(lm, rows, 2, 0)                 # odd row: x_2 altered, x_0 shared
    assert f.gap_fwd[0] == pytest.approx(first.gap_fwd[0]) and f.gap_fwd[1] == pytest.approx(second.gap_fwd[0])


def test_probe_pairs_flips_match_pair_flips():
    lm = PerturbedOracle(random_joint(4, V, seed=3))
    rows = [torch.tensor([0, 1, 2, 3]), torch.tensor([3, 1, 0, 2])]
    pairs = np.array([(s, i, j) for s in range(2) for i in range(4) for j in range(i + 1, 4)])
    got = C.probe_pairs(lm, rows, pairs)
    want = pair_flips(lm, rows, pairs)
    np.testing.assert_allclose(got.flips.gap_bwd, want.gap_bwd, atol=1e-12)
    assert C.probe_pairs(lm, rows, pairs, flips=False).flips is None
    taken = got.take(np.array([1, 3]))
    assert taken.flips.flip.shape == (2,) and taken.rect.delta.shape == (2,)


def test_one_pair_per_sentence():
    rng = np.random.default_rng(0)
    positions = [[0, 1, 2, 3, 4, 5]] * 2000 + [[7]]
    p = C.one_pair_per_sentence(positions, rng)
    assert p.shape == (2000, 3) and (p[:, 1] < p[:, 2]).all() and (p[:, 0] == np.arange(2000)).all()
    share_adjacent = np.mean(p[:, 2] - p[:, 1] == 1)            # 5 of the 15 pairs are adjacent
    assert share_adjacent == pytest.approx(1 / 3, abs=0.04)


# ---------------------------------------------------------------- routes and spans
def test_span_routes():
    pos = [0, 1, 2, 3, 4, 5]
    assert C.span_routes(2, pos) == [(3,), (1,), (3, 4), (1, 3), (0, 1)]     # (length, offset) of SPANS
    assert C.span_routes(0, pos) == [(1,), (1, 2)]
    assert fits_spans(2, pos) and fits_spans(3, pos) and not fits_spans(1, pos)
    assert C.span_routes(3, [1, 3, 4, 6]) == [(4,), (1,), (4, 6), (1, 4)]   # word pieces, not indices


def test_route_versions_by_brute_force():
    lm = PerturbedOracle(random_joint(5, V, seed=4), scale=1.0)
    row, t, route = [1, 3, 0, 2, 1], 2, (1, 3)
    cand = np.array([0, 1, 3])
    v = C.route_versions(lm, [row], [t], [[route]], candidates=cand)[0]
    # the chain rule written out: x_t first (1, 3 masked), then x_1 (x_3 masked), then x_3
    head = logq(lm, row, t, p1=M, p3=M)
    logs = []
    for c in cand:
        r = list(row)
        r[t] = c
        step1 = logq(lm, r, 1, p3=M)[row[1]]
        step2 = logq(lm, r, 3)[row[3]]
        logs.append(head[c] + step1 + step2)
    want = np.exp(np.array(logs) - max(logs))
    np.testing.assert_allclose(v.probs[1], want / want.sum(), atol=1e-12)
    direct = np.exp(logq(lm, row, t)[cand])
    np.testing.assert_allclose(v.probs[0], direct / direct.sum(), atol=1e-12)
    assert v.routes == (route,)


def test_every_route_of_a_joint_gives_the_direct_conditional():
    lm = JointOracle(random_joint(6, V, seed=5))
    rows = [[1, 3, 0, 2, 1, 0], [0, 0, 1, 2, 3, 3]]
    routes = [C.span_routes(2, range(6)), C.span_routes(3, range(6)) + [(0, 5)]]
    for v in C.route_versions(lm, rows, [2, 3], routes, candidates=None):
        np.testing.assert_allclose(v.probs, np.broadcast_to(v.probs[0], v.probs.shape), atol=1e-9)


def test_the_truth_passes_span_routes():
    from mlmbook.models import load_mlm
    from mlmbook.toy import Grammar
    truth = load_mlm("truth")
    sents = [s for s in Grammar.load("toy").sample(60, seed=2) if len(s) >= 7][:2]
    ids = [torch.tensor(truth.encode_words(s.words)[0]) for s in sents]
    routes = [C.span_routes(3, range(len(s) - 1)) for s in sents]
    for v in C.route_versions(truth, ids, [3, 3], routes, candidates=8):
        assert len(v.routes) == 5
        np.testing.assert_allclose(v.probs, np.broadcast_to(v.probs[0], v.probs.shape), atol=1e-9)


# ---------------------------------------------------------------- the label leak and leak-free scoring
def test_harsh_and_vocabulary_scoring_on_hand_cases():
    lm = PerturbedOracle(random_joint(4, V, seed=8), scale=1.0)
    row, t = [2, 0, 3, 1], 1
    direct = np.exp(logq(lm, row, t)[:V])
    order = np.argsort(-direct, kind="stable")
    gold_rank = int(np.flatnonzero(order == row[t])[0])
    k = max(1, gold_rank)                                       # the gold word is not among the top k
    v = C.ensemble_versions_many(lm, [row], [t], [[0, 2]], candidates=k)[0]
    assert v.added and v.candidates[-1] == row[t] and len(v.candidates) == k + 1
    assert v.mass == pytest.approx(direct[order[:k]].sum()) and v.outside == pytest.approx(direct[row[t]])
    h = C.harsh(v)
    assert not h.added and list(h.candidates) == list(order[:k])
    np.testing.assert_allclose(h.probs.sum(axis=1), 1.0)
    free = C.ensemble_curve([v], [row[t]], "mean", vocabulary=True)
    assert free.correct[0].tolist() == [0.0] * 3                 # the gold word is never the top
    np.testing.assert_allclose(free.log_loss[0], -math.log(direct[row[t]]))
    leaky = C.ensemble_curve([v], [row[t]], "mean")
    assert leaky.log_loss[0, 0] < free.log_loss[0, 0]           # the leak flatters the predictor
    # gold inside the candidates: the ensemble scaled to the direct conditional's mass there
    w = C.ensemble_versions_many(lm, [row], [t], [[0, 2]], candidates=V)[0]
    full = C.ensemble_curve([w], [row[t]], "mean", vocabulary=True)
    hit = list(w.candidates).index(row[t])
    assert full.log_loss[0, 2] == pytest.approx(-math.log(w.mass * w.probs[:, hit].mean()))
    assert not w.added and w.mass == pytest.approx(1.0)
