r"""Beyond two tokens: joints of ``k`` masked positions :math:`S = \{s_1, \dots, s_k\}` from an
MLM's conditionals of each site given the other ``k - 1``, over a candidate grid ``[x_1, ...,
x_k]`` (renormalised over the candidates): :func:`independent_k`, :func:`chain_k` (it depends on
the order for an inconsistent model) and :func:`ag_k`, Arnold–Gokhale for ``k`` sites:

.. math:: p^{(t+1)}(x) \;\propto\; \frac{\sum_i q(x_{s_i} \mid x_{S\setminus s_i})}
          {\sum_i 1/p^{(t)}(x_{S\setminus s_i})},

:math:`p(x_{S \setminus s_i})` the marginal of the other sites (for ``k = 2``
:func:`~mlmbook.joints.ag`'s update)."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Sequence

import numpy as np
from scipy.special import logsumexp

from .. import queries as Q
from .. import threads
from .conditionals import _log_normalise, joint_from_log
from .metrics import kl_joint
from .truth import site_chain, site_joint

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["SiteConditionals", "site_conditionals_batch", "topk_site_candidates", "independent_k",
           "chain_k", "ag_k", "ag_k_objective", "K_JOINTS", "k_token_pools", "k_token_kls"]


@dataclass
class SiteConditionals:
    r"""An MLM's view of ``k`` masked sites of one sentence, in log space over a candidate grid
    (``cands``: k id arrays): ``log_cond[i]`` :math:`\log q(x_{s_i} \mid x_{S\setminus s_i})`, shape
    ``(K_1, ..., K_k)``, normalised along axis ``i``; ``log_marg[i]`` :math:`\log q(x_{s_i})` with
    every site of S masked; ``log_chain[t]`` :math:`\log q(x_{s_t} \mid x_{s_1}, \dots,
    x_{s_{t-1}})` with the later sites masked, ``(K_1, ..., K_t)``, normalised on the last axis."""

    log_cond: list
    log_marg: list
    log_chain: list
    cands: list

    @property
    def shape(self) -> tuple:
        return tuple(len(c) for c in self.cands)

    @classmethod
    def from_joint(cls, P) -> "SiteConditionals":
        """The conditionals, marginals and chain factors of a joint (compatible by construction)."""
        with np.errstate(divide="ignore"):
            lp = np.log(np.asarray(P, dtype=float))
        k = lp.ndim
        cond = [_log_normalise(lp, axis=i) for i in range(k)]
        marg = [_log_normalise(logsumexp(lp, axis=tuple(j for j in range(k) if j != i)), axis=0) for i in range(k)]
        chain = []
        for t in range(k):
            head = logsumexp(lp, axis=tuple(range(t + 1, k))) if t + 1 < k else lp
            chain.append(_log_normalise(head, axis=t))
        return cls(cond, marg, chain, [np.arange(n) for n in lp.shape])


def site_conditionals_batch(lm: "MaskedLM", queries: Sequence, candidates: Sequence,
                            progress: bool = False) -> list[SiteConditionals]:
    r"""Query a masked LM for the ``k``-site conditionals, marginals and chain factors of each query
    ``(ids, positions)`` (token ids without special tokens, ``k`` distinct positions) over its ``k``
    candidate id arrays, in query order (one :func:`mlmbook.queries.iter_log_probs` call)."""
    rows, positions, owner, grids = [], [], [], []
    for k, ((ids, sites), cands) in enumerate(zip(queries, candidates)):
        ids, sites = [int(t) for t in ids], [int(s) for s in sites]
        if len(set(sites)) != len(sites) or len(cands) != len(sites):
            raise ValueError(f"query {k}: need distinct positions and one candidate set per position")
        cands = [np.asarray(c, dtype=np.int64) for c in cands]
        grids.append(cands)
        masked = [lm.mask_id if p in sites else t for p, t in enumerate(ids)]
        rows.append(masked), positions.append(sites), owner.append((k, "marg", None))
        for i, s in enumerate(sites):  # site i given every filling of the others
            others = [j for j in range(len(sites)) if j != i]
            for fill in product(*[range(len(cands[j])) for j in others]):
                r = list(ids)
                r[s] = lm.mask_id
                for j, f in zip(others, fill):
                    r[sites[j]] = int(cands[j][f])
                rows.append(r), positions.append([s]), owner.append((k, "cond", (i, fill)))
        for t in range(1, len(sites)):                          # the chain: sites after t masked
            for fill in product(*[range(len(cands[j])) for j in range(t)]):
                r = list(masked)
                for j, f in enumerate(fill):
                    r[sites[j]] = int(cands[j][f])
                rows.append(r), positions.append([sites[t]]), owner.append((k, "chain", (t, fill)))
    tables = [dict(cond=[np.empty(shape) for _ in shape], chain=[np.empty(shape[:t + 1]) for t in range(len(shape))],
                   marg=None) for shape in ([len(c) for c in g] for g in grids)]
    for idx, logp in Q.iter_log_probs(lm, rows, positions, progress=progress and "site conditionals"):
        for r, row in zip(idx, logp):
            k, role, key = owner[r]
            cands, t = grids[k], tables[k]
            if role == "marg":
                t["marg"] = [row[i, c] for i, c in enumerate(cands)]
            elif role == "cond":
                i, fill = key
                index = list(fill)
                index.insert(i, slice(None))
                t["cond"][i][tuple(index)] = row[0, cands[i]]
            else:
                step, fill = key
                t["chain"][step][tuple(fill) + (slice(None),)] = row[0, cands[step]]
    out = []
    for cands, t in zip(grids, tables):
        cond = [_log_normalise(c, axis=i) for i, c in enumerate(t["cond"])]
        marg = [_log_normalise(m, axis=0) for m in t["marg"]]
        chain = [marg[0]] + [_log_normalise(c, axis=step) for step, c in enumerate(t["chain"]) if step > 0]
        out.append(SiteConditionals(cond, marg, chain, cands))
    return out


def independent_k(sc: SiteConditionals) -> np.ndarray:
    r"""The product of the all-masked marginals :math:`\prod_i q(x_{s_i})`."""
    k = len(sc.log_marg)
    lp = sum(m.reshape([-1 if j == i else 1 for j in range(k)]) for i, m in enumerate(sc.log_marg))
    return joint_from_log(lp)


def chain_k(sc: SiteConditionals) -> np.ndarray:
    r"""The left-to-right chain :math:`q(x_{s_1})\, q(x_{s_2}\mid x_{s_1}) \cdots q(x_{s_k}\mid
    x_{s_{<k}})`, each factor read from the MLM with the later sites masked."""
    k = len(sc.log_chain)
    lp = sum(c.reshape(c.shape + (1,) * (k - c.ndim)) for c in sc.log_chain)
    return joint_from_log(lp)


def ag_k_objective(sc: SiteConditionals, joint) -> float:
    r""":math:`\sum_i \sum_{x_{S\setminus s_i}} \mathrm{KL}\big(q(\cdot \mid x_{S\setminus s_i})
    \,\|\, p(\cdot \mid x_{S\setminus s_i})\big)`, the quantity :func:`ag_k` minimises (0 iff
    ``joint`` has the MLM's conditionals; ``inf`` if it misses their support)."""
    P = np.asarray(joint, dtype=float)
    total = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, lc in enumerate(sc.log_cond):
            q = np.exp(lc)
            log_p_cond = np.log(P) - np.log(P.sum(axis=i, keepdims=True))
            terms = np.where(q > 0, q * (lc - log_p_cond), 0.0)
            total += float(terms.sum())
    return total if np.isfinite(total) else np.inf


def ag_k(sc: SiteConditionals, tol: float = 1e-9, max_iter: int = 100_000) -> tuple[np.ndarray, int, bool]:
    r"""Arnold–Gokhale for ``k`` sites, ``(joint, updates, converged)``: the fixed point of the
    module's update from :func:`chain_k`, with SQUAREM on :math:`\log p` (an extrapolated point kept
    only if :func:`ag_k_objective` is no larger), until two successive plain updates move no
    log-probability by more than ``tol``."""
    num = sum(np.exp(lc) for lc in sc.log_cond)
    k = num.ndim

    def update(P):
        with np.errstate(divide="ignore", invalid="ignore"):
            den = sum(1.0 / P.sum(axis=i, keepdims=True) for i in range(k))
            new = np.where(num > 0, num / den, 0.0)
        return new / new.sum()

    with threads.limited():
        P = chain_k(sc)
        P = np.where(num > 0, np.maximum(P, 1e-300), 0.0)
        P /= P.sum()
        it, converged = 0, False
        while it < max_iter:
            P1 = update(P)
            P2 = update(P1)
            it += 2
            with np.errstate(divide="ignore"):
                l0, l1, l2 = np.log(P), np.log(P1), np.log(P2)
            ok = num > 0
            step = float(np.abs(l2[ok] - l1[ok]).max(initial=0.0))
            if step <= tol:
                P, converged = P2, True
                break
            obj2 = ag_k_objective(sc, P2)
            r, v = np.where(ok, l1 - l0, 0.0), np.where(ok, l2 - 2 * l1 + l0, 0.0)
            alpha = -np.sqrt(np.sum(r * r) / np.sum(v * v)) if np.sum(v * v) > 0 else -1.0
            P = P2
            if alpha < -1.0:
                lx = np.where(ok, l0 - 2 * alpha * r + alpha ** 2 * v, -np.inf)
                Px = update(np.exp(lx - lx[ok].max()) / np.exp(lx - lx[ok].max()).sum())
                it += 1
                if ag_k_objective(sc, Px) <= obj2:
                    P = Px
    return P, it, converged


def topk_site_candidates(lm: "MaskedLM", queries: Sequence, k: int, gold: bool = True) -> list[list[np.ndarray]]:
    """The ``k`` likeliest tokens at each site of each query ``(ids, positions)``, all sites masked
    (id arrays per query); ``gold``: the observed token forced in, replacing the last."""
    positions = [[int(s) for s in sites] for _, sites in queries]
    rows = [[lm.mask_id if p in sites else int(t) for p, t in enumerate(ids)]
            for (ids, _), sites in zip(queries, positions)]
    out = [None] * len(queries)
    for idx, logp in Q.iter_log_probs(lm, rows, positions):
        for row, q in zip(logp, idx):
            ids, sites = queries[q]
            cands = []
            for i, s in enumerate(sites):
                c = np.argsort(-row[i], kind="stable")[:k].astype(np.int64)
                if gold and int(ids[s]) not in c:
                    c[-1] = int(ids[s])
                cands.append(c)
            out[q] = cands
    return out


K_JOINTS = ("independent", "chain", "AG-k", "truth's chain")
"""The joints :func:`k_token_kls` scores, in table order."""


def k_token_pools(items: Sequence[dict], grammar, triples: int, whole: int, seed: int = 0) -> dict[str, list]:
    """Chapter 2's two samples of ``(words, sites)``: ``"three words"`` — three content words drawn
    from each of the first ``triples`` sentences of the pairs' sample (``items``, two pairs per
    sentence) — and ``"whole sentence"`` — the first ``whole`` four-word toy sentences (period
    included: five tokens), every word masked but the period."""
    rng = np.random.default_rng(seed + 1)
    three = []
    for it in list(items)[::2][:triples]:
        content = [w for w, word in enumerate(it["words"]) if word != "."]
        three.append((it["words"], sorted(rng.choice(content, size=3, replace=False).tolist())))
    short = [s.words for s in grammar.sample(400, seed=seed + 2) if len(s.words) == 5]
    return {"three words": three, "whole sentence": [(w, [0, 1, 2, 3]) for w in short[:whole]]}


def k_token_kls(lm: "MaskedLM", grammar, pool: Sequence, k: int) -> dict[str, np.ndarray]:
    """KL from the exact joint on a grid of ``k`` candidates per site (:func:`topk_site_candidates`)
    to each joint of :data:`K_JOINTS`, one value per ``(words, sites)`` of ``pool``."""
    queries = [(lm.encode_words(words)[0], sites) for words, sites in pool]
    grids = topk_site_candidates(lm, queries, k)
    found = {m: [] for m in K_JOINTS}
    for (words, sites), grid, sc in zip(pool, grids, site_conditionals_batch(lm, queries, grids)):
        P = site_joint(grammar, words, sites, grid)
        for m, Q_ in (("independent", independent_k(sc)), ("chain", chain_k(sc)), ("AG-k", ag_k(sc)[0]),
                      ("truth's chain", site_chain(grammar, words, sites, grid))):
            found[m].append(kl_joint(P, Q_))
    return {m: np.array(v) for m, v in found.items()}
