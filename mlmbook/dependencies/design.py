r"""Chapter 1's sample design: how many sentences each estimate gets, and which.

One nested **length-stratified** order of the sentences (:func:`stratified`) serves every model:
each estimate reads a prefix of it, itself a stratified sample, of the length :class:`Sizes` gives.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .sample import Scored

if TYPE_CHECKING:
    from ..corpus import ModelCorpus
    from ..corpus.sentence import Sentence
    from ..models.base import MaskedLM

__all__ = ["Sizes", "nested_order", "stratified", "Sample", "sentences"]


@dataclass(frozen=True)
class Sizes:
    """Sentences per estimate and forward passes per CMI grid, for one profile (``SIZES``): ``main``
    sentences for the default MLM, the truth and the baselines (Q1–Q3), ``models`` for each other
    model and the knob's truths (Q4, Q5), ``corpus`` (the longest prefix) for CPMI against the
    adjacent chain (Q6); the CMI grids' forward passes, ``grid_rows`` (default MLM) and
    ``budget_models`` (each other model); the paper's sampler; the cloze probe's, the KL's held-out
    and the DMV's training sentences; ``max_words``, the longest sentence in scored words."""

    main: int
    models: int
    corpus: int
    grid_rows: int
    budget_models: int
    gibbs: int
    chains: int
    steps: int
    burn_in: int
    probe: int
    held_out: int
    dmv_train: int
    max_words: int

    def __post_init__(self):
        if max(self.main, self.models) > self.corpus:
            raise ValueError(f"main ({self.main}) and models ({self.models}) sentences are prefixes of corpus "
                             f"({self.corpus}): make corpus at least {max(self.main, self.models)}")


def nested_order(strata: Sequence[int]) -> list[int]:
    r"""The items' indices in an order whose every prefix is a proportional stratified sample;
    ``strata[i]`` is item ``i``'s stratum.

    With :math:`\pi_s` the share of stratum :math:`s` among the items, step :math:`k` takes the next item
    (in the given order) of the stratum furthest behind its quota, :math:`\arg\max_s (k\,\pi_s - n_s)`
    (ties to the smaller stratum label). Every prefix of length :math:`k` then holds
    :math:`\lfloor k \pi_s \rfloor` or :math:`\lceil k \pi_s \rceil` items of each stratum, up to one.
    """
    labels = np.asarray(strata)
    kinds = sorted(set(labels.tolist()))
    queues = {s: [int(i) for i in np.flatnonzero(labels == s)] for s in kinds}
    share = {s: len(q) / labels.size for s, q in queues.items()}
    taken = dict.fromkeys(kinds, 0)
    out = []
    for k in range(1, labels.size + 1):
        s = max((x for x in kinds if taken[x] < len(queues[x])), key=lambda x: (k * share[x] - taken[x], -x))
        out.append(queues[s][taken[s]])
        taken[s] += 1
    return out


def stratified(sentences: Sequence["Sentence"], n: int) -> Scored:
    """The first ``n`` of ``sentences`` in their length-stratified order (:func:`nested_order`, the
    strata the numbers of scored words, their shares those among ``sentences``): a large pool gives
    the language's own length distribution in every prefix."""
    every = Scored.of(sentences)
    order = nested_order(every.n_words.tolist())
    return Scored.of([every.sentences[i] for i in order[:n]])


@dataclass
class Sample:
    """The chapter's sentences, read through :func:`mlmbook.corpus.read_for_model`: the ``corpus``
    (the longest prefix of the stratified order), its first ``main`` and ``few`` (``models``)
    sentences; ``toy``: toy sentences (the truth exists); ``toy_world``: read by the toy model too
    (the knob, control and ladder models apply); ``read``: the front door's record."""

    corpus: Scored
    main: Scored
    few: Scored
    source: str
    toy: bool
    toy_world: bool
    read: "ModelCorpus"

    @property
    def admonition(self):
        """The fit warning for the page (None when the model fits)."""
        return self.read.admonition()

    @property
    def truth_sentences(self) -> Scored:
        """The sentences the truth is computed on: :attr:`main` on the toy world, none elsewhere."""
        return self.main if self.toy_world else self.main.head(0)

    def world(self, things):
        """``things`` (a list, tuple or dict of the toy world's) on the toy world, an empty one of
        the same kind elsewhere."""
        return things if self.toy_world else type(things)()

    def dmv_tags(self, grammar, n: int, max_words: int, seed: int = 0) -> list:
        """The DMV's unlabelled training sentences (their tags, punctuation removed,
        2..``max_words`` long): ``n`` fresh toy sentences, or the treebank's own."""
        from ..corpus import remove_punct
        pool = grammar.sample(n, seed=seed + 1) if self.toy else self.read.sentences
        return [t for t in (remove_punct(x).upos for x in pool) if 2 <= len(t) <= max_words]

    def counts(self) -> dict:
        """The sizes the page cites: ``n_main``, ``n_models``, ``n_cpmi``, ``mean_words``."""
        return {"n_main": len(self.main), "n_models": len(self.few), "n_cpmi": len(self.corpus),
                "mean_words": float(self.main.n_words.mean())}


def sentences(lm: "MaskedLM", size: Sizes, seed: int = 0, treebank=None,
              allow_unknown: bool = False, toy_model: bool = True) -> Sample:
    """Chapter 1's sentences, toy (``treebank`` None) or a treebank's (shuffled by ``seed``), with
    ``3..size.max_words`` scored words and read whole by ``lm`` (the book's toy MLM: ``toy_model``),
    in the length-stratified order. Raises the front door's one-line errors (no sentence left, a
    model that does not fit the text unless ``allow_unknown``)."""
    from ..corpus import Window, read_for_model
    from ..toy import Grammar
    toy = treebank is None
    source = Grammar.load("toy").sample(10 * size.corpus, seed=seed) if toy else treebank
    read = read_for_model(lm, source, Window(3, size.max_words, knob=None),
                          seed=None if toy else seed, allow_unknown=allow_unknown)
    corpus = stratified(read.sentences, size.corpus)
    return Sample(corpus, corpus.head(size.main), corpus.head(size.models),
                  "the toy language" if toy else read.name, toy, toy and toy_model, read)
