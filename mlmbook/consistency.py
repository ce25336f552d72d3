r"""Is an MLM's family of conditionals consistent with any joint? (chapters 3 and 5)

An MLM answers :math:`q(x_i \mid x_{\text{rest}})` for many masking patterns, with no
guarantee that one joint distribution :math:`p` produced all the answers (Young & You 2022,
*On the Inconsistencies of Conditionals Learned by Masked Language Models*). Three probes:

* the **rectangle test** — the odds ratio of a :math:`2\times2` rectangle read through
  :math:`q(x_i\mid x_j)` must equal the one read through :math:`q(x_j\mid x_i)`;
* **order inconsistency** — the chain rule in the two orders must give the same pair probability;
* the **Ensemble of Conditionals** — the same conditional reached by different masking routes.

For every coherent joint (e.g. the truth oracle) all three vanish, up to float rounding.
All functions take a :class:`~mlmbook.models.base.MaskedLM`; ``ids`` may be a 2-D LongTensor or
a list of 1-D sentences of different lengths (queries go through :mod:`mlmbook.queries`).

For a corpus: :func:`probe_pairs` runs the rectangle test and the order inconsistency for many
(sentence, i, j) pairs in bounded-memory groups; :func:`ensemble_versions_many` builds the
versions for many targets at once and :func:`ensemble_curve` scores ensembles of growing size;
:func:`chain_rule_grids` gives the whole pair distribution in both chain-rule orders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

import numpy as np
import torch

from . import queries

if TYPE_CHECKING:
    from .models.base import MaskedLM

__all__ = [
    "rectangle_delta", "rectangle_deltas", "top2_rectangles", "noise_floor",
    "order_inconsistency", "ensemble_versions", "ensemble_versions_many", "combine",
    "ensemble_curve", "disagreement_rate", "chain_rule_grids", "probe_pairs", "PairProbes",
    "Rectangles", "OrderInconsistency", "Versions", "Curve", "FLOAT32_NOISE_FLOOR",
]

#: |Δ| below this is rounding, not inconsistency, for float32 logits: Δ adds eight log-probabilities,
#: each off by at most ~|log q|·2⁻²⁴ ≈ 2e-6 for |log q| ≤ 30, so |Δ| ≲ 2e-5; we leave a 5× margin.
FLOAT32_NOISE_FLOOR = 1e-4


def _rows(ids) -> list[np.ndarray]:
    """Sentences as int64 arrays (from a 2-D tensor/array or a list of 1-D sentences)."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    return [np.asarray(r, dtype=np.int64).reshape(-1) for r in ids]


def _with(row, *sets) -> list[int]:
    """``row`` as a list of ints with ``row[pos] = val`` for each ``(pos, val)`` in ``sets``."""
    out = [int(v) for v in row]
    for pos, val in sets:
        out[int(pos)] = int(val)
    return out


def _each(lm: MaskedLM, rows, positions, fn: Callable, **kw) -> list:
    """``fn(b, logq_b)`` for every query ``b``: a thin reduction over :func:`mlmbook.queries.iter_log_probs`.

    ``logq_b`` (float64, ``(k, V)``): the log-softmax at row ``b``'s queried positions; only what ``fn`` keeps stays.
    """
    out: list = [None] * len(rows)
    for idx, arr in queries.iter_log_probs(lm, rows, positions, **kw):
        for b, a in zip(idx, arr):
            out[b] = fn(b, a)
    return out


def _pick(lm: MaskedLM, rows, positions, cols, tokens, **kw) -> np.ndarray:
    """``logq_b[cols[b], tokens[b]]`` for every query ``b`` (equal-length picks): array (R, m)."""
    got = _each(lm, rows, positions, lambda b, a: a[cols[b], tokens[b]], **kw)
    return np.array(got, dtype=np.float64).reshape(len(rows), -1)


def rectangle_deltas(lm: MaskedLM, ids, i, j, a, a2, b, b2, show_progress: bool = False) -> np.ndarray:
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
        Δ per rectangle (natural log), from 4R masked queries through :mod:`mlmbook.queries`.
    """
    rows = _rows(ids)
    R = len(rows)
    i, j, a, a2, b, b2 = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j, a, a2, b, b2))
    m = lm.mask_id
    batch, pos, toks = [], [], []
    for r in range(R):
        batch += [_with(rows[r], (i[r], m), (j[r], b[r])), _with(rows[r], (i[r], m), (j[r], b2[r])),
                  _with(rows[r], (i[r], a[r]), (j[r], m)), _with(rows[r], (i[r], a2[r]), (j[r], m))]
        pos += [[i[r]], [i[r]], [j[r]], [j[r]]]
        toks += [[a[r], a2[r]]] * 2 + [[b[r], b2[r]]] * 2
    lq = _pick(lm, batch, pos, [[0, 0]] * len(batch), toks, show_progress=show_progress).reshape(R, 4, 2)
    qi_b, qi_b2, qj_a, qj_a2 = lq[:, 0], lq[:, 1], lq[:, 2], lq[:, 3]      # [:, 0] = a (b), [:, 1] = a' (b')
    left = qi_b[:, 0] + qi_b2[:, 1] - qi_b[:, 1] - qi_b2[:, 0]
    right = qj_a[:, 0] + qj_a2[:, 1] - qj_a[:, 1] - qj_a2[:, 0]
    return left - right


def rectangle_delta(lm: MaskedLM, ids, i: int, j: int, a: int, a2: int, b: int, b2: int) -> float:
    """Δ of one rectangle in one sentence ``ids`` (1-D); see :func:`rectangle_deltas`."""
    return float(rectangle_deltas(lm, [ids], i, j, a, a2, b, b2)[0])


class Rectangles(NamedTuple):
    delta: np.ndarray  # (P,) Δ per pair
    a: np.ndarray      # (P,) top-1 of q(x_i | both masked)
    a2: np.ndarray     # (P,) top-2 of q(x_i | both masked)
    b: np.ndarray
    b2: np.ndarray


def top2_rectangles(lm: MaskedLM, ids, pairs, show_progress: bool = False) -> Rectangles:
    r"""Δ for the most plausible rectangle of each pair of positions.

    For each pair :math:`(i, j)`, mask both, take :math:`\{a, a'\}` = the top two of
    :math:`q(x_i \mid \text{both masked})` and :math:`\{b, b'\}` likewise for :math:`x_j`,
    then compute Δ of that rectangle (:func:`rectangle_deltas`): two passes of the query engine.

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
    rows = [_with(sents[t], (i[r], lm.mask_id), (j[r], lm.mask_id)) for r, t in enumerate(s)]
    top = _each(lm, rows, np.column_stack([i, j]).tolist(),
                lambda b, a: np.argsort(-a, axis=-1, kind="stable")[:, :2],
                show_progress=show_progress, desc="top-2 rectangles")
    top = np.array(top, dtype=np.int64).reshape(len(rows), 2, 2)
    top_i, top_j = top[:, 0], top[:, 1]
    delta = rectangle_deltas(lm, rows, i, j, top_i[:, 0], top_i[:, 1], top_j[:, 0], top_j[:, 1],
                             show_progress=show_progress)
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


def order_inconsistency(lm: MaskedLM, ids, i, j, show_progress: bool = False) -> OrderInconsistency:
    r"""Do the two chain-rule orders agree on the observed pair :math:`(x_i, x_j)`?

    .. math::
        p_\to = q(x_i \mid \text{both masked})\, q(x_j \mid x_i), \qquad
        p_\leftarrow = q(x_j \mid \text{both masked})\, q(x_i \mid x_j),

    all given the rest of the sentence. For a coherent joint both equal
    :math:`p(x_i, x_j \mid x_{\text{rest}})`. Returns the relative difference
    :math:`|p_\to-p_\leftarrow| / \tfrac12(p_\to+p_\leftarrow) = 2\tanh(|\log p_\to/p_\leftarrow|/2)`
    (at most 2) and :math:`|\log(p_\to/p_\leftarrow)|`, per row of ``ids`` (one row per
    (sentence, pair); ``i``, ``j`` broadcast). 3R masked queries in one engine pass (identical
    ones, e.g. "only :math:`x_j` masked" shared by pairs with the same :math:`j`, are sent once).
    """
    rows = _rows(ids)
    R = len(rows)
    i, j = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j))
    xi = np.array([int(rows[r][i[r]]) for r in range(R)])
    xj = np.array([int(rows[r][j[r]]) for r in range(R)])
    m = lm.mask_id
    batch, pos, cols, toks = [], [], [], []
    for r in range(R):
        batch += [_with(rows[r], (i[r], m), (j[r], m)), _with(rows[r], (j[r], m)), _with(rows[r], (i[r], m))]
        pos += [[i[r], j[r]], [j[r], j[r]], [i[r], i[r]]]            # k = 2 everywhere: one group per length
        cols += [[0, 1], [0, 0], [0, 0]]
        toks += [[xi[r], xj[r]], [xj[r], xj[r]], [xi[r], xi[r]]]
    lq = _pick(lm, batch, pos, cols, toks, show_progress=show_progress, desc="order").reshape(R, 3, 2)
    fwd = lq[:, 0, 0] + lq[:, 1, 0]             # q(x_i | both masked) q(x_j | x_i)
    bwd = lq[:, 0, 1] + lq[:, 2, 0]             # q(x_j | both masked) q(x_i | x_j)
    d = np.abs(fwd - bwd)
    return OrderInconsistency(2 * np.tanh(d / 2), d, fwd, bwd)


def chain_rule_grids(lm: MaskedLM, ids, i: int, j: int, a_ids, b_ids) -> tuple[np.ndarray, np.ndarray]:
    r"""The pair distribution of positions :math:`(i, j)` read through the chain rule both ways.

    .. math::
        \log p_\to(a, b) = \log q(x_i=a \mid \text{both masked}) + \log q(x_j=b \mid x_i=a), \qquad
        \log p_\leftarrow(a, b) = \log q(x_j=b \mid \text{both masked}) + \log q(x_i=a \mid x_j=b),

    for every :math:`a` in ``a_ids`` and :math:`b` in ``b_ids`` (the rest of ``ids`` is the
    context). For a coherent joint both grids equal :math:`\log p(x_i=a, x_j=b \mid \text{rest})`;
    :func:`order_inconsistency` is one cell of them, :func:`rectangle_deltas` a :math:`2\times2`
    block. :math:`1 + |A| + |B|` masked queries in one engine pass.

    Returns
    -------
    (log_fwd, log_bwd) : two numpy arrays of shape (len(a_ids), len(b_ids)).
    """
    row = _rows([ids])[0]
    a_ids, b_ids = np.asarray(a_ids, dtype=np.int64), np.asarray(b_ids, dtype=np.int64)
    m = lm.mask_id
    batch = ([_with(row, (i, m), (j, m))] + [_with(row, (i, a), (j, m)) for a in a_ids]
             + [_with(row, (i, m), (j, b)) for b in b_ids])
    pos = [[i, j]] + [[j, j]] * len(a_ids) + [[i, i]] * len(b_ids)
    lq = np.stack(queries.log_probs(lm, batch, pos))
    qi, qj = lq[0, 0, a_ids], lq[0, 1, b_ids]                         # both masked
    qj_given_a = lq[1:1 + len(a_ids), 0][:, b_ids]                     # (A, B)
    qi_given_b = lq[1 + len(a_ids):, 0][:, a_ids].T                   # (A, B)
    return qi[:, None] + qj_given_a, qj[None, :] + qi_given_b


class PairProbes(NamedTuple):
    rect: Rectangles
    order: OrderInconsistency

    def take(self, idx) -> PairProbes:
        """The probes of the pairs ``idx`` (an index array or boolean mask over pairs)."""
        return PairProbes(Rectangles(*(f[idx] for f in self.rect)), OrderInconsistency(*(f[idx] for f in self.order)))


def probe_pairs(lm: MaskedLM, ids, pairs, rectangles: Rectangles | None = None, progress: bool = False,
                desc: str = "pairs") -> PairProbes:
    r"""Rectangle test and order inconsistency for many pairs of positions in many sentences.

    All queries go through :mod:`mlmbook.queries` (length groups, de-duplication, one memory
    budget ``$MLMBOOK_QUERY_BUDGET``); only the few log-probabilities each probe needs are kept.

    Parameters
    ----------
    lm : MaskedLM
    ids : list of S 1-D sentences (token ids, nothing masked)
    pairs : array_like (P, 3) of (sentence, i, j)
    rectangles : Rectangles, optional
        Test these rectangles (one per pair; e.g. another model's top-2) instead of each pair's
        own top-2 rectangle (:func:`top2_rectangles`).
    progress : bool
        Show progress bars over the queries (``desc`` is unused: the bars name their stage).

    Returns
    -------
    PairProbes
        :class:`Rectangles` (Δ and the rectangle's tokens) and :class:`OrderInconsistency` of the
        observed pair, one entry per pair.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 3)
    if len(pairs) == 0:
        empty = np.zeros(0)
        return PairProbes(Rectangles(*[empty] * 5), OrderInconsistency(*[empty] * 4))
    sents = _rows(ids)
    s, i, j = pairs.T
    if rectangles is None:
        rect = top2_rectangles(lm, sents, pairs, show_progress=progress)
    else:
        r = Rectangles(*(np.asarray(f) for f in rectangles))
        both = [_with(sents[t], (i[k], lm.mask_id), (j[k], lm.mask_id)) for k, t in enumerate(s)]
        rect = r._replace(delta=rectangle_deltas(lm, both, i, j, r.a, r.a2, r.b, r.b2, show_progress=progress))
    order = order_inconsistency(lm, [sents[t] for t in s], i, j, show_progress=progress)
    return PairProbes(rect, order)


class Versions(NamedTuple):
    candidates: np.ndarray  # (C,) token ids the versions are distributions over
    probs: np.ndarray       # (1 + |K|, C); row 0 = direct conditional, row 1 + m = via aux[m]
    aux: np.ndarray         # (|K|,) auxiliary positions


def ensemble_versions(lm: MaskedLM, ids, t: int, aux=None, candidates=None) -> Versions:
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
        Costs 1 + |K|(1 + C) masked queries in three engine passes; :func:`ensemble_versions_many`
        does the same for many targets at once.
    """
    return ensemble_versions_many(lm, [ids], [t], None if aux is None else [aux],
                                  candidates if candidates is None or np.ndim(candidates) == 0 else [candidates])[0]


def ensemble_versions_many(lm: MaskedLM, ids, targets, aux=None, candidates=None,
                           progress: bool = False) -> list:
    r""":func:`ensemble_versions` for many (sentence, target) items, batched.

    All direct conditionals go through one pass of :mod:`mlmbook.queries`, then all routes of
    all items through two more (length groups, one memory budget): the target-masked queries,
    whose scores over the candidates are kept, and the candidate queries, of which only the
    observed auxiliary token's score comes back. Three batched passes instead of :math:`3N`
    small ones. The result is the same as calling
    :func:`ensemble_versions` per item.

    Parameters
    ----------
    lm : MaskedLM
    ids : LongTensor (N, n) or list of N 1-D sentences (one per item; repeat a sentence for
        several targets in it)
    targets : array_like (N,) of target positions
    aux : None or list of N arrays of auxiliary positions (default: every other unmasked position)
    candidates : None, an int or an array of token ids (shared by all items), or a list of N
        of those (one per item); see :func:`ensemble_versions`
    progress : bool
        Show progress bars over the queries.

    Returns
    -------
    list of :class:`Versions`, one per item.
    """
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

    def pick_candidates(n: int, lq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d, c, gold = lq[0], per_item[n], int(rows[n][targets[n]])
        if c is None:
            cand = np.flatnonzero(np.isfinite(d))
        elif np.ndim(c) == 0:
            cand = np.argsort(-d, kind="stable")
            cand = cand[np.isfinite(d[cand])][: int(c)]
            if gold != m and gold not in cand:
                cand = np.append(cand, gold)
        else:
            cand = np.asarray(c, dtype=np.int64)
        return cand, d[cand]

    direct = _each(lm, [_with(r, (t, m)) for r, t in zip(rows, targets)], targets[:, None].tolist(),
                   pick_candidates, show_progress=progress, desc="direct conditionals")
    # per item a (|K|, 1 + C, n) block: row 0 masks t and k (read q(x_t = c | x_k masked)),
    # rows 1.. set x_t = c and mask k (read only q(x_k = obs | x_t = c))
    head_rows, head_pos, head_want, tail_rows, tail_pos, tail_want = [], [], [], [], [], []
    for r, t, a, (cand, _) in zip(rows, targets, aux, direct):
        block = np.tile(r, (len(a), 1 + len(cand), 1))
        block[:, 0, t] = m
        block[:, 1:, t] = cand
        block[np.arange(len(a)), :, a] = m
        head_rows += block[:, 0].tolist()
        head_pos += [[int(t)]] * len(a)
        head_want += [cand] * len(a)
        tail_rows += block[:, 1:].reshape(-1, len(r)).tolist()
        tail_pos += np.repeat(a, len(cand))[:, None].tolist()
        tail_want += np.repeat(r[a], len(cand))[:, None].tolist()
    head = _each(lm, head_rows, head_pos, lambda q, x: x[0, head_want[q]], show_progress=progress,
                 desc="routes (target masked)")
    tail = np.zeros(len(tail_rows))
    for idx, x in queries.iter_log_probs(lm, tail_rows, tail_pos, targets=tail_want, show_progress=progress,
                                         desc="routes (candidate set)"):
        tail[idx] = x[:, 0]
    out, h, start = [], 0, 0                  # the item's first head route and first tail row
    for a, (cand, d) in zip(aux, direct):
        K, n_c = len(a), len(cand)
        routes = np.reshape(head[h:h + K], (K, n_c)) + tail[start:start + K * n_c].reshape(K, n_c)
        h, start = h + K, start + K * n_c
        logs = np.vstack([d[None], routes])
        probs = np.exp(logs - logs.max(axis=1, keepdims=True))
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
