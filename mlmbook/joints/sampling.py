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
    """Where the chapter's sentences come from.

    Attributes
    ----------
    toy : bool
        The toy model, which reads its own language (a treebank is then an error).
    treebank : str or path, optional
        The treebank another model reads (``default_treebank`` when None).
    window : Window, optional
        The length policy (:func:`~mlmbook.corpus.read_for_model`).
    default_treebank : str
    allow_unknown : bool
        Run even when the model does not fit the treebank (the page then shows the warning).
    """

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
    sentences : list
    corpus : ModelCorpus or None
        What was read and the fit (its ``admonition()`` goes on the page); None for the toy model.
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
    """Number of edges between words ``i`` and ``j`` in a dependency tree (``heads[k]`` is the
    0-based head of word ``k``, ``-1`` for the root); ``ValueError`` if the heads do not form a
    tree that links the two words."""
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


def _tree_distance_or_none(heads, i: int, j: int):
    """The tree distance, or ``None`` without heads or where they do not link the two words."""
    if heads is None:
        return None
    try:
        return tree_distance(heads, i, j)
    except (ValueError, IndexError):
        return None


def choose_pairs(lm: "MaskedLM", sentences: Sequence, n: int, rng: np.random.Generator) -> list[dict]:
    """One adjacent and one random pair of words per sentence, for the first ``n`` that qualify.

    Only words with a letter or digit whose pieces the model knows (no special token) qualify;
    a sentence needs three of them and two adjacent ones, and must fit the model.

    Parameters
    ----------
    lm : MaskedLM
    sentences : sequence of word lists or :class:`~mlmbook.corpus.Sentence` objects
        With a ``Sentence`` each pair also gets its distance in the gold tree, and the model reads
        its surface tokens.
    n : int
        Sentences wanted (``2 n`` items: adjacent, random, adjacent, ...).
    rng : numpy Generator

    Returns
    -------
    list of dict with ``kind`` ("adjacent"/"random"), ``sentence`` (index of the sentence in the
    sample, 0, 0, 1, 1, ...), ``words``, word positions ``wa < wb``, ``ids`` (token ids), token
    positions ``A``, ``B`` (the first piece of each word), ``distance`` (``wb - wa``) and
    ``tree_distance`` (edges between the two words in the gold tree; ``None`` without one, or where
    the sentence's heads do not form a tree).
    """
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
            items.append(dict(kind=kind, sentence=len(items) // 2, words=list(words), wa=wa, wb=wb,
                              ids=ids, A=pieces[wa][0], B=pieces[wb][0], distance=wb - wa,
                              tree_distance=_tree_distance_or_none(heads, wa, wb)))
        if len(items) == 2 * n:
            break
    return items


def experiment_pairs(lm: "MaskedLM", sentences: Sequence, n: int, rng: np.random.Generator,
                     source: str = "the sentences") -> list[dict]:
    """:func:`choose_pairs`, or a :class:`~mlmbook.errors.TreebankError` naming ``source`` when no
    sentence qualifies."""
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
