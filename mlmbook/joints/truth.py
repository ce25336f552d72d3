r"""Chapter 2's answer key in the toy world: exact joints of two (or k) positions on candidates."""
from __future__ import annotations

from itertools import product
from typing import Sequence

import numpy as np
import torch

from .. import threads
from ..toy.vocab import N_SPECIAL

__all__ = ["truth_joints", "site_joint", "site_chain"]


def truth_joints(grammar, queries: Sequence, candidates=None, offset: int = N_SPECIAL) -> list[np.ndarray]:
    r"""Exact joints :math:`p(x_A=a, x_B=b \mid \text{rest})` of the toy language over candidates.

    Parameters
    ----------
    grammar : mlmbook.toy.Grammar
    queries : sequence of ``(words, A, B)``
        A sentence (list of words) and two word positions.
    candidates : None or a list of ``(cand_a, cand_b)`` token ids, one per query
        Grammar word ``w`` is token ``w + offset``. ``None``: every word, in vocabulary order (the
        full grid, :func:`~mlmbook.joints.default_candidates` of a toy model).

    Returns
    -------
    list of arrays ``[a, b]``, renormalised over candidates (one ``pair_joints`` pass a sentence).
    """
    everything = np.arange(len(grammar.vocab)) + offset
    cands = [(everything, everything)] * len(queries) if candidates is None else list(candidates)
    by_sentence: dict = {}
    for k, (words, _a, _b) in enumerate(queries):
        by_sentence.setdefault(tuple(words), []).append(k)
    out = [None] * len(queries)
    for words, ks in by_sentence.items():
        pairs = sorted({(int(queries[k][1]), int(queries[k][2])) for k in ks})
        with threads.using(threads.policy()):
            exact = dict(grammar.pair_joints(list(words), pairs))
        for k in ks:  # the full grid restricted to the candidates (tokens that are no words: 0)
            P = np.asarray(exact[(int(queries[k][1]), int(queries[k][2]))])
            ia, ib = (np.asarray(c, dtype=np.int64) - offset for c in cands[k])
            ok_a, ok_b = (ia >= 0) & (ia < P.shape[0]), (ib >= 0) & (ib < P.shape[1])
            sub = np.zeros((len(ia), len(ib)))
            sub[np.ix_(ok_a, ok_b)] = P[np.ix_(ia[ok_a], ib[ok_b])]
            if sub.sum() <= 0:
                raise ValueError(f"the candidates of query {k} have no probability under the truth")
            out[k] = sub / sub.sum()
    return out


def site_joint(grammar, words: Sequence[str], positions: Sequence[int], candidates: Sequence,
               offset: int = N_SPECIAL, rows_per_pass: int = 256) -> np.ndarray:
    r"""Exact joint of ``k`` positions of a sentence, :math:`p(x_{s_1}, \dots, x_{s_k} \mid
    \text{rest})`, over candidate tokens (shape ``(K_1, ..., K_k)``, normalised over the grid).

    ``candidates``: token ids per position (grammar word ``w`` is token ``w + offset``; ids outside
    the words get 0); the words at ``positions`` are ignored. The sentence weight is linear in each
    position's leaf vector (:mod:`mlmbook.toy.pcfg`), so one inside and one backward pass per
    filling of the first ``k - 1`` positions give the weights of all :math:`K_k` fillings of the
    last (``rows_per_pass`` fillings at a time)."""
    pcfg = grammar.pcfg
    positions = [int(p) for p in positions]
    if len(set(positions)) != len(positions) or not positions:
        raise ValueError(f"positions must be distinct and non-empty, got {positions}")
    ids = grammar.encode(list(words)).clone()
    V = len(grammar.vocab)
    cands = [np.asarray(c, dtype=np.int64) - offset for c in candidates]
    ok = [(c >= 0) & (c < V) for c in cands]
    safe = [np.where(o, c, 0) for c, o in zip(cands, ok)]
    E = torch.tensor(pcfg.emissions, dtype=torch.float64)                    # (T, N, V)
    *first, last = positions
    fillings = list(product(*[range(len(c)) for c in safe[:-1]]))
    out = np.zeros((len(fillings), len(safe[-1])))
    with threads.limited():
        for s in range(0, len(fillings), rows_per_pass):
            chunk = fillings[s:s + rows_per_pass]
            rows = ids.repeat(len(chunk), 1)
            for site, p in enumerate(first):
                rows[:, p] = torch.tensor([int(safe[site][f[site]]) for f in chunk])
            g = pcfg._outside(pcfg._leaves(rows))                            # (B, T, n, N)
            weights = torch.einsum("ptA,tAw->pw", g[:, :, last, :], E[:, :, safe[-1]])
            out[s:s + len(chunk)] = weights.numpy()
    grid = out.reshape(*[len(c) for c in safe])
    for site, o in enumerate(ok):  # special tokens: no mass
        index = [slice(None)] * len(safe)
        index[site] = ~o
        grid[tuple(index)] = 0.0
    total = grid.sum()
    if total <= 0:
        raise ValueError("the candidates have no probability under the truth in this context")
    return grid / total


def site_chain(grammar, words: Sequence[str], positions: Sequence[int], candidates: Sequence,
               offset: int = N_SPECIAL) -> np.ndarray:
    r"""The truth's own left-to-right chain over a candidate grid,

    .. math:: p(x_{s_1})\, p(x_{s_2} \mid x_{s_1}) \cdots p(x_{s_k} \mid x_{s_{<k}}),

    each factor read from the exact conditionals with the *later* sites masked and renormalised
    over the candidates, as :func:`~mlmbook.joints.chain_k` reads an MLM; on a grid smaller than
    the vocabulary it is not the true joint."""
    pcfg = grammar.pcfg
    positions = [int(p) for p in positions]
    ids = grammar.encode(list(words)).clone()
    V = len(grammar.vocab)
    cands = [np.asarray(c, dtype=np.int64) - offset for c in candidates]
    ok = [(c >= 0) & (c < V) for c in cands]
    safe = [np.where(o, c, 0) for c, o in zip(cands, ok)]
    k = len(positions)
    log_p = np.zeros([len(c) for c in safe])
    with threads.limited():
        for t in range(k):
            fillings = list(product(*[range(len(c)) for c in safe[:t]]))
            rows = ids.repeat(len(fillings), 1)
            for j in range(t):
                rows[:, positions[j]] = torch.tensor([int(safe[j][f[j]]) for f in fillings], dtype=rows.dtype)
            masked = torch.zeros_like(rows, dtype=torch.bool)
            masked[:, positions[t:]] = True
            # (fillings, K_t)
            cond = pcfg.conditionals(rows, masked)[:, positions[t], :].numpy()[:, safe[t]]
            cond = np.where(ok[t][None, :], cond, 0.0)
            total = cond.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):  # an impossible filling: no mass
                factor = np.where(total > 0, np.log(cond / np.where(total > 0, total, 1.0)), -np.inf)
            shape = [len(c) for c in safe[:t + 1]] + [1] * (k - t - 1)
            log_p = log_p + factor.reshape(shape)
    if not np.isfinite(log_p).any():
        raise ValueError("the candidates have no probability under the truth in this context")
    P = np.exp(log_p - np.max(log_p))
    return P / P.sum()
