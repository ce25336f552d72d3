"""One sentence type for the toy language and for treebanks: words, a dependency tree, tags.

``heads[i]`` is the 0-based index of word ``i``'s head, ``-1`` for the root (UD's ``HEAD``
minus one). Edges are unordered pairs ``(min, max)`` of word indices, the root arc excluded:
the objects UUAS counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

__all__ = ["Sentence", "Multiword", "Edge", "edges_from_heads", "remove_punct", "filter_length", "PUNCT_TAGS"]

Edge = tuple[int, int]

PUNCT_TAGS = ("PUNCT",)
"""UPOS tags removed by :func:`remove_punct` by default."""


def edges_from_heads(heads: Sequence[int]) -> set[Edge]:
    """The tree's undirected edges ``{(min(i, h), max(i, h))}``, root arc excluded."""
    return {(min(i, h), max(i, h)) for i, h in enumerate(heads) if h >= 0}


@dataclass
class Multiword:
    """A multiword (surface) token such as ``don't`` = words ``start..end`` (inclusive)."""

    start: int
    end: int
    form: str


@dataclass
class Sentence:
    """A sentence with its dependency tree, from the toy grammar or from a CoNLL-U file.

    ``words, heads, deprels, upos, feats, lemmas, xpos`` are parallel lists over the
    (syntactic) words; ``feats[i]`` is a dict (``{"Number": "Sing"}``; the toy grammar adds
    ``Class``, the noun's semantic class). ``topic`` is the toy topic variant's latent topic.
    ``multiword`` lists the multiword tokens (0-based, inclusive word ranges) of a treebank;
    ``source`` is ``file:line`` of a treebank sentence and ``source_index[i]`` the position of
    word ``i`` as read (it changes when words are removed, e.g. by :func:`remove_punct`).
    """

    words: list
    heads: list
    deprels: list = field(default_factory=list)
    upos: list = field(default_factory=list)
    feats: list = field(default_factory=list)
    topic: int | None = None
    lemmas: list = field(default_factory=list)
    xpos: list = field(default_factory=list)
    multiword: list = field(default_factory=list)
    sent_id: str | None = None
    text: str | None = None
    meta: dict = field(default_factory=dict)
    source: str | None = None
    source_index: list = field(default_factory=list)

    def __post_init__(self):
        if self.text is None:
            self.text = " ".join(self.words)

    def __len__(self) -> int:
        return len(self.words)

    def edges(self) -> set[Edge]:
        """Gold edges as unordered pairs ``(min, max)`` (:func:`edges_from_heads`)."""
        return edges_from_heads(self.heads)

    @property
    def tokens(self) -> list[str]:
        """Surface tokens: words, with each multiword range replaced by its surface form."""
        starts = {m.start: m for m in self.multiword}
        out, i = [], 0
        while i < len(self.words):
            if i in starts:
                out.append(starts[i].form)
                i = starts[i].end + 1
            else:
                out.append(self.words[i])
                i += 1
        return out


def remove_punct(sentence: Sentence, punct_tags: Iterable[str] = PUNCT_TAGS) -> Sentence:
    """Drop punctuation words (UPOS in ``punct_tags``) and repair the tree.

    A word whose head is punctuation is re-attached to its nearest non-punctuation
    ancestor. In UD punctuation is almost always a leaf, so this rarely matters. If a word
    has no non-punctuation ancestor (the root itself was punctuation), it becomes a root;
    when that leaves several roots, the leftmost stays the root and the others attach to it,
    so the result is always a single tree. (In UD English EWT a punctuation root only occurs
    in sentences made of punctuation alone, which become empty.)

    Multiword tokens shrink to their surviving words and disappear if none survive;
    ``source_index`` keeps each surviving word's original position.
    """
    tags = set(punct_tags)
    keep = [i for i, t in enumerate(sentence.upos) if t not in tags]
    new_index = {old: new for new, old in enumerate(keep)}

    def kept_ancestor(i: int) -> int:
        h = sentence.heads[i]
        while h != -1 and h not in new_index:
            h = sentence.heads[h]
        return -1 if h == -1 else new_index[h]

    heads = [kept_ancestor(i) for i in keep]
    roots = [i for i, h in enumerate(heads) if h == -1]
    for extra in roots[1:]:
        heads[extra] = roots[0]
    multiword = []
    for m in sentence.multiword:
        inside = [new_index[i] for i in range(m.start, m.end + 1) if i in new_index]
        if inside:
            multiword.append(Multiword(inside[0], inside[-1], m.form))
    pick = (lambda xs: [xs[i] for i in keep] if len(xs) == len(sentence.words) else list(xs))
    text = sentence.text if sentence.text != " ".join(sentence.words) else None
    return replace(
        sentence, words=pick(sentence.words), upos=pick(sentence.upos), heads=heads,
        deprels=pick(sentence.deprels), lemmas=pick(sentence.lemmas), xpos=pick(sentence.xpos),
        feats=pick(sentence.feats), multiword=multiword, meta=dict(sentence.meta), text=text,
        source_index=pick(sentence.source_index) if sentence.source_index else keep)


def filter_length(sentences: Iterable[Sentence], max_len: int, min_len: int = 2) -> list[Sentence]:
    """Keep sentences with ``min_len <= len(words) <= max_len``.

    Lengths count the words as given, so for the WSJ10-style setting call
    :func:`remove_punct` first: ``filter_length(map(remove_punct, sents), 10)``.
    The default ``min_len=2`` drops one-word sentences, which have no edge to score.
    """
    return [s for s in sentences if min_len <= len(s.words) <= max_len]
