r"""From a score matrix to a tree, and a tree to a score.

A tree is a list ``heads`` (``-1`` for the root); an *edge* is an unordered pair ``(i, j)``,
``i < j``: a tree's edge set is what UUAS compares. A score matrix ``S[h, d]`` scores the arc
``h -> d``; undirected decoders want it symmetric, the diagonal ignored.
"""
from __future__ import annotations

import numpy as np

from ..corpus.sentence import Edge, edges_from_heads

__all__ = ["decode", "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores",
           "uuas", "uuas_counts"]


def _edge(i: int, j: int) -> Edge:
    return (i, j) if i < j else (j, i)


ZERO = 1e-10
"""Scores smaller in size are exact zeros up to float rounding: they tie (:func:`decode`)."""


def decode(M, projective: bool = False) -> set[Edge]:
    r"""The tree a score matrix implies: symmetrise, break ties toward neighbours, decode.

    .. math:: S = \operatorname{sym}(M) + \epsilon\, [\, |i - j| = 1 \,], \quad \epsilon = 10^{-6},

    then :func:`tree_from_scores`. The bonus only matters between equal scores (frequent for exact
    distributions) and prefers the adjacent pair, as Zhang & Hashimoto's evaluation does. Scores
    within :data:`ZERO` of 0 count as 0, so that float rounding cannot rank exact zeros.
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
    for CPMI: :math:`S_{ij} = \max(M_{ij}, M_{ji})`."""
    M = _square(M)
    return np.maximum(M, M.T)


def maximum_spanning_tree(S) -> set[Edge]:
    r"""Maximum spanning tree of the complete graph with symmetric edge weights ``S``: the edge set
    :math:`T` maximising :math:`\sum_{(i,j) \in T} S_{ij}` (edges may cross), by Prim's algorithm,
    :math:`O(n^2)`. ``-inf`` weights are allowed (used only if unavoidable)."""
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


def _heads(chart: tuple, r: int, op=np.add) -> list[int]:
    """The heads (``-1`` the root ``r``) of the best tree in a split-head chart: :func:`eisner`'s
    ``(CR, CL, IR, IL)``, or the DMV's, with ``op`` the product and its unstopped halves ``PR, PL``
    appended."""
    CR, CL, IR, IL, PR, PL = chart if len(chart) == 6 else (*chart, chart[0], chart[1])
    n = len(CR)
    heads = [-1] * n
    stack = [("CL", 0, r), ("CR", r, n - 1)]
    while stack:                                    # read the best tree's heads out of the chart
        kind, s, t = stack.pop()
        if s == t:
            continue
        ks = np.arange(s, t)
        if kind == "CR":
            m = s + 1 + int(np.argmax(op(IR[s, ks + 1], CR[ks + 1, t])))
            stack += [("IR", s, m), ("CR", m, t)]
        elif kind == "CL":
            m = s + int(np.argmax(op(CL[s, ks], IL[ks, t])))
            stack += [("CL", s, m), ("IL", m, t)]
        elif kind == "IR":
            heads[t] = s
            m = s + int(np.argmax(op(PR[s, ks], CL[ks + 1, t])))
            stack += [("CR", s, m), ("CL", m + 1, t)]
        else:
            heads[s] = t
            m = s + int(np.argmax(op(CR[s, ks], PL[ks + 1, t])))
            stack += [("CR", s, m), ("CL", m + 1, t)]
    return heads


def eisner(S, root_scores=None) -> list[int]:
    r"""Best projective dependency tree under arc scores ``S`` (Eisner 1996), :math:`O(n^3)`.

    Maximises :math:`\text{root}_r + \sum_{d \ne r} S_{h(d), d}` over projective trees with
    exactly one root word ``r`` (no two arcs cross, none passes over the root). ``S[h, d]`` may be
    asymmetric; ``root_scores`` defaults to zeros: **the root arc carries no score**. The chart's
    items over spans ``[s, t]`` are ``CR``/``CL``, complete with head ``s``/``t``, and
    ``IR``/``IL``, incomplete with the arc ``s -> t``/``t -> s``:

    .. math::
        I^{R}_{st} = S_{st} + \max_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),\quad
        I^{L}_{st} = S_{ts} + \max_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),

        C^{R}_{st} = \max_{r=s+1}^{t} (I^{R}_{sr} + C^{R}_{rt}),\quad
        C^{L}_{st} = \max_{r=s}^{t-1} (C^{L}_{sr} + I^{L}_{rt}),

    and a single root word ``r`` scores ``root[r] + CL[0,r] + CR[r,n-1]``.

    For a symmetric ``S`` and zero root scores the returned heads' edges form the best
    *non-crossing* spanning tree (rooted at word 0 such a tree is projective, and conversely;
    where the root attaches is a tie-break). Returns the heads, ``-1`` for the root.
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
    return _heads((CR, CL, IR, IL), int(np.argmax(root + CL[0, :] + CR[:, n - 1])))


def tree_from_scores(S, projective: bool = False) -> set[Edge]:
    """Edges of the best undirected tree for a symmetric score matrix: the maximum spanning tree
    (Zhang & Hashimoto 2021; Hoover et al. 2021), or the best non-crossing tree (:func:`eisner`)."""
    return edges_from_heads(eisner(S)) if projective else maximum_spanning_tree(S)


def uuas_counts(pred_edges_list, gold_edges_list) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: gold edges also predicted (either orientation), and gold edges."""
    pred_edges_list, gold_edges_list = list(pred_edges_list), list(gold_edges_list)
    if len(pred_edges_list) != len(gold_edges_list):
        raise ValueError(f"{len(pred_edges_list)} predicted vs {len(gold_edges_list)} gold trees")
    correct, total = [], []
    for pred, gold in zip(pred_edges_list, gold_edges_list):
        pred, gold = ({_edge(int(i), int(j)) for i, j in edges} for edges in (pred, gold))
        correct.append(len(pred & gold))
        total.append(len(gold))
    return np.array(correct, dtype=int), np.array(total, dtype=int)


def uuas(pred_edges_list, gold_edges_list) -> float:
    r"""Corpus unlabelled undirected attachment score.

    .. math::
        \text{UUAS} = \frac{\sum_k |P_k \cap G_k|}{\sum_k |G_k|}

    over sentences ``k`` with predicted and gold undirected edge sets ``P_k``, ``G_k`` (for
    spanning trees both precision and recall; punctuation removed first). NaN without gold edges.
    """
    correct, total = uuas_counts(pred_edges_list, gold_edges_list)
    return float(correct.sum() / total.sum()) if total.sum() else float("nan")
