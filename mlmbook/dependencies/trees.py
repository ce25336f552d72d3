r"""From a score matrix to a tree, and a tree to a score.

A tree is a list ``heads`` (``heads[d]`` the head of word ``d``, ``-1`` for the root, as in
:class:`mlmbook.corpus.Sentence`); an *edge* is an unordered pair ``(i, j)``, ``i < j``: a tree's
edge set (the root arc not among them) is what UUAS compares. A score matrix ``S[h, d]`` scores the
arc ``h -> d``; undirected decoders want it symmetric (:func:`symmetrize`), the diagonal ignored.
Punctuation is removed before scores are decoded and trees compared, as in both papers.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..corpus.sentence import Edge, edges_from_heads

__all__ = ["decode", "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores",
           "uuas", "uuas_counts"]


def _edge(i: int, j: int) -> Edge:
    return (i, j) if i < j else (j, i)


ZERO = 1e-10
"""Scores smaller than this in size are exact zeros up to float rounding: they tie
(:func:`decode`)."""


def decode(M, projective: bool = False) -> set[Edge]:
    r"""The tree a score matrix implies: symmetrise, break ties toward neighbours, decode.

    .. math:: S = \operatorname{sym}(M) + \epsilon\, [\, |i - j| = 1 \,], \quad \epsilon = 10^{-6},

    then :func:`tree_from_scores` (maximum spanning tree, or Eisner's best projective tree).
    The small bonus :math:`\epsilon` only matters between equal scores — frequent for exact
    distributions, whose CMI is exactly 0 for many pairs — and prefers the adjacent pair,
    as Zhang & Hashimoto's evaluation does. Scores within :data:`ZERO` of 0 count as 0, so that
    float rounding (``1e-17`` from one computation, ``0`` from another) cannot rank exact zeros.
    """
    S = symmetrize(M)
    S[np.abs(S) < ZERO] = 0.0
    i = np.arange(len(S) - 1)
    S[i, i + 1] += 1e-6
    S[i + 1, i] += 1e-6
    return tree_from_scores(S, projective=projective)


def _square(M) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"score matrix must be square (n, n), got shape {M.shape}")
    if np.isnan(M[~np.eye(len(M), dtype=bool)]).any():
        raise ValueError("score matrix has NaN off the diagonal")
    return M


def symmetrize(M) -> np.ndarray:
    r"""Make a pairwise score matrix symmetric by the stronger direction, as Hoover et al. (2021) do
    for CPMI.

    .. math:: S_{ij} = \max(M_{ij}, M_{ji})

    The diagonal is carried along and ignored by decoders.
    """
    M = _square(M)
    return np.maximum(M, M.T)


def maximum_spanning_tree(S) -> set[Edge]:
    r"""Maximum spanning tree of the complete graph with symmetric edge weights ``S``.

    Returns the edge set :math:`T` maximising :math:`\sum_{(i,j) \in T} S_{ij}` over all
    :math:`n^{n-2}` spanning trees (undirected, non-projective: edges may cross). Prim's
    algorithm: grow the tree from word 0, each step adding the heaviest edge leaving it;
    :math:`O(n^2)`. ``-inf`` weights are allowed (used only if unavoidable).
    """
    S = _square(S)
    if not np.allclose(S, S.T, equal_nan=True):
        raise ValueError("maximum_spanning_tree needs a symmetric matrix; call symmetrize() first")
    n = len(S)
    if n < 2:
        return set()
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best, link = S[0].copy(), np.zeros(n, dtype=int)  # best edge from each word into the tree
    edges = set()
    for _ in range(n - 1):
        outside = np.flatnonzero(~in_tree)
        j = outside[np.argmax(best[outside])]
        edges.add(_edge(int(j), int(link[j])))
        in_tree[j] = True
        better = (S[j] > best) & ~in_tree
        best[better], link[better] = S[j][better], j
    return edges


def _spans(n: int, width: int):
    """All spans ``[s, t]`` of a width, and their split points ``r = s .. t-1`` as (ns, width)."""
    s = np.arange(n - width)
    return s, s + width, s[:, None] + np.arange(width)


def eisner(S, root_scores=None) -> list[int]:
    r"""Best projective dependency tree under arc scores ``S`` (Eisner 1996), :math:`O(n^3)`.

    Maximises :math:`\text{root}_r + \sum_{d \ne r} S_{h(d), d}` over projective trees with
    exactly one root word ``r`` (projective: each word's subtree is a contiguous span, i.e. no
    two arcs cross and no arc passes over the root). ``S[h, d]`` may be asymmetric;
    ``root_scores`` defaults to zeros: **the root arc carries no score**. The chart's items over
    spans ``[s, t]`` are ``CR``/``CL``, complete with head ``s``/``t``, and ``IR``/``IL``,
    incomplete with the arc ``s -> t``/``t -> s``:

    .. math::
        I^{R}_{st} = S_{st} + \max_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),\quad
        I^{L}_{st} = S_{ts} + \max_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),

        C^{R}_{st} = \max_{r=s+1}^{t} (I^{R}_{sr} + C^{R}_{rt}),\quad
        C^{L}_{st} = \max_{r=s}^{t-1} (C^{L}_{sr} + I^{L}_{rt}),

    and a single root word ``r`` scores ``root[r] + CL[0,r] + CR[r,n-1]``.

    Undirected use: for a symmetric ``S`` with zero root scores a tree's score is the sum of its
    undirected edge weights. An undirected tree whose edges do not cross becomes a projective tree
    when rooted at word 0, and every projective tree's edges do not cross: the returned tree's edges
    form the best *non-crossing* spanning tree (where the root attaches is a tie-break).

    Returns
    -------
    heads : list of int, ``-1`` for the root.
    """
    S = _square(S)
    n = len(S)
    if n == 0:
        return []
    root = np.zeros(n) if root_scores is None else np.asarray(root_scores, dtype=float)
    CR, CL, IR, IL = (np.full((n, n), -np.inf) for _ in range(4))
    CR[np.diag_indices(n)] = CL[np.diag_indices(n)] = 0.0
    for w in range(1, n):
        s, t, r = _spans(n, w)
        S_, T_ = s[:, None], t[:, None]
        inner = np.max(CR[S_, r] + CL[r + 1, T_], axis=1)
        IR[s, t] = S[s, t] + inner
        IL[s, t] = S[t, s] + inner
        CR[s, t] = np.max(IR[S_, r + 1] + CR[r + 1, T_], axis=1)
        CL[s, t] = np.max(CL[S_, r] + IL[r, T_], axis=1)
    heads = [-1] * n
    r = int(np.argmax(root + CL[0, :] + CR[:, n - 1]))
    stack = [("CL", 0, r), ("CR", r, n - 1)]
    while stack:                                    # read the best tree's heads out of the chart
        kind, s, t = stack.pop()
        if s == t:
            continue
        ks = np.arange(s, t)
        if kind == "CR":
            m = s + 1 + int(np.argmax(IR[s, ks + 1] + CR[ks + 1, t]))
            stack += [("IR", s, m), ("CR", m, t)]
        elif kind == "CL":
            m = s + int(np.argmax(CL[s, ks] + IL[ks, t]))
            stack += [("CL", s, m), ("IL", m, t)]
        else:
            if kind == "IR":
                heads[t] = s
            else:
                heads[s] = t
            m = s + int(np.argmax(CR[s, ks] + CL[ks + 1, t]))
            stack += [("CR", s, m), ("CL", m + 1, t)]
    return heads


def tree_from_scores(S, projective: bool = False) -> set[Edge]:
    """Edges of the best undirected tree for a symmetric score matrix.

    ``projective=False``: maximum spanning tree (Zhang & Hashimoto 2021; Hoover et al. 2021);
    ``projective=True``: best non-crossing tree via :func:`eisner`.
    """
    return edges_from_heads(eisner(S)) if projective else maximum_spanning_tree(S)


def _as_edges(edges: Iterable[Sequence[int]]) -> set[Edge]:
    return {_edge(int(i), int(j)) for i, j in edges}


def uuas_counts(pred_edges_list, gold_edges_list) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: number of gold edges also predicted, and number of gold edges.

    Edges are unordered pairs (either orientation accepted).
    """
    pred_edges_list, gold_edges_list = list(pred_edges_list), list(gold_edges_list)
    if len(pred_edges_list) != len(gold_edges_list):
        raise ValueError(f"{len(pred_edges_list)} predicted vs {len(gold_edges_list)} gold trees")
    correct, total = [], []
    for pred, gold in zip(pred_edges_list, gold_edges_list):
        gold = _as_edges(gold)
        correct.append(len(_as_edges(pred) & gold))
        total.append(len(gold))
    return np.array(correct, dtype=int), np.array(total, dtype=int)


def uuas(pred_edges_list, gold_edges_list) -> float:
    r"""Corpus unlabelled undirected attachment score.

    .. math::
        \text{UUAS} = \frac{\sum_k |P_k \cap G_k|}{\sum_k |G_k|}

    over sentences ``k`` with predicted and gold undirected edge sets ``P_k``, ``G_k``. When
    both are spanning trees of the same words, ``|P_k| = |G_k| = n_k - 1`` and UUAS is both
    precision and recall. Remove punctuation from the gold trees before computing the scores
    (:func:`mlmbook.corpus.remove_punct`). Returns NaN when there is no gold edge.
    """
    correct, total = uuas_counts(pred_edges_list, gold_edges_list)
    return float(correct.sum() / total.sum()) if total.sum() else float("nan")
