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
sentences of different lengths (grouped by length, one ``lm.logits`` call per length, each
distinct query sent once).

For a corpus: :func:`probe_pairs` runs the rectangle test and the order inconsistency for many
(sentence, i, j) pairs in bounded-memory groups; :func:`ensemble_versions_many` builds the
versions for many targets at once and :func:`ensemble_curve` scores ensembles of growing size;
:func:`chain_rule_grids` gives the whole pair distribution in both chain-rule orders.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "noise_floor",
    "order_inconsistency", "ensemble_versions", "ensemble_versions_many", "combine",
    "ensemble_curve", "disagreement_rate", "chain_rule_grids", "probe_pairs", "PairProbes",
    "Rectangles", "OrderInconsistency", "Versions", "Curve", "FLOAT32_NOISE_FLOOR",
]

#: |Δ| below this is rounding, not inconsistency, for float32 logits: Δ adds eight log-probabilities,
#: each off by at most ~|log q|·2⁻²⁴ ≈ 2e-6 for |log q| ≤ 30, so |Δ| ≲ 2e-5; we leave a 5× margin.
FLOAT32_NOISE_FLOOR = 1e-4


def _rows(ids) -> list[torch.Tensor]:
    if isinstance(ids, torch.Tensor) and ids.dim() == 2:
        return list(ids.long())
    return [torch.as_tensor(r, dtype=torch.long) for r in ids]


def _logq(lm, rows: list[torch.Tensor], positions) -> np.ndarray:
    """log-softmax of ``lm.logits`` in float64, (R, k, V).

    Rows are grouped by length (one ``lm.logits`` call per length) and identical queries
    (same row, same positions) are sent once: the probes of many pairs in one sentence share
    many rows (e.g. the sentence with only ``j`` masked).
    """
    positions = torch.as_tensor(np.array(positions, dtype=np.int64), dtype=torch.long).reshape(len(rows), -1)
    out = np.empty((len(rows), positions.shape[1], lm.V))
    lengths = np.array([len(r) for r in rows])
    for n in np.unique(lengths):
        idx = np.flatnonzero(lengths == n)
        queries = torch.cat([torch.stack([rows[i] for i in idx]), positions[idx]], dim=1)
        unique, inverse = torch.unique(queries, dim=0, return_inverse=True)
        logits = lm.logits(unique[:, :n], unique[:, n:]).detach().to("cpu", torch.float64)
        out[idx] = torch.log_softmax(logits, dim=-1).numpy()[inverse.numpy()]
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


def chain_rule_grids(lm, ids, i: int, j: int, a_ids, b_ids):
    r"""The pair distribution of positions :math:`(i, j)` read through the chain rule both ways.

    .. math::
        \log p_\to(a, b) = \log q(x_i=a \mid \text{both masked}) + \log q(x_j=b \mid x_i=a), \qquad
        \log p_\leftarrow(a, b) = \log q(x_j=b \mid \text{both masked}) + \log q(x_i=a \mid x_j=b),

    for every :math:`a` in ``a_ids`` and :math:`b` in ``b_ids`` (the rest of ``ids`` is the
    context). For a coherent joint both grids equal :math:`\log p(x_i=a, x_j=b \mid \text{rest})`;
    :func:`order_inconsistency` is one cell of them, :func:`rectangle_deltas` a :math:`2\times2`
    block. One ``lm.logits`` call with :math:`1 + |A| + |B|` rows.

    Returns
    -------
    (log_fwd, log_bwd) : two numpy arrays of shape (len(a_ids), len(b_ids)).
    """
    row = torch.as_tensor(ids, dtype=torch.long)
    a_ids, b_ids = np.asarray(a_ids, dtype=np.int64), np.asarray(b_ids, dtype=np.int64)
    m = lm.mask_id
    batch = ([_with(row, i=(i, m), j=(j, m))] + [_with(row, i=(i, a), j=(j, m)) for a in a_ids]
             + [_with(row, i=(i, m), j=(j, b)) for b in b_ids])
    pos = [(i, j)] + [(j, j)] * len(a_ids) + [(i, i)] * len(b_ids)
    lq = _logq(lm, batch, pos)
    qi, qj = lq[0, 0, a_ids], lq[0, 1, b_ids]                         # both masked
    qj_given_a = lq[1:1 + len(a_ids), 0][:, b_ids]                     # (A, B)
    qi_given_b = lq[1 + len(a_ids):, 0][:, a_ids].T                   # (A, B)
    return qi[:, None] + qj_given_a, qj[None, :] + qi_given_b


def _slices(n_items: int, rows_per_item: int, V: int, rows_per_call: int | None):
    """Item slices so that one call holds about ``rows_per_call`` rows (default: ~4M logits)."""
    rows_per_call = rows_per_call or max(rows_per_item, (1 << 22) // max(V, 1))
    step = max(1, rows_per_call // rows_per_item)
    return [slice(s, s + step) for s in range(0, n_items, step)]


class PairProbes(NamedTuple):
    rect: Rectangles
    order: OrderInconsistency


def probe_pairs(lm, ids, pairs, rectangles: Rectangles | None = None, rows_per_call: int | None = None,
                progress: bool = False, desc: str = "pairs") -> PairProbes:
    r"""Rectangle test and order inconsistency for many pairs of positions in many sentences.

    Parameters
    ----------
    ids : list of S 1-D sentences (token ids, nothing masked)
    pairs : array_like (P, 3) of (sentence, i, j)
    rectangles : Rectangles, optional
        Test these rectangles (one per pair; e.g. another model's top-2) instead of each pair's
        own top-2 rectangle (:func:`top2_rectangles`).
    rows_per_call : int, optional
        Rows per ``lm.logits`` call (default: about four million logits per call, so memory
        stays bounded for a 30k-token vocabulary).
    progress : bool
        Show a progress bar over the calls.

    Returns
    -------
    PairProbes(rect, order): :class:`Rectangles` (Δ and the rectangle's tokens) and
    :class:`OrderInconsistency` of the observed pair, one entry per pair.
    """
    from tqdm.auto import tqdm

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 3)
    sents = _rows(ids)
    m = lm.mask_id
    rects, orders = [], []
    for sl in tqdm(_slices(len(pairs), 8, lm.V, rows_per_call), desc=desc, disable=not progress):
        s, i, j = pairs[sl].T
        if rectangles is None:
            rects.append(top2_rectangles(lm, sents, pairs[sl]))
        else:
            r = Rectangles(*(np.asarray(f)[sl] for f in rectangles))
            both = [_with(sents[t], i=(i[k], m), j=(j[k], m)) for k, t in enumerate(s)]
            rects.append(r._replace(delta=rectangle_deltas(lm, both, i, j, r.a, r.a2, r.b, r.b2)))
        orders.append(order_inconsistency(lm, [sents[t] for t in s], i, j))
    if not rects:
        empty = np.zeros(0)
        return PairProbes(Rectangles(*[empty] * 5), OrderInconsistency(*[empty] * 4))
    return PairProbes(Rectangles(*map(np.concatenate, zip(*rects))),
                      OrderInconsistency(*map(np.concatenate, zip(*orders))))


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
        an int K: the top-K of version 0 (among tokens with a finite logit) plus the gold
        token; an array: exactly those ids.
        Costs 1 + |K|(1 + C) rows in two ``lm.logits`` calls (the direct conditional, then
        every route); :func:`ensemble_versions_many` does the same for many targets at once.
    """
    return ensemble_versions_many(lm, [ids], [t], None if aux is None else [aux],
                                  candidates if candidates is None or np.ndim(candidates) == 0 else [candidates])[0]


def ensemble_versions_many(lm, ids, targets, aux=None, candidates=None, rows_per_call: int | None = None,
                           progress: bool = False) -> list:
    r""":func:`ensemble_versions` for many (sentence, target) items, batched.

    All direct conditionals go through one ``lm.logits`` call per sentence length, then all
    routes of all items through another, so the cost is two batched passes instead of
    :math:`2N` small ones. The result is the same as calling :func:`ensemble_versions` per item.

    Parameters
    ----------
    ids : LongTensor (N, n) or list of N 1-D sentences (one per item; repeat a sentence for
        several targets in it)
    targets : array_like (N,) of target positions
    aux : None or list of N arrays of auxiliary positions (default: every other unmasked position)
    candidates : None, an int or an array of token ids (shared by all items), or a list of N
        of those (one per item); see :func:`ensemble_versions`
    rows_per_call : int, optional
        Items are processed in groups of about this many rows (default: about four million
        logits per call), so memory stays bounded for large vocabularies.
    progress : bool
        Show a progress bar over the groups.

    Returns
    -------
    list of :class:`Versions`, one per item.
    """
    from tqdm.auto import tqdm

    rows = _rows(ids)
    N = len(rows)
    targets = np.array(np.broadcast_to(np.asarray(targets, dtype=np.int64), (N,)))
    m = lm.mask_id
    if aux is None:
        aux = [[k for k in range(len(r)) if k != t and int(r[k]) != m] for r, t in zip(rows, targets)]
    aux = [np.asarray(a, dtype=np.int64).reshape(-1) for a in aux]
    per_item = list(candidates) if isinstance(candidates, (list, tuple)) else [candidates] * N
    if len(per_item) != N:
        raise ValueError(f"candidates: one array per item ({N}), got {len(per_item)}")
    width = max(lm.V if c is None else int(c) + 1 if np.ndim(c) == 0 else len(c) for c in per_item) if N else 1
    rows_per_item = 1 + int(np.mean([len(a) for a in aux] or [0])) * (1 + width)
    out = []
    for sl in tqdm(_slices(N, rows_per_item, lm.V, rows_per_call), desc="versions", disable=not progress):
        out += _versions(lm, rows[sl], targets[sl], aux[sl], per_item[sl])
    return out


def _versions(lm, rows, targets, aux, per_item) -> list:
    """The work of :func:`ensemble_versions_many` for one group of items (two ``_logq`` passes)."""
    m = lm.mask_id
    direct = _logq(lm, [_with(r, t=(t, m)) for r, t in zip(rows, targets)], targets[:, None])[:, 0]
    cands = []
    for r, t, d, c in zip(rows, targets, direct, per_item):
        if c is None:
            cand = np.flatnonzero(np.isfinite(d))
        elif np.ndim(c) == 0:
            cand = np.argsort(-d, kind="stable")
            cand = cand[np.isfinite(d[cand])][: int(c)]
            if int(r[t]) != m and int(r[t]) not in cand:
                cand = np.append(cand, int(r[t]))
        else:
            cand = np.asarray(c, dtype=np.int64)
        cands.append(cand)
    batch, pos = [], []
    for r, t, a, cand in zip(rows, targets, aux, cands):
        for k in a:
            batch.append(_with(r, t=(t, m), k=(k, m)))
            pos.append(t)
            for c in cand:
                batch.append(_with(r, t=(t, c), k=(k, m)))
                pos.append(k)
    lq = _logq(lm, batch, pos)[:, 0, :] if batch else None
    out, start = [], 0
    for r, d, a, cand in zip(rows, direct, aux, cands):
        logs = [d[cand]]
        for k in a:
            block = lq[start:start + 1 + len(cand)]
            logs.append(block[0, cand] + block[1:, int(r[k])])
            start += 1 + len(cand)
        logs = np.stack(logs)
        logs = logs - logs.max(axis=1, keepdims=True)
        probs = np.exp(logs)
        out.append(Versions(cand, probs / probs.sum(axis=1, keepdims=True), a))
    return out


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
    correct: np.ndarray   # (N, M) 1.0 if the ensemble of the first m versions puts its top on the gold token
    log_loss: np.ndarray  # (N, M) -log of the ensemble's probability of the gold token (nats)


def ensemble_curve(versions, gold, how: str = "mean", max_versions: int | None = None) -> Curve:
    r"""Accuracy and log-loss of the ensemble of the first :math:`m` versions, for every :math:`m`.

    For item :math:`n` with versions :math:`q_1, \dots, q_{M_n}` (version 1 = the direct
    conditional) and gold token :math:`g_n`, the ensemble of size :math:`m` is
    :math:`\bar q^{(m)} = \text{combine}(q_1, \dots, q_m)` (:func:`combine`), scored by
    :math:`\mathbb 1[\arg\max_c \bar q^{(m)}(c) = g_n]` and :math:`-\log \bar q^{(m)}(g_n)`.
    Column :math:`m-1` of the result is the ensemble of size :math:`m`; column 0 is the single
    direct conditional.

    Parameters
    ----------
    versions : list of :class:`Versions`
    gold : array_like (N,) of gold token ids (a gold id outside an item's candidates scores
        0 and an infinite log-loss)
    how : "mean" or "max"
    max_versions : int, optional
        M, the number of columns (default: the most versions any item has). Items with fewer
        versions get NaN in the columns they cannot fill.
    """
    M = max_versions or max(len(v.probs) for v in versions)
    correct = np.full((len(versions), M), np.nan)
    loss = np.full((len(versions), M), np.nan)
    for n, (v, g) in enumerate(zip(versions, np.asarray(gold).reshape(-1))):
        hit = np.flatnonzero(v.candidates == int(g))
        for m in range(1, min(M, len(v.probs)) + 1):
            q = combine(v.probs[:m], how)
            if len(hit):
                correct[n, m - 1] = float(np.argmax(q) == hit[0])
                loss[n, m - 1] = -np.log(q[hit[0]]) if q[hit[0]] > 0 else np.inf
            else:
                correct[n, m - 1], loss[n, m - 1] = 0.0, np.inf
    return Curve(correct, loss)


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
