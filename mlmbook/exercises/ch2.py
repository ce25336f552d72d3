r"""Chapter 2's graded exercises: HCB from two conditionals, anchoring a joint on marginals, and one
Arnold–Gokhale update for three sites — each with a case built from the toy language's exact
joints, where the right answer *is* the truth.
"""
from __future__ import annotations

from functools import lru_cache, partial

import numpy as np

from . import Exercise, exercise
from .ch3 import _conditionals

SHOWCASE = "the dog near the old river barks .".split()


@lru_cache(maxsize=None)
def _truth_pair(i: int, j: int) -> np.ndarray:
    """The exact joint of showcase words ``i``, ``j`` on its support (rows, columns with mass)."""
    from ..toy import Grammar
    P = Grammar.load("toy").pair_joint(SHOWCASE, i, j)
    return P[np.ix_(P.sum(1) > 0, P.sum(0) > 0)]


def _hcb(q_a_given_b, q_b_given_a, pivot):
    joint = q_b_given_a[pivot][None, :] * q_a_given_b / q_a_given_b[pivot][None, :]
    return joint / joint.sum()


def _hcb_cases():
    P = _truth_pair(0, 1)  # determiner and noun: one block, the pivot reaches every noun
    qa, qb = _conditionals(P)
    rng = np.random.default_rng(2)
    Q = rng.dirichlet(np.ones(30)).reshape(5, 6)
    na, nb = _conditionals(Q)
    noisy_a = na * np.exp(0.3 * rng.standard_normal(Q.shape))
    noisy_b = nb * np.exp(0.3 * rng.standard_normal(Q.shape))
    return [(qa, qb, int(np.argmax(P.sum(1)))), (noisy_a / noisy_a.sum(0), noisy_b / noisy_b.sum(1, keepdims=True), 2)]


def _hcb_no_ratio(q_a_given_b, q_b_given_a, pivot):
    joint = q_b_given_a[pivot][None, :] * q_a_given_b
    return joint / joint.sum()


def _hcb_wrong_axis(q_a_given_b, q_b_given_a, pivot):
    joint = q_a_given_b[:, [pivot]] * q_b_given_a / q_b_given_a[:, [pivot]]
    return joint / joint.sum()


exercise(Exercise("ch2-hcb", "warm-up", _hcb_cases, _hcb, _hcb,
                  wrong=(_hcb_no_ratio, _hcb_wrong_axis), tol=1e-9, what="the HCB joint"))


def _anchor(joint, m_a, m_b):
    r_b_given_a = joint / joint.sum(axis=1, keepdims=True)
    r_a_given_b = joint / joint.sum(axis=0, keepdims=True)
    return 0.5 * (m_a[:, None] * r_b_given_a + m_b[None, :] * r_a_given_b)


def _anchor_cases():
    from ..joints import PairConditionals, support_blocks
    P = _truth_pair(1, 6)                         # noun and verb: the table splits into blocks
    _, labels, _ = support_blocks(PairConditionals.from_joint(P))
    wrong_split = P.copy()
    wrong_split[labels == 0] *= 4.0  # right conditionals, wrong block weights (as AG may give)
    wrong_split /= wrong_split.sum()
    rng = np.random.default_rng(3)
    Q = rng.dirichlet(np.ones(20)).reshape(4, 5)
    return [(wrong_split, P.sum(1), P.sum(0)), (Q, rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(5)))]


def _anchor_one_side(joint, m_a, m_b):
    return m_a[:, None] * joint / joint.sum(axis=1, keepdims=True)


def _anchor_swapped(joint, m_a, m_b):
    return 0.5 * (m_a[:, None] * joint / joint.sum(axis=0, keepdims=True)
                  + m_b[None, :] * joint / joint.sum(axis=1, keepdims=True))


exercise(Exercise("ch2-anchor", "core", _anchor_cases, _anchor, _anchor,
                  wrong=(_anchor_one_side, _anchor_swapped), tol=1e-9, what="the anchored joint"))


def _ag3(r, q1, q2, q3, normalise: bool = True):
    new = (q1 + q2 + q3) / sum(1 / r.sum(axis=i, keepdims=True) for i in range(3))
    return new / new.sum() if normalise else new


def _ag3_cases():
    from ..joints import site_joint
    from ..toy import Grammar
    from ..toy.vocab import N_SPECIAL
    g = Grammar.load("toy[smoothing=0.05]")      # soft zeros: every cell of the grid has mass
    words = SHOWCASE
    grid = [[g.word_id[w] + N_SPECIAL for w in ws] for ws in
            (("dog", "cat", "farmer", "dogs"), ("old", "quiet", "busy", "small"), ("barks", "sleeps", "waits", "bark"))]
    P = site_joint(g, words, [1, 4, 6], grid)
    conds = [P / P.sum(axis=i, keepdims=True) for i in range(3)]
    rng = np.random.default_rng(4)
    R = rng.dirichlet(np.ones(27)).reshape(3, 3, 3)
    noisy = [R * np.exp(0.3 * rng.standard_normal(R.shape)) for _ in range(3)]
    noisy = [n / n.sum(axis=i, keepdims=True) for i, n in enumerate(noisy)]
    start = rng.dirichlet(np.ones(27)).reshape(3, 3, 3)
    return [(P, *conds), (start, *noisy)]


def _ag3_marginal_sum(r, q1, q2, q3):
    new = (q1 + q2 + q3) * sum(r.sum(axis=i, keepdims=True) for i in range(3))
    return new / new.sum()


exercise(Exercise("ch2-ag3", "stretch", _ag3_cases, _ag3, _ag3,
                  wrong=(partial(_ag3, normalise=False), _ag3_marginal_sum), tol=1e-9,
                  what="the updated three-site joint"))
