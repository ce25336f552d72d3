"""Chapter 2's package paths against direct computations: batched pair queries through the query
engine, top-K candidates, the exact truth (joints, the truth oracle's compatible conditionals,
blocks), the accelerated AG solver against the plain fixed point, and the per-pair metrics.
(Moved here from the chapter's tests: they test package functions, not the chapter.)"""
import numpy as np
import pytest
import torch

from mlmbook import joints as J
from mlmbook import stats, threads
from mlmbook.joints.metrics import (
    conditional_divergence,
    conditional_divergences,
    stack,
    truth_conditional_kl,
)
from mlmbook.models import load_mlm
from mlmbook.toy import SPECIAL_TOKENS, Grammar

OFF = len(SPECIAL_TOKENS)


@pytest.fixture(scope="module")
def grammar():
    return Grammar.load("toy")


class CountingLM:
    """Wraps a MaskedLM and counts its ``logits`` calls."""

    def __init__(self, lm):
        self.lm, self.calls = lm, []

    def __getattr__(self, name):
        return getattr(self.lm, name)

    def logits(self, ids, positions, full_softmax=False):
        self.calls.append(tuple(ids.shape))
        return self.lm.logits(ids, positions, full_softmax=full_softmax)


def test_batched_queries_match_one_pair_at_a_time(toy_bert, grammar):
    lm = load_mlm(toy_bert)
    sents = [s.words for s in grammar.sample(30, seed=3) if 5 <= len(s) <= 9][:4]
    queries = [(lm.encode_words(w)[0], 0, 2) for w in sents] + [(lm.encode_words(sents[0])[0], 3, 1)]
    counting = CountingLM(lm)
    batched = J.pair_conditionals_batch(counting, queries)
    # through the query engine: per sentence length, one call for the rows read at one position and
    # one for the both-masked rows; identical rows (the observed sentence with one word masked) sent once
    n_lengths = len({len(q[0]) for q in queries})
    assert len(counting.calls) == 2 * n_lengths
    V = len(J.default_candidates(lm))
    assert sum(rows for rows, _ in counting.calls) <= len(queries) * (2 * V + 1)
    for q, pc in zip(queries, batched):
        single = J.pair_conditionals(lm, *q)
        for name in ("log_a_given_b", "log_b_given_a", "log_a", "log_b", "logit_a_given_b"):
            assert np.allclose(getattr(pc, name), getattr(single, name), atol=1e-5), name
    # the conditionals are what a direct query says: mask A, set B = b, read A
    ids, A, B = queries[1]
    pc = batched[1]
    row = torch.tensor(ids)
    row[A], row[B] = lm.mask_id, int(pc.cand_b[7])
    direct = torch.log_softmax(lm.logits(row[None], torch.tensor([[A]]))[0, 0].double(), -1)[pc.cand_a]
    assert np.allclose(pc.log_a_given_b[:, 7], direct - torch.logsumexp(direct, 0), atol=1e-5)


def test_topk_candidates_keep_the_gold_tokens(toy_bert, grammar):
    lm = load_mlm(toy_bert)
    sents = [s.words for s in grammar.sample(20, seed=4) if len(s) >= 6][:3]
    queries = [(lm.encode_words(w)[0], 1, 4) for w in sents]
    cands = J.topk_candidates(lm, queries, k=5)
    for (ids, A, B), (ca, cb) in zip(queries, cands):
        assert len(ca) == len(cb) == 5 and ids[A] in ca and ids[B] in cb
        assert not set(ca.tolist()) & set(lm.special_ids)
        both = list(ids)
        both[A] = both[B] = lm.mask_id
        marg = lm.logits(torch.tensor([both]), torch.tensor([[A, B]]))[0]
        assert int(ca[0]) == int(marg[0].argmax()) and int(cb[0]) == int(marg[1].argmax())
    pcs = J.pair_conditionals_batch(lm, queries, cands)
    for (ids, A, B), pc in zip(queries, pcs):
        assert pc.shape == (5, 5)
        a, b = J.gold_index(pc, ids[A], ids[B])
        assert pc.cand_a[a] == ids[A] and pc.cand_b[b] == ids[B]


def test_truth_joints_match_pair_joint(grammar):
    words = "the dogs near the old river bark .".split()
    queries = [(words, 1, 6), (words, 6, 1), (words, 0, 2)]
    full = J.truth_joints(grammar, queries)
    assert np.allclose(full[0], grammar.pair_joint(words, 1, 6), atol=1e-12)
    assert np.allclose(full[1], full[0].T, atol=1e-12)
    assert np.allclose(full[2], grammar.pair_joint(words, 0, 2), atol=1e-12)
    for P in full:
        assert abs(P.sum() - 1) < 1e-12
    # candidate subsets (token ids): the restriction of the true joint, renormalised
    ca = np.array([grammar.word_id[w] for w in ("dog", "dogs", "cat", "farmer")]) + OFF
    cb = np.array([grammar.word_id[w] for w in ("bark", "barks", "sleep")] + [0]) + [OFF, OFF, OFF, 0]
    sub = J.truth_joints(grammar, [(words, 1, 6)], [(ca, cb)])[0]
    ref = full[0][np.ix_(ca - OFF, cb[:3] - OFF)]
    assert np.allclose(sub[:, :3], ref / ref.sum()) and np.all(sub[:, 3] == 0)      # [PAD] gets nothing


def test_truth_oracle_conditionals_are_compatible(grammar):
    """The exact oracle queried like an MLM: compatible, with HCB/AG exact up to block weights."""
    truth = load_mlm("truth")
    words = "the dog near the old river barks .".split()        # the chapter's showcase sentence
    seen = set()
    for A, B in [(0, 1), (1, 6)]:
        ids, _ = truth.encode_words(words)
        with threads.using(1):
            pc = J.pair_conditionals(truth, ids, A, B)
        P = J.truth_joints(grammar, [(words, A, B)])[0]
        assert J.compatibility(pc) < 1e-12
        n_blocks, la, lb = J.support_blocks(pc)
        assert n_blocks >= 1 and np.all((la >= 0) == (P.sum(1) > 0)) and np.all((lb >= 0) == (P.sum(0) > 0))
        ag = J.ag(pc)
        assert np.abs(J.anchor(ag.joint, pc) - P).max() < 1e-6
        seen.add(n_blocks)
        if n_blocks == 1:  # determiner-noun: one block, HCB and AG exact (the exercise ex2-blocks)
            assert np.abs(ag.joint - P).max() < 1e-6 and np.abs(J.hcb(pc) - P).max() < 1e-6
        else:              # noun-verb splits by selection: the conditionals cannot weigh the blocks
            assert np.abs(J.hcb(pc) - P).max() > 1e-4 and np.abs(ag.joint - P).max() > 1e-6
    assert seen == {1, 2}


def plain_ag(pc, n_iter):
    """The textbook Arnold-Gokhale fixed point, no acceleration (reference)."""
    qa, qb = np.exp(pc.log_a_given_b), np.exp(pc.log_b_given_a)
    p = np.full(qa.shape, 1 / qa.size)
    for _ in range(n_iter):
        p = (qa + qb) / (1 / p.sum(1)[:, None] + 1 / p.sum(0)[None, :])
        p /= p.sum()
    return p


@pytest.mark.parametrize("method", ["newton", "squarem"])
def test_accelerated_ag_is_the_plain_fixed_point_and_monotone(method):
    rng = np.random.default_rng(0)
    K = 10
    P = np.zeros((K, K))                               # two blocks joined by a faint leak: slow for plain AG
    P[:5, :5], P[5:, 5:] = rng.random((5, 5)), 2 * rng.random((5, 5))
    P += 1e-3
    P[0, :] *= 1e-4                                    # and a row of small mass: slow in log space
    P /= P.sum()
    pc = J.PairConditionals.from_joint(P)
    noisy = J.PairConditionals(pc.log_a_given_b + 0.2 * rng.standard_normal(P.shape),
                               pc.log_b_given_a + 0.2 * rng.standard_normal(P.shape), pc.log_a, pc.log_b)
    tol = 1e-8 if method == "newton" else J.TOL_FLOOR
    res = J.ag(noisy, tol=tol, max_iter=200_000, method=method)
    assert res.converged and np.all(np.diff(res.objective) <= 1e-12)
    assert np.isclose(res.objective[-1], J.ag_objective(noisy, res.joint), atol=1e-9)
    plain = plain_ag(noisy, 200_000)
    # the docstring's promise: log-probabilities within 1e-5 of the fixed point on every cell, tiny ones too
    assert plain[0].max() < 1e-4 and np.abs(np.log(res.joint) - np.log(plain)).max() < 1e-5
    assert res.iterations < (2_000 if method == "newton" else 20_000)
    exact = J.ag(pc, max_iter=200_000, method=method)      # compatible: recovers the joint
    assert np.abs(np.log(exact.joint) - np.log(P)).max() < 1e-5


def test_default_ag_is_tighter_than_a_joint_step_rule():
    """The old rule (no entry of the joint moves by 1e-9) stops with tiny cells far off in log space."""
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(144) * 0.05).reshape(12, 12) + 1e-14
    P /= P.sum()
    noisy = J.PairConditionals(np.log(P) + 0.5 * rng.standard_normal(P.shape),
                               np.log(P) + 0.5 * rng.standard_normal(P.shape), np.log(P.sum(1)), np.log(P.sum(0)))
    plain = plain_ag(noisy, 200_000)
    fast = J.ag(noisy)
    assert np.abs(np.log(fast.joint) - np.log(plain)).max() < 1e-5
    assert fast.error_bound <= 1e-8


def test_fast_metrics_match_their_definitions():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(48)).reshape(6, 8)
    pc = J.PairConditionals(np.log(P) + 0.3 * rng.standard_normal(P.shape),
                            np.log(P) + 0.3 * rng.standard_normal(P.shape), np.log(P.sum(1)), np.log(P.sum(0)))
    truth = rng.dirichlet(np.ones(48)).reshape(6, 8)
    for joint in J.derive_all(pc).values():
        fast = conditional_divergences(joint, pc)
        for kind in ("kl", "rkl", "jsd"):
            assert np.isclose(fast[kind], conditional_divergence(joint, pc, kind), rtol=1e-10)
        T, M = J.PairConditionals.from_joint(truth), J.PairConditionals.from_joint(joint)
        ref = 0.5 * sum(truth.sum(0)[b] * stats.kl(np.exp(T.log_a_given_b[:, b]), np.exp(M.log_a_given_b[:, b]))
                        for b in range(8))
        ref += 0.5 * sum(truth.sum(1)[a] * stats.kl(np.exp(T.log_b_given_a[a]), np.exp(M.log_b_given_a[a]))
                         for a in range(6))
        assert np.isclose(truth_conditional_kl(truth, joint), ref)
        assert truth_conditional_kl(truth, joint) <= J.kl_joint(truth, joint) + 1e-12
    # compatibility, unweighted: the closed form (full support) is the least-squares fit u_a + v_b
    r = (pc.log_a_given_b - pc.log_b_given_a).ravel()
    X = np.hstack([np.kron(np.eye(6), np.ones((8, 1))), np.kron(np.ones((6, 1)), np.eye(8))])
    resid = r - X @ np.linalg.lstsq(X, r, rcond=None)[0]
    assert np.isclose(J.compatibility(pc, weighted=False), np.mean(resid ** 2))


def test_evaluate_pair_and_summaries():
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(25)).reshape(5, 5)
    pc = J.PairConditionals.from_joint(P)
    out = J.evaluate_pair(pc, (1, 3), truth=P)
    assert np.isclose(out["truth.logp_pair"], np.log(P[1, 3]))
    for m in ("hcb", "ag"):
        assert abs(out[f"{m}.kl_truth"]) < 1e-9 and abs(out[f"{m}.cond_kl_truth"]) < 1e-9 and out[f"{m}.kl"] < 1e-9
        assert np.isclose(out[f"{m}.logp_pair"], np.log(P[1, 3]))
    assert np.isclose(out["mlm.logp_unary"], out["truth.logp_unary"]) and abs(out["mlm.cond_kl_truth"]) < 1e-12
    assert out["compatibility"] < 1e-12 and out["naive.kl_truth"] > 0
    rows = [J.evaluate_pair(J.PairConditionals.from_joint(Q), (0, 1), truth=Q)
            for Q in rng.dirichlet(np.ones(25), size=6).reshape(6, 5, 5)]
    stacked = stack(rows)
    assert set(stacked) == set(rows[0]) and len(stacked["naive.logp_pair"]) == 6
    d, lo, hi = stats.bootstrap(lambda x, y: x.mean(-1) - y.mean(-1), np.ones(10), np.zeros(10))
    assert d == lo == hi == 1.0
