r"""Exact reveal-order quantities of one short sentence, by dynamic programming over revealed
subsets.

A masked LM read as a masked diffusion model generates a sentence of :math:`n` tokens by revealing
positions one (or :math:`k`) at a time. For a fixed sentence :math:`x` every such path passes
through *revealed subsets* :math:`S \subseteq \{0, \dots, n-1\}`, and all it needs at :math:`S` is
the model's conditionals :math:`q(x_i \mid x_S)` at the masked positions — one masked query per
subset, the :math:`2^n` queries of :func:`reveal_table`, batched through :mod:`mlmbook.queries`.
From that table:

* :func:`mixture` — the probability that the random-order sampler (a uniformly random order,
  :math:`k` positions per step, each drawn from its conditional given the revealed ones) generates
  :math:`x`; for :math:`k = 1` it is the random-order mixture
  :math:`p_{\text{mix}}(x) = \mathbb{E}_\sigma \prod_t q(x_{\sigma(t)} \mid x_{\sigma(<t)})`;
* :func:`nelbo` — :math:`\mathbb{E}_\sigma[-\sum_t \log q(\cdot)]` in closed form: the probability
  that a uniformly random order has revealed exactly :math:`S` after :math:`|S|` steps is
  :math:`1/\binom{n}{|S|}` and the next position is uniform on the rest, so

  .. math:: \mathrm{NELBO}_k(x) = -\sum_{S:\ k \mid |S|} \binom{n}{|S|}^{-1}
            \frac{\min(k, n - |S|)}{n - |S|} \sum_{i \notin S} \log q(x_i \mid x_S);

* :func:`left_to_right` — :math:`\prod_t q(x_t \mid x_{<t})`, the later positions masked.

By Jensen, :math:`\mathrm{NELBO}_1 \ge -\log p_{\text{mix}}`; the difference is zero exactly when
every order gives :math:`x` the same probability, as the truth's conditionals do (then both equal
:math:`-\log p(x \mid n)`). Subsets are bit masks: position :math:`i` is revealed in ``S`` when bit
:math:`i` is set.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from ..queries import iter_log_probs

__all__ = ["MAX_TOKENS", "reveal_table", "mixture", "nelbo", "left_to_right", "truth_log_prob"]

MAX_TOKENS = 12
"""The longest row the subset tables take (:math:`2^{12}` masked queries per sentence)."""


def reveal_table(lm, sentences, progress: bool = False) -> list[np.ndarray]:
    r"""``L[S, i]`` = :math:`\log q(x_i \mid x_S)` for every revealed subset ``S`` and masked
    position ``i`` of each sentence (token ids), NaN where ``i`` is in ``S``; one query per subset,
    all sentences in one batched call of the query engine.

    Returns
    -------
    list of ndarray (2**n, n)
    """
    rows, positions, targets, owner = [], [], [], []
    for s, ids in enumerate(sentences):
        ids = [int(t) for t in ids]
        n = len(ids)
        if not 1 <= n <= MAX_TOKENS:
            raise ValueError(f"a sentence of {n} tokens: the subset tables take 1 to {MAX_TOKENS} tokens "
                             f"(2^n masked queries each); pick shorter sentences")
        for S in range((1 << n) - 1):                        # every subset but the whole sentence
            rows.append([t if S >> i & 1 else lm.mask_id for i, t in enumerate(ids)])
            masked = _masked(S, n)
            positions.append(masked)
            targets.append([ids[i] for i in masked])
            owner.append((s, S))
    out = [np.full((1 << len(ids), len(ids)), np.nan) for ids in sentences]
    for idx, arr in iter_log_probs(lm, rows, positions, targets=targets, progress=progress and "subsets"):
        for r, a in zip(idx, arr):
            s, S = owner[r]
            out[s][S, positions[r]] = a
    return out


def _masked(S: int, n: int) -> list[int]:
    return [i for i in range(n) if not S >> i & 1]


def mixture(L: np.ndarray, k: int = 1) -> float:
    r""":math:`\log P_k(x)`: the probability that the random-order sampler revealing ``k`` positions
    per step (a uniformly random ``k``-subset of the masked ones, each drawn independently from its
    conditional given the revealed tokens) generates the sentence of table ``L``
    (:func:`reveal_table`). ``k = 1`` gives :math:`\log p_{\text{mix}}(x)`."""
    size, n = L.shape
    if k < 1:
        raise ValueError(f"k={k}: reveal at least one position per step")
    f = np.full(size, -np.inf)
    f[0] = 0.0
    for S in range(size - 1):                                # a superset always has a larger number
        if f[S] == -np.inf:
            continue
        rest = _masked(S, n)
        kk = min(k, len(rest))
        step = f[S] - math.log(math.comb(len(rest), kk))
        for T in combinations(rest, kk):
            new = S | sum(1 << i for i in T)
            f[new] = np.logaddexp(f[new], step + L[S, list(T)].sum())
    return float(f[size - 1])


def nelbo(L: np.ndarray, k: int = 1) -> float:
    """:math:`\\mathrm{NELBO}_k(x)` in nats (module docstring): the expected negative
    log-probability of the sentence along a uniformly random order, ``k`` positions revealed per
    step."""
    size, n = L.shape
    total = 0.0
    for S in range(size - 1):
        m = n - bin(S).count("1")
        if (n - m) % k:
            continue  # a state the k-step sampler never visits
        total -= min(k, m) / m / math.comb(n, n - m) * np.nansum(L[S, _masked(S, n)])
    return float(total)


def left_to_right(L: np.ndarray) -> float:
    r""":math:`\log \prod_t q(x_t \mid x_{<t})`, the later positions masked."""
    return float(sum(L[(1 << t) - 1, t] for t in range(L.shape[1])))


def truth_log_prob(grammar, words) -> float:
    r""":math:`\log p(x \mid n)`: the toy language's exact probability of a sentence given its
    length :math:`n`, what every conditional of the truth oracle conditions on."""
    z = grammar.pcfg.sentence_weight(grammar.encode(words)).item()
    return math.log(z) - math.log(grammar.length_probs[len(words)]) if z > 0 else -math.inf
