r"""Chapter 1's graded exercises: CMI from a joint, the spanning tree of a CMI matrix, the chain's
joint; every case from an exact oracle (the toy language, the positive-control world whose
spanning tree *is* the gold tree, conditional tables whose Gibbs chain has a known joint).
"""
from __future__ import annotations

import numpy as np

from . import Exercise, exercise


def cmi_cases():
    """Exact joints p(x_i, x_j | rest) of toy-language pairs: edges, non-edges, a pair with CMI
    0."""
    from ..toy import Grammar
    g = Grammar.load("toy")
    words = "the old dog barks .".split()
    out = [(g.pair_joint(words, 2, 3),), (g.pair_joint(words, 0, 2),),
           (g.pair_joint("mary sees the cat .".split(), 0, 1),)]
    rng = np.random.default_rng(1)
    P = rng.random((4, 5)) ** 3
    out.append((P / P.sum(),))
    return out


def _cmi(P):
    P = np.asarray(P, dtype=float)
    a, b = P.sum(1, keepdims=True), P.sum(0, keepdims=True)
    nz = P > 0
    return float((P[nz] * np.log(P[nz] / (a * b)[nz])).sum())


def _cmi_bits(P):
    return _cmi(P) / np.log(2)


def _cmi_entropy_sum(P):
    P = np.asarray(P, dtype=float)
    a = P.sum(1)
    return float(-(a[a > 0] * np.log(a[a > 0])).sum())        # H(X) alone: forgets the joint


exercise(Exercise("ch1-cmi", "warm-up", cmi_cases, _cmi, _cmi, wrong=(_cmi_bits, _cmi_entropy_sum),
                  tol=1e-9, what="the mutual information (nats)"))


def tree_cases():
    """Truth-CMI matrices of sentences of the positive-control world, whose spanning tree is the
    gold tree."""
    from ..dependencies import truth_cmi
    from ..toy.treemrf import TreeMRF
    world = TreeMRF.load("treemrf")
    sents = [s for s in world.sample(40, seed=7) if len(s) >= 7][:4]
    keep = [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in sents]
    return [(M,) for M in truth_cmi(world, [s.words for s in sents], keep, window=None)]


def _mst(S):
    """Prim's algorithm on the symmetrised matrix: grow the tree by its strongest outside edge."""
    S = np.maximum(np.asarray(S, dtype=float), np.asarray(S, dtype=float).T)
    n = len(S)
    inside, edges = {0}, set()
    while len(inside) < n:
        best = max(((S[i, j], i, j) for i in inside for j in range(n) if j not in inside))
        _, i, j = best
        edges.add((min(i, j), max(i, j)))
        inside.add(j)
    return sorted(edges)


def _chain(S):
    return [(i, i + 1) for i in range(len(S) - 1)]


def _minimum(S):
    return _mst(-np.asarray(S, dtype=float))


def _tree_expected(S):
    """The gold tree of the case's sentence: the truth's spanning tree."""
    from ..dependencies import maximum_spanning_tree
    return sorted(maximum_spanning_tree(np.maximum(S, S.T)))


exercise(Exercise("ch1-tree", "core", tree_cases, _tree_expected, _mst, wrong=(_chain, _minimum),
                  tol=0.0, what="the maximum spanning tree (a sorted list of edges (i, j), i < j)"))


def chain_cases():
    """Conditional tables ``(A, B)``: ``A[a, b] = q(a | b)`` (columns sum to 1), ``B[a, b] = q(b |
    a)`` (rows sum to 1). The first two are a true joint's conditionals (the chain's joint is that
    joint); the others are incompatible, as an MLM's are."""
    rng = np.random.default_rng(3)
    out = []
    for shape in ((3, 4), (5, 5)):
        P = rng.random(shape) + 0.05
        P /= P.sum()
        out.append((P / P.sum(0, keepdims=True), P / P.sum(1, keepdims=True)))
    for shape in ((4, 3), (6, 5)):
        A, B = rng.random(shape) + 0.05, rng.random(shape) + 0.05
        out.append((A / A.sum(0, keepdims=True), B / B.sum(1, keepdims=True)))
    return out


def _chain_joint(A, B):
    r"""The chain b -> a -> b' has kernel K = A^T B, stationary law mu = mu K, joint pi = A mu."""
    K = A.T @ B
    w, v = np.linalg.eig(K.T)
    mu = np.real(v[:, np.argmin(np.abs(w - 1))])
    mu = mu / mu.sum()
    return A * mu[None, :]


def _chain_expected(A, B):
    from ..dependencies import gibbs_limit
    return gibbs_limit(np.log(A), np.log(B))[2]


def _chain_product(A, B):
    return A.mean(1, keepdims=True) * B.mean(0, keepdims=True)  # independence: forgets the chain


def _chain_one_step(A, B):
    mu = np.full(A.shape[1], 1 / A.shape[1])  # one step from uniform, not the limit
    return A * mu[None, :]


exercise(Exercise("ch1-chain", "stretch", chain_cases, _chain_expected, _chain_joint,
                  wrong=(_chain_product, _chain_one_step), tol=1e-9,
                  what="the chain's joint pi(a, b)"))
