"""Chapter 6's graded exercises: the NELBO and the random-order mixture of one sentence from its
table of revealed-subset conditionals, each graded against brute force over every order. A case is a
table ``L`` of shape ``(2**n, n)``: ``L[S, i]`` is :math:`\\log q(x_i \\mid x_S)` for the revealed
subset ``S`` (a bit mask) and a masked position ``i`` (NaN where ``i`` is revealed). The cases are
the exact conditionals of sentences of the tiny grammar (where every order agrees) and the same
tables perturbed (where they do not).
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache, partial

import numpy as np

from . import Exercise, exercise


@lru_cache(maxsize=1)
def table_cases():
    """``[(L,)]``: the truth's tables of three tiny-grammar sentences, and each perturbed."""
    from ..diffusion import reveal_table
    from ..models.truth import TruthOracle
    from ..toy import Grammar
    g = Grammar.load("tiny")
    truth = TruthOracle(g)
    words = [s.words for s in g.sample(60, seed=6) if len(s.words) in (4, 5)][:3]
    tables = reveal_table(truth, [truth.encode_words(w)[0] for w in words])
    rng = np.random.default_rng(6)
    return tuple((L,) for L in tables) + tuple((L + rng.normal(scale=0.5, size=L.shape),) for L in tables)


def _order_logs(L):
    n = L.shape[1]
    out = []
    for order in itertools.permutations(range(n)):
        S, total = 0, 0.0
        for i in order:
            total += L[S, i]
            S |= 1 << i
        out.append(total)
    return np.array(out)


def _nelbo_expected(L):
    return float(-_order_logs(L).mean())


def _mixture_expected(L):
    logs = _order_logs(L)
    return float(np.logaddexp.reduce(logs) - math.log(len(logs)))


def nelbo_of(L):
    """Reference: the NELBO in closed form, each revealed subset weighted by 1 / C(n, |S|) / (n -
    |S|)."""
    size, n = L.shape
    total = 0.0
    for S in range(size - 1):
        j = bin(S).count("1")
        masked = [i for i in range(n) if not S >> i & 1]
        total -= L[S, masked].sum() / math.comb(n, j) / (n - j)
    return total


def mixture_of(L, choose: bool = True):
    """Reference: log p_mix by dynamic programming over revealed subsets (``choose=False`` leaves
    out the chance 1 / (n - |S|) of each next position: a wrong solution)."""
    size, n = L.shape
    f = np.full(size, -np.inf)
    f[0] = 0.0
    for S in range(size - 1):
        masked = [i for i in range(n) if not S >> i & 1]
        cost = math.log(len(masked)) if choose else 0.0
        for i in masked:
            f[S | 1 << i] = np.logaddexp(f[S | 1 << i], f[S] + L[S, i] - cost)
    return float(f[-1])


def _left_to_right(L):
    return float(-sum(L[(1 << t) - 1, t] for t in range(L.shape[1])))


def _unweighted(L):
    size, n = L.shape
    return float(-sum(np.nansum(L[S]) for S in range(size - 1)) / (size - 1))


exercise(Exercise("ch6-nelbo", "warm-up", table_cases, _nelbo_expected, nelbo_of,
                  wrong=(_left_to_right, _unweighted), tol=1e-9, what="the NELBO (nats)"))
exercise(Exercise("ch6-mixture", "core", table_cases, _mixture_expected, mixture_of,
                  wrong=(lambda L: -nelbo_of(L), partial(mixture_of, choose=False)), tol=1e-9,
                  what="log p_mix (nats)"))
