r"""Joints of two masked tokens derived from an MLM's conditionals (chapter 2).

Torroba Hennigen & Kim (2023), *Deriving Language Models from Masked Language Models*.
For two masked positions A and B of a sentence (the rest, fixed, is left out of the notation)
an MLM gives the conditionals :math:`q(a \mid b)`, :math:`q(b \mid a)` and the both-masked
marginals :math:`q(a)`, :math:`q(b)`, over candidate sets of sizes :math:`K_A, K_B`.
Every table here is laid out like the joint, ``[a, b]``; probabilities are renormalised
over the candidates; arrays are numpy float64 (torch tensors are accepted).

Zeros. Exact oracles contain zeros (impossible words), and a conditional given an impossible
value is undefined; it is stored as a row/column of ``-inf`` (NaNs are turned into ``-inf``).
Each method keeps the zeros its formula implies and never returns NaN; a method whose
joint would have no support at all raises ``ValueError``.

The module, in reading order:

* querying a model: :func:`pair_conditionals` (one pair), :func:`iter_pair_conditionals`
  (many pairs and sentences, batched), :func:`topk_candidates` (real vocabularies);
* the joints: :func:`naive`, :func:`mrf`, :func:`mrf_local`, :func:`hcb`, :func:`ag`
  (:func:`derive_all`), and :func:`support_blocks` / :func:`match_blocks` for exact zeros;
* metrics: :func:`conditional_divergence`, :func:`conditional_divergences`, :func:`compatibility`,
  :func:`kl_joint`, :func:`truth_conditional_kl`, :func:`pair_ppl`, :func:`unary_ppl`;
* the toy world's truth: :func:`truth_joints`;
* a chapter's bookkeeping: :func:`evaluate_pair`, :func:`stack`, :func:`summarize`,
  :func:`bootstrap`.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import lsqr
from scipy.special import logsumexp

NEG_INF = -np.inf


def _np(x):
    """numpy float64 copy of an array or a torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.array(x, dtype=np.float64)


def _log_normalise(x, axis=None):
    """``x - logsumexp(x, axis)``; an all ``-inf`` slice (undefined) stays ``-inf``, never NaN."""
    x = np.where(np.isnan(x), NEG_INF, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = x - logsumexp(x, axis=axis, keepdims=True)
    return np.where(np.isnan(out), NEG_INF, out)


def _joint(log_p):
    """Normalise an unnormalised log joint and return probabilities."""
    if not np.isfinite(log_p).any():
        raise ValueError("the derived joint has no support (all entries are zero)")
    return np.exp(_log_normalise(log_p))


@dataclass
class PairConditionals:
    r"""The MLM's view of two masked positions A, B, in log space, laid out ``[a, b]``.

    Attributes
    ----------
    log_a_given_b : (K_A, K_B) :math:`\log q(x_A=a \mid x_B=b)`; each column sums to 1 in prob.
    log_b_given_a : (K_A, K_B) :math:`\log q(x_B=b \mid x_A=a)`; each row sums to 1 in prob.
    log_a, log_b : (K_A,), (K_B,) log of the marginals with both positions masked.
    logit_a_given_b, logit_b_given_a : raw (unnormalised) logits, same layout, used by
        :func:`mrf`; default to the log-probabilities (then ``mrf == mrf_local``).
    cand_a, cand_b : token ids of the candidates (``None`` when not built from a model).

    Inputs are renormalised over the candidates, so unnormalised log-scores are accepted.
    """

    log_a_given_b: np.ndarray
    log_b_given_a: np.ndarray
    log_a: np.ndarray
    log_b: np.ndarray
    logit_a_given_b: np.ndarray | None = None
    logit_b_given_a: np.ndarray | None = None
    cand_a: np.ndarray | None = field(default=None, repr=False)
    cand_b: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        for name, axis in [("log_a_given_b", 0), ("log_b_given_a", 1), ("log_a", 0), ("log_b", 0)]:
            setattr(self, name, _log_normalise(_np(getattr(self, name)), axis=axis))
        for name, fallback in [("logit_a_given_b", self.log_a_given_b),
                               ("logit_b_given_a", self.log_b_given_a)]:
            raw = getattr(self, name)
            setattr(self, name, fallback if raw is None else np.nan_to_num(_np(raw), nan=NEG_INF))

    @classmethod
    def from_logits(cls, logit_a_given_b, logit_b_given_a, logit_a, logit_b, **kw):
        """Build from raw logits (kept for :func:`mrf`) over the candidate sets."""
        return cls(logit_a_given_b, logit_b_given_a, logit_a, logit_b,
                   logit_a_given_b=logit_a_given_b, logit_b_given_a=logit_b_given_a, **kw)

    @classmethod
    def from_joint(cls, P):
        r"""The conditionals and marginals of a joint ``P[a, b]`` (compatible by construction):
        :math:`q(a\mid b) = P_{ab}/P_{\cdot b}`, :math:`q(b\mid a) = P_{ab}/P_{a\cdot}`."""
        with np.errstate(divide="ignore"):
            log_p = np.log(_np(P))
        return cls(log_p, log_p, logsumexp(log_p, axis=1), logsumexp(log_p, axis=0))

    @property
    def shape(self):
        return self.log_a_given_b.shape

    def swap(self) -> "PairConditionals":
        """The same conditionals with the roles of A and B exchanged (all tables transposed)."""
        return PairConditionals(self.log_b_given_a.T, self.log_a_given_b.T, self.log_b, self.log_a,
                                self.logit_b_given_a.T, self.logit_a_given_b.T, self.cand_b, self.cand_a)


def default_candidates(lm) -> np.ndarray:
    """All token ids except special tokens (``lm.special_ids`` if the oracle has it, else the
    mask and tokens spelled like ``[CLS]`` or ``<s>``)."""
    special = getattr(lm, "special_ids", None)
    if special is None:
        special = [i for i, t in enumerate(lm.vocab)
                   if i == lm.mask_id or (len(t) > 2 and t[0] + t[-1] in ("[]", "<>"))]
    return np.setdiff1d(np.arange(lm.V), np.asarray(list(special), dtype=int))


# --------------------------------------------------------------------------- querying a model

def _is_ids(x) -> bool:
    if hasattr(x, "ndim"):
        return x.ndim == 1
    return isinstance(x, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in x)


def _is_pair(x) -> bool:
    return isinstance(x, (tuple, list)) and len(x) == 2 and _is_ids(x[0]) and _is_ids(x[1])


def _candidate_pairs(candidates, n_queries, default):
    """One ``(cand_a, cand_b)`` pair of int arrays per query, from ``None`` (``default``), one id
    sequence (both positions), one pair, or a list with one of those per query."""
    as_ids = lambda c: np.asarray(c, dtype=np.int64).reshape(-1)  # noqa: E731
    if candidates is None:
        return [(default, default)] * n_queries
    if _is_pair(candidates):
        return [(as_ids(candidates[0]), as_ids(candidates[1]))] * n_queries
    if _is_ids(candidates):
        return [(as_ids(candidates), as_ids(candidates))] * n_queries
    if len(candidates) != n_queries:
        raise ValueError(f"got {len(candidates)} candidate sets for {n_queries} queries")
    return [_candidate_pairs(c, 1, default)[0] for c in candidates]


def iter_pair_conditionals(lm, queries, candidates=None, max_floats: int = 2 ** 24, progress: bool = False):
    r"""Query a masked LM for the conditionals of many pairs, batched across pairs and sentences.

    For a query ``(ids, A, B)`` the rows are: :math:`K_B` copies with A masked and B set to
    each candidate b (read at A), :math:`K_A` copies with B masked and A set to each candidate
    a (read at B), and one with both masked (read at A and B). Rows of all queries with the
    same sentence length go through **one** ``lm.logits`` call — the output layer only at
    A and B — in chunks holding at most ``max_floats`` output scores.

    Parameters
    ----------
    lm : MaskedLM
    queries : sequence of ``(ids, A, B)``
        ``ids``: token ids (no special tokens); ``A != B``: positions.
    candidates : None, id array, ``(cand_a, cand_b)``, or a list with one of those per query
        ``None``: every non-special token (:func:`default_candidates`).
    max_floats : int
        Memory bound of one call: rows × 2 × V.
    progress : bool
        Show a tqdm bar over queries.

    Yields
    ------
    ``(k, PairConditionals)`` for every query ``k``, grouped by sentence length (not in order).

    Notes
    -----
    A conditional given a value that the model's own both-masked marginal rules out
    (probability exactly 0, as happens with exact oracles) is undefined and stored as
    ``-inf`` (see the module docstring); a softmax MLM never has such values.
    """
    import torch

    queries = [(torch.as_tensor(ids, dtype=torch.long).reshape(-1), int(A), int(B)) for ids, A, B in queries]
    cands = _candidate_pairs(candidates, len(queries), default_candidates(lm))
    for ids, A, B in queries:
        if A == B or not (0 <= A < len(ids) and 0 <= B < len(ids)):
            raise ValueError(f"positions A={A}, B={B} must differ and lie in [0, {len(ids)})")
    by_length: dict = {}
    for k, (ids, _, _) in enumerate(queries):
        by_length.setdefault(len(ids), []).append(k)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(queries), desc="pair conditionals")
    for group in by_length.values():
        chunk, size = [], 0
        for k in group + [None]:
            rows = None if k is None else len(cands[k][0]) + len(cands[k][1]) + 1
            if chunk and (k is None or (size + rows) * 2 * lm.V > max_floats):
                yield from _query_chunk(lm, [(k2, *queries[k2], *cands[k2]) for k2 in chunk])
                if bar is not None:
                    bar.update(len(chunk))
                chunk, size = [], 0
            if k is not None:
                chunk.append(k)
                size += rows
    if bar is not None:
        bar.close()


def _query_chunk(lm, items):
    """One ``lm.logits`` call for queries of one length: ``items`` = (k, ids, A, B, cand_a, cand_b)."""
    import torch

    rows, positions, spans = [], [], []
    for k, ids, A, B, ca, cb in items:
        ka, kb = len(ca), len(cb)
        block = ids.clone()
        block[[A, B]] = lm.mask_id
        block = block.repeat(kb + ka + 1, 1)
        block[:kb, B] = torch.as_tensor(cb)
        block[kb:kb + ka, A] = torch.as_tensor(ca)
        rows.append(block)
        positions.append(torch.tensor([[A, A]] * kb + [[B, B]] * ka + [[A, B]], dtype=torch.long))
        spans.append(kb + ka + 1)
    with torch.no_grad():
        logits = lm.logits(torch.cat(rows), torch.cat(positions))          # (rows, 2, V)
    start = 0
    for (k, _, _, _, ca, cb), n in zip(items, spans):
        L = logits[start:start + n]
        start += n
        ka, kb = len(ca), len(cb)
        ta, tb = torch.as_tensor(ca), torch.as_tensor(cb)
        pc = PairConditionals.from_logits(
            _np(L[:kb, 0][:, ta]).T, _np(L[kb:kb + ka, 0][:, tb]), _np(L[-1, 0, ta]), _np(L[-1, 1, tb]),
            cand_a=np.asarray(ca), cand_b=np.asarray(cb))
        yield k, _mark_undefined(pc)


def _mark_undefined(pc: PairConditionals) -> PairConditionals:
    """Conditionals given a value with zero both-masked probability are undefined (``-inf``)."""
    dead_a, dead_b = np.isneginf(pc.log_a), np.isneginf(pc.log_b)
    if dead_a.any() or dead_b.any():
        for name in ("log_a_given_b", "logit_a_given_b"):
            getattr(pc, name)[:, dead_b] = NEG_INF
        for name in ("log_b_given_a", "logit_b_given_a"):
            getattr(pc, name)[dead_a, :] = NEG_INF
    return pc


def pair_conditionals_batch(lm, queries, candidates=None, **kw) -> list:
    """:func:`iter_pair_conditionals` collected into a list in query order."""
    out = [None] * len(queries)
    for k, pc in iter_pair_conditionals(lm, queries, candidates, **kw):
        out[k] = pc
    return out


def pair_conditionals(lm, ids, A: int, B: int, candidates=None) -> PairConditionals:
    """Query a masked LM for the conditionals of positions A and B in ONE batched call.

    Rows ``0..K_B-1`` mask A and set B to each candidate b (query A); rows ``K_B..K_B+K_A-1``
    mask B and set A to each candidate a (query B); the last row masks both (query A and B).
    ``positions`` holds only A or B (``[A, A]``, ``[B, B]``, ``[A, B]``), so the LM head runs only
    there. ``candidates``: ``None`` (all non-special ids), one id sequence for both positions,
    or a pair ``(cand_a, cand_b)``. For many pairs use :func:`iter_pair_conditionals`.
    """
    return pair_conditionals_batch(lm, [(ids, A, B)], None if candidates is None else [candidates])[0]


def topk_candidates(lm, queries, k: int = 50, gold: bool = True, max_floats: int = 2 ** 24) -> list:
    r"""Top-K candidate sets for real vocabularies, from the both-masked marginals.

    For each query ``(ids, A, B)`` mask both positions (one batched call per sentence length)
    and keep the ``k`` likeliest non-special tokens at A and at B, most likely first. With
    ``gold=True`` the tokens ``ids[A]``, ``ids[B]`` are forced in (replacing the last
    candidate if missing), so metrics at the gold pair are defined. Every method's joint is
    then a distribution over :math:`K \times K` pairs, renormalised over the candidates.

    Returns
    -------
    list of ``(cand_a, cand_b)`` int arrays, one per query.
    """
    import torch

    queries = [(torch.as_tensor(ids, dtype=torch.long).reshape(-1), int(A), int(B)) for ids, A, B in queries]
    k = int(min(k, len(default_candidates(lm))))
    out = [None] * len(queries)
    by_length: dict = {}
    for q, (ids, _, _) in enumerate(queries):
        by_length.setdefault(len(ids), []).append(q)
    step = max(1, max_floats // (2 * lm.V))
    for group in by_length.values():
        for s in range(0, len(group), step):
            idx = group[s:s + step]
            rows = torch.stack([queries[q][0].clone() for q in idx])
            pos = torch.tensor([[queries[q][1], queries[q][2]] for q in idx], dtype=torch.long)
            rows[torch.arange(len(idx))[:, None], pos] = lm.mask_id
            logits = lm.logits(rows, pos)                                    # (n, 2, V)
            top = torch.topk(logits, k, dim=-1).indices.numpy()
            for r, q in enumerate(idx):
                ids, A, B = queries[q]
                pair = []
                for side, position in ((0, A), (1, B)):
                    c = top[r, side].copy()
                    if gold and int(ids[position]) not in c:
                        c[-1] = int(ids[position])
                    pair.append(c.astype(np.int64))
                out[q] = tuple(pair)
    return out


# --------------------------------------------------------------------------- joints

def naive(pc: PairConditionals) -> np.ndarray:
    r"""Independent joint :math:`p(a,b) = q(a)\,q(b)` from the both-masked marginals."""
    return _joint(pc.log_a[:, None] + pc.log_b[None, :])


def mrf(pc: PairConditionals) -> np.ndarray:
    r"""Pairwise MRF on raw logits: :math:`\log p(a,b) = f_A(a;b) + f_B(b;a) - \log Z`,
    :math:`f` the MLM's unnormalised logit of a token with the other position filled in."""
    return _joint(pc.logit_a_given_b + pc.logit_b_given_a)


def mrf_local(pc: PairConditionals) -> np.ndarray:
    r"""MRF on locally normalised potentials: :math:`p(a,b) \propto q(a\mid b)\,q(b\mid a)`.
    Not exact even for compatible conditionals: it equals :math:`p(a,b)^2/(p(a)p(b))` renormalised."""
    return _joint(pc.log_a_given_b + pc.log_b_given_a)


def default_pivot(pc: PairConditionals) -> int:
    r"""The pivot :math:`a^\star = \arg\max_a q(a)` of the both-masked marginal (the paper's
    ``hcb-both``): the A value the MLM finds likeliest, so the ratios are well supported."""
    return int(np.argmax(pc.log_a))


def hcb(pc: PairConditionals, pivot: int | None = None) -> np.ndarray:
    r"""Hammersley–Clifford–Besag joint with pivot :math:`(a^\star, b^\star)`.

    Besag's identity, changing B first and then A:

    .. math:: \frac{p(a,b)}{p(a^\star,b^\star)}
              = \frac{q(b\mid a^\star)}{q(b^\star\mid a^\star)}\cdot\frac{q(a\mid b)}{q(a^\star\mid b)},
       \qquad p(a,b) \propto q(b\mid a^\star)\,\frac{q(a\mid b)}{q(a^\star\mid b)}.

    :math:`b^\star` only enters the constant, so ``pivot`` is the index :math:`a^\star`
    (default :func:`default_pivot`); to pivot on B use ``hcb(pc.swap(), b_star).T``.
    Exact for compatible conditionals whenever every b with :math:`p(b)>0` has
    :math:`p(a^\star,b)>0`. Zeros: columns with :math:`q(b\mid a^\star)=0` or
    :math:`q(a^\star\mid b)=0` get zero mass (HCB only sees b's reachable from the pivot).
    """
    a_star = default_pivot(pc) if pivot is None else int(pivot)
    lb, la_star = pc.log_b_given_a[a_star], pc.log_a_given_b[a_star]
    ok = np.isfinite(lb) & np.isfinite(la_star)
    col = np.full(lb.shape, NEG_INF)
    col[ok] = lb[ok] - la_star[ok]
    return _joint(pc.log_a_given_b + col[None, :])


@dataclass
class AGResult:
    """Output of :func:`ag`: the joint, the number of updates, the objective at the uniform
    start and at every accepted iterate (non-increasing), and whether ``tol`` was reached."""

    joint: np.ndarray
    iterations: int
    objective: np.ndarray
    converged: bool


def ag_objective(pc: PairConditionals, joint) -> float:
    r"""Arnold–Gokhale objective: :math:`J(p) = \sum_b \mathrm{KL}(q(\cdot\mid b)\,\|\,p(\cdot\mid b))
    + \sum_a \mathrm{KL}(q(\cdot\mid a)\,\|\,p(\cdot\mid a))`, sums over the conditioning values whose
    MLM conditional is defined (unweighted, as in Arnold & Gokhale 1998). 0 iff p has the given
    conditionals; ``inf`` if p misses support of a given conditional."""
    (d_a, def_b), (d_b, def_a) = _divergences(pc, PairConditionals.from_joint(joint), kl)
    return float(d_a[def_b].sum() + d_b[def_a].sum())


def ag(pc: PairConditionals, tol: float = 1e-9, max_iter: int = 20_000) -> AGResult:
    r"""Arnold–Gokhale joint: the p minimising :func:`ag_objective`, by the fixed point

    .. math:: p^{(t+1)}(a,b) \propto \frac{q(a\mid b) + q(b\mid a)}
              {1/p^{(t)}(a) + 1/p^{(t)}(b)}, \qquad p^{(0)} \text{ uniform},

    (the marginals of :math:`p^{(t)}` in the denominator; a term drops where its conditional is
    undefined). Where does it come from? Up to a constant,

    .. math:: J(p) = -\sum_{a,b} \big(q(a\mid b)+q(b\mid a)\big)\log p(a,b)
              + \sum_b \log p(b) + \sum_a \log p(a),

    and setting the gradient to zero on the simplex gives exactly the fixed point. Each update
    is a majorise–minimise step (the concave :math:`\log p(b)` is bounded by its tangent), so
    :math:`J` never increases. Zeros: after one step the support is that of
    :math:`q(a\mid b)+q(b\mid a)`, so AG is restricted to the MLM's support.

    Speed. The update depends on :math:`p^{(t)}` only through its two marginals, so the state
    is :math:`K_A + K_B` numbers and each update costs a few passes over the grid. Plain
    iteration converges linearly, and slowly when the support is nearly split into blocks
    (:func:`support_blocks`): the block weights are directions the objective barely sees.
    We accelerate it with SQUAREM (Varadhan & Roland 2008) on the log-marginals — two updates,
    an extrapolation, one more update — and keep an extrapolated point only if its objective
    is no larger than that of the plain update, so :math:`J` still never increases. Stops when
    no entry of the joint moves by more than ``tol`` from one cycle to the next; at the
    default, log-probabilities and KLs of the toy models' joints are within about 1e-5 of the
    limit (a few hundred updates for a 228 × 228 grid).

    Returns
    -------
    AGResult
        ``iterations`` counts updates (three per cycle); ``objective`` is :math:`J` at the
        uniform start and at every accepted iterate (non-increasing).
    """
    qa, qb = np.exp(pc.log_a_given_b), np.exp(pc.log_b_given_a)
    num = qa + qb
    def_b, def_a = qa.sum(axis=0) > 0, qb.sum(axis=1) > 0          # defined conditionals
    neither = ~def_a[:, None] & ~def_b[None, :]                    # no conditional: p = 0 there
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogx = lambda t: np.sum(np.where(t > 0, t * np.log(t), 0.0))  # noqa: E731
        entropy_part = xlogx(qa) + xlogx(qb)
        const = entropy_part - xlogx(num)
    ka, kb = num.shape
    den, u = np.empty_like(num), np.empty_like(num)
    support = num > 0

    def update(pa, pb, objective=True):
        """Marginals of p' = num / (1/pa + 1/pb) (normalised) and J(p') (None if not asked)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            np.add(np.where(def_a, 1.0 / pa, 0.0)[:, None], np.where(def_b, 1.0 / pb, 0.0)[None, :], out=den)
            np.divide(num, den, out=u)
            if neither.any():
                u[neither] = 0.0
            rows, cols = u.sum(axis=1), u.sum(axis=0)
            z = rows.sum()
            J = None
            if objective:       # J(p') = const + sum num log den + sum log(row and column sums of u)
                log_den = np.log(den, out=np.zeros_like(den), where=support)
                J = const + np.sum(num * log_den) + np.log(cols[def_b]).sum() + np.log(rows[def_a]).sum()
                J = float(J) if np.isfinite(J) else np.inf
        return rows / z, cols / z, J

    def log_state(pa, pb):
        with np.errstate(divide="ignore"):
            return np.log(np.concatenate([pa, pb]))

    p0 = np.full(num.shape, 1.0 / num.size)
    objectives = [_ag_objective_at(num, def_a, def_b, entropy_part, p0)]
    pa, pb = np.full(ka, 1.0 / ka), np.full(kb, 1.0 / kb)
    joint, previous = np.empty_like(num), p0.copy()
    it, converged = 0, False
    while it < max_iter and not converged:
        pa1, pb1, _ = update(pa, pb, objective=False)
        pa2, pb2, J1 = update(pa1, pb1)
        it += 2
        objectives.append(J1)
        np.divide(u, u.sum(), out=joint)                            # this cycle's plain iterate
        converged = bool(np.abs(joint - previous).max() < tol)
        joint, previous = previous, joint
        l0, l1, l2 = log_state(pa, pb), log_state(pa1, pb1), log_state(pa2, pb2)
        ok = np.isfinite(l0) & np.isfinite(l1) & np.isfinite(l2)      # zero marginals stay zero
        l0, l1, l2 = (np.where(ok, x, 0.0) for x in (l0, l1, l2))
        r, v = l1 - l0, l2 - 2 * l1 + l0
        alpha = -np.sqrt(r @ r / (v @ v)) if v @ v > 0 else -1.0
        new_a, new_b = pa2, pb2
        if alpha < -1.0:                                            # try the extrapolated point
            lx = np.where(ok, l0 - 2 * alpha * r + alpha ** 2 * v, -np.inf)
            xa, xb = np.exp(lx[:ka] - lx[:ka].max()), np.exp(lx[ka:] - lx[ka:].max())
            xa, xb = xa / xa.sum(), xb / xb.sum()
            na, nb, Jx = update(xa, xb)
            it += 1
            if Jx <= J1:                                            # never let J increase
                objectives.append(Jx)
                new_a, new_b = na, nb
        pa, pb = new_a, new_b
    _, _, J = update(pa, pb)
    objectives.append(J)
    p = u / u.sum()
    return AGResult(p, it + 1, np.array(objectives), converged)


def _ag_objective_at(num, def_a, def_b, entropy_part, p) -> float:
    """:func:`ag_objective` of a joint ``p`` from :func:`ag`'s precomputed pieces."""
    if np.any((num > 0) & (p == 0)):
        return np.inf
    log_p = np.log(p, out=np.zeros_like(p), where=p > 0)
    return float(entropy_part - np.sum(num * log_p)
                 + np.log(p.sum(axis=0)[def_b]).sum() + np.log(p.sum(axis=1)[def_a]).sum())


def support_blocks(pc: PairConditionals) -> tuple:
    r"""Connected blocks of the conditionals' support.

    Join a and b when both :math:`q(a\mid b) > 0` and :math:`q(b\mid a) > 0`; the connected
    components of that bipartite graph are the blocks. Conditionals only ever compare
    probabilities *within* a block, so even compatible conditionals determine the joint only up
    to one weight per block (Arnold & Press 1989). A softmax MLM has a single block; an exact
    oracle with forbidden combinations can have several.

    Returns
    -------
    (n_blocks, labels_a, labels_b): block index of every candidate, -1 if it has no support.
    """
    from scipy.sparse.csgraph import connected_components

    S = np.isfinite(pc.log_a_given_b) & np.isfinite(pc.log_b_given_a)
    ka, kb = S.shape
    graph = sparse.bmat([[None, sparse.csr_matrix(S)], [sparse.csr_matrix(S.T), None]])
    _, labels = connected_components(graph, directed=False)
    la, lb = labels[:ka].copy(), labels[ka:].copy()
    la[~S.any(axis=1)], lb[~S.any(axis=0)] = -1, -1
    used = np.unique(np.concatenate([la[la >= 0], lb[lb >= 0]]))
    remap = {old: new for new, old in enumerate(used)}
    la = np.array([remap.get(x, -1) for x in la])
    lb = np.array([remap.get(x, -1) for x in lb])
    return len(used), la, lb


def match_blocks(joint, pc: PairConditionals) -> np.ndarray:
    r"""Give each support block of ``joint`` the mass the both-masked marginal assigns to it,
    :math:`\sum_{a \in \text{block}} q(a)` — the one thing the conditionals cannot say
    (:func:`support_blocks`). A no-op with a single block."""
    n, la, _ = support_blocks(pc)
    J = _np(joint).copy()
    if n <= 1:
        return J
    qa = np.exp(pc.log_a)
    target = np.array([qa[la == k].sum() for k in range(n)])
    target /= target.sum()
    for k in range(n):
        rows = la == k
        mass = J[rows].sum()
        if mass > 0:
            J[rows] *= target[k] / mass
    return J / J.sum()


def derive_all(pc: PairConditionals) -> dict[str, np.ndarray]:
    """Every method's joint, keyed ``naive, mrf, mrf_local, hcb, ag``."""
    return {"naive": naive(pc), "mrf": mrf(pc), "mrf_local": mrf_local(pc),
            "hcb": hcb(pc), "ag": ag(pc).joint}


# --------------------------------------------------------------------------- metrics

def kl(p, q, axis=-1):
    r""":math:`\mathrm{KL}(p\|q)=\sum p\log(p/q)` on probabilities; 0 log 0 = 0, ``inf`` if q misses p."""
    p, q = _np(p), _np(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return terms.sum(axis=axis)


def jsd(p, q, axis=-1):
    r"""Jensen–Shannon divergence :math:`\tfrac12\mathrm{KL}(p\|m)+\tfrac12\mathrm{KL}(q\|m)`,
    :math:`m=(p+q)/2`; in nats, at most :math:`\log 2`."""
    p, q = _np(p), _np(q)
    m = (p + q) / 2
    return 0.5 * kl(p, m, axis) + 0.5 * kl(q, m, axis)


def kl_joint(p_true, p_derived) -> float:
    r""":math:`\mathrm{KL}(p_{\text{true}}\,\|\,p_{\text{derived}})` between two joints."""
    return float(kl(np.ravel(_np(p_true)), np.ravel(_np(p_derived))))


def _divergences(mlm: PairConditionals, derived: PairConditionals, div, worst=np.inf):
    """``div(mlm, derived)`` per conditioning value: ``[(D over a given each b, MLM-defined b's),
    (D over b given each a, MLM-defined a's)]``. Where the derived conditional is undefined (the
    joint gives the conditioning value probability 0) the divergence is ``worst``."""
    out = []
    for m, d, ax in [(mlm.log_a_given_b, derived.log_a_given_b, 0),
                     (mlm.log_b_given_a, derived.log_b_given_a, 1)]:
        vals = np.where(np.isfinite(d).any(axis=ax), div(np.exp(m), np.exp(d), axis=ax), worst)
        out.append((vals, np.isfinite(m).any(axis=ax)))
    return out


def conditional_divergence(joint, pc: PairConditionals, kind: str = "kl", at=None) -> float:
    r"""Divergence between the derived joint's conditionals and the MLM's.

    ``kind``: ``"kl"`` :math:`\mathrm{KL}(q_{\text{MLM}}\|p)`, ``"rkl"`` :math:`\mathrm{KL}(p\|q_{\text{MLM}})`
    or ``"jsd"``. ``at=None``: unweighted mean over every conditioning value whose MLM conditional
    is defined, both sides (the paper's *all* average); ``at=(a, b)``: mean of the two at the
    gold pair, :math:`D(q(\cdot\mid b), p(\cdot\mid b))` and :math:`D(q(\cdot\mid a), p(\cdot\mid a))`.
    A conditioning value the derived joint gives probability 0 counts as maximally divergent
    (``inf`` for the KLs, :math:`\log 2` for JSD).
    """
    div = {"kl": kl, "rkl": lambda p, q, axis: kl(q, p, axis), "jsd": jsd}[kind]
    worst = np.log(2) if kind == "jsd" else np.inf
    (d_a, def_b), (d_b, def_a) = _divergences(pc, PairConditionals.from_joint(joint), div, worst)
    if at is None:
        return float(np.mean(np.concatenate([d_a[def_b], d_b[def_a]])))
    a, b = at
    return float((d_a[b] + d_b[a]) / 2)


def conditional_divergences(joint, pc: PairConditionals) -> dict:
    r"""``{"kl", "rkl", "jsd"}`` of :func:`conditional_divergence` (``at=None``) in one pass.

    Same definitions and conventions, computed together in probability space (it is what
    :func:`evaluate_pair` uses; a few times faster than three separate calls)."""
    J = _np(joint)
    parts = {"kl": [], "rkl": [], "jsd": []}
    worst = {"kl": np.inf, "rkl": np.inf, "jsd": np.log(2)}
    with np.errstate(all="ignore"):
        for log_q, ax in ((pc.log_a_given_b, 0), (pc.log_b_given_a, 1)):
            marg = J.sum(axis=ax, keepdims=True)
            p, q = J / marg, np.exp(log_q)
            log_p = np.log(p)
            m = (p + q) / 2
            log_m = np.log(m)
            vals = {"kl": np.where(q > 0, q * (log_q - log_p), 0.0).sum(axis=ax),
                    "rkl": np.where(p > 0, p * (log_p - log_q), 0.0).sum(axis=ax),
                    "jsd": 0.5 * (np.where(q > 0, q * (log_q - log_m), 0.0)
                                  + np.where(p > 0, p * (log_p - log_m), 0.0)).sum(axis=ax)}
            defined_p, defined_q = marg.reshape(-1) > 0, np.isfinite(log_q).any(axis=ax)
            for kind, v in vals.items():
                parts[kind].append(np.where(defined_p, v, worst[kind])[defined_q])
    return {kind: float(np.mean(np.concatenate(v))) for kind, v in parts.items()}


def _log_pair(j, a, b):
    with np.errstate(divide="ignore"):
        return float(np.log(_np(j)[a, b]))


def pair_ppl(items) -> float:
    r"""Pair perplexity (P-PPL) over gold pairs, per token as in the paper:
    :math:`\exp\big(-\tfrac{1}{2N}\sum_n \log p_n(a_n, b_n)\big)`; ``items``: ``(joint, a, b)``."""
    items = list(items)
    return float(np.exp(-sum(_log_pair(j, a, b) for j, a, b in items) / (2 * len(items))))


def unary_ppl(items, unary: str = "conditional") -> float:
    r"""Unary perplexity (U-PPL): :math:`\exp\big(-\tfrac{1}{2N}\sum_n [\log p_n(a_n\mid b_n)
    + \log p_n(b_n\mid a_n)]\big)`, the paper's definition from the joint's conditionals.
    ``unary="marginal"`` uses the joint's marginals :math:`p_n(a_n), p_n(b_n)` instead. An item's
    first element may be a :class:`PairConditionals` (the MLM's own U-PPL baseline)."""
    total, n = 0.0, 0
    for j, a, b in items:
        pc = j if isinstance(j, PairConditionals) else PairConditionals.from_joint(j)
        if unary == "conditional":
            total += pc.log_a_given_b[a, b] + pc.log_b_given_a[a, b]
        else:
            total += pc.log_a[a] + pc.log_b[b]
        n += 1
    return float(np.exp(-total / (2 * n)))


def compatibility(pc: PairConditionals) -> float:
    r"""Arnold–Press incompatibility: distance of the log ratio from a log-rank-one matrix.

    Two positive conditionals come from one joint iff the ratio
    :math:`q(a\mid b)/q(b\mid a) = p(a)/p(b)` factorises as :math:`u_a v_b` (Arnold & Press 1989).
    We return :math:`\min_{u,v} \operatorname{mean}_{(a,b)\in S}\,(r_{ab} - u_a - v_b)^2`,
    :math:`r = \log q(a\mid b) - \log q(b\mid a)`, a least-squares fit over the common support
    S (both tables positive; for full support this is the double-centred r). It is 0 iff the
    conditionals are compatible on S and is in squared nats. Entries where exactly one table is
    zero (possible only with exact zeros) are not counted; see also ``ag(pc).objective[-1]``.
    """
    la, lb = pc.log_a_given_b, pc.log_b_given_a
    support = np.isfinite(la) & np.isfinite(lb)
    if support.all():                       # full support: the least-squares fit is double centring
        r = la - lb
        resid = r - r.mean(axis=1, keepdims=True) - r.mean(axis=0, keepdims=True) + r.mean()
        return float(np.mean(resid ** 2))
    i, j = np.nonzero(support)
    if i.size == 0:
        return 0.0
    r = la[support] - lb[support]
    ka, kb = pc.shape
    ones = np.ones(i.size)
    X = sparse.hstack([sparse.csr_matrix((ones, (np.arange(i.size), i)), shape=(i.size, ka)),
                       sparse.csr_matrix((ones, (np.arange(i.size), j)), shape=(i.size, kb))]).tocsr()
    uv = lsqr(X, r, atol=1e-15, btol=1e-15, iter_lim=10 * (ka + kb))[0]
    return float(np.mean((r - X @ uv) ** 2))


def truth_conditional_kl(p_true, model) -> float:
    r"""How far a model's two conditionals are from the true ones, in expectation under the truth:

    .. math:: \tfrac12\Big[\mathbb{E}_{b\sim p(b)}\,\mathrm{KL}\big(p(\cdot\mid b)\,\|\,m(\cdot\mid b)\big)
              + \mathbb{E}_{a\sim p(a)}\,\mathrm{KL}\big(p(\cdot\mid a)\,\|\,m(\cdot\mid a)\big)\Big].

    ``model`` is a derived joint (its conditionals are computed) or a :class:`PairConditionals`
    (the MLM's own conditionals). By the chain rule each expectation equals
    :math:`\mathrm{KL}(p\|m)` minus the KL of the conditioning marginal, so for a joint it is at
    most :func:`kl_joint`. ``inf`` where the model's conditional misses the truth's support.
    """
    P = _np(p_true)
    P = P / P.sum()
    S = P > 0
    w = P[S]
    with np.errstate(divide="ignore", invalid="ignore"):
        lP = np.log(w)
        ia, ib = np.nonzero(S)
        true_a = lP - np.log(P.sum(axis=0))[ib]                 # log p(a | b) on the support
        true_b = lP - np.log(P.sum(axis=1))[ia]                 # log p(b | a)
        if isinstance(model, PairConditionals):
            model_a, model_b = model.log_a_given_b[S], model.log_b_given_a[S]
        else:
            M = _np(model)
            lM = np.log(M[S])
            model_a = lM - np.log(M.sum(axis=0))[ib]
            model_b = lM - np.log(M.sum(axis=1))[ia]
        out = 0.0
        for t, m in ((true_a, model_a), (true_b, model_b)):
            d = t - m
            out += 0.5 * float(np.sum(w * np.where(np.isnan(d) | np.isneginf(m), np.inf, d)))
    return out


# --------------------------------------------------------------------------- the truth (toy world)

@contextmanager
def one_thread():
    """Run torch on one thread inside the block (restored after).

    The inside–outside passes of the toy language are many small tensor operations; on two
    threads they spend most of their time synchronising (ten to twenty times slower on a busy
    two-core machine). Use it around exact computations: ``with one_thread(): ...``.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def truth_joints(grammar, queries, candidates=None, offset: int = 5) -> list:
    r"""Exact joints :math:`p(x_A=a, x_B=b \mid \text{rest})` of the toy language over candidate tokens.

    Parameters
    ----------
    grammar : mlmbook.language.Grammar
    queries : sequence of ``(words, A, B)``
        A sentence (list of words) and two word positions.
    candidates : None or a list of ``(cand_a, cand_b)`` token ids, one per query
        Token ids of the toy tokenizer: grammar word ``w`` is token ``w + offset``
        (``offset = len(mlmbook.oracle.SPECIAL_TOKENS)``). ``None``: every word, in
        vocabulary order (the full grid, matching :func:`default_candidates` of a toy model).

    Returns
    -------
    list of arrays ``[a, b]``, renormalised over the candidates; one
    ``Grammar.pair_joints`` pass per sentence.
    """
    V = len(grammar.vocab)
    everything = np.arange(V) + offset
    cands = [(everything, everything)] * len(queries) if candidates is None else list(candidates)
    by_sentence: dict = {}
    for k, (words, A, B) in enumerate(queries):
        by_sentence.setdefault(tuple(words), []).append(k)
    out = [None] * len(queries)
    for words, ks in by_sentence.items():
        pairs = sorted({(int(queries[k][1]), int(queries[k][2])) for k in ks})
        with one_thread():
            exact = dict(grammar.pair_joints(list(words), pairs))
        for k in ks:
            P = exact[(int(queries[k][1]), int(queries[k][2]))]
            ia, ib = (np.asarray(c, dtype=np.int64) - offset for c in cands[k])
            ok_a, ok_b = (ia >= 0) & (ia < V), (ib >= 0) & (ib < V)
            sub = np.zeros((len(ia), len(ib)))
            sub[np.ix_(ok_a, ok_b)] = P[np.ix_(ia[ok_a], ib[ok_b])]
            if sub.sum() <= 0:
                raise ValueError(f"the candidates of query {k} have no probability under the truth")
            out[k] = sub / sub.sum()
    return out


# --------------------------------------------------------------------------- evaluation

METHODS = {"naive": "MLM (independent)", "mrf": "MRF", "mrf_local": "MRF-local", "hcb": "HCB", "ag": "AG"}
"""The joints of this module, keyed as in :func:`derive_all`, with the labels the book uses."""


def gold_index(pc: PairConditionals, token_a: int, token_b: int) -> tuple:
    """Indices of the gold tokens among the candidates (``ValueError`` if one is missing)."""
    try:
        return int(np.flatnonzero(pc.cand_a == token_a)[0]), int(np.flatnonzero(pc.cand_b == token_b)[0])
    except IndexError:
        raise ValueError(f"gold tokens ({token_a}, {token_b}) are not among the candidates") from None


def _log_unary(joint, a, b) -> float:
    """:math:`\\log p(a\\mid b) + \\log p(b\\mid a)` of a joint at ``(a, b)``."""
    with np.errstate(divide="ignore"):
        return float(2 * np.log(joint[a, b]) - np.log(joint[:, b].sum()) - np.log(joint[a, :].sum()))


def evaluate_pair(pc: PairConditionals, gold, truth=None, joints: dict | None = None) -> dict:
    r"""Every per-pair quantity the chapter aggregates, as a flat ``{"method.metric": float}``.

    Parameters
    ----------
    pc : PairConditionals
        The MLM's conditionals for the pair.
    gold : (int, int)
        Indices of the observed tokens among the candidates (:func:`gold_index`).
    truth : array or None
        The true joint over the same candidates (toy world only).
    joints : dict or None
        Precomputed :func:`derive_all` output (default: computed here).

    Returns
    -------
    dict with, for each method ``m`` of :data:`METHODS`:

    - ``m.logp_pair`` :math:`\log p_m(a,b)` and ``m.logp_unary``
      :math:`\log p_m(a\mid b)+\log p_m(b\mid a)` at the gold pair (P-PPL and U-PPL);
    - ``m.kl``, ``m.rkl``, ``m.jsd``: :func:`conditional_divergence` to the MLM's conditionals;
    - with ``truth``: ``m.kl_truth`` :math:`\mathrm{KL}(p\|p_m)` and ``m.cond_kl_truth``
      (:func:`truth_conditional_kl`);

    and ``mlm.logp_unary`` (the MLM's own conditionals at the gold pair), ``compatibility``,
    ``ag.iterations``, ``ag.objective``; with ``truth`` also ``mlm.cond_kl_truth``,
    ``truth.logp_pair`` and ``truth.logp_unary``.
    """
    a, b = gold
    if joints is None:
        res = ag(pc)
        joints = {"naive": naive(pc), "mrf": mrf(pc), "mrf_local": mrf_local(pc), "hcb": hcb(pc), "ag": res.joint}
        out = {"ag.iterations": float(res.iterations), "ag.objective": float(res.objective[-1])}
    else:
        out = {}
    for m, J in joints.items():
        with np.errstate(divide="ignore"):
            out[f"{m}.logp_pair"] = float(np.log(J[a, b]))
        out[f"{m}.logp_unary"] = _log_unary(J, a, b)
        for kind, value in conditional_divergences(J, pc).items():
            out[f"{m}.{kind}"] = value
        if truth is not None:
            out[f"{m}.kl_truth"] = kl_joint(truth, J)
            out[f"{m}.cond_kl_truth"] = truth_conditional_kl(truth, J)
    out["mlm.logp_unary"] = float(pc.log_a_given_b[a, b] + pc.log_b_given_a[a, b])
    out["compatibility"] = compatibility(pc)
    if truth is not None:
        out["mlm.cond_kl_truth"] = truth_conditional_kl(truth, pc)
        with np.errstate(divide="ignore"):
            out["truth.logp_pair"] = float(np.log(truth[a, b]))
        out["truth.logp_unary"] = _log_unary(truth, a, b)
    return out


def stack(rows: list) -> dict:
    """A list of :func:`evaluate_pair` dicts -> ``{key: array over pairs}`` (keys present in all)."""
    keys = [k for k in rows[0] if all(k in r for r in rows)]
    return {k: np.array([r[k] for r in rows], dtype=float) for k in keys}


def ppl(log_probs, axis=-1):
    r"""Per-token perplexity of pairs: :math:`\exp(-\overline{\log p}/2)` (P-PPL, U-PPL)."""
    return np.exp(-np.mean(log_probs, axis=axis) / 2)


def bootstrap(stat, *samples, n_boot: int = 1000, level: float = 0.95, seed=0) -> tuple:
    r"""Percentile bootstrap interval of ``stat(*samples)``, resampling pairs (rows) jointly.

    ``stat`` reduces over the last axis (e.g. ``lambda x: x.mean(-1)``, :func:`ppl`, or a
    difference of two such for a *paired* comparison); ``samples`` are arrays of equal length N.
    Returns ``(estimate, low, high)``.
    """
    xs = [np.asarray(x, dtype=float) for x in samples]
    n = len(xs[0])
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boots = np.asarray(stat(*[x[idx] for x in xs]), dtype=float)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return float(stat(*xs)), float(lo), float(hi)


AGGREGATE = {"p_ppl": ("logp_pair", ppl), "u_ppl": ("logp_unary", ppl),
             "kl": ("kl", lambda x: x.mean(-1)), "rkl": ("rkl", lambda x: x.mean(-1)),
             "jsd": ("jsd", lambda x: x.mean(-1)), "kl_truth": ("kl_truth", lambda x: x.mean(-1)),
             "cond_kl_truth": ("cond_kl_truth", lambda x: x.mean(-1))}
"""Corpus metric -> (per-pair field, statistic over pairs)."""


def summarize(per_pair: dict, n_boot: int = 1000, level: float = 0.95, seed=0) -> dict:
    """Corpus metrics with bootstrap intervals: ``{row: {metric: (estimate, low, high)}}``.

    Rows are the methods, ``mlm`` (the MLM's own conditionals) and ``truth`` where their fields
    exist in ``per_pair`` (from :func:`stack`); metrics are those of :data:`AGGREGATE`.
    """
    table = {}
    for row in list(METHODS) + ["mlm", "truth"]:
        cells = {}
        for metric, (field_, stat) in AGGREGATE.items():
            x = per_pair.get(f"{row}.{field_}")
            if x is not None:
                cells[metric] = bootstrap(stat, x, n_boot=n_boot, level=level, seed=seed)
        if cells:
            table[row] = cells
    return table
