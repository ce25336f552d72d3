r"""Reveal samplers: simulated, and the probability each gives a sentence along its own path.

A *reveal sampler* starts from ``n`` masks and, step by step, picks masked positions and draws their
tokens from the model's conditionals given the tokens revealed so far. Three orders
(:data:`ORDERS`):

``"l2r"``         left to right, one position per step (an autoregressive reading of the MLM);
``"random"``      a uniformly random order, ``k`` positions per step (the masked-diffusion sampler);
``"confident"``   the masked position whose likeliest token is likeliest first (ties to the left).

:func:`simulate` runs many chains at once (one batched query per step). :func:`confident_log_prob`
gives the exact probability that the confidence-ordered sampler generates a given sentence: the
order depends only on the revealed tokens, so a sentence has one path and its probability is the
product of the drawn tokens' conditionals along it (the random and left-to-right samplers' are in
:mod:`mlmbook.diffusion.exact`). :func:`nelbo_mc` estimates the NELBO by Monte Carlo over orders
where :math:`2^n` queries are too many.
"""
from __future__ import annotations

import numpy as np

from ..queries import log_probs

__all__ = ["ORDERS", "simulate", "confident_log_prob", "nelbo_mc", "distinct_share"]

ORDERS = ("l2r", "random", "confident")


def _pick(order: str, masked: np.ndarray, k: int, rng, logp=None) -> np.ndarray:
    """Positions (B, k) to reveal in each row, from its masked positions (B, m), by ``order``."""
    if order == "l2r":
        return masked[:, :k]
    if order == "random":
        keys = rng.random(masked.shape)
        return np.take_along_axis(masked, np.argsort(keys, axis=1)[:, :k], axis=1)
    best = logp.max(axis=-1)  # (B, m): each position's top log-probability
    first = np.argsort(-best, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(masked, first, axis=1)


def simulate(lm, n: int, count: int, order: str = "random", k: int = 1, seed: int = 0) -> np.ndarray:
    """``count`` sentences of ``n`` tokens drawn by a reveal sampler (module docstring), all chains
    batched. Returns ``(count, n)`` token ids."""
    if order not in ORDERS:
        raise ValueError(f"unknown reveal order {order!r}; use one of {', '.join(ORDERS)}")
    if order != "random" and k != 1:
        raise ValueError(f"the {order} sampler reveals one position per step; use k=1 or order='random'")
    rng = np.random.default_rng(seed)
    x = np.full((count, n), lm.mask_id, dtype=np.int64)
    while (x == lm.mask_id).any():
        masked = np.array([np.flatnonzero(row == lm.mask_id) for row in x])
        logp = None
        if order == "confident":
            logp = np.stack(log_probs(lm, x.tolist(), masked.tolist()))
        chosen = _pick(order, masked, min(k, masked.shape[1]), rng, logp)
        lp = np.stack(log_probs(lm, x.tolist(), chosen.tolist()))        # (B, k, V)
        p = np.exp(lp - lp.max(axis=-1, keepdims=True))
        cum = np.cumsum(p / p.sum(axis=-1, keepdims=True), axis=-1)
        u = rng.random(cum.shape[:2])[..., None]
        tokens = np.minimum((cum < u).sum(axis=-1), lp.shape[-1] - 1)
        np.put_along_axis(x, chosen, tokens, axis=1)
    return x


def confident_log_prob(lm, sentences) -> np.ndarray:
    """Exact log-probability that the confidence-ordered sampler generates each sentence (token
    ids): the product along its one path, ``n`` batched queries per length."""
    sentences = [list(map(int, x)) for x in sentences]
    out = np.zeros(len(sentences))
    for n in sorted({len(x) for x in sentences}):
        which = [b for b, x in enumerate(sentences) if len(x) == n]
        out[which] = _confident_one_length(lm, [sentences[b] for b in which])
    return out


def _confident_one_length(lm, sentences) -> np.ndarray:
    x = np.asarray(sentences, dtype=np.int64)
    B, n = x.shape
    state = np.full_like(x, lm.mask_id)
    total = np.zeros(B)
    for _ in range(n):
        masked = np.array([np.flatnonzero(row == lm.mask_id) for row in state])
        logp = np.stack(log_probs(lm, state.tolist(), masked.tolist()))  # (B, m, V)
        first = np.argmax(logp.max(axis=-1), axis=1)  # the first of the ties, as _pick
        pos = masked[np.arange(B), first]
        total += logp[np.arange(B), first, x[np.arange(B), pos]]
        state[np.arange(B), pos] = x[np.arange(B), pos]
    return total


def nelbo_mc(lm, sentences, orders: int = 8, k: int = 1, seed: int = 0) -> np.ndarray:
    """Monte Carlo NELBO (nats) of each sentence (token ids): the mean over ``orders`` uniformly
    random orders of :math:`-\\log` the probability of the sentence along the order, ``k``
    positions per step. Returns ``(len(sentences), orders)``: each order's value, so that its
    spread is known."""
    rng = np.random.default_rng(seed)
    rows, positions, targets, owner = [], [], [], []
    for s, ids in enumerate(sentences):
        ids = [int(t) for t in ids]
        n = len(ids)
        for o in range(orders):
            sigma = rng.permutation(n)
            for t in range(0, n, k):
                shown = set(sigma[:t].tolist())
                rows.append([v if i in shown else lm.mask_id for i, v in enumerate(ids)])
                block = sigma[t:t + k].tolist()
                positions.append(block), targets.append([ids[i] for i in block]), owner.append((s, o))
    out = np.zeros((len(sentences), orders))
    groups: dict = {}
    for r, block in enumerate(positions):
        groups.setdefault(len(block), []).append(r)
    for rs in groups.values():  # the engine wants one number of positions per call
        got = log_probs(lm, [rows[r] for r in rs], [positions[r] for r in rs], targets=[targets[r] for r in rs])
        for r, a in zip(rs, got):
            s, o = owner[r]
            out[s, o] -= a.sum()
    return out


def distinct_share(samples) -> float:
    """The share of distinct sentences among ``samples`` (rows of token ids): a simple diversity."""
    rows = [tuple(r) for r in np.asarray(samples).tolist()]
    return len(set(rows)) / max(1, len(rows))
