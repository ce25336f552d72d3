r"""An MLM's view of two masked positions: :class:`PairConditionals`, and how to query it. Tables
are numpy float64 (torch tensors are accepted); a conditional given an impossible value (exact
oracles have zeros) is undefined and stored as a row/column of ``-inf`` (NaNs too)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import torch
from scipy.special import logsumexp

from .. import queries as Q

if TYPE_CHECKING:
    from ..models.base import MaskedLM

NEG_INF = -np.inf

__all__ = ["PairConditionals", "default_candidates", "iter_pair_conditionals",
           "pair_conditionals_batch", "pair_conditionals", "topk_candidates", "gold_index"]


def _np(x) -> np.ndarray:
    """numpy float64 copy of an array or a torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.array(x, dtype=np.float64)


def _log_normalise(x, axis=None) -> np.ndarray:
    """``x - logsumexp(x, axis)``; an all ``-inf`` slice (undefined) stays ``-inf``, never NaN."""
    x = np.where(np.isnan(x), NEG_INF, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = x - logsumexp(x, axis=axis, keepdims=True)
    return np.where(np.isnan(out), NEG_INF, out)


def joint_from_log(log_p) -> np.ndarray:
    """Normalise an unnormalised log joint and return probabilities (``ValueError`` if all zero)."""
    if not np.isfinite(log_p).any():
        raise ValueError("the derived joint has no support (all entries are zero)")
    return np.exp(_log_normalise(log_p))


@dataclass
class PairConditionals:
    r"""The MLM's view of two masked positions A, B, in log space, laid out ``[a, b]`` (inputs are
    renormalised over the candidates): ``log_a_given_b`` :math:`\log q(x_A=a \mid x_B=b)` (each
    column sums to 1 in probability) and ``log_b_given_a`` :math:`\log q(x_B=b \mid x_A=a)` (each
    row does), both (K_A, K_B); ``log_a``, ``log_b`` the log marginals with both positions masked;
    ``logit_a_given_b``, ``logit_b_given_a`` raw logits, same layout, for
    :func:`~mlmbook.joints.mrf` (default: the log-probabilities); ``cand_a``, ``cand_b`` the
    candidates' token ids (``None`` when not built from a model)."""

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
    def from_logits(cls, logit_a_given_b, logit_b_given_a, logit_a, logit_b, **kw) -> "PairConditionals":
        """Build from raw logits (kept for :func:`~mlmbook.joints.mrf`) over the candidate sets; a
        conditional given a value of zero both-masked probability is undefined (``-inf``)."""
        pc = cls(logit_a_given_b, logit_b_given_a, logit_a, logit_b,
                 logit_a_given_b=logit_a_given_b, logit_b_given_a=logit_b_given_a, **kw)
        dead_a, dead_b = np.isneginf(pc.log_a), np.isneginf(pc.log_b)
        for name in ("log_a_given_b", "logit_a_given_b"):
            getattr(pc, name)[:, dead_b] = NEG_INF
        for name in ("log_b_given_a", "logit_b_given_a"):
            getattr(pc, name)[dead_a, :] = NEG_INF
        return pc

    @classmethod
    def from_joint(cls, P) -> "PairConditionals":
        r"""The conditionals and marginals of a joint ``P[a, b]`` (compatible by construction):
        :math:`q(a\mid b) = P_{ab}/P_{\cdot b}`, :math:`q(b\mid a) = P_{ab}/P_{a\cdot}`."""
        with np.errstate(divide="ignore"):
            log_p = np.log(_np(P))
        return cls(log_p, log_p, logsumexp(log_p, axis=1), logsumexp(log_p, axis=0))

    @property
    def shape(self) -> tuple:
        return self.log_a_given_b.shape

    def swap(self) -> "PairConditionals":
        """The same conditionals with the roles of A and B exchanged (all tables transposed)."""
        return PairConditionals(self.log_b_given_a.T, self.log_a_given_b.T, self.log_b, self.log_a,
                                self.logit_b_given_a.T, self.logit_a_given_b.T, self.cand_b, self.cand_a)


def divergences(mlm: PairConditionals, derived: PairConditionals, div, worst=np.inf) -> list:
    """``div(mlm, derived)`` per conditioning value: ``[(D over a given each b, MLM-defined b's),
    (D over b given each a, MLM-defined a's)]``; ``worst`` where the derived one is undefined."""
    out = []
    for m, d, ax in [(mlm.log_a_given_b, derived.log_a_given_b, 0),
                     (mlm.log_b_given_a, derived.log_b_given_a, 1)]:
        vals = np.where(np.isfinite(d).any(axis=ax), div(np.exp(m), np.exp(d), axis=ax), worst)
        out.append((vals, np.isfinite(m).any(axis=ax)))
    return out


def default_candidates(lm: "MaskedLM") -> np.ndarray:
    """All token ids except special tokens (``lm.special_ids`` if the oracle has it, else the
    mask and tokens spelled like ``[CLS]`` or ``<s>``)."""
    special = getattr(lm, "special_ids", None)
    if special is None:
        special = [i for i, t in enumerate(lm.vocab)
                   if i == lm.mask_id or (len(t) > 2 and t[0] + t[-1] in ("[]", "<>"))]
    return np.setdiff1d(np.arange(lm.V), np.asarray(list(special), dtype=int))


def gold_index(pc: PairConditionals, token_a: int, token_b: int) -> tuple[int, int]:
    """Indices of the gold tokens among the candidates (``ValueError`` if one is missing)."""
    try:
        return int(np.flatnonzero(pc.cand_a == token_a)[0]), int(np.flatnonzero(pc.cand_b == token_b)[0])
    except IndexError:
        raise ValueError(f"gold tokens ({token_a}, {token_b}) are not among the candidates") from None


def _candidate_pairs(candidates, n_queries: int, default) -> list:
    """``(cand_a, cand_b)`` int arrays per query, from None (``default``) or a pair per query."""
    if candidates is None:
        return [(default, default)] * n_queries
    if len(candidates) != n_queries:
        raise ValueError(f"got {len(candidates)} candidate sets for {n_queries} queries")
    return [tuple(np.asarray(c, dtype=np.int64).reshape(-1) for c in pair) for pair in candidates]


def _as_queries(queries) -> list:
    out = []
    for ids, A, B in queries:
        ids = [int(t) for t in torch.as_tensor(ids, dtype=torch.long).reshape(-1).tolist()]
        A, B = int(A), int(B)
        if A == B or not (0 <= A < len(ids) and 0 <= B < len(ids)):
            raise ValueError(f"positions A={A}, B={B} must differ and lie in [0, {len(ids)})")
        out.append((ids, A, B))
    return out


def iter_pair_conditionals(lm: "MaskedLM", queries: Sequence, candidates=None,
                           progress: bool = False) -> Iterator[tuple[int, PairConditionals]]:
    r"""Query a masked LM for the conditionals of many pairs ``(ids, A, B)`` (token ids without
    special tokens, positions ``A != B``), batched across pairs and sentences; yield ``(k,
    PairConditionals)`` for every query ``k`` as soon as its rows are in (not in order).

    A query's rows: :math:`K_B` copies with A masked and B set to each candidate b (read at A),
    :math:`K_A` with B masked and A set to each candidate a (read at B), and one with both masked,
    all through :func:`mlmbook.queries.iter_logits`. ``candidates``: ``None`` (every non-special
    token, :func:`default_candidates`) or one ``(cand_a, cand_b)`` per query."""
    queries = _as_queries(queries)
    cands = _candidate_pairs(candidates, len(queries), default_candidates(lm))
    rows, positions, owner = [], [], []          # owner: (query, role, index) of every row
    for k, (ids, A, B) in enumerate(queries):
        ca, cb = cands[k]
        both = np.array(ids, dtype=np.int64)
        both[[A, B]] = lm.mask_id
        fill_b, fill_a = np.tile(both, (len(cb), 1)), np.tile(both, (len(ca), 1))
        fill_b[:, B], fill_a[:, A] = cb, ca  # role 0: read at A; role 1: read at B
        rows += fill_b.tolist() + fill_a.tolist() + [both.tolist()]
        positions += [[A]] * len(cb) + [[B]] * len(ca) + [[A, B]]
        owner += [(k, r, j) for r, n in ((0, len(cb)), (1, len(ca)), (2, 1)) for j in range(n)]
    owner = np.array(owner, dtype=np.int64).reshape(-1, 3)
    tables = {}
    missing = [len(ca) + len(cb) + 1 for ca, cb in cands]
    for idx, logits in Q.iter_logits(lm, rows, positions, progress=progress and "pair conditionals"):
        idx = np.asarray(idx)
        who = owner[idx]
        order = np.lexsort((who[:, 1], who[:, 0]))  # the chunk's rows by query, then role
        keys = who[order, 0] * 3 + who[order, 1]
        for group in np.split(order, np.flatnonzero(np.diff(keys)) + 1):
            k, role = int(who[group[0], 0]), int(who[group[0], 1])
            ca, cb = cands[k]
            if k not in tables:
                tables[k] = [np.empty((len(ca), len(cb))), np.empty((len(ca), len(cb))), None, None]
            t, j = tables[k], who[group, 2]
            if role == 0:
                t[0][:, j] = logits[group, 0][:, ca].T
            elif role == 1:
                t[1][j, :] = logits[group, 0][:, cb]
            else:
                t[2], t[3] = logits[group[0], 0, ca], logits[group[0], 1, cb]
            missing[k] -= len(group)
            if missing[k] == 0:
                la, lb, a, b = tables.pop(k)
                yield k, PairConditionals.from_logits(la, lb, a, b, cand_a=np.asarray(ca),
                                                      cand_b=np.asarray(cb))


def pair_conditionals_batch(lm: "MaskedLM", queries: Sequence, candidates=None, **kw) -> list[PairConditionals]:
    """:func:`iter_pair_conditionals` collected into a list in query order."""
    out = [None] * len(queries)
    for k, pc in iter_pair_conditionals(lm, queries, candidates, **kw):
        out[k] = pc
    return out


def pair_conditionals(lm: "MaskedLM", ids, A: int, B: int, candidates=None) -> PairConditionals:
    """:func:`iter_pair_conditionals` for one pair; ``candidates``: None or ``(cand_a, cand_b)``."""
    return pair_conditionals_batch(lm, [(ids, A, B)], None if candidates is None else [candidates])[0]


def topk_candidates(lm: "MaskedLM", queries: Sequence, k: int = 50, gold: bool = True) -> list[tuple]:
    r"""Top-K candidate sets from the both-masked marginals: for each query ``(ids, A, B)`` the
    ``k`` likeliest non-special tokens at A and at B, most likely first; with ``gold=True``
    ``ids[A]``, ``ids[B]`` forced in (replacing the last candidate if missing).

    Returns
    -------
    list of ``(cand_a, cand_b)`` int arrays, one per query.
    """
    queries = _as_queries(queries)
    k = int(min(k, len(default_candidates(lm))))
    rows = [[lm.mask_id if p in (A, B) else t for p, t in enumerate(ids)] for ids, A, B in queries]
    out = [None] * len(queries)
    for idx, arr in Q.iter_log_probs(lm, rows, [[A, B] for _, A, B in queries]):
        top = torch.topk(torch.from_numpy(arr), k, dim=-1).indices.numpy()       # (n, 2, k)
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
