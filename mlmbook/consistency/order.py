r"""The chain rule in two orders: order inconsistency and preference flips.

With both positions :math:`i, j` masked an MLM gives :math:`q(x_i \mid x_{\setminus\{i,j\}})`, which
for a joint is the marginal :math:`p(x_i)` (the rest :math:`x_{\setminus\{i,j\}}` left implicit
below). The chain rule then gives the pair probability in two orders,

.. math::
    j_0(a, b) = q(a)\, q(b \mid a), \qquad j_1(a, b) = q(b)\, q(a \mid b),

which agree for every joint. A disagreement is read as the **order inconsistency** of the observed
pair (Young & You 2022's measure, :func:`order_inconsistency`) or as **preference flips** between
two bigrams that share one word (:func:`preference_flips`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import queries
from ._rows import as_rows, each, pick, with_values
from .rectangle import FLOAT32_NOISE_FLOOR, Rectangles, rectangle_deltas, top2_rectangles

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["OrderInconsistency", "order_inconsistency", "Flips", "preference_flips",
           "chain_rule_grids", "PairProbes", "probe_pairs", "pair_flips", "one_pair_per_sentence"]


class OrderInconsistency(NamedTuple):
    rel: np.ndarray            # |j0 − j1| / ((j0 + j1)/2), in [0, 2]
    abs_log_ratio: np.ndarray  # |log j0 − log j1|
    log_fwd: np.ndarray        # log j0 = log q(x_i | both masked) + log q(x_j | x_i)
    log_bwd: np.ndarray        # log j1 = log q(x_j | both masked) + log q(x_i | x_j)


def order_inconsistency(lm: MaskedLM, ids, i, j) -> OrderInconsistency:
    r"""Do the two chain-rule orders :math:`j_0, j_1` (the module docstring) agree on the observed
    pair :math:`(x_i, x_j)`? The relative difference :math:`|j_0 - j_1| / \tfrac12(j_0 + j_1) =
    2\tanh(|\log j_0/j_1|/2)` (Young & You's measure) and :math:`|\log(j_0/j_1)|`, per row of
    ``ids`` (one row per (sentence, pair); ``i``, ``j`` broadcast).
    """
    rows = as_rows(ids)
    R = len(rows)
    i, j = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j))
    xi, xj = (np.array([int(row[p]) for row, p in zip(rows, at)], dtype=np.int64) for at in (i, j))
    m = lm.mask_id
    batch, pos, cols, toks = [], [], [], []
    for r in range(R):
        batch += [with_values(rows[r], (i[r], m), (j[r], m)), with_values(rows[r], (j[r], m)),
                  with_values(rows[r], (i[r], m))]
        pos += [[i[r], j[r]], [j[r], j[r]], [i[r], i[r]]]  # k = 2 everywhere: one group per length
        cols += [[0, 1], [0, 0], [0, 0]]
        toks += [[xi[r], xj[r]], [xj[r], xj[r]], [xi[r], xi[r]]]
    lq = pick(lm, batch, pos, cols, toks).reshape(R, 3, 2)
    fwd = lq[:, 0, 0] + lq[:, 1, 0]             # q(x_i | both masked) q(x_j | x_i)
    bwd = lq[:, 0, 1] + lq[:, 2, 0]             # q(x_j | both masked) q(x_i | x_j)
    d = np.abs(fwd - bwd)
    return OrderInconsistency(2 * np.tanh(d / 2), d, fwd, bwd)


class Flips(NamedTuple):
    flip: np.ndarray      # (R,) bool: the two orders prefer different bigrams
    alt: np.ndarray       # (R,) the alternative word a' at the altered position
    gap_fwd: np.ndarray   # log j0(a, b) − log j0(a', b)
    gap_bwd: np.ndarray   # log j1(a, b) − log j1(a', b) = log q(a | b) − log q(a' | b)


def preference_flips(lm: MaskedLM, ids, i, j, alt=None) -> Flips:
    r"""Do the two chain-rule orders prefer the same of two bigrams that share the word at ``j``?

    The bigrams are the observed :math:`(a, b) = (x_i, x_j)` and :math:`(a', b)`, with :math:`a'`
    the model's likeliest other word at :math:`i` given the rest, :math:`a' = \arg\max_{c \ne a}
    q(x_i = c \mid x_{\setminus i})` (or ``alt``, e.g. another model's choice). The orders'
    preferences are the signs of

    .. math::
        g_0 = \log\frac{j_0(a, b)}{j_0(a', b)} = \log\frac{q(a)\,q(b\mid a)}{q(a')\,q(b\mid a')}, \qquad
        g_1 = \log\frac{j_1(a, b)}{j_1(a', b)} = \log\frac{q(a\mid b)}{q(a'\mid b)}

    A joint has :math:`g_0 = g_1`. A **flip** is :math:`g_0 > \tau` and :math:`g_1 < -\tau` or the
    reverse, :math:`\tau` the float32 rounding bound (:data:`~.rectangle.FLOAT32_NOISE_FLOOR`); per
    row of ``ids`` (``i``, ``j``, ``alt`` broadcast).
    """
    rows = as_rows(ids)
    R = len(rows)
    i, j = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,)) for v in (i, j))
    a, b = (np.array([int(row[p]) for row, p in zip(rows, at)], dtype=np.int64) for at in (i, j))
    m = lm.mask_id
    if alt is None:
        def best_other(r, lq):
            scores = lq[0].copy()
            scores[a[r]] = -np.inf
            return int(np.argmax(scores))
        alt = each(lm, [with_values(rows[r], (i[r], m)) for r in range(R)], i[:, None].tolist(),
                   best_other)
    alt = np.array(np.broadcast_to(np.asarray(alt, dtype=np.int64), (R,)))
    batch, pos, toks = [], [], []
    for r in range(R):
        batch += [with_values(rows[r], (i[r], m), (j[r], m)), with_values(rows[r], (j[r], m)),
                  with_values(rows[r], (i[r], alt[r]), (j[r], m)), with_values(rows[r], (i[r], m))]
        pos += [[i[r]], [j[r]], [j[r]], [i[r]]]
        toks += [[a[r], alt[r]], [b[r], b[r]], [b[r], b[r]], [a[r], alt[r]]]
    lq = pick(lm, batch, pos, [[0, 0]] * len(batch), toks).reshape(R, 4, 2)
    g0 = (lq[:, 0, 0] + lq[:, 1, 0]) - (lq[:, 0, 1] + lq[:, 2, 0])
    g1 = lq[:, 3, 0] - lq[:, 3, 1]
    tol = FLOAT32_NOISE_FLOOR
    flip = ((g0 > tol) & (g1 < -tol)) | ((g0 < -tol) & (g1 > tol))
    return Flips(flip, alt, g0, g1)


def chain_rule_grids(lm: MaskedLM, ids, i: int, j: int, a_ids, b_ids) -> tuple[np.ndarray, np.ndarray]:
    r"""The pair distribution of positions :math:`(i, j)` read through the chain rule both ways:
    ``(log_fwd, log_bwd)``, :math:`\log j_0(a, b)` and :math:`\log j_1(a, b)` (the module docstring)
    for every :math:`a` in ``a_ids`` and :math:`b` in ``b_ids``, arrays (len(a_ids), len(b_ids));
    the rest of ``ids`` is the context. For a joint both grids equal
    :math:`\log p(x_i=a, x_j=b \mid x_{\setminus\{i,j\}})`.
    """
    row = as_rows([ids])[0]
    a_ids, b_ids = np.asarray(a_ids, dtype=np.int64), np.asarray(b_ids, dtype=np.int64)
    m = lm.mask_id
    batch = ([with_values(row, (i, m), (j, m))] + [with_values(row, (i, a), (j, m)) for a in a_ids]
             + [with_values(row, (i, m), (j, b)) for b in b_ids])
    pos = [[i, j]] + [[j, j]] * len(a_ids) + [[i, i]] * len(b_ids)
    lq = np.stack(queries.log_probs(lm, batch, pos))
    qi, qj = lq[0, 0, a_ids], lq[0, 1, b_ids]                         # both masked
    qj_given_a = lq[1:1 + len(a_ids), 0][:, b_ids]                     # (A, B)
    qi_given_b = lq[1 + len(a_ids):, 0][:, a_ids].T                   # (A, B)
    return qi[:, None] + qj_given_a, qj[None, :] + qi_given_b


class PairProbes(NamedTuple):
    rect: Rectangles
    order: OrderInconsistency
    flips: Flips | None = None

    def take(self, idx) -> PairProbes:
        """The probes of the pairs ``idx`` (an index array or boolean mask over pairs)."""
        flips = None if self.flips is None else Flips(*(f[idx] for f in self.flips))
        return PairProbes(Rectangles(*(f[idx] for f in self.rect)),
                          OrderInconsistency(*(f[idx] for f in self.order)), flips)


def probe_pairs(lm: MaskedLM, ids, pairs, same_as: PairProbes | None = None, flips: bool = True,
                index=None) -> PairProbes:
    r"""The rectangle test, the order inconsistency and preference flips for many pairs: one entry
    per pair of :class:`~.rectangle.Rectangles` (Δ and the rectangle's tokens), of
    :class:`OrderInconsistency` of the observed pair and of :class:`Flips` (or None).

    Parameters
    ----------
    ids : list of S 1-D sentences (token ids, nothing masked)
    pairs : array_like (P, 3) of (sentence, i, j)
    same_as : PairProbes, optional
        Test the rectangles and bigrams of these probes (one per pair; e.g. another model's)
        instead of each pair's own top-2 rectangle (:func:`~.rectangle.top2_rectangles`) and the
        model's own alternative words.
    flips : bool
        Also count preference flips (:func:`pair_flips`).
    index : array_like (P,), optional
        The pairs' rows in a longer list they were taken from, so that each flip alters the same
        side as it did there (:func:`pair_flips`).
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 3)
    if len(pairs) == 0:
        empty = np.zeros(0)
        return PairProbes(Rectangles(*[empty] * 5), OrderInconsistency(*[empty] * 4),
                          Flips(np.zeros(0, bool), *[empty] * 3) if flips else None)
    sents = as_rows(ids)
    s, i, j = pairs.T
    alternatives = None
    if same_as is None:
        rect = top2_rectangles(lm, sents, pairs)
    else:
        r = Rectangles(*(np.asarray(f) for f in same_as.rect))
        both = [with_values(sents[t], (i[k], lm.mask_id), (j[k], lm.mask_id)) for k, t in enumerate(s)]
        rect = r._replace(delta=rectangle_deltas(lm, both, i, j, r[1:]))
        alternatives = None if same_as.flips is None else same_as.flips.alt
    order = order_inconsistency(lm, [sents[t] for t in s], i, j)
    out = pair_flips(lm, sents, pairs, alternatives, index=index) if flips else None
    return PairProbes(rect, order, out)


def pair_flips(lm: MaskedLM, ids, pairs, alternatives=None, index=None) -> Flips:
    """:func:`preference_flips` of many ``(sentence, i, j)`` pairs, the word altered alternating
    (even rows: ``i``, odd rows: ``j``). ``alternatives``: the words to compare with (default: the
    model's own). ``index``: the rows' numbers in a longer list of pairs they were taken from."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 3)
    sents = as_rows(ids)
    s, i, j = pairs.T
    rows = np.arange(len(pairs)) if index is None else np.asarray(index, dtype=np.int64).reshape(-1)
    odd = rows % 2 == 1
    altered, kept = np.where(odd, j, i), np.where(odd, i, j)
    return preference_flips(lm, [sents[t] for t in s], altered, kept, alt=alternatives)


def one_pair_per_sentence(positions, rng: np.random.Generator) -> np.ndarray:
    """The paper's sample: one pair of positions per sentence, drawn uniformly; an array (P, 3) of
    ``(sentence, i, j)`` with ``i < j``, one row per sentence with two or more positions.

    Parameters
    ----------
    positions : list of S sequences
        The positions each sentence may mask (its word pieces).
    """
    out = []
    for s, pos in enumerate(positions):
        if len(pos) >= 2:
            i, j = sorted(rng.choice(len(pos), 2, replace=False))
            out.append((s, int(pos[i]), int(pos[j])))
    return np.array(out, dtype=np.int64).reshape(-1, 3)
