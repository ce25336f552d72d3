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
"""
from __future__ import annotations

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


def pair_conditionals(lm, ids, A: int, B: int, candidates=None) -> PairConditionals:
    """Query a masked LM for the conditionals of positions A and B in ONE batched call.

    Rows ``0..K_B-1`` mask A and set B to each candidate b (query A); rows ``K_B..K_B+K_A-1``
    mask B and set A to each candidate a (query B); the last row masks both (query A and B).
    ``positions`` holds only A or B (``[A, A]``, ``[B, B]``, ``[A, B]``), so the LM head runs only
    there. ``candidates``: ``None`` (all non-special ids), one id sequence for both positions,
    or a pair ``(cand_a, cand_b)``.
    """
    import torch

    ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1)
    if candidates is None:
        candidates = default_candidates(lm)
    pair = isinstance(candidates, (tuple, list)) and len(candidates) == 2 and np.ndim(candidates[0]) == 1
    cand_a, cand_b = (candidates if pair else (candidates, candidates))
    cand_a, cand_b = (torch.as_tensor(np.asarray(c), dtype=torch.long).reshape(-1) for c in (cand_a, cand_b))
    ka, kb = len(cand_a), len(cand_b)
    rows = ids.clone()
    rows[[A, B]] = lm.mask_id
    rows = rows.repeat(kb + ka + 1, 1)
    rows[:kb, B] = cand_b
    rows[kb:kb + ka, A] = cand_a
    positions = torch.tensor([[A, A]] * kb + [[B, B]] * ka + [[A, B]], dtype=torch.long)
    with torch.no_grad():
        logits = _np(lm.logits(rows, positions))  # (kb + ka + 1, 2, V)
    ia, ib = cand_a.numpy(), cand_b.numpy()
    return PairConditionals.from_logits(
        logits[:kb, 0][:, ia].T, logits[kb:kb + ka, 0][:, ib], logits[-1, 0, ia], logits[-1, 1, ib],
        cand_a=ia, cand_b=ib)


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
    """Output of :func:`ag`: the joint, the number of updates, the objective before each update
    and after the last one (``objective[0]`` is at the uniform start), and convergence."""

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


def ag(pc: PairConditionals, tol: float = 1e-12, max_iter: int = 10_000) -> AGResult:
    r"""Arnold–Gokhale joint: the p minimising :func:`ag_objective`, by the fixed point

    .. math:: p^{(t+1)}(a,b) \propto \frac{q(a\mid b) + q(b\mid a)}
              {1/p^{(t)}(a) + 1/p^{(t)}(b)}, \qquad p^{(0)} \text{ uniform},

    (the marginals of :math:`p^{(t)}` in the denominator; a term drops where its conditional is
    undefined). It is a majorise–minimise step (the concave :math:`\log p(b)` in :math:`J` is
    bounded by its tangent), so :math:`J` never increases. Zeros: after one step the support is
    that of :math:`q(a\mid b)+q(b\mid a)`, so AG is restricted to the MLM's support. Stops when
    the largest change of an entry is below ``tol``.
    """
    la, lb = pc.log_a_given_b, pc.log_b_given_a
    log_num = np.logaddexp(la, lb)
    def_b, def_a = np.isfinite(la).any(axis=0), np.isfinite(lb).any(axis=1)
    log_p = np.full(pc.shape, -np.log(la.size))
    trace, converged, it = [ag_objective(pc, np.exp(log_p))], False, 0
    while it < max_iter and not converged:
        inv_a = np.where(def_a, -logsumexp(log_p, axis=1), NEG_INF)  # log 1/p(a)
        inv_b = np.where(def_b, -logsumexp(log_p, axis=0), NEG_INF)  # log 1/p(b)
        log_den = np.logaddexp(inv_a[:, None], inv_b[None, :])
        with np.errstate(invalid="ignore"):
            new = np.where(np.isfinite(log_num), log_num - log_den, NEG_INF)
        new = _log_normalise(np.where(np.isnan(new), NEG_INF, new))
        converged = np.abs(np.exp(new) - np.exp(log_p)).max() < tol
        log_p, it = new, it + 1
        trace.append(ag_objective(pc, np.exp(log_p)))
    return AGResult(np.exp(log_p), it, np.array(trace), bool(converged))


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
