"""The sentences a dependency analysis scores, and which gold edges a parser finds.

Both papers remove punctuation from the gold tree and the predicted one but not from what the
model reads: :class:`Scored` keeps the three views together.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..corpus.sentence import Sentence, encode, remove_punct

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["Scored", "pick", "example_pair", "edge_relations", "recall"]


@dataclass
class Scored:
    """Sentences ready to score: the ``sentences`` as read, the ``words`` (``Surface``) the
    model reads, per sentence the positions scored (``keep``: not punctuation), the ``gold`` trees
    over them (punctuation removed) and their ``edges`` over kept-word indices."""

    sentences: list
    words: list
    keep: list
    gold: list
    edges: list

    @classmethod
    def of(cls, sentences: Sequence[Sentence]) -> "Scored":
        """The three views of ``sentences`` (without tags, every word is scored)."""
        sentences = list(sentences)
        gold = [remove_punct(s) if s.upos else s for s in sentences]
        return cls(sentences, [s.surface() for s in sentences],
                   [[i for i, u in enumerate(s.upos or [""] * len(s)) if u != "PUNCT"] for s in sentences],
                   gold, [t.edges() for t in gold])

    def __len__(self) -> int:
        return len(self.sentences)

    def head(self, n: int) -> "Scored":
        """The first ``n`` sentences."""
        return Scored.of(self.sentences[:n])

    @property
    def n_words(self) -> np.ndarray:
        """Scored words per sentence."""
        return np.array([len(k) for k in self.keep])


def _readable(lm: "MaskedLM", s: Sentence) -> bool:
    """Whether ``lm`` reads the sentence's surface tokens whole, in ``lm.max_length`` pieces."""
    try:
        return len(encode(lm, s)[0]) <= lm.max_length
    except (KeyError, ValueError):          # a closed vocabulary without the word
        return False


def pick(pool: Sequence[Sentence], lm: "MaskedLM | None", n: int, max_words: int, min_words: int = 3) -> Scored:
    """The first ``n`` sentences of ``pool`` with ``min_words..max_words`` scored words that ``lm``
    can read whole (its surface tokens in at most ``lm.max_length`` pieces); ``ValueError`` (one
    line) when none qualifies."""
    out = []
    for s in pool:
        k = sum(u != "PUNCT" for u in s.upos)
        if min_words <= k <= max_words and (lm is None or _readable(lm, s)):
            out.append(s)
            if len(out) == n:
                break
    if not out:
        raise ValueError(f"none of the {len(pool)} sentences has {min_words}-{max_words} scored words that the "
                         "model can read whole; give sentences of that length (max_words) or a model with a longer "
                         "input")
    return Scored.of(out)


def example_pair(corpus: Scored, lm: "MaskedLM", relation: str = "nsubj", among: int | None = None):
    """A gold edge to show a computation on: ``(k, a, b)`` — sentence ``k``, kept-word indices ``a,
    b`` — whose two words are each one piece the model can predict (not ``[UNK]`` nor another
    special token), preferring ``relation``; among the first ``among`` sentences (default all). None
    when no edge qualifies."""
    special = set(getattr(lm, "special_ids", [])) | {lm.mask_id}
    rels = edge_relations(corpus.gold)
    best = None
    for k in range(min(len(corpus), among or len(corpus))):
        ids, pieces = encode(lm, corpus.words[k])
        keep = corpus.keep[k]
        for (a, b), r in sorted(rels[k].items()):
            i, j = keep[a], keep[b]
            if len(pieces[i]) == len(pieces[j]) == 1 and pieces[i] != pieces[j] \
                    and ids[pieces[i][0]] not in special and ids[pieces[j][0]] not in special:
                if r == relation:
                    return k, a, b
                best = best or (k, a, b)
    return best


def edge_relations(gold: Sequence[Sentence]) -> list[dict]:
    """Per sentence, ``{edge: relation}``, the subtype dropped (``obl:tmod`` -> ``obl``)."""
    return [{(min(d, h), max(d, h)): r.split(":")[0] for d, (h, r) in enumerate(zip(t.heads, t.deprels)) if h >= 0}
            for t in gold]


def recall(pred: Sequence[set], relations: Sequence[dict], select: Callable[[int, tuple, str], bool]) -> float:
    """Share of the gold edges ``select(sentence, edge, relation)`` picks that the trees ``pred``
    contain (``nan`` when it picks none)."""
    hit = tot = 0
    for k, rels in enumerate(relations[: len(pred)]):
        for e, r in rels.items():
            if select(k, e, r):
                tot += 1
                hit += e in pred[k]
    return hit / tot if tot else float("nan")
