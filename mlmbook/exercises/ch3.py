"""Chapter 3's graded exercises: the rectangle Δ, the order inconsistency of a pair, an Ensemble of
Conditionals — each graded against exact answers from the tiny grammar's truth. The cases are exact
two-site joints :math:`p(x_i, x_j \\mid x_{\\setminus\\{i,j\\}})` of the toy grammars, read as the
conditionals of a perfectly consistent model (Δ = 0, order inconsistency 0), and the same tables
with one family of conditionals perturbed (an inconsistent "model").
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import Exercise, exercise


@lru_cache(maxsize=1)
def pair_tables():
    """``[(P, words, i, j)]``: exact two-site joints (V, V) of three pairs of the tiny grammar."""
    from ..toy import Grammar
    g = Grammar.load("tiny")
    out = []
    for s in g.sample(60, seed=3):
        if len(s) >= 5 and len(out) < 3:
            i, j = 1, 2 + len(out) % 2
            P = g.pair_joint(s.words, i, j)
            if np.count_nonzero(P.sum(1)) >= 2 and np.count_nonzero(P.sum(0)) >= 2:
                out.append((P, tuple(s.words), i, j))
    return tuple(out)


def _perturb(table: np.ndarray, seed: int, axis: int) -> np.ndarray:
    """``table``'s conditionals (normalised along ``axis``) times random factors, renormalised."""
    noise = np.exp(np.random.default_rng(seed).normal(scale=0.5, size=table.shape))
    t = table * noise
    with np.errstate(invalid="ignore", divide="ignore"):      # an all-zero row or column stays 0
        return np.nan_to_num(t / t.sum(axis=axis, keepdims=True))


def _conditionals(P):
    """q(a | b) (columns sum to 1) and q(b | a) (rows sum to 1) of a joint, 0/0 -> 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        qa_b = np.nan_to_num(P / P.sum(0, keepdims=True))
        qb_a = np.nan_to_num(P / P.sum(1, keepdims=True))
    return qa_b, qb_a


@lru_cache(maxsize=1)
def _dependent_rectangles():
    """Rectangles of the toy grammar whose true odds ratio is not 1 (all four cells possible):
    ``[(P, a, b)]``, ``a``/``b`` the two words at each position. Within a word class the toy
    language's words are exchangeable, so such rectangles mix classes or numbers."""
    import itertools

    from ..toy import Grammar
    g = Grammar.load("toy")
    out = []
    for s in g.sample(40, seed=3):
        if len(s) > 7 or len(out) == 3:
            continue
        P = g.pair_joint(s.words, 1, 2)
        best, pick = 0.1, None
        for a in itertools.combinations(np.argsort(-P.sum(1))[:8], 2):
            for b in itertools.combinations(np.argsort(-P.sum(0))[:8], 2):
                block = P[np.ix_(a, b)]
                if (block > 0).all():
                    lo = abs(np.log(block[0, 0] * block[1, 1] / (block[1, 0] * block[0, 1])))
                    if lo > best:
                        best, pick = lo, (list(a), list(b))
        if pick is not None:
            out.append((P, *pick))
    return tuple(out)


def _rectangle_cases():
    cases = []
    for k, (P, a, b) in enumerate(_dependent_rectangles()):
        qa_b, qb_a = _conditionals(P)
        exact = (qa_b[np.ix_(a, b)], qb_a[np.ix_(a, b)])
        cases.append(exact)                                                   # the truth: Δ = 0
        cases.append((_perturb(exact[0], seed=k, axis=0), exact[1]))         # an inconsistent model
    return cases


def _rectangle_expected(qa_b, qb_a):
    """Δ as the mixed difference of r(a, b) = log q(a | b) - log q(b | a) over the rectangle."""
    r = np.log(qa_b) - np.log(qb_a)
    signs = np.array([1.0, -1.0])
    return float(signs @ r @ signs)


def rectangle_delta(qa_b, qb_a):
    """Reference: Δ of the rectangle {a, a'} x {b, b'} from qa_b[a, b] = q(a | b) and qb_a[a, b] =
    q(b | a)."""
    la, lb = np.log(qa_b), np.log(qb_a)
    odds_i = la[0, 0] + la[1, 1] - la[1, 0] - la[0, 1]       # the odds ratio read through q(a | b)
    odds_j = lb[0, 0] + lb[1, 1] - lb[1, 0] - lb[0, 1]       # ... and through q(b | a)
    return odds_i - odds_j


def _rectangle_sum(qa_b, qb_a):
    la, lb = np.log(qa_b), np.log(qb_a)
    return (la[0, 0] + la[1, 1] - la[1, 0] - la[0, 1]) + (lb[0, 0] + lb[1, 1] - lb[1, 0] - lb[0, 1])


def _rectangle_probabilities(qa_b, qb_a):
    return (qa_b[0, 0] * qa_b[1, 1] - qa_b[1, 0] * qa_b[0, 1]) - (qb_a[0, 0] * qb_a[1, 1] - qb_a[1, 0] * qb_a[0, 1])


exercise(Exercise("ch3-rectangle", "warm-up", _rectangle_cases, _rectangle_expected,
                  rectangle_delta, wrong=(_rectangle_sum, _rectangle_probabilities), tol=1e-9,
                  what="the rectangle's Δ (nats)"))


def _order_cases():
    cases = []
    for k, (P, _, _, _) in enumerate(pair_tables()):
        a, b = np.unravel_index(int(np.argmax(P)), P.shape)      # the likeliest pair of words
        qa_b, qb_a = _conditionals(P)
        q_i, q_j = P.sum(1), P.sum(0)
        cases.append((q_i, q_j, qb_a[a], qa_b[:, b], int(a), int(b)))                 # the truth: 0
        cases.append((q_i, q_j, qb_a[a], _perturb(qa_b, seed=10 + k, axis=0)[:, b], int(a), int(b)))
    return cases


def _order_expected(q_i, q_j, q_j_given_a, q_i_given_b, a, b):
    """2 tanh(|log j0 - log j1| / 2), the relative difference written through the log-ratio."""
    gap = abs(np.log(q_i[a]) + np.log(q_j_given_a[b]) - np.log(q_j[b]) - np.log(q_i_given_b[a]))
    return float(2 * np.tanh(gap / 2))


def order_inconsistency(q_i, q_j, q_j_given_a, q_i_given_b, a, b):
    """Reference: |j0 - j1| / mean(j0, j1), j0 = q(a) q(b | a), j1 = q(b) q(a | b) (both-masked
    marginals q)."""
    j0 = q_i[a] * q_j_given_a[b]
    j1 = q_j[b] * q_i_given_b[a]
    return abs(j0 - j1) / ((j0 + j1) / 2)


def _order_no_marginals(q_i, q_j, q_j_given_a, q_i_given_b, a, b):
    j0, j1 = q_j_given_a[b], q_i_given_b[a]
    return abs(j0 - j1) / ((j0 + j1) / 2)


def _order_over_max(q_i, q_j, q_j_given_a, q_i_given_b, a, b):
    j0, j1 = q_i[a] * q_j_given_a[b], q_j[b] * q_i_given_b[a]
    return abs(j0 - j1) / max(j0, j1)


exercise(Exercise("ch3-order", "core", _order_cases, _order_expected, order_inconsistency,
                  wrong=(_order_no_marginals, _order_over_max), tol=1e-9,
                  what="the order inconsistency"))


def _ensemble_cases():
    """Target x_i, auxiliary x_j of each table: a direct conditional and one route through j (the
    truth's), or two routes of which one is perturbed (an inconsistent model)."""
    cases = []
    for k, (P, words, _i, j) in enumerate(pair_tables()):
        from ..toy import Grammar
        o = Grammar.load("tiny").word_id[words[j]]  # the observed word at the auxiliary position
        cand = np.flatnonzero(P[:, o] > 0)
        direct = P[cand, o] / P[cand, o].sum()                   # p(x_i = c | x_j = o, rest)
        head = P.sum(1)[cand]                                    # q(x_i = c | both masked)
        tail = P[cand, o] / P.sum(1)[cand]                       # q(x_j = o | x_i = c)
        cases.append((direct, head[None], tail[None]))                                  # the truth
        bent = _perturb(P, seed=20 + k, axis=1)[cand, o]                # an inconsistent route
        cases.append((direct, np.vstack([head, head]), np.vstack([tail, bent])))
    return cases


def _ensemble_expected(direct, heads, tails):
    """The mean of the normalised versions, computed in log space."""
    logs = np.vstack([np.log(direct), np.log(heads) + np.log(tails)])
    logs -= np.logaddexp.reduce(logs, axis=1, keepdims=True)
    return np.exp(logs).mean(axis=0)


def ensemble_mean(direct, heads, tails):
    """Reference: average the direct conditional with one version per route, q_k(c) ∝ head_k(c)
    tail_k(c)."""
    versions = [direct] + [h * t / (h * t).sum() for h, t in zip(heads, tails)]
    return np.mean(versions, axis=0)


def _ensemble_unnormalised(direct, heads, tails):
    return np.mean([direct] + [h * t for h, t in zip(heads, tails)], axis=0)


def _ensemble_geometric(direct, heads, tails):
    versions = [direct] + [h * t / (h * t).sum() for h, t in zip(heads, tails)]
    g = np.exp(np.mean(np.log(versions), axis=0))
    return g / g.sum()


exercise(Exercise("ch3-ensemble", "stretch", _ensemble_cases, _ensemble_expected, ensemble_mean,
                  wrong=(_ensemble_unnormalised, _ensemble_geometric), tol=1e-9,
                  what="the averaged ensemble"))
