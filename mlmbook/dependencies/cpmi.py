r"""Hoover et al.'s (2021) contextual pointwise mutual information between words."""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from .. import queries
from .pieces import encode_all

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["cpmi", "cpmi_rows"]


def cpmi(lm: "MaskedLM", sentences, keep=None, progress: bool = False) -> list:
    r"""Hoover et al.'s contextual PMI at the observed words, for every pair of kept words: one
    ``(len(keep), len(keep))`` matrix per sentence, ``M[a, b] = CPMI(a; b)``.

    .. math::
        \text{CPMI}(a; b) = \log q(w_a \mid s_{\setminus a}) - \log q(w_a \mid s_{\setminus \{a, b\}}),

    where :math:`s_{\setminus A}` is the sentence with the words in ``A`` masked (all their
    pieces). A word of pieces :math:`t_1 \dots t_m` in a context ``C``, by the chain rule from
    left to right (exact for compatible conditionals; for an MLM one choice among several):

    .. math:: \log q(w_a \mid C) = \sum_{k=1}^{m} \log q(t_k \mid t_1 \dots t_{k-1}, C).

    A special piece (``[UNK]``, never predicted) is left out of the product (a word of no other
    piece gets CPMI 0); two words of one surface token (a :class:`~mlmbook.corpus.Surface`) share
    its pieces and their pair is not scored (0).

    Parameters
    ----------
    sentences, keep
        As for :func:`~mlmbook.dependencies.cmi_grid`.
    """
    enc = encode_all(lm, sentences, keep)
    unpredictable = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    rows, pos, what = [], [], []   # what: (sentence, a, b or -1, target id)
    for s, e in enumerate(enc):
        for a in e.keep:
            for b in [-1] + [b for b in e.keep if b != a and e.pieces[b] != e.pieces[a]]:
                for k, piece in enumerate(e.pieces[a]):
                    if e.ids[piece] in unpredictable:
                        continue
                    r = list(e.ids)
                    for p in e.pieces[a][k:] + (e.pieces[b] if b >= 0 else []):
                        r[p] = lm.mask_id
                    rows.append(r), pos.append([piece]), what.append((s, a, b, e.ids[piece]))
    logq = defaultdict(float)
    for idx, lp in queries.iter_log_probs(lm, rows, pos, progress=progress and "CPMI"):
        for r, row in zip(idx, lp):
            s, a, b, target = what[r]
            logq[(s, a, b)] += float(row[0, target])
    mats = []
    for s, e in enumerate(enc):
        M = np.zeros((len(e.keep), len(e.keep)))
        for ia, a in enumerate(e.keep):
            for ib, b in enumerate(e.keep):
                if a != b and e.pieces[a] != e.pieces[b]:
                    M[ia, ib] = logq[(s, a, -1)] - logq[(s, a, b)]
        mats.append(M)
    return mats


def cpmi_rows(lm: "MaskedLM", e) -> int:
    """Rows :func:`cpmi` sends for one encoded sentence ``e``: ``m_a x n_keep`` per word."""
    unpredictable = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    return sum(len(e.keep) * sum(e.ids[p] not in unpredictable for p in e.pieces[a]) for a in e.keep)
