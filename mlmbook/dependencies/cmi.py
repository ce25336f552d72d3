r"""Zhang & Hashimoto's conditional mutual information, computed exactly by enumeration.

For a pair of positions :math:`p, q` and the rest :math:`r` of a sentence, an MLM gives two
conditionals, :math:`q(x_p \mid x_q = b, r)` and :math:`q(x_q \mid x_p = a, r)`. The two-site
Gibbs chain that alternates them settles into a joint; its mutual information is what the
paper's sampler (:mod:`mlmbook.dependencies.gibbs`) estimates, and :func:`gibbs_limit` computes
it exactly from the two tables. :func:`cmi_grid` fills the tables for every pair of every
sentence — over the whole vocabulary, or over a top-``K`` candidate set per position with the
mass it leaves out and a bound on the error that can cause — and :func:`truth_cmi` gives the
same quantity for the toy language's exact joints.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp

from .. import queries
from ..stats import mutual_information
from .pieces import WINDOW, encode_all, non_special, to_words

if TYPE_CHECKING:
    from ..models.base import MaskedLM
    from ..toy import Grammar

__all__ = ["gibbs_limit", "CMIGrid", "GridSettings", "cmi_grid", "grid_rows", "truth_cmi",
           "left_out_bound"]


def _conditional(log_table: np.ndarray, axis: int) -> np.ndarray:
    """``exp(log_table)`` normalised along ``axis``; a slice with no mass at all (every entry
    ``-inf``: the exact oracle can say that no candidate is possible) stays all zeros."""
    lse = logsumexp(log_table, axis=axis, keepdims=True)
    return np.exp(log_table - np.where(np.isfinite(lse), lse, 0.0))


def _kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""The ``b``-chain's kernel :math:`A^\top B`; a value from which the candidates offer no move
    (a zero slice of :func:`_conditional`) stays where it is, so every row sums to one."""
    K = A.T @ B
    K[np.diag_indices_from(K)] += np.clip(1.0 - K.sum(axis=1), 0.0, None)
    return K


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
    (I_p, I_q, pi_p)
        The information in ``x_q`` about ``x_p`` (from ``p``'s conditionals), the reverse,
        and the joint :math:`\pi_p`.
    """
    la = np.asarray(log_a_given_b, dtype=float)
    lb = np.asarray(log_b_given_a, dtype=float)
    A, B = _conditional(la, 0), _conditional(lb, 1)
    if log_b is None:
        start = np.full(A.shape[1], 1.0 / A.shape[1])
    else:
        start = np.exp(np.asarray(log_b, dtype=float) - logsumexp(log_b))
    mu_b = _long_run(_kernel(A, B), start)
    pi_p = A * mu_b[None, :]
    pi_q = (A @ mu_b)[:, None] * B
    return mutual_information(pi_p), mutual_information(pi_q), pi_p


def left_out_bound(eps: float, n_values: int) -> float:
    r"""Largest change in a mutual information that leaving out mass ``eps`` of one variable can
    make.

    With :math:`Z = [\,Y \in C\,]`, :math:`P(Z = 0) = \varepsilon`, the chain rule gives
    :math:`I(X;Y) = I(X;Z) + (1-\varepsilon)\, I(X;Y \mid Z=1) + \varepsilon\, I(X;Y \mid Z=0)`,
    and :math:`0 \le I(X;Z) \le h(\varepsilon)`, :math:`0 \le I(X;Y \mid Z) \le \log N`. Hence

    .. math:: |I(X;Y) - I(X;Y \mid Y \in C)| \;\le\; h(\varepsilon) + \varepsilon \log N,

    :math:`h` the binary entropy (nats), :math:`N` the number of values ``n_values``.
    """
    eps = float(min(max(eps, 0.0), 1.0))
    if eps < 1e-12:
        return 0.0
    h = -eps * np.log(eps) - (1 - eps) * np.log1p(-eps) if eps < 1 else 0.0
    return float(h + eps * np.log(max(n_values, 1)))


def _grid_limit(a_rows, b_rows, cp, cq, log_start):
    r""":func:`gibbs_limit` from grid rows over (possibly restricted) candidate sets.

    ``a_rows[k]`` is :math:`\log q(x_p = \cdot \mid x_q = c_q[k], r)` over the whole vocabulary,
    ``b_rows[k]`` is :math:`\log q(x_q = \cdot \mid x_p = c_p[k], r)`. The chain's long-run law
    :math:`\mu_b` is computed on the candidates; the informations use the conditionals over the
    whole vocabulary, so restricting the candidates only restricts what is *conditioned on*. Returns
    ``(I_p, I_q, tv, escape_q, escape_p)``: the total variation between the chain's law of
    :math:`x_q` and the start, and the chance that one step of the *unrestricted* chain from the
    restricted chain's law leaves the candidates of ``q`` (resp. ``p``).
    """
    la, lb = a_rows[:, cp].T, b_rows[:, cq]                         # [a, b] on candidates
    A, B = _conditional(la, 0), _conditional(lb, 1)
    start = np.exp(log_start - logsumexp(log_start))
    mu_b = _long_run(_kernel(A, B), start)
    mu_a = A @ mu_b
    pi_p = np.exp(a_rows).T * mu_b[None, :]                          # (V, K_q)
    I_p = mutual_information(pi_p)
    I_q = mutual_information(mu_a[:, None] * np.exp(b_rows))        # (K_p, V)
    escape_q = float(mu_a @ (1 - np.exp(logsumexp(b_rows[:, cq], axis=1))))
    escape_p = float(mu_b @ (1 - np.exp(logsumexp(a_rows[:, cp], axis=1))))
    return I_p, I_q, 0.5 * float(np.abs(mu_b - start).sum()), escape_q, escape_p


def _candidates(logp: np.ndarray, allowed: np.ndarray, max_candidates):
    """Token ids to enumerate at one position, from its both-masked log-marginal ``logp``."""
    lp = logp[allowed]
    order = np.argsort(-lp)
    return allowed[order[np.isfinite(lp[order])][:max_candidates]]


def top_stable(values: np.ndarray, cap: int) -> np.ndarray:
    """``np.argsort(-values, kind="stable")[:cap]`` (ties in index order) without sorting all of
    ``values``: only those at or above the ``cap``-th largest are sorted, O(V + cap log cap)."""
    n = len(values)
    if cap >= n:
        return np.argsort(-values, kind="stable")
    if cap <= 0:
        return np.zeros(0, dtype=np.int64)
    threshold = np.partition(values, n - cap)[n - cap]              # the cap-th largest
    above = np.flatnonzero(values > threshold)
    idx = np.concatenate([above, np.flatnonzero(values == threshold)[: cap - len(above)]])
    idx.sort()
    return idx[np.argsort(-values[idx], kind="stable")]


def _ranked(logp: np.ndarray, allowed: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``cap`` likeliest allowed token ids of a position (none of probability 0), log-probs."""
    lp = logp[allowed]
    order = top_stable(lp, cap)
    order = order[np.isfinite(lp[order])]
    return allowed[order], lp[order]


def _share(ranked: list, total: int) -> list[int]:
    r"""How many of its ranked candidates each position of one sentence gets, ``total`` in all.

    One each, then greedy on the mass left out: the next candidate goes to the position whose
    candidates leave the most of its both-masked prediction out, which minimises the largest
    left-out mass :math:`\varepsilon_i` (it sets the pairs' error bounds, :func:`left_out_bound`).
    """
    gains = []  # (mass left out before this candidate, position, rank)
    for i, (_, lp) in enumerate(ranked):
        left = 1.0 - np.concatenate([[0.0], np.cumsum(np.exp(lp))[:-1]])
        gains.append(np.stack([left, np.full(len(lp), i), np.arange(len(lp))], axis=1))
    g = np.concatenate(gains) if gains else np.zeros((0, 3))
    first = g[:, 2] == 0                             # one candidate each, then by the mass left out
    rest = g[~first][np.lexsort((g[~first][:, 2], g[~first][:, 1], -g[~first][:, 0]))]
    taken = np.concatenate([g[first], rest[: max(0, total - int(first.sum()))]])
    return np.bincount(taken[:, 1].astype(int), minlength=len(ranked)).tolist()


class CMIGrid(list):
    """Word-level CMI matrices (a list), with what the computation cost and found on the way.

    Attributes
    ----------
    rows, pairs : int
        Rows fed to the model; piece pairs scored.
    jobs : list of (sentence, p, q)
        The piece pairs, in the order of the per-pair lists below.
    mean_candidates : float
        Values enumerated per position (``V`` minus special tokens for the full grid).
    left_out : list of float
        Per pair, the larger of the both-masked mass outside each position's candidates and the
        chance that one step of the unrestricted chain leaves them (0 for the full grid).
    error_bound : list of float
        Per pair, :func:`left_out_bound` of ``left_out``: how far, at most, the pair's CMI can be
        from the full grid's, *if* the restricted chain's law is the full chain's on the candidates
        (the escape probability in ``left_out`` checks that it nearly is).
    max_left_out, max_error_bound : float
        The largest of each over all pairs.
    tv_to_marginal : list of float
        Per pair, the total variation distance between the chain's long-run law of :math:`x_q` and
        the MLM's both-masked prediction for it (0 for compatible conditionals started there).
    """

    def __init__(self):
        super().__init__()
        self.rows = self.pairs = 0
        self.mean_candidates = self.max_left_out = self.max_error_bound = 0.0
        self.jobs, self.left_out, self.error_bound = [], [], []
        self.tv_to_marginal = []


def _grid_rows(enc, job, cp, cq, mask_id):
    """The ``K_q`` rows "mask p, set q = b" then the ``K_p`` rows "mask q, set p = a"."""
    s, p, q = job
    base = np.asarray(enc[s].ids)
    rows, pos = [], []
    for query, other, values in ((p, q, cq), (q, p, cp)):
        R = np.repeat(base[None], len(values), 0)
        R[:, query] = mask_id
        R[:, other] = values
        rows += R.tolist()
        pos += [[query]] * len(values)
    return rows, pos


@dataclass(frozen=True)
class GridSettings:
    """How :func:`cmi_grid` shares out ``max_candidates`` and reports progress.

    ``allocate="sentence"``: ``K`` per position on average over each sentence's pairs, more where
    the prediction is flat (:func:`_share`); ``"position"``: exactly the top ``K`` at each
    position. ``progress``: show progress bars.
    """

    allocate: str = "sentence"
    progress: bool = False


def cmi_grid(lm: "MaskedLM", sentences, keep=None, window: int | None = WINDOW,
             max_candidates: int | None = None, *,
             settings: GridSettings = GridSettings()) -> CMIGrid:
    r"""Zhang & Hashimoto's conditional mutual information, computed by enumeration.

    For each pair of pieces :math:`p < q` within ``window`` (of two different kept words) and
    the rest :math:`r` of the sentence, the MLM is queried on the whole grid:
    :math:`q(x_p \mid x_q = b, r)` for every candidate ``b`` (``K_q`` rows: mask ``p``, set
    ``q``), :math:`q(x_q \mid x_p = a, r)` for every candidate ``a`` (``K_p`` rows), and both
    marginals with both masked (1 row). :func:`gibbs_limit` then gives, exactly, the value that
    the paper's Gibbs estimator (:func:`mlmbook.dependencies.cmi_gibbs`) converges to, in both
    directions.

    Candidates: by default the whole vocabulary (special tokens, and tokens of probability 0 with
    both positions masked, excluded), ``2V + 1`` rows per pair; with ``max_candidates=K`` the MLM's
    own likeliest values with both positions masked, ``2K + 1`` rows per pair, the chain running on
    the candidates (renormalised) while the informations use each queried conditional over the whole
    vocabulary, with the mass left out and a bound on the error it can cause (:class:`CMIGrid`).

    Parameters
    ----------
    lm : MaskedLM
    sentences : list of list of str
    keep : list of list of int, optional
        Per sentence, the words to score (default all).
    window : int or None
        Largest distance between two scored pieces (None: every pair).
    max_candidates : int, optional
        ``K``, the restricted grid (see above).
    settings : GridSettings
        How ``K`` is shared out (``allocate``), and ``progress``.

    Returns
    -------
    CMIGrid
        One ``(len(keep), len(keep))`` matrix per sentence, ``M[a, b]`` = information about word
        ``a`` carried by word ``b`` (mean over piece pairs, :func:`pieces_to_words`), plus the
        diagnostics listed there.
    """
    allocate, progress = settings.allocate, settings.progress
    enc = encode_all(lm, sentences, keep)
    jobs = [(s, p, q) for s, e in enumerate(enc) for p, q in e.piece_pairs(window)]
    allowed = non_special(lm)
    n_words = len(allowed)
    out = CMIGrid()
    out.jobs = list(jobs)
    # 1. both positions masked: the marginals, the candidates and the chain's start
    both = []
    for s, p, q in jobs:
        r = list(enc[s].ids)
        r[p] = r[q] = lm.mask_id
        both.append(r)
    if allocate not in ("sentence", "position"):
        raise ValueError(f"allocate must be 'sentence' or 'position', not {allocate!r}")
    shared = max_candidates is not None and allocate == "sentence"
    cand, start, masked_out, ranked = {}, {}, {}, {}
    both_masked = [[p, q] for _, p, q in jobs]
    for idx, lp in queries.iter_log_probs(lm, both, both_masked, progress=progress and "CMI grid: marginals"):
        for b, (lpp, lpq) in zip(idx, lp):
            if shared:  # keep the ranked head of each prediction; shared out per sentence below
                cap = min(n_words, 8 * max_candidates)
                ranked[jobs[b]] = (_ranked(lpp, allowed, cap), _ranked(lpq, allowed, cap))
                continue
            cp = _candidates(lpp, allowed, max_candidates)
            cq = _candidates(lpq, allowed, max_candidates)
            cand[jobs[b]], start[jobs[b]] = (cp, cq), lpq[cq]
            masked_out[jobs[b]] = (1 - np.exp(logsumexp(lpp[cp])), 1 - np.exp(logsumexp(lpq[cq])))
    for s in sorted({j[0] for j in ranked}):
        mine = [j for j in jobs if j[0] == s]
        sizes = _share([r for j in mine for r in ranked[j]], 2 * max_candidates * len(mine))
        for j, (n_p, n_q) in zip(mine, zip(sizes[::2], sizes[1::2])):
            (ip, lpp), (iq, lpq) = ranked[j]
            cand[j], start[j] = (ip[:n_p], iq[:n_q]), lpq[:n_q]
            masked_out[j] = (1 - np.exp(logsumexp(lpp[:n_p])), 1 - np.exp(logsumexp(lpq[:n_q])))
    out.rows += len(jobs)
    # 2. the grid, a slice of pairs at a time (pairs of equal-length sentences together)
    cap = max(1, queries.budget() // lm.V)
    order = sorted(jobs, key=lambda j: len(enc[j[0]].ids))
    slices, cur, size = [], [], 0
    for job in order:
        k = sum(len(c) for c in cand[job])
        if cur and size + k > cap:
            slices.append(cur)
            cur, size = [], 0
        cur.append(job)
        size += k
    if cur:
        slices.append(cur)
    found = {}
    for batch in queries.progress_bar(slices, len(slices), "CMI grid", progress):
        rows, pos, first = [], [], []
        for job in batch:
            first.append(len(rows))
            r, p = _grid_rows(enc, job, *cand[job], lm.mask_id)
            rows += r
            pos += p
        lp = np.empty((len(rows), lm.V))
        for idx, arr in queries.iter_log_probs(lm, rows, pos):
            lp[idx] = arr[:, 0]
        for job, at in zip(batch, first):
            cp, cq = cand[job]
            a_rows, b_rows = lp[at:at + len(cq)], lp[at + len(cq):at + len(cq) + len(cp)]
            I_p, I_q, tv, esc_q, esc_p = _grid_limit(a_rows, b_rows, cp, cq, start[job])
            found[job] = (I_p, I_q, tv, max(*masked_out[job], esc_q, esc_p, 0.0))
        out.rows += len(rows)
    out.pairs = len(jobs)
    out.tv_to_marginal = [found[j][2] for j in jobs]
    out.left_out = [found[j][3] if found[j][3] > 1e-12 else 0.0 for j in jobs]
    out.error_bound = [left_out_bound(e, n_words) for e in out.left_out]
    out.max_left_out = max(out.left_out, default=0.0)
    out.max_error_bound = max(out.error_bound, default=0.0)
    out.mean_candidates = float(np.mean([len(c) for cs in cand.values() for c in cs])) if cand else 0.0
    out.extend(to_words(enc, jobs, {j: found[j][:2] for j in jobs}))
    return out


def grid_rows(lm: "MaskedLM", sentences, keep=None, window: int | None = WINDOW,
              max_candidates: int | None = None) -> int:
    """Forward passes :func:`cmi_grid` needs: ``2K + 1`` per piece pair, ``K`` the number of
    non-special tokens (or ``max_candidates`` if smaller). Use it to size a corpus first."""
    K = len(non_special(lm))
    if max_candidates is not None:
        K = min(K, max_candidates)
    return sum(len(e.piece_pairs(window)) for e in encode_all(lm, sentences, keep)) * (2 * K + 1)


def truth_cmi(grammar: "Grammar", sentences, keep=None, window: int | None = WINDOW,
              progress: bool = False) -> list:
    r"""The conditional mutual information of the toy language itself, from exact joints.

    .. math:: I(x_a; x_b \mid r) = \sum_{u, v} p(u, v \mid r) \log
              \frac{p(u, v \mid r)}{p(u \mid r)\, p(v \mid r)}

    with :math:`p(x_a, x_b \mid r)` from :meth:`mlmbook.toy.Grammar.pair_joints` (one
    batched inside–outside pass per first position). This is what :func:`cmi_grid` returns
    for a model whose conditionals are the truth's; a tree read off it is the best any
    CMI-based parser could do on this language. Symmetric; pairs beyond ``window`` get 0.

    Returns
    -------
    list of ndarray (len(keep), len(keep))
    """
    keep = [None] * len(sentences) if keep is None else keep
    mats = []
    for words, kp in queries.progress_bar(zip(sentences, keep), len(sentences), "truth CMI", progress):
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
