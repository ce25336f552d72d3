r"""Is an MLM's family of conditionals consistent with any joint? (chapters 3 and 5)

An MLM answers :math:`q(x_i \mid x_{\text{rest}})` for many masking patterns, with no
guarantee that one joint distribution :math:`p` produced all the answers (Young & You 2022,
*On the Inconsistencies of Conditionals Learned by Masked Language Models*). Three probes:

* the **rectangle test** — the odds ratio of a :math:`2\times2` rectangle read through
  :math:`q(x_i\mid x_j)` must equal the one read through :math:`q(x_j\mid x_i)`;
* **order inconsistency** — the chain rule in the two orders must give the same pair probability;
* the **Ensemble of Conditionals** — the same conditional reached by different masking routes.

For every coherent joint (e.g. the truth oracle) all three vanish, up to float rounding.
All functions take an oracle with ``lm.logits(ids (B,n), positions (B,k)) -> (B,k,V)`` and
``lm.mask_id`` (see docs/INTERFACES.md); ``ids`` may be a 2-D LongTensor or a list of 1-D
sentences of different lengths (grouped by length, one ``lm.logits`` call per length).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "noise_floor",
    "order_inconsistency", "ensemble_versions", "combine", "disagreement_rate",
    "Rectangles", "OrderInconsistency", "Versions", "FLOAT32_NOISE_FLOOR",
]

#: |Δ| below this is rounding, not inconsistency, for float32 logits: Δ adds eight log-probabilities,
#: each off by at most ~|log q|·2⁻²⁴ ≈ 2e-6 for |log q| ≤ 30, so |Δ| ≲ 2e-5; we leave a 5× margin.
FLOAT32_NOISE_FLOOR = 1e-4


def _rows(ids) -> list[torch.Tensor]:
    if isinstance(ids, torch.Tensor) and ids.dim() == 2:
        return list(ids.long())
    return [torch.as_tensor(r, dtype=torch.long) for r in ids]


def _logq(lm, rows: list[torch.Tensor], positions) -> np.ndarray:
    """log-softmax of ``lm.logits`` in float64, (R, k, V); rows grouped by length."""
    positions = torch.as_tensor(np.asarray(positions), dtype=torch.long).reshape(len(rows), -1)
    out = np.empty((len(rows), positions.shape[1], lm.V))
    lengths = np.array([len(r) for r in rows])
    for n in np.unique(lengths):
        idx = np.flatnonzero(lengths == n)
        batch = torch.stack([rows[i] for i in idx])
        logits = lm.logits(batch, positions[idx]).detach().to("cpu", torch.float64)
        out[idx] = torch.log_softmax(logits, dim=-1).numpy()
    return out


def _with(row: torch.Tensor, **sets) -> torch.Tensor:
    row = row.clone()
    for pos, val in sets.values():
        row[int(pos)] = int(val)
    return row


def rectangle_deltas(lm, ids, i, j, a, a2, b, b2) -> np.ndarray:
    r"""Rectangle test for many rectangles at once; one row of every argument per rectangle.

    With :math:`q(a\mid b) = q(x_i=a \mid x_j=b, x_{\text{rest}})` and
    :math:`q(b\mid a) = q(x_j=b \mid x_i=a, x_{\text{rest}})`,

    .. math::
        \Delta = \log\frac{q(a\mid b)\,q(a'\mid b')}{q(a'\mid b)\,q(a\mid b')}
               - \log\frac{q(b\mid a)\,q(b'\mid a')}{q(b'\mid a)\,q(b\mid a')}.

    For any joint :math:`p`, :math:`q(a\mid b) = p(a,b)/p(b)` and both ratios equal
    :math:`p(a,b)p(a',b')/(p(a',b)p(a,b'))`, so :math:`\Delta = 0`: a non-zero Δ (beyond
    :func:`noise_floor`) proves that no joint produced these four-plus-four conditionals.

    Parameters
    ----------
    ids : LongTensor (R, n) or list of R 1-D sentences
        Sentences; their tokens at ``i`` and ``j`` are overwritten, other positions (masked or
        not) form the shared context.
    i, j, a, a2, b, b2 : array_like (R,)
        Positions and token ids of each rectangle (scalars broadcast).

    Returns
    -------
    numpy.ndarray (R,)
        Δ per rectangle (natural log). Uses one ``lm.logits`` call with 4R rows.
    """
    rows = _rows(ids)
    R = len(rows)
    i, j, a, a2, b, b2 = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j, a, a2, b, b2))
    m = lm.mask_id
    batch, pos = [], []
    for r in range(R):
        batch += [_with(rows[r], i=(i[r], m), j=(j[r], b[r])), _with(rows[r], i=(i[r], m), j=(j[r], b2[r])),
                  _with(rows[r], i=(i[r], a[r]), j=(j[r], m)), _with(rows[r], i=(i[r], a2[r]), j=(j[r], m))]
        pos += [i[r], i[r], j[r], j[r]]
    lq = _logq(lm, batch, pos)[:, 0, :].reshape(R, 4, -1)
    k = np.arange(R)
    qi_b, qi_b2, qj_a, qj_a2 = lq[:, 0], lq[:, 1], lq[:, 2], lq[:, 3]
    left = qi_b[k, a] + qi_b2[k, a2] - qi_b[k, a2] - qi_b2[k, a]
    right = qj_a[k, b] + qj_a2[k, b2] - qj_a[k, b2] - qj_a2[k, b]
    return left - right


def rectangle_delta(lm, ids, i: int, j: int, a: int, a2: int, b: int, b2: int) -> float:
    """Δ of one rectangle in one sentence ``ids`` (1-D); see :func:`rectangle_deltas`."""
    return float(rectangle_deltas(lm, [ids], i, j, a, a2, b, b2)[0])


class Rectangles(NamedTuple):
    delta: np.ndarray  # (P,) Δ per pair
    a: np.ndarray      # (P,) top-1 of q(x_i | both masked)
    a2: np.ndarray     # (P,) top-2 of q(x_i | both masked)
    b: np.ndarray
    b2: np.ndarray


def top2_rectangles(lm, ids, pairs) -> Rectangles:
    r"""Δ for the most plausible rectangle of each pair of positions.

    For each pair :math:`(i, j)`, mask both, take :math:`\{a, a'\}` = the top two of
    :math:`q(x_i \mid \text{both masked})` and :math:`\{b, b'\}` likewise for :math:`x_j`,
    then compute Δ of that rectangle (:func:`rectangle_deltas`). Two ``lm.logits`` calls in all.

    Parameters
    ----------
    ids : 1-D sentence, or LongTensor (S, n) / list of S sentences
    pairs : array_like (P, 2) of (i, j) for one sentence, or (P, 3) of (s, i, j) otherwise.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(len(pairs), -1)
    if pairs.shape[1] == 2:
        if np.ndim(ids) != 1:
            raise ValueError("(i, j) pairs need one 1-D sentence; use (s, i, j) triples for several")
        ids, pairs = [ids], np.column_stack([np.zeros(len(pairs), np.int64), pairs])
    sents = _rows(ids)
    s, i, j = pairs.T
    rows = [_with(sents[t], i=(i[r], lm.mask_id), j=(j[r], lm.mask_id)) for r, t in enumerate(s)]
    lq = _logq(lm, rows, np.column_stack([i, j]))
    top_i = np.argsort(-lq[:, 0], axis=-1, kind="stable")[:, :2]
    top_j = np.argsort(-lq[:, 1], axis=-1, kind="stable")[:, :2]
    delta = rectangle_deltas(lm, rows, i, j, top_i[:, 0], top_i[:, 1], top_j[:, 0], top_j[:, 1])
    return Rectangles(delta, top_i[:, 0], top_i[:, 1], top_j[:, 0], top_j[:, 1])


def noise_floor(exact_lm=None, ids=None, pairs=None, safety: float = 10.0) -> float:
    """The |Δ| below which a rectangle counts as consistent.

    With an exact oracle (e.g. ``load_mlm("truth")``) and some sentences/pairs, it is
    ``safety`` × the largest |Δ| that oracle shows — its own float error, since its true Δ is 0 —
    but never below 1e-12. Without one it is :data:`FLOAT32_NOISE_FLOOR` (1e-4), the rounding
    bound for float32 logits.
    """
    if exact_lm is None:
        return FLOAT32_NOISE_FLOOR
    return max(float(np.abs(top2_rectangles(exact_lm, ids, pairs).delta).max()) * safety, 1e-12)


class OrderInconsistency(NamedTuple):
    rel: np.ndarray           # |p→ − p←| / ((p→ + p←)/2)
    abs_log_ratio: np.ndarray  # |log p→ − log p←|
    log_fwd: np.ndarray       # log p→
    log_bwd: np.ndarray       # log p←


def order_inconsistency(lm, ids, i, j) -> OrderInconsistency:
    r"""Do the two chain-rule orders agree on the observed pair :math:`(x_i, x_j)`?

    .. math::
        p_\to = q(x_i \mid \text{both masked})\, q(x_j \mid x_i), \qquad
        p_\leftarrow = q(x_j \mid \text{both masked})\, q(x_i \mid x_j),

    all given the rest of the sentence. For a coherent joint both equal
    :math:`p(x_i, x_j \mid x_{\text{rest}})`. Returns the relative difference
    :math:`|p_\to-p_\leftarrow| / \tfrac12(p_\to+p_\leftarrow) = 2\tanh(|\log p_\to/p_\leftarrow|/2)`
    (at most 2) and :math:`|\log(p_\to/p_\leftarrow)|`, per row of ``ids`` (one row per
    (sentence, pair); ``i``, ``j`` broadcast). One ``lm.logits`` call with 3R rows.
    """
    rows = _rows(ids)
    R = len(rows)
    i, j = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j))
    xi = np.array([int(rows[r][i[r]]) for r in range(R)])
    xj = np.array([int(rows[r][j[r]]) for r in range(R)])
    m = lm.mask_id
    batch, pos = [], []
    for r in range(R):
        batch += [_with(rows[r], i=(i[r], m), j=(j[r], m)), _with(rows[r], j=(j[r], m)),
                  _with(rows[r], i=(i[r], m))]
        pos += [(i[r], j[r]), (j[r], j[r]), (i[r], i[r])]
    lq = _logq(lm, batch, pos).reshape(R, 3, 2, -1)
    k = np.arange(R)
    fwd = lq[k, 0, 0, xi] + lq[k, 1, 0, xj]
    bwd = lq[k, 0, 1, xj] + lq[k, 2, 0, xi]
    d = np.abs(fwd - bwd)
    return OrderInconsistency(2 * np.tanh(d / 2), d, fwd, bwd)


class Versions(NamedTuple):
    candidates: np.ndarray  # (C,) token ids the versions are distributions over
    probs: np.ndarray       # (1 + |K|, C); row 0 = direct conditional, row 1 + m = via aux[m]
    aux: np.ndarray         # (|K|,) auxiliary positions


def ensemble_versions(lm, ids, t: int, aux=None, candidates=None) -> Versions:
    r"""Versions of :math:`q(x_t \mid x_{\text{rest}})` reached through different masking routes.

    Version 0 is the direct conditional, only :math:`t` masked. Version :math:`k` masks an
    auxiliary position :math:`k` as well and applies Bayes' rule:

    .. math::
        q_k(x_t = c) \propto q(x_k = \text{obs} \mid x_t = c, x_{\text{rest}\setminus k})\,
                            q(x_t = c \mid x_k = \texttt{[MASK]}, x_{\text{rest}\setminus k}),

    normalised over the candidate set. Under a coherent joint the right side is
    :math:`p(x_t=c, x_k \mid \text{rest}\setminus k)`, so every version equals version 0.

    This is an *adaptation* of Young & You's Ensemble of Conditionals. Their EoC targets T5/UL2
    span infilling, where one model fills spans of several lengths, and the versions come from
    masking larger spans around the target. A BERT-style MLM predicts single tokens, so here
    the different routes are: mask one more token :math:`k` and recover :math:`x_t` by Bayes from
    two single-token conditionals.

    Parameters
    ----------
    ids : 1-D sentence (token ids; ``ids[t]`` is the gold token, or ``lm.mask_id``)
    t : int
        Target position.
    aux : array_like of int, optional
        Auxiliary positions K; default every other unmasked position.
    candidates : None, int or array_like of token ids
        The support of the versions. None: every token with a finite version-0 logit;
        an int K: the top-K of version 0 plus the gold token; an array: exactly those ids.
        Costs 1 + |K|(1 + C) rows in one ``lm.logits`` call.
    """
    row = torch.as_tensor(ids, dtype=torch.long)
    m = lm.mask_id
    if aux is None:
        aux = [k for k in range(len(row)) if k != t and int(row[k]) != m]
    aux = np.asarray(aux, dtype=np.int64)
    direct = _logq(lm, [_with(row, t=(t, m))], [t])[0, 0]
    if candidates is None:
        cand = np.flatnonzero(np.isfinite(direct))
    elif np.ndim(candidates) == 0:
        cand = np.argsort(-direct, kind="stable")[: int(candidates)]
        if int(row[t]) != m and int(row[t]) not in cand:
            cand = np.append(cand, int(row[t]))
    else:
        cand = np.asarray(candidates, dtype=np.int64)
    batch, pos = [], []
    for k in aux:
        batch.append(_with(row, t=(t, m), k=(k, m)))
        pos.append(t)
        for c in cand:
            batch.append(_with(row, t=(t, c), k=(k, m)))
            pos.append(k)
    lq = _logq(lm, batch, pos)[:, 0, :].reshape(len(aux), 1 + len(cand), -1) if len(aux) else None
    logs = [direct[cand]]
    for a, k in enumerate(aux):
        logs.append(lq[a, 0, cand] + lq[a, 1:, int(row[k])])
    logs = np.stack(logs)
    logs = logs - logs.max(axis=1, keepdims=True)
    probs = np.exp(logs)
    return Versions(cand, probs / probs.sum(axis=1, keepdims=True), aux)


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


def disagreement_rate(probs, reference: int | None = 0, atol: float = 1e-9) -> float:
    r"""How often versions disagree on the most likely token.

    Version :math:`v`'s top set is :math:`\{c : q_v(c) \ge \max q_v - \text{atol}\}` (so float
    noise between exact ties is no disagreement); two versions disagree when their top sets are
    disjoint. With ``reference=r``: the fraction of versions :math:`v \ne r` disagreeing with
    version :math:`r` (default 0, the direct conditional); with ``None``: the fraction of
    unordered pairs that disagree. ``probs`` is one (m, C) array, a stack (N, m, C), or a list
    of (m, C_i) arrays; items are averaged with equal weight.
    """
    items = list(probs) if (isinstance(probs, (list, tuple)) or np.ndim(probs) == 3) else [probs]
    rates = []
    for p in items:
        p = np.asarray(p, dtype=np.float64)
        top = p >= p.max(axis=1, keepdims=True) - atol
        clash = ~(top.astype(int) @ top.T.astype(int)).astype(bool)  # (m, m): disjoint top sets
        m = len(p)
        if reference is None:
            rates.append(clash[np.triu_indices(m, 1)].mean())
        else:
            rates.append(np.delete(clash[reference], reference).mean())
    return float(np.mean(rates))
