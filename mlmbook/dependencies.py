"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a
sentence by how strongly a masked LM makes them depend on each other (conditional mutual
information, CPMI), read a tree off that score matrix, and compare it with the gold
syntactic tree by unlabelled undirected attachment score (UUAS).

Sections of this module
-----------------------
``# --- trees from score matrices ---``
    decoding (maximum spanning tree, Eisner), UUAS with bootstrap intervals, baselines
    (adjacent chain, uniformly random trees, random projective trees) and the dependency
    model with valence (DMV, Klein & Manning 2004) trained by EM.

Conventions
-----------
* ``n`` words are numbered ``0..n-1``; a tree is a list ``heads`` with ``heads[d]`` the head
  of word ``d`` and ``-1`` for the root (as in :mod:`mlmbook.language` and
  :mod:`mlmbook.treebank`).
* An *edge* is an unordered pair stored as a tuple ``(i, j)`` with ``i < j``; a tree's
  edge set is what UUAS compares. The root arc is not an edge.
* A score matrix ``S`` is ``(n, n)``; ``S[h, d]`` scores the arc ``h -> d``. Undirected
  decoders want it symmetric (see :func:`symmetrize`); the diagonal is ignored.
* Punctuation is removed *before* scores are decoded and trees compared
  (:func:`mlmbook.treebank.remove_punct`), as in both papers.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from functools import lru_cache
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores", "edges_from_heads",
    "uuas", "uuas_counts", "sentence_uuas", "bootstrap_ci",
    "adjacent_edges", "random_tree_edges", "random_projective_tree", "prufer_to_edges",
    "DMV",
]

Edge = tuple[int, int]


# --- trees from score matrices ---------------------------------------------------------
#
# -- decoding --


def _edge(i: int, j: int) -> Edge:
    return (i, j) if i < j else (j, i)


def edges_from_heads(heads: Sequence[int]) -> set[Edge]:
    """Undirected edges ``{(min(d, h), max(d, h)) : heads[d] = h >= 0}`` of a tree."""
    return {_edge(d, h) for d, h in enumerate(heads) if h >= 0}


def _square(M) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"score matrix must be square (n, n), got shape {M.shape}")
    if np.isnan(M[~np.eye(len(M), dtype=bool)]).any():
        raise ValueError("score matrix has NaN off the diagonal")
    return M


def symmetrize(M, how: str = "max") -> np.ndarray:
    r"""Make a pairwise score matrix symmetric.

    .. math::
        S_{ij} = \max(M_{ij}, M_{ji}) \ (\text{"max"}),\quad
        \tfrac12 (M_{ij} + M_{ji}) \ (\text{"mean"}),\quad
        M_{ij} + M_{ji} \ (\text{"sum"}).

    "mean" and "sum" give the same trees; "max" keeps the stronger direction, as
    Hoover et al. (2021) do for CPMI. The diagonal is carried along and ignored by decoders.
    """
    M = _square(M)
    if how == "max":
        return np.maximum(M, M.T)
    if how == "mean":
        return (M + M.T) / 2
    if how == "sum":
        return M + M.T
    raise ValueError(f"how must be 'max', 'mean' or 'sum', got {how!r}")


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
        edges.add(_edge(j, link[j]))
        in_tree[j] = True
        better = (S[j] > best) & ~in_tree
        best[better], link[better] = S[j][better], j
    return edges


def _spans(n: int, width: int):
    """All spans ``[s, t]`` of a width, and their split points ``r = s .. t-1`` as (ns, width)."""
    s = np.arange(n - width)
    return s, s + width, s[:, None] + np.arange(width)


def _projective_chart(S: np.ndarray, root: np.ndarray, reduce: Callable):
    r"""Eisner's (1996) chart over a semiring given by ``reduce`` (max or logsumexp).

    Items over spans ``[s, t]`` (additive scores):

    * ``CR[s,t]`` complete, head ``s``, covering its right dependents' subtrees up to ``t``;
    * ``CL[s,t]`` complete, head ``t``, leftwards;
    * ``IR[s,t]`` incomplete: arc ``s -> t`` plus what lies between;
    * ``IL[s,t]`` incomplete: arc ``t -> s``.

    .. math::
        I^{R}_{st} = S_{st} + \bigoplus_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),\quad
        I^{L}_{st} = S_{ts} + \bigoplus_{r=s}^{t-1} (C^{R}_{sr} + C^{L}_{r+1,t}),

        C^{R}_{st} = \bigoplus_{r=s+1}^{t} (I^{R}_{sr} + C^{R}_{rt}),\quad
        C^{L}_{st} = \bigoplus_{r=s}^{t-1} (C^{L}_{sr} + I^{L}_{rt}),

    and a single root word ``r`` scores ``root[r] + CL[0,r] + CR[r,n-1]`` (returned as ``top``).
    """
    n = len(S)
    CR, CL, IR, IL = (np.full((n, n), -np.inf) for _ in range(4))
    CR[np.diag_indices(n)] = CL[np.diag_indices(n)] = 0.0
    for w in range(1, n):
        s, t, r = _spans(n, w)
        S_, T_ = s[:, None], t[:, None]
        inner = reduce(CR[S_, r] + CL[r + 1, T_], axis=1)
        IR[s, t] = S[s, t] + inner
        IL[s, t] = S[t, s] + inner
        CR[s, t] = reduce(IR[S_, r + 1] + CR[r + 1, T_], axis=1)
        CL[s, t] = reduce(CL[S_, r] + IL[r, T_], axis=1)
    top = root + CL[0, :] + CR[:, n - 1]
    return CR, CL, IR, IL, top


def _projective_backtrace(chart, pick: Callable[[np.ndarray], int]) -> list[int]:
    """Read heads out of a chart, choosing each split with ``pick`` (argmax or a sampler)."""
    CR, CL, IR, IL, top = chart
    n = len(top)
    heads = [-1] * n
    r = pick(top)
    stack = [("CL", 0, r), ("CR", r, n - 1)]
    while stack:
        kind, s, t = stack.pop()
        if s == t:
            continue
        ks = np.arange(s, t)
        if kind == "CR":
            m = s + 1 + pick(IR[s, ks + 1] + CR[ks + 1, t])
            stack += [("IR", s, m), ("CR", m, t)]
        elif kind == "CL":
            m = s + pick(CL[s, ks] + IL[ks, t])
            stack += [("CL", s, m), ("IL", m, t)]
        else:
            if kind == "IR":
                heads[t] = s
            else:
                heads[s] = t
            m = s + pick(CR[s, ks] + CL[ks + 1, t])
            stack += [("CR", s, m), ("CL", m + 1, t)]
    return heads


def eisner(S, root_scores=None) -> list[int]:
    r"""Best projective dependency tree under arc scores ``S`` (Eisner 1996), :math:`O(n^3)`.

    Maximises :math:`\text{root}_r + \sum_{d \ne r} S_{h(d), d}` over projective trees with
    exactly one root word ``r`` (projective: each word's subtree is a contiguous span, i.e. no
    two arcs cross and no arc passes over the root). ``S[h, d]`` may be asymmetric.
    ``root_scores`` defaults to zeros: **the root arc carries no score**.

    Undirected use. For a symmetric ``S`` with zero root scores the score of a tree is the sum
    of its undirected edge weights, whatever the direction. An undirected tree whose edges do
    not cross (drawn above the words) becomes a projective directed tree when rooted at word 0
    (word 0 is never under an edge), and every projective tree's edges do not cross. Hence the
    returned tree's edges form the best *non-crossing* spanning tree; where the root attaches
    is an arbitrary tie-break (an uncovered word) and does not affect the edges or the score.

    Returns
    -------
    heads : list of int, ``-1`` for the root.
    """
    S = _square(S)
    n = len(S)
    if n == 0:
        return []
    root = np.zeros(n) if root_scores is None else np.asarray(root_scores, dtype=float)
    chart = _projective_chart(S, root, np.max)
    return _projective_backtrace(chart, lambda v: int(np.argmax(v)))


def tree_from_scores(S, projective: bool = False) -> set[Edge]:
    """Edges of the best undirected tree for a symmetric score matrix.

    ``projective=False``: maximum spanning tree (Zhang & Hashimoto 2021; Hoover et al. 2021);
    ``projective=True``: best non-crossing tree via :func:`eisner`.
    """
    return edges_from_heads(eisner(S)) if projective else maximum_spanning_tree(S)


# -- evaluation --


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
    (:func:`mlmbook.treebank.remove_punct`). Returns NaN when there is no gold edge.
    """
    correct, total = uuas_counts(pred_edges_list, gold_edges_list)
    return float(correct.sum() / total.sum()) if total.sum() else float("nan")


def sentence_uuas(pred_edges_list, gold_edges_list) -> np.ndarray:
    """UUAS of each sentence separately (NaN for a sentence without gold edges)."""
    correct, total = uuas_counts(pred_edges_list, gold_edges_list)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, correct / np.maximum(total, 1), np.nan)


def bootstrap_ci(per_sentence_correct, per_sentence_total, n_boot: int = 1000, seed=0,
                 level: float = 0.95) -> tuple[float, float]:
    r"""Percentile bootstrap interval for corpus UUAS, resampling sentences.

    Each replicate draws ``m`` sentences with replacement from the ``m`` given and computes
    :math:`\sum c_k / \sum g_k`; the interval is the ``(1-level)/2`` and ``(1+level)/2``
    quantiles of the ``n_boot`` replicates.
    """
    c = np.asarray(per_sentence_correct, dtype=float)
    g = np.asarray(per_sentence_total, dtype=float)
    if c.shape != g.shape or c.ndim != 1 or len(c) == 0:
        raise ValueError("need two equal-length, non-empty 1-d arrays")
    idx = np.random.default_rng(seed).integers(0, len(c), size=(n_boot, len(c)))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = c[idx].sum(axis=1) / g[idx].sum(axis=1)
    lo, hi = np.nanquantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


# -- baselines --


def adjacent_edges(n: int) -> set[Edge]:
    """The chain ``0-1-2-...-(n-1)``: every word attached to its neighbour."""
    return {(i, i + 1) for i in range(n - 1)}


def prufer_to_edges(seq: Sequence[int], n: int) -> set[Edge]:
    """Decode a Prüfer sequence (length ``n-2``, entries in ``0..n-1``) into tree edges.

    Repeatedly join the smallest current leaf to the next entry of the sequence; the last two
    remaining words form the final edge. This is a bijection between the :math:`n^{n-2}`
    sequences and the labelled trees on ``n`` nodes (Cayley's formula).
    """
    if n < 2:
        return set()
    degree = [1] * n
    for x in seq:
        degree[x] += 1
    leaves = [i for i in range(n) if degree[i] == 1]
    heapq.heapify(leaves)
    edges = set()
    for x in seq:
        leaf = heapq.heappop(leaves)
        edges.add(_edge(leaf, x))
        degree[x] -= 1
        if degree[x] == 1:
            heapq.heappush(leaves, x)
    edges.add(_edge(heapq.heappop(leaves), heapq.heappop(leaves)))
    return edges


def random_tree_edges(n: int, rng=None) -> set[Edge]:
    """A uniformly random labelled (non-projective) spanning tree on ``n`` words.

    Draws a uniform Prüfer sequence and decodes it, so each of the :math:`n^{n-2}` trees has
    probability :math:`n^{-(n-2)}`. ``rng``: a ``numpy.random.Generator`` or a seed.
    """
    rng = np.random.default_rng(rng)
    return prufer_to_edges(rng.integers(0, n, size=max(n - 2, 0)).tolist(), n)


@lru_cache(maxsize=64)
def _uniform_projective_chart(n: int):
    """Log-counts of projective trees per span, with the root forced onto word 0."""
    root = np.full(n, -np.inf)
    root[0] = 0.0
    return _projective_chart(np.zeros((n, n)), root, logsumexp)


def random_projective_tree(n: int, rng=None) -> set[Edge]:
    """A uniformly random *non-crossing* (projective) undirected spanning tree on ``n`` words.

    Non-crossing trees correspond one to one to projective dependency trees rooted at word 0
    (see :func:`eisner`), so we sample those: the sum-product version of Eisner's chart with
    all arc scores 0 counts the trees of every span, and a top-down pass picks each split with
    probability proportional to its count. There are 1, 1, 3, 12, 55, 273, ... such trees.
    """
    rng = np.random.default_rng(rng)
    if n < 2:
        return set()
    chart = _uniform_projective_chart(n)

    def sample(logw: np.ndarray) -> int:  # index k with probability exp(logw[k]) / sum
        cum = np.cumsum(np.exp(logw - logw.max()))
        return min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(cum) - 1)

    return edges_from_heads(_projective_backtrace(chart, sample))


# -- DMV --

LEFT, RIGHT = 0, 1   # direction of a dependent from its head
FIRST, LATER = 0, 1  # valence: head has no dependent yet on that side / has at least one


class DMV:
    r"""Dependency model with valence (Klein & Manning 2004), trained by EM.

    Generative story over symbols (POS tags, or word types) :math:`x_1..x_n`: a ROOT picks
    the head symbol with :math:`p_{\text{root}}(a)`; each head :math:`h` then, independently on
    each side :math:`\text{dir}`, repeatedly decides to stop, :math:`p_{\text{stop}}(h, \text{dir},
    v)`, or to continue and draw the next dependent (nearest first)
    :math:`p_{\text{choose}}(a \mid h, \text{dir})`, where the valence :math:`v` records whether
    :math:`h` already has a dependent on that side; each dependent recursively generates its own.
    Trees are projective.

    E-step: inside–outside on a split-head chart (Eisner-style; spans ``[s, t]``, batched over
    sentences of equal length). With ``P`` = probability of an item:

    * ``OR[s,t]`` open right half of head ``s`` (dependents up to ``t``, not yet stopped),
      ``OR[s,s] = 1``; ``CR = OR * stop(s, R, v)``, ``PR = OR * (1 - stop(s, R, v))`` with
      ``v = FIRST`` iff ``t == s``;
    * ``IR[s,t] = choose(t | s, R) * sum_{r=s}^{t-1} PR[s,r] * CL[r+1,t]`` (arc ``s -> t``);
    * ``OR[s,t] = sum_{d=s+1}^{t} IR[s,d] * CR[d,t]``;
    * mirror images ``OL, CL, PL, IL`` for left halves (head at ``t``);
    * :math:`Z = \sum_r p_{\text{root}}(x_r)\, CL[0,r]\, CR[r,n-1] = p(x)`.

    The outside pass propagates :math:`\partial \log Z / \partial \text{item}` through the same
    recursions in reverse; the expected count of a parameter used by an item is
    ``item * d(log Z)/d(item)``. M-step: normalise the expected counts (a context with zero
    count keeps its value, so the likelihood never decreases). Initialiser: Klein & Manning's
    harmonic completion (see :meth:`harmonic_counts`). Computed in probability space, fine for
    sentences up to ~60 symbols.

    Parameters
    ----------
    min_count : symbols seen fewer times in training become ``"<unk>"`` (useful for word types).
    """

    UNK = "<unk>"

    def __init__(self, min_count: int = 1):
        self.min_count = min_count
        self.vocab: list[str] = []

    # .. symbols and parameters

    def _build_vocab(self, seqs: list[list[str]]) -> None:
        freq: dict[str, int] = defaultdict(int)
        for seq in seqs:
            for x in seq:
                freq[x] += 1
        self.vocab = [self.UNK] + sorted(x for x, c in freq.items() if c >= self.min_count)
        self.index = {x: i for i, x in enumerate(self.vocab)}
        K = len(self.vocab)
        self.root = np.full(K, 1.0 / K)
        self.choose = np.full((K, 2, K), 1.0 / K)   # [head, dir, dependent]
        self.stop = np.full((K, 2, 2), 0.5)         # [head, dir, valence]

    def _batches(self, seqs) -> dict[int, np.ndarray]:
        """Symbol ids grouped by sentence length: ``{n: array (B, n)}``."""
        groups: dict[int, list[list[int]]] = defaultdict(list)
        for seq in seqs:
            if len(seq):
                groups[len(seq)].append([self.index.get(x, 0) for x in seq])
        return {n: np.array(g, dtype=int) for n, g in sorted(groups.items())}

    def _tables(self, T: np.ndarray, floor: float = 0.0):
        """Per-sentence parameters: arcR[b,s,t] = choose(x_t|x_s,R), arcL[b,s,t] = choose(x_s|x_t,L)."""
        arcR = self.choose[T[:, :, None], RIGHT, T[:, None, :]] + floor
        arcL = self.choose[T[:, None, :], LEFT, T[:, :, None]] + floor
        stop = np.clip(self.stop[T], floor, 1 - floor)  # (B, n, dir, valence)
        return arcR, arcL, stop, 1 - stop, self.root[T] + floor

    # .. inside and outside

    def _inside(self, T: np.ndarray, reduce=np.sum, floor: float = 0.0):
        B, n = T.shape
        arcR, arcL, stop, cont, root = self._tables(T, floor)
        ch = {k: np.zeros((B, n, n)) for k in ("OR", "OL", "CR", "CL", "PR", "PL", "IR", "IL")}
        OR, OL, CR, CL, PR, PL, IR, IL = ch.values()
        i = np.arange(n)
        OR[:, i, i] = OL[:, i, i] = 1.0
        CR[:, i, i], PR[:, i, i] = stop[:, :, RIGHT, FIRST], cont[:, :, RIGHT, FIRST]
        CL[:, i, i], PL[:, i, i] = stop[:, :, LEFT, FIRST], cont[:, :, LEFT, FIRST]
        for w in range(1, n):
            s, t, r = _spans(n, w)
            S_, T_ = s[:, None], t[:, None]
            IR[:, s, t] = arcR[:, s, t] * reduce(PR[:, S_, r] * CL[:, r + 1, T_], axis=-1)
            IL[:, s, t] = arcL[:, s, t] * reduce(CR[:, S_, r] * PL[:, r + 1, T_], axis=-1)
            OR[:, s, t] = reduce(IR[:, S_, r + 1] * CR[:, r + 1, T_], axis=-1)
            OL[:, s, t] = reduce(CL[:, S_, r] * IL[:, r, T_], axis=-1)
            CR[:, s, t], PR[:, s, t] = OR[:, s, t] * stop[:, s, RIGHT, LATER], OR[:, s, t] * cont[:, s, RIGHT, LATER]
            CL[:, s, t], PL[:, s, t] = OL[:, s, t] * stop[:, t, LEFT, LATER], OL[:, s, t] * cont[:, t, LEFT, LATER]
        top = root * CL[:, 0, :] * CR[:, :, n - 1]
        return ch, top

    def _outside(self, T: np.ndarray, ch: dict, top: np.ndarray) -> dict:
        """Adjoints ``g[k] = d log Z / d ch[k]`` for every item (B sentences at once)."""
        B, n = T.shape
        arcR, arcL, stop, cont, root = self._tables(T)
        OR, OL, CR, CL, PR, PL, IR, IL = ch.values()
        g = {k: np.zeros_like(v) for k, v in ch.items()}
        Z = top.sum(axis=1, keepdims=True)
        g["CL"][:, 0, :] += root * CR[:, :, n - 1] / Z
        g["CR"][:, :, n - 1] += root * CL[:, 0, :] / Z
        for w in range(n - 1, 0, -1):
            s, t, r = _spans(n, w)
            S_, T_ = s[:, None], t[:, None]
            gOR = (g["CR"][:, s, t] * stop[:, s, RIGHT, LATER] + g["PR"][:, s, t] * cont[:, s, RIGHT, LATER])[..., None]
            gOL = (g["CL"][:, s, t] * stop[:, t, LEFT, LATER] + g["PL"][:, s, t] * cont[:, t, LEFT, LATER])[..., None]
            g["IR"][:, S_, r + 1] += gOR * CR[:, r + 1, T_]
            g["CR"][:, r + 1, T_] += gOR * IR[:, S_, r + 1]
            g["CL"][:, S_, r] += gOL * IL[:, r, T_]
            g["IL"][:, r, T_] += gOL * CL[:, S_, r]
            a = (g["IR"][:, s, t] * arcR[:, s, t])[..., None]
            g["PR"][:, S_, r] += a * CL[:, r + 1, T_]
            g["CL"][:, r + 1, T_] += a * PR[:, S_, r]
            a = (g["IL"][:, s, t] * arcL[:, s, t])[..., None]
            g["CR"][:, S_, r] += a * PL[:, r + 1, T_]
            g["PL"][:, r + 1, T_] += a * CR[:, S_, r]
        return g

    def expected_counts(self, T: np.ndarray):
        """Posterior expected counts for a batch ``T`` (B, n) of equal-length sentences.

        Returns ``(log_Z (B,), root (B,n), arc (B,n,n) with arc[b,h,d] = E[h -> d],
        stop (B,n,2,2), cont (B,n,2,2))``.
        """
        ch, top = self._inside(T)
        Z = top.sum(axis=1)
        if not np.all(Z > 0):
            raise FloatingPointError("a sentence has probability 0 (underflow or impossible)")
        g = self._outside(T, ch, top)
        E = {k: ch[k] * g[k] for k in ch}
        upper = np.triu(np.ones((T.shape[1], T.shape[1])), 1)
        arc = E["IR"] + E["IL"].transpose(0, 2, 1)
        stop, cont = np.zeros(T.shape + (2, 2)), np.zeros(T.shape + (2, 2))
        for X, C in ((stop, "C"), (cont, "P")):
            X[:, :, RIGHT, FIRST] = np.diagonal(E[C + "R"], axis1=1, axis2=2)
            X[:, :, LEFT, FIRST] = np.diagonal(E[C + "L"], axis1=1, axis2=2)
            X[:, :, RIGHT, LATER] = (E[C + "R"] * upper).sum(axis=2)  # head s, over t > s
            X[:, :, LEFT, LATER] = (E[C + "L"] * upper).sum(axis=1)   # head t, over s < t
        return np.log(Z), top / Z[:, None], arc, stop, cont

    # .. EM

    def _accumulate(self, counts, T, root, arc, stop, cont) -> None:
        K = len(self.vocab)
        counts["root"] += np.bincount(T.ravel(), root.ravel(), minlength=K)
        H, D = np.broadcast_arrays(T[:, :, None], T[:, None, :])
        direction = (np.arange(T.shape[1])[None, :] > np.arange(T.shape[1])[:, None]).astype(int)
        flat = (H * 2 + direction) * K + D  # index of (head, dir, dependent) in choose
        counts["choose"] += np.bincount(flat.ravel(), arc.ravel(), minlength=2 * K * K).reshape(K, 2, K)
        for name, X in (("stop", stop), ("cont", cont)):
            counts[name] += _bincount_rows(T, X.reshape(*T.shape, 4), K).reshape(K, 2, 2)

    def _zero_counts(self) -> dict:
        K = len(self.vocab)
        return {"root": np.zeros(K), "choose": np.zeros((K, 2, K)),
                "stop": np.zeros((K, 2, 2)), "cont": np.zeros((K, 2, 2))}

    def harmonic_counts(self, batches: dict) -> dict:
        r"""Klein & Manning's harmonic initial counts (an E-step with a made-up posterior).

        Each word is the root with probability :math:`1/n`, and otherwise takes head
        :math:`h` with probability proportional to :math:`1/|h-d|`. A head's expected number
        of dependents on one side, :math:`E`, sets its valence counts as if it had
        :math:`E` dependents: continue-first :math:`\min(1,E)`, stop-first
        :math:`1-\min(1,E)`, continue-later :math:`\max(E-1, 0)`, stop-later :math:`\min(1,E)`.
        """
        counts = self._zero_counts()
        for n, T in batches.items():
            B = len(T)
            i = np.arange(n)
            dist = np.abs(i[:, None] - i[None, :]).astype(float)
            harm = np.where(dist > 0, 1.0 / np.maximum(dist, 1), 0.0)     # [h, d]
            post = (1 - 1 / n) * harm / np.maximum(harm.sum(axis=0, keepdims=True), 1e-300)
            arc = np.broadcast_to(post, (B, n, n))
            E = np.stack([np.tril(post, -1).sum(axis=1), np.triu(post, 1).sum(axis=1)], axis=-1)
            stop, cont = np.zeros((n, 2, 2)), np.zeros((n, 2, 2))
            cont[:, :, FIRST], stop[:, :, FIRST] = np.minimum(1, E), 1 - np.minimum(1, E)
            cont[:, :, LATER], stop[:, :, LATER] = np.maximum(E - 1, 0), np.minimum(1, E)
            self._accumulate(counts, T, np.full((B, n), 1 / n), arc,
                             np.broadcast_to(stop, (B, n, 2, 2)), np.broadcast_to(cont, (B, n, 2, 2)))
        return counts

    def _m_step(self, counts: dict) -> None:
        def normalise(c, total, old):
            return np.where(total > 0, c / np.where(total > 0, total, 1), old)

        self.root = normalise(counts["root"], counts["root"].sum(), self.root)
        self.choose = normalise(counts["choose"], counts["choose"].sum(-1, keepdims=True), self.choose)
        self.stop = normalise(counts["stop"], counts["stop"] + counts["cont"], self.stop)

    def fit(self, tag_sequences: Iterable[Sequence[str]], n_iter: int = 20) -> list[float]:
        """Harmonic initialisation, then ``n_iter`` EM iterations.

        Returns the corpus log-likelihood :math:`\\sum \\log p(x)` computed in each E-step
        (i.e. of the parameters before that iteration's M-step); it never decreases.
        """
        seqs = [list(x) for x in tag_sequences]
        self._build_vocab(seqs)
        batches = self._batches(seqs)
        self._m_step(self.harmonic_counts(batches))
        history = []
        for _ in range(n_iter):
            counts, ll = self._zero_counts(), 0.0
            for T in batches.values():
                logZ, root, arc, stop, cont = self.expected_counts(T)
                ll += float(logZ.sum())
                self._accumulate(counts, T, root, arc, stop, cont)
            history.append(ll)
            self._m_step(counts)
        return history

    def log_likelihood(self, tag_sequences) -> float:
        """:math:`\\sum_x \\log p(x)` under the current parameters."""
        total = 0.0
        for T in self._batches([list(x) for x in tag_sequences]).values():
            _, top = self._inside(T)
            total += float(np.log(top.sum(axis=1)).sum())
        return total

    # .. Viterbi

    def parse_many(self, tag_sequences) -> list[list[int]]:
        """Viterbi trees (heads, ``-1`` root) of many sentences, batched by length."""
        seqs = [list(x) for x in tag_sequences]
        out: list[list[int] | None] = [None] * len(seqs)
        by_len: dict[int, list[int]] = defaultdict(list)
        for k, seq in enumerate(seqs):
            by_len[len(seq)].append(k)
        for n, ks in by_len.items():
            if n == 0:
                for k in ks:
                    out[k] = []
                continue
            T = np.array([[self.index.get(x, 0) for x in seqs[k]] for k in ks], dtype=int)
            ch, top = self._inside(T, reduce=np.max)
            if not np.all(top.max(axis=1) > 0):  # unseen symbols: decode with floored parameters
                ch, top = self._inside(T, reduce=np.max, floor=1e-12)
            for b, k in enumerate(ks):
                out[k] = self._backtrace(ch, top, b)
        return out

    def parse(self, tags: Sequence[str]) -> list[int]:
        """Viterbi (most probable) tree of one sentence, as heads with ``-1`` for the root."""
        return self.parse_many([tags])[0]

    @staticmethod
    def _backtrace(ch: dict, top: np.ndarray, b: int) -> list[int]:
        OR, OL, CR, CL, PR, PL, IR, IL = (v[b] for v in ch.values())
        n = top.shape[1]
        heads = [-1] * n
        r = int(np.argmax(top[b]))
        stack = [("L", 0, r), ("R", r, n - 1)]  # "R"/"L": a (complete or continuing) half
        while stack:
            kind, s, t = stack.pop()
            if s == t:
                continue
            ks = np.arange(s, t)
            if kind == "R":
                m = s + 1 + int(np.argmax(IR[s, ks + 1] * CR[ks + 1, t]))
                stack += [("IR", s, m), ("R", m, t)]
            elif kind == "L":
                m = s + int(np.argmax(CL[s, ks] * IL[ks, t]))
                stack += [("L", s, m), ("IL", m, t)]
            elif kind == "IR":
                heads[t] = s
                m = s + int(np.argmax(PR[s, ks] * CL[ks + 1, t]))
                stack += [("R", s, m), ("L", m + 1, t)]
            else:
                heads[s] = t
                m = s + int(np.argmax(CR[s, ks] * PL[ks + 1, t]))
                stack += [("R", s, m), ("L", m + 1, t)]
        return heads


def _bincount_rows(T: np.ndarray, X: np.ndarray, K: int) -> np.ndarray:
    """Sum the rows ``X[b, i, :]`` into bins ``T[b, i]``: returns (K, X.shape[-1])."""
    m = X.shape[-1]
    flat = (T[..., None] * m + np.arange(m)).ravel()
    return np.bincount(flat, X.ravel(), minlength=K * m).reshape(K, m)
