"""Chapter 1: statistical dependencies between positions, and the trees they induce.

Zhang & Hashimoto (2021) and Hoover et al. (2021) score every pair of positions of a
sentence by how strongly a masked LM makes them depend on each other (conditional mutual
information, CPMI), read a tree off that score matrix, and compare it with the gold
syntactic tree by unlabelled undirected attachment score (UUAS).

Sections of this module (each starts with a ``# --- name ---`` comment)
-----------------------------------------------------------------------
score matrices
    estimators of pairwise dependence (CMI, CPMI) that produce ``(n, n)`` score matrices.
trees from score matrices
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
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from scipy.special import logsumexp

__all__ = [
    "WINDOW", "cmi_grid", "cmi_gibbs", "gibbs_limit", "mutual_information", "cpmi", "truth_cmi",
    "pieces_to_words", "CMIGrid", "uuas_difference", "grid_rows", "decode",
    "symmetrize", "maximum_spanning_tree", "eisner", "tree_from_scores", "edges_from_heads",
    "uuas", "uuas_counts", "sentence_uuas", "bootstrap_ci",
    "adjacent_edges", "random_tree_edges", "random_projective_tree", "prufer_to_edges",
    "DMV",
]

Edge = tuple[int, int]


# --- score matrices ---
#
# Every estimator below takes a masked LM (the :class:`mlmbook.oracle.MaskedLM` interface), a
# list of sentences (lists of words) and, optionally, for each sentence the indices of the
# words to score (``keep``, e.g. everything but punctuation: the model still *sees* the whole
# sentence). It returns one matrix per sentence over the kept words, ``M[a, b]`` = what word
# ``b`` tells about word ``a``; the diagonal is 0.
#
# -- pieces, pairs and bulk queries --

WINDOW = 9
"""Zhang & Hashimoto score pairs of (sub-word) positions at most 9 apart; wider pairs get 0."""


class _Encoded:
    """A sentence as the model sees it: token ids, the pieces of each word, the scored words."""

    def __init__(self, lm, words, keep=None):
        self.ids, self.pieces = lm.encode_words(list(words))
        self.keep = list(range(len(words))) if keep is None else [int(k) for k in keep]
        self.owner = np.full(len(self.ids), -1)
        for w, ps in enumerate(self.pieces):
            self.owner[ps] = w

    def piece_pairs(self, window: int | None) -> list[tuple[int, int]]:
        """Pairs ``p < q`` of pieces of two different kept words, at most ``window`` apart."""
        kept = [p for w in self.keep for p in self.pieces[w]]
        kept.sort()
        return [(p, q) for a, p in enumerate(kept) for q in kept[a + 1:]
                if self.owner[p] != self.owner[q] and (window is None or q - p <= window)]


def pieces_to_words(M, pieces, keep=None, counts=None) -> np.ndarray:
    r"""Aggregate a piece-level score matrix into a word-level one: the mean over piece pairs.

    .. math:: S_{ab} = \frac{1}{|P_{ab}|} \sum_{(p, q) \in P_{ab}} M_{pq}

    where :math:`P_{ab}` holds the scored pairs of a piece of word ``a`` with a piece of word
    ``b`` (``counts[p, q] > 0``; default: every pair). Words with no scored piece pair get 0.

    Why the mean: the dependence between two multi-piece words is not a function of the
    pairwise dependences of their pieces, so any rule is a heuristic. Zhang & Hashimoto's
    released evaluation averages, and the mean keeps a word split into five pieces on the same
    scale as a whole word (a sum, or a max over more pairs, would favour long words).
    """
    M = np.asarray(M, dtype=float)
    counts = np.ones_like(M) if counts is None else np.asarray(counts, dtype=float)
    keep = list(range(len(pieces))) if keep is None else list(keep)
    S = np.zeros((len(keep), len(keep)))
    for a, wa in enumerate(keep):
        for b, wb in enumerate(keep):
            if a == b or not pieces[wa] or not pieces[wb]:
                continue
            c = counts[np.ix_(pieces[wa], pieces[wb])]
            if c.sum() > 0:
                S[a, b] = (M[np.ix_(pieces[wa], pieces[wb])] * c).sum() / c.sum()
    return S


def _non_special(lm) -> np.ndarray:
    special = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    return np.array([t for t in range(lm.V) if t not in special])


def _row_budget(lm, k: int = 1, elements: float = 5e6) -> int:
    """How many rows of (k, V) float32 log-probabilities fit in ``elements`` numbers."""
    return max(1, int(elements // (k * lm.V)))


def _log_probs(lm, ids: torch.Tensor, pos: torch.Tensor) -> Iterator[tuple[int, np.ndarray]]:
    """``log q`` at the queried positions, in chunks: yields ``(first_row, (r, k, V) float64)``."""
    step = _row_budget(lm, pos.shape[1])
    for s in range(0, len(ids), step):
        yield s, lm.log_probs(ids[s:s + step], pos[s:s + step]).double().numpy()


def _grouped(items, key, budget: int):
    """Consecutive groups of ``items`` sharing ``key(item)``, each of total size <= budget.

    ``key`` returns ``(group_key, size)``; an item larger than the budget is a group alone.
    """
    groups: dict = defaultdict(list)
    for it in items:
        groups[key(it)[0]].append(it)
    for g in groups.values():
        batch, size = [], 0
        for it in g:
            s = key(it)[1]
            if batch and size + s > budget:
                yield batch
                batch, size = [], 0
            batch.append(it)
            size += s
        if batch:
            yield batch


def _progress(iterable, total, desc, show):
    if not show:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, total=total, desc=desc, mininterval=1)


# -- mutual information of two-site joints --


def mutual_information(P) -> np.ndarray:
    r"""Mutual information (nats) of joints ``P[..., a, b]`` (normalised here).

    .. math:: I(A; B) = \sum_{a, b} P_{ab} \log \frac{P_{ab}}{P_{a\cdot} P_{\cdot b}} \;\ge 0,

    with :math:`0 \log 0 = 0`; rounding below zero is clipped to 0. Returns a float for one
    joint, an array for a stack.
    """
    P = np.asarray(P, dtype=float)
    P = P / P.sum(axis=(-2, -1), keepdims=True)
    pa, pb = P.sum(-1, keepdims=True), P.sum(-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(pa) - np.log(pb)), 0.0)
    mi = np.maximum(terms.sum(axis=(-2, -1)), 0.0)
    return float(mi) if mi.ndim == 0 else mi


def _long_run(K: np.ndarray, start: np.ndarray, tol: float = 1e-13) -> np.ndarray:
    r"""Long-run distribution of the Markov chain with kernel ``K`` started from ``start``.

    A strictly positive kernel has a unique stationary distribution: solve
    :math:`\mu (K - I) = 0,\ \sum \mu = 1`. A kernel with zeros (exact oracles) may be
    reducible, and then the limit depends on the start: iterate :math:`\mu K^{2^m}` by
    repeated squaring until it stops moving.
    """
    n = len(K)
    if (K > 0).all():
        M = K.T - np.eye(n)
        M[-1] = 1.0
        rhs = np.zeros(n)
        rhs[-1] = 1.0
        mu = np.clip(np.linalg.solve(M, rhs), 0.0, None)
        return mu / mu.sum()
    prev = start @ K
    for _ in range(64):
        K = K @ K
        K /= K.sum(axis=1, keepdims=True)
        cur = start @ K
        if np.abs(cur - prev).sum() < tol:
            break
        prev = cur
    return cur / cur.sum()


def gibbs_limit(log_a_given_b, log_b_given_a, log_b=None) -> tuple[float, float, np.ndarray]:
    r"""Exact long-run value of Zhang & Hashimoto's Gibbs estimator of CMI for one pair.

    Tables are laid out ``[a, b]`` over candidate sets (renormalised here):
    ``log_a_given_b[a, b]`` :math:`= \log q(x_p = a \mid x_q = b, r)` (columns sum to one),
    ``log_b_given_a[a, b]`` :math:`= \log q(x_q = b \mid x_p = a, r)` (rows sum to one),
    ``log_b`` the MLM's marginal of :math:`x_q` with both positions masked (the chain's start).

    The two-site chain alternates :math:`a \sim q(\cdot \mid b)`, :math:`b \sim q(\cdot \mid a)`.
    Its ``b``-part is a Markov chain with kernel :math:`K = A^\top B`; with :math:`\mu_b` its
    long-run distribution, a fresh draw of ``a`` and the ``b`` it was drawn from are
    distributed as :math:`\pi_p(a, b) = q(a \mid b)\, \mu_b(b)`, and the estimator (the
    average of :math:`\log q(a \mid b) - \log \hat q(a)` with the Rao–Blackwellised marginal
    :math:`\hat q(a) = \operatorname{avg}_t q(a \mid b_t)`) converges to the mutual
    information of :math:`\pi_p`. Likewise for ``b`` with
    :math:`\pi_q(a, b) = \mu_a(a)\, q(b \mid a)`, :math:`\mu_a = A \mu_b`. If the
    conditionals are compatible (the truth), both joints equal the true
    :math:`p(x_p, x_q \mid r)` whenever the chain starts from its true marginal.

    Returns
    -------
    (I_p, I_q, pi_p) : the information in ``x_q`` about ``x_p`` (from ``p``'s conditionals),
    the reverse, and the joint :math:`\pi_p`.
    """
    la = np.asarray(log_a_given_b, dtype=float)
    lb = np.asarray(log_b_given_a, dtype=float)
    A = np.exp(la - logsumexp(la, axis=0, keepdims=True))
    B = np.exp(lb - logsumexp(lb, axis=1, keepdims=True))
    if log_b is None:
        start = np.full(A.shape[1], 1.0 / A.shape[1])
    else:
        start = np.exp(np.asarray(log_b, dtype=float) - logsumexp(log_b))
    mu_b = _long_run(A.T @ B, start)
    pi_p = A * mu_b[None, :]
    pi_q = (A @ mu_b)[:, None] * B
    return mutual_information(pi_p), mutual_information(pi_q), pi_p


# -- conditional mutual information: the grid --


def _grid_limit(a_rows, b_rows, cp, cq, log_start):
    r""":func:`gibbs_limit` from grid rows over (possibly restricted) candidate sets.

    ``a_rows[k]`` is :math:`\log q(x_p = \cdot \mid x_q = c_q[k], r)` over the whole
    vocabulary, ``b_rows[k]`` is :math:`\log q(x_q = \cdot \mid x_p = c_p[k], r)`. The chain's
    long-run law :math:`\mu_b` is computed on the candidates (conditionals renormalised
    there); the mutual informations use the conditionals over the whole vocabulary, so that
    restricting the candidates only restricts which values are *conditioned on*. With every
    token a candidate this is exactly :func:`gibbs_limit`.

    Returns ``(I_p, I_q, pi_p, tv)``: ``pi_p`` (V, K_q) and the total variation distance
    between the chain's law of :math:`x_q` and the start (the both-masked marginal).
    """
    la, lb = a_rows[:, cp].T, b_rows[:, cq]                         # [a, b] on candidates
    A = np.exp(la - logsumexp(la, axis=0, keepdims=True))
    B = np.exp(lb - logsumexp(lb, axis=1, keepdims=True))
    start = np.exp(log_start - logsumexp(log_start))
    mu_b = _long_run(A.T @ B, start)
    mu_a = A @ mu_b
    pi_p = np.exp(a_rows).T * mu_b[None, :]                          # (V, K_q)
    I_p = mutual_information(pi_p)
    I_q = mutual_information(mu_a[:, None] * np.exp(b_rows))        # (K_p, V)
    return I_p, I_q, pi_p, 0.5 * float(np.abs(mu_b - start).sum())


def _candidates(logp: np.ndarray, allowed: np.ndarray, top_mass, max_candidates):
    """Token ids to enumerate at one position, from its both-masked log-marginal ``logp``."""
    lp = logp[allowed]
    order = np.argsort(-lp)
    order = order[np.isfinite(lp[order])]
    if top_mass is not None:
        cum = np.cumsum(np.exp(lp[order] - logsumexp(lp[order])))
        order = order[: int(np.searchsorted(cum, top_mass)) + 1]
    if max_candidates is not None:
        order = order[:max_candidates]
    return allowed[order]


class CMIGrid(list):
    """Word-level CMI matrices (a list), with what the computation cost and found on the way.

    Attributes
    ----------
    rows : int
        Rows (sentences with some positions masked or set) fed to the model.
    pairs : int
        Piece pairs scored.
    mean_candidates : float
        Values enumerated per position (``V`` minus special tokens for the full grid).
    max_left_out : float
        Largest both-masked probability mass outside a candidate set (0 for the full grid).
    tv_to_marginal : list of float
        Per pair, the total variation distance between the chain's long-run law of
        :math:`x_q` and the MLM's own prediction for :math:`x_q` with both positions masked
        (0 for a model whose conditionals are compatible, when started from its marginal).
    joints : dict
        Only with ``keep_joints=True``: ``(sentence, p, q) -> (pi_p, candidates of q)``,
        ``pi_p[a, k]`` the chain's joint of :math:`x_p = a` (token id) and
        :math:`x_q = c_q[k]`.
    """

    def __init__(self):
        super().__init__()
        self.rows = self.pairs = 0
        self.mean_candidates = self.max_left_out = 0.0
        self.tv_to_marginal, self.joints = [], {}


def cmi_grid(lm, sentences, keep=None, window: int | None = WINDOW, top_mass: float | None = None,
             max_candidates: int | None = None, keep_joints: bool = False,
             progress: bool = False) -> CMIGrid:
    r"""Zhang & Hashimoto's conditional mutual information, computed by enumeration.

    For each pair of pieces :math:`p < q` within ``window`` (of two different kept words) and
    the rest :math:`r` of the sentence, the MLM is queried on the whole grid:
    :math:`q(x_p \mid x_q = b, r)` for every candidate ``b`` (``K_q`` rows: mask ``p``, set
    ``q``), :math:`q(x_q \mid x_p = a, r)` for every candidate ``a`` (``K_p`` rows), and both
    marginals with both masked (1 row). :func:`gibbs_limit` then gives, exactly, the value that
    the paper's Gibbs estimator (:func:`cmi_gibbs`) converges to, in both directions.

    Candidates: by default the whole vocabulary (special tokens excluded, and tokens the model
    gives probability 0 with both positions masked), ``2V + 1`` rows per pair. For a large
    vocabulary that is infeasible; ``top_mass`` keeps, at each position, the fewest tokens
    holding that much of the both-masked marginal (and at most ``max_candidates``): the *top-K
    restricted grid*. The chain then runs on the candidates with renormalised conditionals,
    while the informations use each queried conditional over the whole vocabulary. It is an
    approximation, and not a safe one: an MLM's chain may spend much of its time on values its
    both-masked marginal thinks unlikely (see ``tv_to_marginal``), so check it against the full
    grid on a few sentences before trusting it.

    Batching: one both-masked row per pair for every pair of every sentence, then the grid
    rows of many pairs of equal-length sentences together, in as few :meth:`lm.log_probs`
    calls as memory allows; the LM head runs only at the queried position.

    Returns
    -------
    CMIGrid
        One ``(len(keep), len(keep))`` matrix per sentence, ``M[a, b]`` = information about word
        ``a`` carried by word ``b`` (mean over piece pairs, :func:`pieces_to_words`), plus the
        diagnostics listed there.
    """
    keep = [None] * len(sentences) if keep is None else keep
    enc = [_Encoded(lm, s, k) for s, k in zip(sentences, keep)]
    jobs = [(s, p, q) for s, e in enumerate(enc) for p, q in e.piece_pairs(window)]
    allowed = _non_special(lm)
    out = CMIGrid()
    # 1. both positions masked: the marginals, the candidates and the chain's start
    cand, start = {}, {}
    both = list(_grouped(jobs, lambda j: (len(enc[j[0]].ids), 1), _row_budget(lm, 2)))
    for batch in _progress(both, len(both), "CMI grid: marginals", progress):
        ids = torch.tensor([enc[s].ids for s, _, _ in batch])
        pos = torch.tensor([[p, q] for _, p, q in batch])
        r = torch.arange(len(batch))
        ids[r, pos[:, 0]] = ids[r, pos[:, 1]] = lm.mask_id
        for first, lp in _log_probs(lm, ids, pos):
            for job, (lpp, lpq) in zip(batch[first:], lp):
                cp = _candidates(lpp, allowed, top_mass, max_candidates)
                cq = _candidates(lpq, allowed, top_mass, max_candidates)
                cand[job], start[job] = (cp, cq), lpq[cq]
                left = max(1 - np.exp(logsumexp(lpp[cp])), 1 - np.exp(logsumexp(lpq[cq])))
                out.max_left_out = max(out.max_left_out, float(left))
        out.rows += len(batch)
    # 2. the grid: K_q rows "mask p, set q = b" and K_p rows "mask q, set p = a" per pair
    score = {}
    size = lambda j: (len(enc[j[0]].ids), len(cand[j][0]) + len(cand[j][1]))  # noqa: E731
    grids = list(_grouped(jobs, size, _row_budget(lm)))
    for batch in _progress(grids, len(grids), "CMI grid", progress):
        rows, pos = [], []
        for s, p, q in batch:
            cp, cq = cand[(s, p, q)]
            base = torch.tensor(enc[s].ids)
            for query, other, values in ((p, q, cq), (q, p, cp)):
                r = base.repeat(len(values), 1)
                r[:, query] = lm.mask_id
                r[:, other] = torch.as_tensor(values)
                rows.append(r)
                pos += [query] * len(values)
        ids, pos = torch.cat(rows), torch.tensor(pos)[:, None]
        lp = np.concatenate([x[:, 0] for _, x in _log_probs(lm, ids, pos)])
        at = 0
        for job in batch:
            cp, cq = cand[job]
            a_rows, b_rows = lp[at:at + len(cq)], lp[at + len(cq):at + len(cq) + len(cp)]
            at += len(cq) + len(cp)
            I_p, I_q, pi_p, tv = _grid_limit(a_rows, b_rows, cp, cq, start[job])
            score[job] = (I_p, I_q)
            out.tv_to_marginal.append(tv)
            if keep_joints:
                out.joints[job] = (pi_p, cq)
        out.rows += len(ids)
    out.pairs = len(jobs)
    out.mean_candidates = float(np.mean([len(c) for cs in cand.values() for c in cs])) if cand else 0.0
    out.extend(_to_words(enc, jobs, score))
    return out


def grid_rows(lm, sentences, keep=None, window: int | None = WINDOW) -> int:
    """Forward passes :func:`cmi_grid` needs with the full vocabulary: ``2K + 1`` per piece pair,
    ``K`` the number of non-special tokens. Use it to size a corpus before running the grid."""
    keep = [None] * len(sentences) if keep is None else keep
    K = len(_non_special(lm))
    return sum(len(_Encoded(lm, s, k).piece_pairs(window)) for s, k in zip(sentences, keep)) * (2 * K + 1)


def _to_words(enc, jobs, score) -> list[np.ndarray]:
    """Piece-level directional scores -> word-level matrices over each sentence's kept words."""
    mats = [np.zeros((len(e.ids), len(e.ids))) for e in enc]
    counts = [np.zeros_like(m) for m in mats]
    for (s, p, q) in jobs:
        mats[s][p, q], mats[s][q, p] = score[(s, p, q)]
        counts[s][p, q] = counts[s][q, p] = 1
    return [pieces_to_words(m, e.pieces, e.keep, c) for m, c, e in zip(mats, counts, enc)]


# -- conditional mutual information: the paper's Gibbs estimator --


def cmi_gibbs(lm, sentences, keep=None, window: int | None = WINDOW, chains: int = 4,
              steps: int = 50, burn_in: int = 10, seed: int = 0, progress: bool = False) -> list:
    r"""Zhang & Hashimoto's Monte Carlo estimate of the conditional mutual information.

    For each pair of pieces :math:`(p, q)` (as in :func:`cmi_grid`), ``chains`` two-site Gibbs
    chains start with both positions masked and repeat ``steps`` times: draw
    :math:`a_t \sim q(x_p \mid x_q = b_{t-1}, r)` (at ``t = 0`` with ``q`` still masked), then
    :math:`b_t \sim q(x_q \mid x_p = a_t, r)`. After ``burn_in`` steps, with
    :math:`T` kept steps over all chains,

    .. math::
        \hat I_p = \frac1T \sum_t \Big[\log q(a_t \mid b_{t-1}, r) - \log \hat q(a_t)\Big],
        \qquad \hat q(a) = \frac1T \sum_{t'} q(a \mid b_{t'-1}, r),

    the second term being the Rao–Blackwellised marginal (an average of whole conditional
    distributions, not of indicator counts), and symmetrically :math:`\hat I_q`. The paper
    runs one chain of 2,000 steps (400 burn-in) per pair on a GPU; several short chains are the
    CPU-friendly equivalent. Its limit is :func:`gibbs_limit`.

    Batching: every chain of every pair of all equal-length sentences advances together, one
    :meth:`lm.log_probs` call per half-step.

    Returns
    -------
    list of ``(len(keep), len(keep))`` matrices, as :func:`cmi_grid`.
    """
    if not 0 <= burn_in < steps:
        raise ValueError(f"need 0 <= burn_in < steps, got burn_in={burn_in}, steps={steps}")
    keep = [None] * len(sentences) if keep is None else keep
    enc = [_Encoded(lm, s, k) for s, k in zip(sentences, keep)]
    jobs = [(s, p, q) for s, e in enumerate(enc) for p, q in e.piece_pairs(window)]
    gen = torch.Generator().manual_seed(seed)
    budget = max(chains, _row_budget(lm, elements=4e6))
    groups = list(_grouped(jobs, lambda j: (len(enc[j[0]].ids), chains), budget))
    score = {}
    for batch in _progress(groups, len(groups), "CMI Gibbs", progress):
        ids = torch.tensor([enc[s].ids for s, _, _ in batch])
        P, Q = torch.tensor([p for _, p, _ in batch]), torch.tensor([q for _, _, q in batch])
        I_p, I_q = _gibbs_chains(lm, ids, P, Q, chains, steps, burn_in, gen)
        for job, a, b in zip(batch, I_p, I_q):
            score[job] = (a, b)
    return _to_words(enc, jobs, score)


def _gibbs_chains(lm, ids, P, Q, chains, steps, burn_in, gen):
    """Run the chains of a batch of pairs; returns the two directional estimates per pair."""
    n_pairs = len(ids)
    x = ids.repeat_interleave(chains, 0)
    sites = (P.repeat_interleave(chains), Q.repeat_interleave(chains))
    rows = torch.arange(len(x))
    x[rows, sites[0]] = x[rows, sites[1]] = lm.mask_id
    kept = steps - burn_in
    marg = [torch.zeros(len(x), lm.V, dtype=torch.float64) for _ in range(2)]
    draws = [torch.zeros(len(x), kept, dtype=torch.long) for _ in range(2)]
    logq = [torch.zeros(len(x), kept, dtype=torch.float64) for _ in range(2)]
    for t in range(steps):
        for k, site in enumerate(sites):
            x[rows, site] = lm.mask_id
            lp = lm.log_probs(x, site[:, None])[:, 0].double()
            probs = lp.exp()
            draw = torch.multinomial(probs, 1, generator=gen)[:, 0]
            x[rows, site] = draw
            if t >= burn_in:
                draws[k][:, t - burn_in] = draw
                logq[k][:, t - burn_in] = lp[rows, draw]
                marg[k] += probs
    estimates = []
    for k in range(2):
        pooled = marg[k].view(n_pairs, chains, -1).sum(1) / (chains * kept)       # (pairs, V)
        log_m = torch.log(pooled).repeat_interleave(chains, 0).gather(1, draws[k])  # (rows, kept)
        est = (logq[k] - log_m).view(n_pairs, chains * kept).mean(1)
        estimates.append(est.numpy())
    return estimates


# -- conditional pointwise mutual information (Hoover et al. 2021) --


def cpmi(lm, sentences, keep=None, progress: bool = False) -> list:
    r"""Hoover et al.'s contextual PMI at the observed words, for every pair of kept words.

    .. math::
        \text{CPMI}(a; b) = \log q(w_a \mid s_{\setminus a}) - \log q(w_a \mid s_{\setminus \{a, b\}}),

    where :math:`s_{\setminus A}` is the sentence with the words in ``A`` masked (all their
    pieces). How much does seeing word ``b`` raise the model's belief in the actual word ``a``?

    Multi-piece words, by the chain rule over pieces from left to right: for word ``a`` with
    pieces :math:`t_1 \dots t_m` and a context ``C`` (the sentence with word ``a`` masked, and
    word ``b`` too for the second term),

    .. math:: \log q(w_a \mid C) = \sum_{k=1}^{m} \log q(t_k \mid t_1 \dots t_{k-1}, C),

    the ``k``-th factor querying piece ``k`` with pieces ``k..m`` masked and ``1..k-1``
    revealed. This is exact for a model whose conditionals are compatible; for an MLM it is one
    well-defined choice among several (another order gives another number). A piece that is a
    special token (``[UNK]``, which the interface never predicts) is left out of the product;
    a word with no other piece gets CPMI 0.

    Batching: the ``m_a (1 + n_keep - 1)`` rows of every word of every sentence go through a few
    length-bucketed :meth:`lm.log_probs` calls.

    Returns
    -------
    list of ``(len(keep), len(keep))`` matrices, ``M[a, b] = CPMI(a; b)``.
    """
    keep = [None] * len(sentences) if keep is None else keep
    enc = [_Encoded(lm, s, k) for s, k in zip(sentences, keep)]
    unpredictable = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    rows = []   # (sentence, a, b or -1, token row, query position, target id)
    for s, e in enumerate(enc):
        for a in e.keep:
            for b in [-1] + [b for b in e.keep if b != a]:
                for k, piece in enumerate(e.pieces[a]):
                    if e.ids[piece] in unpredictable:     # e.g. [UNK]: the model never predicts it
                        continue
                    r = list(e.ids)
                    for p in e.pieces[a][k:] + (e.pieces[b] if b >= 0 else []):
                        r[p] = lm.mask_id
                    rows.append((s, a, b, r, piece, e.ids[piece]))
    logq = defaultdict(float)
    groups = list(_grouped(rows, lambda x: (len(x[3]), 1), _row_budget(lm)))
    for batch in _progress(groups, len(groups), "CPMI", progress):
        ids = torch.tensor([x[3] for x in batch])
        pos = torch.tensor([[x[4]] for x in batch])
        for first, lp in _log_probs(lm, ids, pos):
            for (s, a, b, _, _, target), row in zip(batch[first:], lp):
                logq[(s, a, b)] += float(row[0, target])
    mats = []
    for s, e in enumerate(enc):
        M = np.zeros((len(e.keep), len(e.keep)))
        for ia, a in enumerate(e.keep):
            for ib, b in enumerate(e.keep):
                if a != b:
                    M[ia, ib] = logq[(s, a, -1)] - logq[(s, a, b)]
        mats.append(M)
    return mats


# -- the ceiling: the same CMI from the toy language's exact joints --


def truth_cmi(grammar, sentences, keep=None, window: int | None = WINDOW,
              progress: bool = False) -> list:
    r"""The conditional mutual information of the toy language itself, from exact joints.

    .. math:: I(x_a; x_b \mid r) = \sum_{u, v} p(u, v \mid r) \log
              \frac{p(u, v \mid r)}{p(u \mid r)\, p(v \mid r)}

    with :math:`p(x_a, x_b \mid r)` from :meth:`mlmbook.language.Grammar.pair_joints` (one
    batched inside–outside pass per first position). This is what :func:`cmi_grid` returns
    for a model whose conditionals are the truth's; a tree read off it is the best any
    CMI-based parser could do on this language. Symmetric; pairs beyond ``window`` get 0.
    """
    keep = [None] * len(sentences) if keep is None else keep
    mats = []
    for words, kp in _progress(zip(sentences, keep), len(sentences), "truth CMI", progress):
        kp = list(range(len(words))) if kp is None else list(kp)
        pairs = [(kp[a], kp[b]) for a in range(len(kp)) for b in range(a + 1, len(kp))
                 if window is None or kp[b] - kp[a] <= window]
        where = {w: a for a, w in enumerate(kp)}
        M = np.zeros((len(kp), len(kp)))
        if pairs:
            for (i, j), joint in grammar.pair_joints(list(words), pairs):
                M[where[i], where[j]] = M[where[j], where[i]] = mutual_information(joint)
        mats.append(M)
    return mats


# -- from a score matrix to a tree --


def decode(M, how: str = "max", projective: bool = False, neighbour_bonus: float = 1e-6) -> set[Edge]:
    r"""The tree a score matrix implies: symmetrise, break ties toward neighbours, decode.

    .. math:: S = \operatorname{sym}(M) + \epsilon\, [\, |i - j| = 1 \,]

    then :func:`tree_from_scores` (maximum spanning tree, or Eisner's best projective tree).
    The small bonus :math:`\epsilon` only matters between equal scores — frequent for exact
    distributions, whose CMI is exactly 0 for many pairs — and prefers the adjacent pair,
    as Zhang & Hashimoto's evaluation does.
    """
    S = symmetrize(M, how)
    n = len(S)
    if n > 1:
        i = np.arange(n - 1)
        S[i, i + 1] += neighbour_bonus
        S[i + 1, i] += neighbour_bonus
    return tree_from_scores(S, projective=projective)


# -- comparing two parsers on the same sentences --


def uuas_difference(correct_a, correct_b, total, n_boot: int = 2000, seed=0,
                    level: float = 0.95) -> tuple[float, float, float]:
    r"""Difference of two parsers' corpus UUAS on the same sentences, with a paired bootstrap.

    .. math:: \Delta = \frac{\sum_k (c^A_k - c^B_k)}{\sum_k g_k}

    for per-sentence correct-edge counts :math:`c^A_k, c^B_k` and gold-edge counts
    :math:`g_k` (from :func:`uuas_counts`). Each bootstrap replicate draws sentences with
    replacement, *the same draw for both parsers*, so that sentence difficulty, shared by
    both, cancels; the interval is the percentile interval of the replicates.

    Returns
    -------
    (diff, lo, hi)
    """
    ca, cb, g = (np.asarray(x, dtype=float) for x in (correct_a, correct_b, total))
    if not (ca.shape == cb.shape == g.shape) or ca.ndim != 1 or len(g) == 0:
        raise ValueError("need three equal-length, non-empty 1-d arrays")
    idx = np.random.default_rng(seed).integers(0, len(g), size=(n_boot, len(g)))
    reps = (ca[idx] - cb[idx]).sum(axis=1) / np.maximum(g[idx].sum(axis=1), 1)
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float((ca - cb).sum() / g.sum()), float(lo), float(hi)


# --- trees from score matrices ---
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
        edges.add(_edge(int(j), int(link[j])))
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


def _bincount_rows(T: np.ndarray, X: np.ndarray, K: int) -> np.ndarray:
    """Sum the rows ``X[b, i, :]`` into bins ``T[b, i]``: returns (K, X.shape[-1])."""
    m = X.shape[-1]
    flat = (T[..., None] * m + np.arange(m)).ravel()
    return np.bincount(flat, X.ravel(), minlength=K * m).reshape(K, m)


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
    sentences of equal length). Each item is the total probability of the partial derivations
    it stands for:

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
    sentences up to ~60 tags. Parameters are dense arrays, ``choose`` is ``(K, 2, K)`` for
    ``K`` symbols. Cost: 20 EM iterations on the 2,658 UD EWT dev+test sentences of 2..15
    words take about 1 s on one CPU core.

    Attributes after :meth:`fit`: ``vocab`` (``vocab[0] == "<unk>"``), ``root`` (K,),
    ``choose[head, dir, dependent]``, ``stop[head, dir, valence]``.

    Parameters
    ----------
    min_count : symbols seen fewer times in training become ``"<unk>"`` (useful for word types).
    """

    UNK = "<unk>"

    def __init__(self, min_count: int = 1):
        self.min_count = min_count
        self.vocab: list[str] = []

    # .. symbols and parameters

    @staticmethod
    def symbols(sentences, unit: str = "upos") -> list[list[str]]:
        """Symbol sequences to train on: UPOS tags (``unit="upos"``) or lower-cased word
        types (``unit="word"``; pair with ``min_count`` to bound the vocabulary)."""
        if unit == "upos":
            return [list(s.upos) for s in sentences]
        if unit == "word":
            return [[w.lower() for w in s.words] for s in sentences]
        raise ValueError(f"unit must be 'upos' or 'word', got {unit!r}")

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
        """Parameters laid out per sentence of the batch ``T`` (B, n).

        ``arcR[b,s,t] = choose(x_t | x_s, R)``, ``arcL[b,s,t] = choose(x_s | x_t, L)`` (s < t),
        ``stop[b,h,dir,valence]``, ``cont = 1 - stop``, ``root[b,h]``; ``floor`` is added for
        decoding sentences with unseen symbols.
        """
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
            CR[:, s, t] = OR[:, s, t] * stop[:, s, RIGHT, LATER]
            PR[:, s, t] = OR[:, s, t] * cont[:, s, RIGHT, LATER]
            CL[:, s, t] = OL[:, s, t] * stop[:, t, LEFT, LATER]
            PL[:, s, t] = OL[:, s, t] * cont[:, t, LEFT, LATER]
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
            # C = O * stop and P = O * (1 - stop), at valence LATER since t > s
            gOR = (g["CR"][:, s, t] * stop[:, s, RIGHT, LATER]
                   + g["PR"][:, s, t] * cont[:, s, RIGHT, LATER])[..., None]
            gOL = (g["CL"][:, s, t] * stop[:, t, LEFT, LATER]
                   + g["PL"][:, s, t] * cont[:, t, LEFT, LATER])[..., None]
            # O[s,t] = sum_d I * C
            g["IR"][:, S_, r + 1] += gOR * CR[:, r + 1, T_]
            g["CR"][:, r + 1, T_] += gOR * IR[:, S_, r + 1]
            g["CL"][:, S_, r] += gOL * IL[:, r, T_]
            g["IL"][:, r, T_] += gOL * CL[:, S_, r]
            # I[s,t] = arc * sum_r P * C
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
        counts["choose"] += np.bincount(flat.ravel(), arc.ravel(),
                                        minlength=2 * K * K).reshape(K, 2, K)
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
                             np.broadcast_to(stop, (B, n, 2, 2)),
                             np.broadcast_to(cont, (B, n, 2, 2)))
        return counts

    def _m_step(self, counts: dict) -> None:
        def normalise(c, total, old):
            return np.where(total > 0, c / np.where(total > 0, total, 1), old)

        self.root = normalise(counts["root"], counts["root"].sum(), self.root)
        self.choose = normalise(counts["choose"], counts["choose"].sum(-1, keepdims=True),
                                self.choose)
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

