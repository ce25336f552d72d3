"""Sentences as the model sees them: pieces, the pairs to score, piece scores -> word scores.

Every estimator takes a masked LM, sentences and optionally the words to score (``keep``; the model
still *sees* the whole sentence), and returns one matrix per sentence over the kept words,
``M[a, b]`` = what word ``b`` tells about word ``a`` (diagonal 0).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..corpus.sentence import encode

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["WINDOW", "Encoded", "pieces_to_words", "to_words", "non_special"]

WINDOW = 9
"""Zhang & Hashimoto score pairs of (sub-word) positions at most 9 apart; wider pairs get 0."""


class Encoded:
    """A sentence as the model sees it: token ids, the pieces of each word, the scored words. Two
    words of one surface token (``words`` a :class:`~mlmbook.corpus.Surface`) share its pieces, so
    their pair is never scored (0)."""

    def __init__(self, lm: "MaskedLM", words: Sequence[str], keep: Sequence[int] | None = None):
        self.ids, self.pieces = encode(lm, words)
        self.keep = list(range(len(words))) if keep is None else [int(k) for k in keep]
        self.owner = np.full(len(self.ids), -1)
        for w, ps in enumerate(self.pieces):
            self.owner[ps] = w

    def piece_pairs(self, window: int | None) -> list[tuple[int, int]]:
        """Pairs ``p < q`` of pieces of two different kept words, at most ``window`` apart."""
        kept = sorted({p for w in self.keep for p in self.pieces[w]})      # shared pieces once
        return [(p, q) for a, p in enumerate(kept) for q in kept[a + 1:]
                if self.owner[p] != self.owner[q] and (window is None or q - p <= window)]


def encode_all(lm: "MaskedLM", sentences, keep=None) -> list[Encoded]:
    """:class:`Encoded` for each sentence (``keep`` per sentence, or None for every word)."""
    keep = [None] * len(sentences) if keep is None else keep
    return [Encoded(lm, s, k) for s, k in zip(sentences, keep)]


def pieces_to_words(M, pieces, keep=None, counts=None) -> np.ndarray:
    r"""Aggregate a piece-level score matrix into a word-level one: the mean over piece pairs.

    .. math:: S_{ab} = \frac{1}{|P_{ab}|} \sum_{(p, q) \in P_{ab}} M_{pq}

    where :math:`P_{ab}` holds the scored pairs (``counts[p, q] > 0``; default: every pair) of a
    piece of word ``a`` (``pieces[a]``) with a piece of word ``b``; rows and columns are the words
    ``keep`` (default all), and words with no scored piece pair get 0 (as Zhang & Hashimoto's).
    """
    M = np.asarray(M, dtype=float)
    counts = np.ones_like(M) if counts is None else np.asarray(counts, dtype=float)
    keep = list(range(len(pieces))) if keep is None else list(keep)
    S = np.zeros((len(keep), len(keep)))
    for a, wa in enumerate(keep):
        for b, wb in enumerate(keep):
            if a == b or not pieces[wa] or not pieces[wb]:
                continue
            c = counts[np.ix_(pieces[wa], pieces[wb])]
            if c.sum() > 0:
                S[a, b] = (M[np.ix_(pieces[wa], pieces[wb])] * c).sum() / c.sum()
    return S


def to_words(enc: list[Encoded], jobs, score: dict) -> list[np.ndarray]:
    """Piece-level directional scores ``score[(s, p, q)] = (M[p, q], M[q, p])`` -> word-level
    matrices over each sentence's kept words (:func:`pieces_to_words`)."""
    mats = [np.zeros((len(e.ids), len(e.ids))) for e in enc]
    counts = [np.zeros_like(m) for m in mats]
    for (s, p, q) in jobs:
        mats[s][p, q], mats[s][q, p] = score[(s, p, q)]
        counts[s][p, q] = counts[s][q, p] = 1
    return [pieces_to_words(m, e.pieces, e.keep, c) for m, c, e in zip(mats, counts, enc)]


def non_special(lm: "MaskedLM") -> np.ndarray:
    """Token ids that can be words: the vocabulary minus the special tokens and ``[MASK]``."""
    special = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    return np.array([t for t in range(lm.V) if t not in special])
