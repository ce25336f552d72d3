r"""Chapter 2's sample: the sentences (:func:`experiment_sentences`), then one adjacent and one
random pair of positions per sentence (:func:`choose_pairs`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..corpus.for_model import ModelCorpus, Window, read_for_model
from ..corpus.sentence import encode
from ..errors import TreebankError, UsageError

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["choose_pairs", "tree_distance", "Source", "experiment_sentences", "experiment_pairs", "item_for", "marked"]


@dataclass(frozen=True)
class Source:
    """Where the chapter's sentences come from: ``toy``, the toy model, which reads its own language
    (a treebank is then an error); else ``treebank`` (``default_treebank`` when None), read with the
    length policy ``window`` (:func:`~mlmbook.corpus.read_for_model`); ``allow_unknown``: run even
    when the model does not fit the treebank (the page then shows the warning)."""

    toy: bool
    treebank: object = None
    window: Window | None = None
    default_treebank: str = "test"
    allow_unknown: bool = False


def experiment_sentences(lm: "MaskedLM", n: int, grammar, source: Source,
                         seed: int = 0) -> tuple[list, ModelCorpus | None]:
    """The sentences the chapter draws its pairs from (four times ``n``, since some do not
    qualify): ``grammar.sample`` for the toy model, the treebank (shuffled by ``seed``) for another.

    Returns
    -------
    ``(sentences, corpus)``: ``corpus`` what was read and the fit (its ``admonition()`` goes on the
    page), None for the toy model.
    """
    if source.toy:
        if source.treebank is not None:
            raise UsageError("chapter 02_joints reads the toy language with the toy model and cannot use -p "
                             "treebank (give -p model NAME to read the treebank)")
        return grammar.sample(4 * n, seed=seed), None
    treebank = source.treebank if source.treebank is not None else source.default_treebank
    corpus = read_for_model(lm, treebank, source.window, limit=4 * n, seed=seed, allow_unknown=source.allow_unknown)
    return corpus.sentences, corpus


def tree_distance(heads: Sequence[int], i: int, j: int) -> int:
    """Edges between words ``i`` and ``j`` of a dependency tree (``heads[k]``: the 0-based head of
    word ``k``, -1 for the root); ``ValueError`` if the heads do not link them in a tree."""
    def path_up(k):
        seen = [k]
        while heads[seen[-1]] >= 0:
            seen.append(int(heads[seen[-1]]))
            if len(seen) > len(heads):
                raise ValueError("the heads have a cycle: not a tree")
        return seen

    up_i, up_j = path_up(i), path_up(j)
    depth_j = {node: d for d, node in enumerate(up_j)}
    for d, node in enumerate(up_i):
        if node in depth_j:
            return d + depth_j[node]
    raise ValueError(f"words {i} and {j} are not in one tree")


def choose_pairs(lm: "MaskedLM", sentences: Sequence, n: int, rng: np.random.Generator) -> list[dict]:
    """One adjacent and one random pair of words per sentence (word lists, or
    :class:`~mlmbook.corpus.Sentence` objects: the model reads their surface tokens), for the first
    ``n`` that qualify: three words with a letter or digit whose pieces the model knows, two of them
    adjacent, and the sentence fits the model.

    Returns ``2 n`` dicts (adjacent, random, adjacent, ...) with ``kind``, ``sentence`` (0, 0, 1,
    1, ...), ``words``, word positions ``wa < wb``, ``ids`` (token ids), token positions ``A``,
    ``B`` (each word's first piece), ``distance`` (``wb - wa``) and ``tree_distance`` (edges between
    the two words in the gold tree; ``None`` without one, or where the heads do not form a tree)."""
    items = []
    for sentence in sentences:
        words = list(getattr(sentence, "words", sentence))
        heads = getattr(sentence, "heads", None)
        ids, pieces = encode(lm, sentence)
        if len(ids) > lm.max_length:
            continue
        ok = [w for w, word in enumerate(words) if any(c.isalnum() for c in word)
              and all(ids[p] not in lm.special_ids for p in pieces[w])
              and (w == 0 or pieces[w] != pieces[w - 1])]          # one word per surface token
        adjacent = [(u, v) for u, v in zip(ok, ok[1:]) if v == u + 1]
        if len(ok) < 3 or not adjacent:
            continue
        u, v = adjacent[rng.integers(len(adjacent))]
        r1, r2 = sorted(rng.choice(ok, size=2, replace=False))
        for kind, (wa, wb) in (("adjacent", (u, v)), ("random", (int(r1), int(r2)))):
            try:
                tree = None if heads is None else tree_distance(heads, wa, wb)
            except (ValueError, IndexError):                # the heads do not link the two words
                tree = None
            items.append(dict(kind=kind, sentence=len(items) // 2, words=list(words), wa=wa, wb=wb,
                              ids=ids, A=pieces[wa][0], B=pieces[wb][0], distance=wb - wa,
                              tree_distance=tree))
        if len(items) == 2 * n:
            break
    return items


def experiment_pairs(lm: "MaskedLM", sentences: Sequence, n: int, rng: np.random.Generator,
                     source: str = "the sentences") -> list[dict]:
    """:func:`choose_pairs`; if no sentence qualifies, a ``TreebankError`` naming ``source``."""
    items = choose_pairs(lm, sentences, n, rng)
    if not items:
        raise TreebankError(f"no usable sentence in {source}: chapter 2 needs sentences with three words the model "
                            f"knows, two of them adjacent; give a treebank in the model's language")
    return items


def item_for(lm: "MaskedLM", words: Sequence[str], wa: int, wb: int, kind: str = "chosen") -> dict:
    """One pair as :func:`choose_pairs` gives it (``ids``, token positions ``A``, ``B``: each word's
    first piece), for words ``wa`` and ``wb`` of a sentence chosen by hand."""
    ids, pieces = encode(lm, list(words))
    return dict(kind=kind, sentence=0, words=list(words), wa=wa, wb=wb, ids=ids, A=pieces[wa][0],
                B=pieces[wb][0], distance=wb - wa, tree_distance=None)


def marked(item: dict) -> str:
    """The pair's sentence with its two words replaced by ``[A]`` and ``[B]``."""
    marks = {item["wa"]: "[A]", item["wb"]: "[B]"}
    return " ".join(marks.get(i, w) for i, w in enumerate(item["words"]))
