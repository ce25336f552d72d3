"""Chapter 3's sentences, encoded for the model, with the pairs the probes read and the targets
the ensemble predicts: fresh toy sentences for the toy model (the truth answers every query on
them), else a treebank (:func:`mlmbook.corpus.read_for_model`). A **position** is a piece of a word
(not punctuation) that the model can predict; the sentence is the independent unit.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

from ..errors import TreebankError, UsageError

if TYPE_CHECKING:
    from ..models.base import MaskedLM

__all__ = ["Encoded", "Corpus", "Source", "load", "sample_pairs", "ensemble_targets", "MAX_PIECES"]

MAX_PIECES = 40
"""The most pieces of a probed sentence (the probes stay cheap)."""


@dataclass(frozen=True)
class Encoded:
    """One sentence as the model reads it: ``words`` (given to the tokenizer), ``ids`` (token ids
    without special tokens) and ``content`` (positions of the word pieces the model can predict)."""

    words: list
    ids: torch.Tensor
    content: list


@dataclass
class Corpus:
    """The chapter's encoded sentences (each with two or more positions): ``sentences``, ``source``
    (in words, for the page), ``toy_world`` (the truth answers every query on them), ``admonition``
    (the fit warning, when a model runs on text it does not fit), ``grammar`` (toy world only)."""

    sentences: list
    source: str
    toy_world: bool
    admonition: object = field(default=None)
    grammar: object = field(default=None)

    def ids(self, start: int = 0, stop: int | None = None) -> list:
        return [e.ids for e in self.sentences[start:stop]]


@dataclass(frozen=True)
class Source:
    """Where the chapter's sentences come from.

    Attributes
    ----------
    toy : bool               the toy world: the toy model on fresh sentences of its own language
    treebank : str or path   the treebank to read (default UD English EWT test)
    window : Window          the treebank's length policy (default 5–14 words)
    allow_unknown : bool     run on a treebank the model does not fit, with the fit warning shown
    """

    toy: bool
    treebank: object = None
    window: object = None
    allow_unknown: bool = False


def load(lm: MaskedLM, n: int, source: Source, seed: int = 0) -> Corpus:
    """The chapter's corpus: ``n`` toy sentences in the toy world, else a treebank's sentences.

    Parameters
    ----------
    n : int      toy sentences to sample (a treebank gives what it has)
    seed : int   sampling (toy) or shuffling (treebank) seed

    Raises
    ------
    UsageError
        A treebank with the toy model.
    TreebankError
        No sentence has two word pieces the model knows within its window.
    """
    grammar = None
    if source.toy:
        if source.treebank is not None:
            raise UsageError("the toy world reads the toy language; a treebank is read outside it (Source.toy "
                             "must be False with a treebank)")
        from ..toy import Grammar
        grammar = Grammar.load("toy")
        words = [s.words for s in grammar.sample(n, seed=seed + 3000)]
        text, note = "fresh sentences of the toy language", None
    else:
        from ..corpus.for_model import Window, read_for_model
        w = replace(source.window or Window(5, 14), max_pieces=MAX_PIECES, knob=None)
        read = read_for_model(lm, "test" if source.treebank is None else source.treebank, w,
                              seed=seed, allow_unknown=source.allow_unknown)
        words, text, note = read.tokens, read.summary(), read.admonition()
    special = set(lm.special_ids)                   # e.g. [UNK]: the model gives it no probability
    encoded = []
    for x in words:
        ids, pieces = lm.encode_words(list(x))
        content = [p for w, ps in zip(x, pieces) if any(ch.isalnum() for ch in w)  # a word
                   for p in ps if ids[p] not in special]
        if len(ids) <= min(lm.max_length, MAX_PIECES) and len(content) >= 2:
            encoded.append(Encoded(list(x), torch.tensor(ids), content))
    if not encoded:
        raise TreebankError(f"no sentence of the corpus ({text}) has two word pieces the model knows within "
                            f"{min(lm.max_length, MAX_PIECES)} pieces: chapter 3 needs sentences of 5–14 words")
    return Corpus(encoded, text, source.toy, note, grammar)


def sample_pairs(contents: Sequence[Sequence[int]], max_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Every pair of positions of each sentence, or ``max_pairs`` of them drawn at random: an array
    (P, 3) of ``(sentence, i, j)`` with ``i < j``, sentences in order."""
    out = []
    for s, content in enumerate(contents):
        pairs = [(s, i, j) for a, i in enumerate(content) for j in content[a + 1:]]
        keep = rng.permutation(len(pairs))[:max_pairs]
        out += [pairs[k] for k in sorted(keep)]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def ensemble_targets(sentences: Sequence[Encoded], n: int, n_aux: int, rng: np.random.Generator,
                     spans: bool = False) -> tuple[list[int], list[int], list[list[int]]]:
    """One target position per sentence and its ``n_aux`` nearest positions (the auxiliary words).

    A sentence qualifies when it has more than ``n_aux`` positions and, with ``spans``, every span
    route around its target fits. Returns ``(sentence indices, targets, aux)`` for the first ``n``.

    Raises
    ------
    TreebankError
        No sentence qualifies.
    """
    from .spans import fits_spans
    rows, targets, aux = [], [], []
    for k, e in enumerate(sentences):
        if len(rows) >= n:
            break
        if len(e.content) > n_aux:
            t = int(rng.choice(e.content))
            if not spans or fits_spans(t, e.content):
                rows.append(k)
                targets.append(t)
                aux.append(sorted((p for p in e.content if p != t), key=lambda p: (abs(p - t), p))[:n_aux])
    if not rows:
        raise TreebankError(f"the ensemble needs sentences with more than {n_aux} word pieces the model knows; "
                            f"none of the {len(sentences)} given has: give a treebank with longer sentences")
    return rows, targets, aux
