"""One sentence type for the toy language and for treebanks: words, a dependency tree, tags.

``heads[i]`` is the 0-based index of word ``i``'s head, ``-1`` for the root (UD's ``HEAD`` minus
one); edges are unordered pairs ``(min, max)``, the root arc excluded (what UUAS counts). The tree
is over the syntactic words, but **the model reads the surface tokens** (:attr:`Sentence.tokens`:
UD's multiword ``don't`` once, not ``do n't``); :func:`encode` gives every word the pieces of its
token, so a pair of two words of one token is not scored (:mod:`mlmbook.dependencies.pieces`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

__all__ = ["Sentence", "Multiword", "Edge", "Surface", "encode", "model_words", "edges_from_heads",
           "remove_punct", "filter_length", "PUNCT_TAGS"]

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
        """Surface tokens (what the model reads): each multiword range replaced by its form."""
        return self.surface().tokens

    def surface(self) -> "Surface":
        """The words with the surface tokens the model reads and each word's token."""
        starts = {m.start: m for m in self.multiword}
        tokens, token_of, i = [], [], 0
        while i < len(self.words):
            m = starts.get(i)
            end = m.end if m is not None and m.end < len(self.words) else i
            tokens.append(m.form if end > i else self.words[i])
            token_of += [len(tokens) - 1] * (end - i + 1)
            i = end + 1
        return Surface(self.words, tokens, token_of)


class Surface(list):
    """A sentence's syntactic words (the list itself), its surface ``tokens`` (``don't`` once, not
    ``do n't``) and ``token_of``, each word's token. An estimator that takes a word list feeds the
    model the tokens (through :func:`encode`); its results stay indexed by words."""

    def __init__(self, words: Sequence[str], tokens: Sequence[str] | None = None,
                 token_of: Sequence[int] | None = None):
        super().__init__(words)
        self.tokens = list(self) if tokens is None else list(tokens)
        self.token_of = list(range(len(self))) if token_of is None else [int(t) for t in token_of]
        if len(self.token_of) != len(self) or (self.token_of and not 0 <= min(self.token_of) <= max(
                self.token_of) < len(self.tokens)):
            raise ValueError(f"token_of must give each of the {len(self)} words a token in [0, {len(self.tokens)})")

    @property
    def shared(self) -> bool:
        """Whether some words share a surface token."""
        return len(self.tokens) != len(self)


def model_words(sentence) -> list[str] | Surface:
    """What a model reads of ``sentence``: a :class:`Sentence` as its :meth:`~Sentence.surface`
    (words that remember their surface tokens); a :class:`Surface` or a word list as it is."""
    return sentence.surface() if isinstance(sentence, Sentence) else sentence


def encode(lm, words) -> tuple[list[int], list[list[int]]]:
    """Token ids of a word list, a :class:`Surface` or a :class:`Sentence` and, for each **word**,
    the positions of the pieces of its surface token (of a plain list: ``lm.encode_words(words)``).
    """
    words = model_words(words)
    tokens = getattr(words, "tokens", None)
    if tokens is None or not words.shared:
        return lm.encode_words(list(words))
    ids, pieces = lm.encode_words(list(tokens))
    return ids, [list(pieces[t]) for t in words.token_of]


def remove_punct(sentence: Sentence, punct_tags: Iterable[str] = PUNCT_TAGS) -> Sentence:
    """Drop punctuation words (UPOS in ``punct_tags``) and repair the tree.

    A word whose head is punctuation is re-attached to its nearest non-punctuation ancestor;
    words left without one become roots, and of several roots the leftmost stays the root and
    the others attach to it, so the result is always a single tree. Multiword tokens shrink to
    their surviving words; ``source_index`` keeps each surviving word's original position.
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
    """Keep sentences with ``min_len <= len(words) <= max_len`` (the words as given: for WSJ10
    call :func:`remove_punct` first; ``min_len=2`` drops sentences with no edge to score)."""
    return [s for s in sentences if min_len <= len(s.words) <= max_len]
