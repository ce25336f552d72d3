r"""Zhang & Hashimoto's conditional mutual information, computed exactly by enumeration.

The two-site Gibbs chain that alternates an MLM's conditionals :math:`q(x_p \mid x_q = b, r)` and
:math:`q(x_q \mid x_p = a, r)` settles into a joint whose mutual information the paper's sampler
estimates: :func:`gibbs_limit` computes it exactly, :func:`cmi_grid` for every pair of every
sentence, :func:`truth_cmi` for the toy language's exact joints.
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
    """``exp(log_table)`` normalised along ``axis``; an all ``-inf`` slice stays all zeros."""
    lse = logsumexp(log_table, axis=axis, keepdims=True)
    return np.exp(log_table - np.where(np.isfinite(lse), lse, 0.0))


def _chain(la: np.ndarray, lb: np.ndarray, start: np.ndarray) -> tuple:
    r"""The tables ``[a, b]`` renormalised over ``a`` (``A``) and over ``b`` (``B``), and the
    long-run law from ``start`` of the ``b``-chain, kernel :math:`K = A^\top B` (a value with no
    move out stays where it is): :math:`\mu (K - I) = 0` for a positive kernel, else (reducible: it
    depends on the start) :math:`\mu K^{2^m}` until it settles."""
    A, B = _conditional(la, 0), _conditional(lb, 1)
    K = A.T @ B
    K[np.diag_indices_from(K)] += np.clip(1.0 - K.sum(axis=1), 0.0, None)
    n = len(K)
    if (K > 0).all():
        M = K.T - np.eye(n)
        M[-1] = 1.0
        rhs = np.zeros(n)
        rhs[-1] = 1.0
        mu = np.clip(np.linalg.solve(M, rhs), 0.0, None)
        return A, B, mu / mu.sum()
    prev = start @ K
    for _ in range(64):
        K = K @ K
        K /= K.sum(axis=1, keepdims=True)
        cur = start @ K
        if np.abs(cur - prev).sum() < 1e-13:
            break
        prev = cur
    return A, B, cur / cur.sum()


def gibbs_limit(log_a_given_b, log_b_given_a, log_b=None) -> tuple[float, float, np.ndarray]:
    r"""Exact long-run value of Zhang & Hashimoto's Gibbs estimator of CMI for one pair.

    Tables are ``[a, b]`` over candidate sets (renormalised here): ``log_a_given_b`` holds
    :math:`\log q(x_p = a \mid x_q = b, r)`, ``log_b_given_a`` holds
    :math:`\log q(x_q = b \mid x_p = a, r)`, and ``log_b`` the both-masked marginal of :math:`x_q`
    (the chain's start; default uniform). The chain's ``b``-part has kernel :math:`K = A^\top B`
    and long-run law :math:`\mu_b`; a fresh ``a`` and the ``b`` it was drawn from follow
    :math:`\pi_p(a, b) = q(a \mid b)\, \mu_b(b)`, whose mutual information the estimator (with the
    Rao–Blackwellised marginal :math:`\hat q(a) = \operatorname{avg}_t q(a \mid b_t)`) converges
    to; likewise for ``b`` with :math:`\pi_q(a, b) = \mu_a(a)\, q(b \mid a)`,
    :math:`\mu_a = A \mu_b`. For compatible conditionals started at the true marginal both equal
    :math:`p(x_p, x_q \mid r)`. Returns ``(I_p, I_q, pi_p)``: the information in ``x_q`` about
    ``x_p``, the reverse, and :math:`\pi_p`.
    """
    la = np.asarray(log_a_given_b, dtype=float)
    lb = np.asarray(log_b_given_a, dtype=float)
    if log_b is None:
        start = np.full(la.shape[1], 1.0 / la.shape[1])
    else:
        start = np.exp(np.asarray(log_b, dtype=float) - logsumexp(log_b))
    A, B, mu_b = _chain(la, lb, start)
    pi_p = A * mu_b[None, :]
    pi_q = (A @ mu_b)[:, None] * B
    return mutual_information(pi_p), mutual_information(pi_q), pi_p


def left_out_bound(eps: float, n_values: int) -> float:
    r"""Largest change in a mutual information from leaving out mass ``eps`` of one variable.

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
    r""":func:`gibbs_limit` from whole-vocabulary rows (``a_rows`` at the candidates ``cq``,
    ``b_rows`` at ``cp``): ``I_p``, ``I_q``, the TV to the start, and the chance that one
    unrestricted step leaves ``q``'s / ``p``'s candidates."""
    start = np.exp(log_start - logsumexp(log_start))
    A, _, mu_b = _chain(a_rows[:, cp].T, b_rows[:, cq], start)      # [a, b] on the candidates
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
    r"""How many of its ranked candidates each position of one sentence gets, ``total`` in all: one
    each, then each next to the position leaving most mass out (minimising the largest
    :math:`\varepsilon_i`)."""
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
    """Word-level CMI matrices (a list), with what the computation cost and found on the way:
    ``rows`` fed to the model, ``pairs`` of pieces scored (``jobs``: ``(sentence, p, q)``, in the
    order of the per-pair lists), ``mean_candidates`` per position. Per pair: ``left_out``, the
    larger of the both-masked mass outside the candidates and the chance that one unrestricted step
    leaves them (0 for the full grid); ``error_bound``, its :func:`left_out_bound` (valid if the
    restricted chain's law is the full chain's on the candidates); ``tv_to_marginal``, the total
    variation between the chain's law of :math:`x_q` and the both-masked prediction."""

    def __init__(self):
        super().__init__()
        self.rows = self.pairs = 0
        self.mean_candidates = self.max_left_out = self.max_error_bound = 0.0
        self.jobs, self.left_out, self.error_bound = [], [], []
        self.tv_to_marginal = []


def _grid_rows(enc, batch, cand, mask_id):
    """Per pair of ``batch``, the ``K_q`` rows "mask p, set q = b" then the ``K_p`` rows "mask q,
    set p = a"; and the row each pair's rows start at."""
    rows, pos, first = [], [], []
    for s, p, q in batch:
        first.append(len(rows))
        cp, cq = cand[s, p, q]
        for query, other, values in ((p, q, cq), (q, p, cp)):
            R = np.repeat(np.asarray(enc[s].ids)[None], len(values), 0)
            R[:, query] = mask_id
            R[:, other] = values
            rows += R.tolist()
            pos += [[query]] * len(values)
    return rows, pos, first


@dataclass(frozen=True)
class GridSettings:
    """How :func:`cmi_grid` shares out ``max_candidates``: ``allocate="sentence"``, ``K`` per
    position on average over each sentence's pairs, more where the prediction is flat;
    ``"position"``, the top ``K`` at each. ``progress``: show progress bars."""

    allocate: str = "sentence"
    progress: bool = False


def cmi_grid(lm: "MaskedLM", sentences, keep=None, window: int | None = WINDOW,
             max_candidates: int | None = None, *,
             settings: GridSettings = GridSettings()) -> CMIGrid:
    r"""Zhang & Hashimoto's conditional mutual information, computed by enumeration.

    For each pair of pieces :math:`p < q` within ``window`` (of two different kept words), the MLM
    is queried on the grid :math:`q(x_p \mid x_q = b, r)`, :math:`q(x_q \mid x_p = a, r)` for every
    candidate ``b``, ``a``, and once with both masked; :func:`gibbs_limit` then gives the value the
    paper's Gibbs estimator converges to, in both directions. Candidates: the whole vocabulary
    (``2V + 1`` rows per pair), or with ``max_candidates=K`` the MLM's likeliest values with both
    masked (``2K + 1`` rows), with the mass left out and a bound on the error it can cause. Returns
    one ``(len(keep), len(keep))`` matrix per sentence, ``M[a, b]`` = information about word ``a``
    carried by word ``b`` (mean over piece pairs), with the diagnostics of :class:`CMIGrid`.

    Parameters
    ----------
    sentences : list of word lists (or :class:`~mlmbook.corpus.Surface`)
    keep : list of list of int, optional
        Per sentence, the words to score (default all).
    window : int or None
        Largest distance between two scored pieces (None: every pair).
    settings : GridSettings
        How ``K`` is shared out (``allocate``), and ``progress``.
    """
    allocate, progress = settings.allocate, settings.progress
    enc = encode_all(lm, sentences, keep)
    jobs = [(s, p, q) for s, e in enumerate(enc) for p, q in e.piece_pairs(window)]
    allowed = non_special(lm)
    n_words = len(allowed)
    out = CMIGrid()
    out.jobs = list(jobs)
    # 1. both positions masked: the marginals, the candidates and the chain's start
    both = [[lm.mask_id if i in (p, q) else t for i, t in enumerate(enc[s].ids)]
            for s, p, q in jobs]
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
    slices, size = [], float("inf")                                 # the first job opens a slice
    for job in sorted(jobs, key=lambda j: len(enc[j[0]].ids)):
        k = sum(len(c) for c in cand[job])
        if size + k > cap:
            slices.append([])
            size = 0
        slices[-1].append(job)
        size += k
    found = {}
    for batch in queries.progress_bar(slices, len(slices), "CMI grid", progress):
        rows, pos, first = _grid_rows(enc, batch, cand, lm.mask_id)
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
    """Forward passes :func:`cmi_grid` needs: ``2K + 1`` per piece pair, ``K`` the non-special
    tokens (or ``max_candidates`` if smaller)."""
    K = len(non_special(lm))
    if max_candidates is not None:
        K = min(K, max_candidates)
    return sum(len(e.piece_pairs(window)) for e in encode_all(lm, sentences, keep)) * (2 * K + 1)


def truth_cmi(grammar: "Grammar", sentences, keep=None, window: int | None = WINDOW,
              progress: bool = False) -> list:
    r"""The conditional mutual information of the toy language itself, from exact joints.

    .. math:: I(x_a; x_b \mid r) = \sum_{u, v} p(u, v \mid r) \log
              \frac{p(u, v \mid r)}{p(u \mid r)\, p(v \mid r)}

    with :math:`p(x_a, x_b \mid r)` from :meth:`mlmbook.toy.Grammar.pair_joints`: what
    :func:`cmi_grid` returns for a model whose conditionals are the truth's. One symmetric
    ``(len(keep), len(keep))`` matrix per sentence; pairs beyond ``window`` get 0.
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
