r"""The rectangle test: do an MLM's conditionals of two positions fit any joint?

For two positions :math:`i \ne j` of a sentence (the rest :math:`x_{\setminus\{i,j\}}` fixed and
left out of the notation) an MLM gives :math:`q(a \mid b) = q(x_i = a \mid x_j = b)` and
:math:`q(b \mid a)`. If one joint :math:`p` produced both, the log-ratio
:math:`\log q(a\mid b) - \log q(b \mid a) = \log p(a) - \log p(b)` is a function of :math:`a`
plus a function of :math:`b`, so its mixed difference over any rectangle
:math:`\{a, a'\}\times\{b, b'\}` vanishes:

.. math::
    \Delta = \log\frac{q(a\mid b)\,q(a'\mid b')}{q(a'\mid b)\,q(a\mid b')}
           - \log\frac{q(b\mid a)\,q(b'\mid a')}{q(b'\mid a)\,q(b\mid a')} = 0 .

A :math:`\Delta` beyond rounding (:data:`FLOAT32_NOISE_FLOOR`) proves that no joint produced
these eight conditionals (Arnold & Press 1989; Young & You 2022).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ._rows import as_rows, each, pick, with_values

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["FLOAT32_NOISE_FLOOR", "Rectangles", "rectangle_deltas", "rectangle_delta",
           "top2_rectangles"]

#: |Δ| below this is rounding, not inconsistency, for float32 logits: Δ adds eight log-probs,
#: each off by at most ~|log q|·2⁻²⁴ ≈ 2e-6 for |log q| ≤ 30, so |Δ| ≲ 2e-5; with a 5× margin.
FLOAT32_NOISE_FLOOR = 1e-4


def rectangle_deltas(lm: MaskedLM, ids, i, j, tokens, progress: bool = False) -> np.ndarray:
    r"""The rectangle test for many rectangles at once: :math:`\Delta` of the module docstring
    (natural log), array (R,), one row of every argument per rectangle.

    Parameters
    ----------
    ids : LongTensor (R, n) or list of R 1-D sentences
        Sentences; their tokens at ``i`` and ``j`` are overwritten, other positions (masked or
        not) form the shared context.
    i, j : array_like (R,)
        The two positions of each rectangle (scalars broadcast).
    tokens : four array_like (R,)
        ``(a, a2, b, b2)``: the rectangle's words, :math:`\{a, a'\}` at ``i`` and
        :math:`\{b, b'\}` at ``j`` (scalars broadcast).
    """
    rows = as_rows(ids)
    R = len(rows)
    i, j, a, a2, b, b2 = (np.broadcast_to(np.asarray(v, dtype=np.int64), (R,))
                          for v in (i, j, *tokens))
    m = lm.mask_id
    batch, pos, toks = [], [], []
    for r in range(R):
        batch += [with_values(rows[r], (i[r], m), (j[r], b[r])), with_values(rows[r], (i[r], m), (j[r], b2[r])),
                  with_values(rows[r], (i[r], a[r]), (j[r], m)), with_values(rows[r], (i[r], a2[r]), (j[r], m))]
        pos += [[i[r]], [i[r]], [j[r]], [j[r]]]
        toks += [[a[r], a2[r]]] * 2 + [[b[r], b2[r]]] * 2
    lq = pick(lm, batch, pos, [[0, 0]] * len(batch), toks, progress=progress).reshape(R, 4, 2)
    qi_b, qi_b2, qj_a, qj_a2 = lq[:, 0], lq[:, 1], lq[:, 2], lq[:, 3]
    left = qi_b[:, 0] + qi_b2[:, 1] - qi_b[:, 1] - qi_b2[:, 0]
    right = qj_a[:, 0] + qj_a2[:, 1] - qj_a[:, 1] - qj_a2[:, 0]
    return left - right


def rectangle_delta(lm: MaskedLM, ids, i: int, j: int, tokens) -> float:
    """Δ of one rectangle ``tokens`` in one sentence ``ids`` (1-D); see :func:`rectangle_deltas`."""
    return float(rectangle_deltas(lm, [ids], i, j, tokens)[0])


class Rectangles(NamedTuple):
    """One rectangle per pair of positions and its Δ."""

    delta: np.ndarray  # (P,) Δ per pair
    a: np.ndarray      # (P,) top-1 of q(x_i | both masked)
    a2: np.ndarray     # (P,) top-2 of q(x_i | both masked)
    b: np.ndarray
    b2: np.ndarray


def top2_rectangles(lm: MaskedLM, ids, pairs, progress: bool = False) -> Rectangles:
    r"""Δ for the most plausible rectangle of each pair of positions: :math:`\{a, a'\}` the top two
    of :math:`q(x_i \mid \text{both masked})`, :math:`\{b, b'\}` likewise for :math:`x_j`.

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
    sents = as_rows(ids)
    s, i, j = pairs.T
    rows = [with_values(sents[t], (i[r], lm.mask_id), (j[r], lm.mask_id)) for r, t in enumerate(s)]
    top = each(lm, rows, np.column_stack([i, j]).tolist(),
               lambda b, a: np.argsort(-a, axis=-1, kind="stable")[:, :2],
               progress=progress and "top-2 rectangles")
    top = np.array(top, dtype=np.int64).reshape(len(rows), 2, 2)
    tokens = (top[:, 0, 0], top[:, 0, 1], top[:, 1, 0], top[:, 1, 1])    # a, a2 at i; b, b2 at j
    return Rectangles(rectangle_deltas(lm, rows, i, j, tokens, progress=progress), *tokens)

