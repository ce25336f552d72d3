r"""The Ensemble of Conditionals (Young & You 2022): one conditional reached through several masking
routes.

To predict a target :math:`x_t`, version 0 is the direct conditional :math:`q(x_t \mid x_{\setminus
t})`. A **route** masks a few more positions :math:`R = (k_1, \dots, k_L)` together with :math:`t`
and recovers :math:`x_t` by the chain rule and Bayes' rule, :math:`x_t` first and the route's words
after it, left to right:

.. math::
    q_R(x_t = c) \;\propto\; q(x_t = c \mid x_{\setminus(\{t\}\cup R)})
    \prod_{m=1}^{L} q(x_{k_m} = o_{k_m} \mid x_t = c,\ x_{k_1..k_{m-1}} = o,\ x_{k_m..k_L}\ \text{masked},\
    x_{\setminus(\{t\}\cup R)}),

normalised over a candidate set, :math:`o` the observed words. For a joint the right side is
:math:`p(x_t = c, x_R = o_R \mid x_{\setminus(\{t\}\cup R)}) \propto p(x_t = c \mid x_{\setminus
t})`, so every version equals version 0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import queries
from ._rows import as_rows, each

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["Versions", "route_versions", "ensemble_versions_many", "harsh",
           "combine", "Curve", "ensemble_curve", "disagreement_rate"]


class Versions(NamedTuple):
    """The versions of one target's conditional."""

    candidates: np.ndarray  # (C,) token ids the versions are distributions over
    probs: np.ndarray  # (1 + |routes|, C); row 0 = direct conditional, row 1 + r = via routes[r]
    routes: tuple = ()      # per route, the positions masked besides the target (chain-rule order)
    mass: float = 1.0       # the direct conditional's probability of the model's own candidates
    outside: float = 0.0    # ... and of the observed word when it is not one of them
    added: bool = False     # the observed word was appended to the candidates (the label leak)


def _direct(spec, d: np.ndarray, gold: int) -> Versions:
    """The candidates ``spec`` picks from the direct log-probabilities ``d``, ``d`` on them."""
    finite = np.isfinite(d)
    if spec is None:
        cand = np.flatnonzero(finite)
    elif np.ndim(spec) == 0:
        order = np.argsort(-d, kind="stable")
        cand = order[finite[order]][: int(spec)]
    else:
        cand = np.asarray(spec, dtype=np.int64)
    mass = float(np.exp(d[cand]).sum())
    inside = gold < 0 or gold in cand
    outside = 0.0 if inside else float(np.exp(d[gold]))
    added = bool(not inside and np.ndim(spec) == 0 and spec is not None)
    if added:
        cand = np.append(cand, gold)
    return Versions(cand, d[cand][None], (), mass, outside, added)


def route_versions(lm: MaskedLM, ids, targets, routes, candidates=20) -> list[Versions]:
    r"""The versions of :math:`q(x_t \mid x_{\setminus t})` along masking routes, for many targets.

    ``ids``: N sentences (``ids[t]`` the observed word); ``targets``: N positions; ``routes``: per
    item, a list of routes, each a tuple of positions masked with the target in the order the chain
    rule reads them back. ``candidates``: None (every token with a finite direct logit), an int K
    (the direct conditional's top K, plus a missing observed word) or an array of ids. Returns one
    :class:`Versions` per item.
    """
    rows = as_rows(ids)
    N = len(rows)
    targets = np.array(np.broadcast_to(np.asarray(targets, dtype=np.int64), (N,)))
    routes = [[tuple(int(k) for k in np.atleast_1d(r)) for r in rs] for rs in routes]
    if len(routes) != N:
        raise ValueError(f"routes: one list per item ({N}), got {len(routes)}")
    m = lm.mask_id
    gold = [int(r[t]) if int(r[t]) != m else -1 for r, t in zip(rows, targets)]
    direct_rows = [r.copy() for r in rows]
    for r, t in zip(direct_rows, targets):
        r[t] = m
    direct = each(lm, direct_rows, targets[:, None].tolist(),
                  lambda n, lq: _direct(candidates, lq[0], gold[n]))
    head_rows, head_pos, head_want = [], [], []
    tail_rows, tail_pos, tail_want, tail_owner = [], [], [], []
    for n, (r, t, rs, v) in enumerate(zip(rows, targets, routes, direct)):
        cand = v.candidates
        for q, route in enumerate(rs):
            head = r.copy()
            head[[t, *route]] = m
            head_rows.append(head), head_pos.append([int(t)]), head_want.append(cand)
            for step, k in enumerate(route):
                block = np.tile(r, (len(cand), 1))
                block[:, t] = cand
                block[:, list(route[step:])] = m
                tail_rows += list(block)
                tail_pos += [[k]] * len(cand)
                tail_want += [[int(r[k])]] * len(cand)
                tail_owner.append((n, q, len(cand)))
    head = each(lm, head_rows, head_pos, lambda b, x: x[0, head_want[b]])
    tail = np.zeros(len(tail_rows))
    for idx, x in queries.iter_log_probs(lm, tail_rows, tail_pos, targets=tail_want):
        tail[idx] = x[:, 0]
    logs, h = [], 0
    for v, rs in zip(direct, routes):
        logs.append([v.probs[0], *head[h:h + len(rs)]])
        h += len(rs)
    start = 0
    for n, q, c in tail_owner:                    # add each read-back step to its route
        logs[n][1 + q] = logs[n][1 + q] + tail[start:start + c]
        start += c
    out = []
    for v, rs, ls in zip(direct, routes, logs):
        L = np.vstack(ls)
        p = np.exp(L - L.max(axis=1, keepdims=True))
        out.append(v._replace(probs=p / p.sum(axis=1, keepdims=True), routes=tuple(rs)))
    return out


def ensemble_versions_many(lm: MaskedLM, ids, targets, aux=None, candidates=None) -> list[Versions]:
    r"""BERT-style versions for many targets: one route per auxiliary position :math:`k`,

    .. math::
        q_k(x_t = c) \propto q(x_t = c \mid x_{\setminus\{t,k\}})\;
        q(x_k = o_k \mid x_t = c,\, x_{\setminus\{t,k\}}),

    the forward chain rule :math:`j_0(c, o_k)` of the pair :math:`(t, k)` (:func:`route_versions`).
    ``aux``: one array of auxiliary positions per item (default: every other unmasked position).
    """
    rows = as_rows(ids)
    targets = np.broadcast_to(np.asarray(targets, dtype=np.int64), (len(rows),))
    if aux is None:
        aux = [[k for k in range(len(r)) if k != t and int(r[k]) != lm.mask_id] for r, t in zip(rows, targets)]
    routes = [[(int(k),) for k in np.asarray(a, dtype=np.int64).reshape(-1)] for a in aux]
    return route_versions(lm, rows, targets, routes, candidates)


def harsh(v: Versions) -> Versions:
    """The versions without the appended observed word, renormalised."""
    if not v.added:
        return v
    p = v.probs[:, :-1]
    return v._replace(candidates=v.candidates[:-1], probs=p / p.sum(axis=1, keepdims=True), added=False)


def combine(probs, how: str = "mean") -> np.ndarray:
    r"""Combine versions (..., m, C) into one distribution (..., C).

    ``"mean"``: :math:`\bar q(c) = \frac1m\sum_v q_v(c)`.
    ``"max"``: max-pooling, :math:`\bar q(c) \propto \max_v q_v(c)` (renormalised).
    """
    probs = np.asarray(probs, dtype=np.float64)
    if how == "mean":
        return probs.mean(axis=-2)
    if how == "max":
        top = probs.max(axis=-2)
        return top / top.sum(axis=-1, keepdims=True)
    raise ValueError(f"how must be 'mean' or 'max', not {how!r}")


class Curve(NamedTuple):
    correct: np.ndarray   # (N, M) 1.0 if the ensemble of the first m versions ranks gold first
    log_loss: np.ndarray  # (N, M) -log of the ensemble's probability of the gold token (nats)


def ensemble_curve(versions, gold, how: str = "mean", vocabulary: bool = False) -> Curve:
    r"""Accuracy and log-loss of the ensemble of the first :math:`m` versions, for every :math:`m`.

    For item :math:`n` with versions :math:`q_1, \dots, q_{M_n}` (version 1 = the direct
    conditional) and gold token :math:`g_n`, the ensemble of size :math:`m` is
    :math:`\bar q^{(m)} = \text{combine}(q_1, \dots, q_m)` (:func:`combine` by ``how``), scored by
    :math:`\mathbb 1[\arg\max \bar q^{(m)} = g_n]` and :math:`-\log \bar q^{(m)}(g_n)`.
    Column :math:`m-1` is the ensemble of size :math:`m`; column 0 the direct conditional.

    Parameters
    ----------
    versions : list of :class:`Versions`
        Items with fewer versions than the most any item has get NaN in the columns they miss.
    gold : array_like (N,) of gold token ids
    vocabulary : bool
        False: the predictor is renormalised over each item's candidates (a gold word outside them
        scores 0). True: the leak-free predictor over the whole vocabulary (:func:`harsh`, scaled to
        the direct conditional's mass on the candidates; outside them the direct conditional).
    """
    M = max(len(v.probs) for v in versions)
    correct = np.full((len(versions), M), np.nan)
    loss = np.full((len(versions), M), np.nan)
    for n, (v, g) in enumerate(zip(versions, np.asarray(gold).reshape(-1))):
        if vocabulary:
            v = harsh(v)
        hit = np.flatnonzero(v.candidates == int(g))
        scale = v.mass if vocabulary else 1.0
        for m in range(1, len(v.probs) + 1):
            if len(hit):
                q = combine(v.probs[:m], how)
                p = scale * q[hit[0]]
                correct[n, m - 1] = float(np.argmax(q) == hit[0])
            else:
                p = v.outside if vocabulary else 0.0
                correct[n, m - 1] = 0.0
            loss[n, m - 1] = -np.log(p) if p > 0 else np.inf
    return Curve(correct, loss)


def disagreement_rate(probs) -> float:
    r"""How often versions disagree with version 0 (the direct conditional) on the likeliest token.

    Version :math:`v`'s top set is :math:`\{c : q_v(c) \ge \max q_v - 10^{-9}\}`; two versions
    disagree when their top sets are disjoint. ``probs`` is one (m, C) array, a stack (N, m, C), or
    a list of (m, C_i) arrays; items are averaged with equal weight.
    """
    items = list(probs) if (isinstance(probs, (list, tuple)) or np.ndim(probs) == 3) else [probs]
    rates = []
    for p in items:
        p = np.asarray(p, dtype=np.float64)
        top = p >= p.max(axis=1, keepdims=True) - 1e-9
        clash = ~(top.astype(int) @ top.T.astype(int)).astype(bool)  # (m, m): disjoint top sets
        rates.append(clash[0, 1:].mean())
    return float(np.mean(rates))
