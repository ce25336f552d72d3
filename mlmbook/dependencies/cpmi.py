r"""Hoover et al.'s (2021) contextual pointwise mutual information between the words of a
sentence."""
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
    r"""Hoover et al.'s contextual PMI at the observed words, for every pair of kept words.

    .. math::
        \text{CPMI}(a; b) = \log q(w_a \mid s_{\setminus a}) - \log q(w_a \mid s_{\setminus \{a, b\}}),

    where :math:`s_{\setminus A}` is the sentence with the words in ``A`` masked (all their
    pieces). How much does seeing word ``b`` raise the model's belief in the actual word ``a``?

    Multi-piece words, by the chain rule over pieces from left to right: for word ``a`` with
    pieces :math:`t_1 \dots t_m` and a context ``C`` (the sentence with word ``a`` masked, and
    word ``b`` too for the second term),

    .. math:: \log q(w_a \mid C) = \sum_{k=1}^{m} \log q(t_k \mid t_1 \dots t_{k-1}, C),

    the ``k``-th factor querying piece ``k`` with pieces ``k..m`` masked and ``1..k-1``
    revealed. This is exact for a model whose conditionals are compatible; for an MLM it is one
    well-defined choice among several (another order gives another number). A piece that is a
    special token (``[UNK]``, which the interface never predicts) is left out of the product;
    a word with no other piece gets CPMI 0. Two words of one surface token (a
    :class:`~mlmbook.corpus.Surface`) share its pieces and their pair is not scored (0).

    Batching: the ``m_a (1 + n_keep - 1)`` rows of every word of every sentence go to
    :func:`mlmbook.queries.iter_log_probs` together.

    Parameters
    ----------
    lm : MaskedLM
    sentences : list of list of str
    keep : list of list of int, optional
        Per sentence, the words to score (default all).
    progress : bool

    Returns
    -------
    list of ndarray (len(keep), len(keep))
        ``M[a, b] = CPMI(a; b)``.
    """
    enc = encode_all(lm, sentences, keep)
    unpredictable = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    rows, pos, what = [], [], []   # what: (sentence, a, b or -1, target id)
    for s, e in enumerate(enc):
        for a in e.keep:
            for b in [-1] + [b for b in e.keep if b != a and e.pieces[b] != e.pieces[a]]:
                for k, piece in enumerate(e.pieces[a]):
                    if e.ids[piece] in unpredictable:     # e.g. [UNK]: the model never predicts it
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
                # two words of one surface token: not scored
                if a != b and e.pieces[a] != e.pieces[b]:
                    M[ia, ib] = logq[(s, a, -1)] - logq[(s, a, b)]
        mats.append(M)
    return mats


def cpmi_rows(lm: "MaskedLM", e) -> int:
    """Rows :func:`cpmi` sends for one encoded sentence ``e``: ``m_a x n_keep`` per word."""
    unpredictable = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    return sum(len(e.keep) * sum(e.ids[p] not in unpredictable for p in e.pieces[a]) for a in e.keep)
